// The Task page's parts: the conversation, the timeline with the time between events and
// the task's duration, and the artifacts with their sizes. Built with app.js's el() (loaded
// after this file; called only once the page runs), text only, never markup.
'use strict';

/** `950 ms`, `4.2 s`, `3m 12s`, `2h 5m`: a span of time for people. */
function duration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
  const units = [[3600000, 'h'], [60000, 'm'], [1000, 's']];
  const parts = [];
  let left = ms;
  for (const [size, unit] of units) {
    const n = Math.floor(left / size);
    if (n || parts.length) parts.push(n + unit);
    left -= n * size;
  }
  return parts.slice(0, 2).join(' ');
}

/** `512 B`, `1.5 KiB`, `3.2 MiB`. */
function bytes(n) {
  if (typeof n !== 'number') return 'size unknown';
  if (n < 1024) return n + ' B';
  const units = ['KiB', 'MiB', 'GiB'];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return value.toFixed(value < 10 ? 1 : 0) + ' ' + units[unit];
}

/** The status time of a logged event, in ms, if it carries one (an artifact update does not). */
function eventTime(event) {
  const kind = Object.keys(event || {})[0];
  const body = kind ? event[kind] : null;
  const at = body && body.status && body.status.timestamp ? Date.parse(body.status.timestamp) : NaN;
  return Number.isFinite(at) ? at : null;
}

/** The task's duration: from its first event's time to its last status, or to now while it runs. */
function taskDuration(task, events, ended) {
  const times = events.map(({ event }) => eventTime(event)).filter((t) => t !== null);
  const last = Date.parse(task.status.timestamp || '');
  if (!times.length) return null;
  const end = ended ? (Number.isFinite(last) ? last : times[times.length - 1]) : Date.now();
  return { ms: end - times[0], ended };
}

function conversation(task) {
  const messages = [...(task.history || [])];
  const last = task.status.message;
  if (last && !messages.some((m) => m.messageId === last.messageId)) messages.push(last);
  if (!messages.length) return el('p', { class: 'empty' }, 'No message.');
  return el('div', { class: 'chat', id: 'chat' }, messages.map((m) => {
    const role = m.role === 'ROLE_USER' ? 'user' : 'agent';
    return el('div', { class: 'bubble ' + role },
      el('span', { class: 'who' }, role),
      (m.parts || []).map((p) => typeof p.text === 'string'
        ? el('p', { class: 'text' }, p.text)
        : el('pre', { class: 'json' }, JSON.stringify(p, null, 2))));
  }));
}

/** The event log, each event with the time since the timed event before it (`+1.2 s`). */
function timeline(events) {
  if (!events.length) return el('p', { class: 'empty' }, 'No event logged.');
  let before = null;
  return el('ol', { class: 'timeline', id: 'timeline' }, events.map(({ seq, event }) => {
    const kind = Object.keys(event || {})[0] || '?';
    const body = event ? event[kind] : {};
    const status = body && body.status ? body.status.state.replace(/^TASK_STATE_/, '').toLowerCase().replace(/_/g, '-') : '';
    const summary = kind === 'artifactUpdate' ? (body.artifact.name || body.artifact.artifactId) : status;
    const at = eventTime(event);
    const gap = at === null ? '' : (before === null ? 'start' : '+' + duration(at - before));
    if (at !== null) before = at;
    return el('li', { 'data-seq': seq },
      el('details', {},
        el('summary', {}, el('span', { class: 'seq' }, '#' + seq), ' ', el('b', {}, kind), ' ', summary ? stateBadge(summary) : '',
          gap ? el('span', { class: 'gap', title: at === null ? '' : when(at) }, gap) : ''),
        el('pre', { class: 'json' }, JSON.stringify(event, null, 2))));
  }));
}

/** The artifacts, each part with its size (`sizes`: the admin API's `artifactSizes`). */
function artifacts(taskId, list, sizes) {
  if (!list.length) return el('p', { class: 'empty' }, 'No artifact.');
  return el('ul', { class: 'artifacts' }, list.map((a) => {
    const partSizes = (sizes || {})[a.artifactId] || [];
    const total = partSizes.every((n) => typeof n === 'number') ? partSizes.reduce((x, y) => x + y, 0) : null;
    return el('li', { 'data-artifact': a.artifactId },
      el('b', {}, a.name || a.artifactId), ' ', el('span', { class: 'size' }, bytes(total)), a.description ? ' — ' + a.description : '',
      (a.parts || []).map((p, i) => el('button', { type: 'button', class: 'download', onclick: () => download(taskId, a.artifactId, i) },
        'Download part ' + (i + 1) + ' (' + bytes(partSizes[i]) + ')')),
      el('details', {}, el('summary', {}, (a.parts || []).length + ' part(s)'),
        (a.parts || []).map((p) => typeof p.text === 'string' ? el('pre', { class: 'text' }, p.text) : el('pre', { class: 'json' }, JSON.stringify(p, null, 2)))));
  }));
}

/** Saves one artifact part: fetched with the token, handed to the browser as a file. */
async function download(taskId, artifactId, index) {
  const path = '/tasks/' + encodeURIComponent(taskId) + '/artifacts/' + encodeURIComponent(artifactId) + '/parts/' + index;
  const response = await fetch('/admin/v1' + path, { headers: { Authorization: 'Bearer ' + token } });
  if (!response.ok) { toast('Download refused: HTTP ' + response.status, true); return; }
  const name = (/filename="([^"]+)"/.exec(response.headers.get('Content-Disposition') || '') || [])[1] || 'artifact';
  const url = URL.createObjectURL(await response.blob());
  const link = el('a', { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
