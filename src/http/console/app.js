// The a2ad console: a client of the admin API (/admin/v1). Plain JavaScript, no library.
//
// Safety rules this file keeps:
// - Everything shown is built with el()/text(): strings become text nodes (textContent),
//   never HTML. A tenant's message that looks like <script> is shown as those characters.
// - The operator token lives in the `token` variable (memory); only when the operator ticks
//   "stay signed in" is it also kept in sessionStorage (this tab only, gone with it), never
//   in a cookie or localStorage; signing out removes it. It goes out as `Authorization: Bearer`, which no other site's page can make the
//   browser send.
// - Links are built from ids with encodeURIComponent, never from tenant-written URLs.
'use strict';

let token = null;
let operator = null;
let feedAbort = null;
let current = { page: null, refresh: null, onFeed: null };
const lastRates = { at: 0, requests: 0, turns: 0 };
// The samples of the last hour (GET /admin/v1/series), fetched since the newest one held.
let series = { intervalSeconds: 10, samples: [] };

// ---------- DOM helpers ----------

/** An element with attributes and children; a string child becomes a text node. */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const $ = (id) => document.getElementById(id);

function toast(message, isError) {
  const box = $('toast');
  box.textContent = message;
  box.className = isError ? 'toast error' : 'toast';
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.hidden = true; }, 6000);
}

function when(ms) {
  if (!ms) return '-';
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

function ago(seconds) {
  const units = [[86400, 'd'], [3600, 'h'], [60, 'm']];
  for (const [size, unit] of units) if (seconds >= size) return Math.floor(seconds / size) + unit;
  return seconds + 's';
}

function stateBadge(state) {
  return el('span', { class: 'state state-' + String(state).replace(/[^a-z-]/g, '') }, state);
}

function taskLink(id) {
  return el('a', { href: '#/task/' + encodeURIComponent(id), class: 'mono' }, id);
}

// ---------- the API ----------

class ApiError extends Error {
  constructor(status, body) {
    const info = body && body.error ? body.error : {};
    super(info.message || ('HTTP ' + status));
    this.status = status;
    this.reason = info.details && info.details[0] ? info.details[0].reason : '';
  }
}

async function api(path, options) {
  const init = { method: 'GET', headers: { Authorization: 'Bearer ' + token } };
  if (options && options.body !== undefined) {
    init.method = 'POST';
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(options.body);
  }
  const response = await fetch('/admin/v1' + path, init);
  const body = await response.json().catch(() => null);
  if (response.status === 401 && token) signOut('Your token was refused; sign in again.');
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

// ---------- sign in / out ----------

const KEPT_TOKEN = 'a2ad-operator-token';

async function signIn(event) {
  event.preventDefault();
  await signInWith($('token').value.trim(), $('stay').checked);
}

/** Signs in with `given`; keeps it in this tab's sessionStorage when `stay`. */
async function signInWith(given, stay) {
  $('sign-in-error').textContent = '';
  try {
    const response = await fetch('/admin/v1/me', { headers: { Authorization: 'Bearer ' + given } });
    if (!response.ok) throw new Error(response.status === 401 ? 'That token is not an operator token.' : 'HTTP ' + response.status);
    operator = await response.json();
    token = given;
    if (stay) sessionStorage.setItem(KEPT_TOKEN, given);
    else sessionStorage.removeItem(KEPT_TOKEN);
  } catch (e) {
    sessionStorage.removeItem(KEPT_TOKEN);
    $('sign-in-error').textContent = e.message;
    return;
  }
  $('token').value = '';
  $('sign-in').hidden = true;
  $('bar').hidden = false;
  $('page').hidden = false;
  $('who').textContent = operator.name + ' (' + operator.role + ')';
  startFeed();
  if (!location.hash || location.hash === '#') location.hash = '#/overview';
  else route();
}

function signOut(message) {
  sessionStorage.removeItem(KEPT_TOKEN);
  token = null;
  operator = null;
  series = { intervalSeconds: 10, samples: [] };
  if (feedAbort) feedAbort.abort();
  feedAbort = null;
  current = { page: null, refresh: null, onFeed: null };
  $('page').replaceChildren();
  $('page').hidden = true;
  $('bar').hidden = true;
  $('sign-in').hidden = false;
  $('sign-in-error').textContent = typeof message === 'string' ? message : '';
  $('token').focus();
}

// ---------- the live feed (SSE over fetch, so that it can carry the token) ----------

async function startFeed() {
  const abort = new AbortController();
  feedAbort = abort;
  let wait = 500;
  while (token && !abort.signal.aborted) {
    try {
      const response = await fetch('/admin/v1/feed', { headers: { Authorization: 'Bearer ' + token }, signal: abort.signal });
      if (!response.ok) throw new Error('HTTP ' + response.status);
      $('live').className = 'live on';
      wait = 500;
      await readEvents(response.body.getReader(), (name, data) => {
        if (name === 'task' && current.onFeed) current.onFeed(JSON.parse(data));
        if (name === 'lagged' && current.refresh) current.refresh();
      });
    } catch (e) {
      if (abort.signal.aborted) return;
    }
    $('live').className = 'live off';
    await new Promise((resolve) => setTimeout(resolve, wait));
    wait = Math.min(wait * 2, 10000);
  }
}

/** Reads SSE events from a byte stream: `event:` and `data:` lines, a blank line ends one. */
async function readEvents(reader, onEvent) {
  const decoder = new TextDecoder();
  let buffer = '';
  let name = 'message';
  let data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, end).replace(/\r$/, '');
      buffer = buffer.slice(end + 1);
      if (line === '') {
        if (data.length) onEvent(name, data.join('\n'));
        name = 'message';
        data = [];
      } else if (line.startsWith('event:')) name = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
  }
}

// ---------- routing ----------

const pages = { overview: overviewPage, tasks: tasksPage, task: taskPage, push: pushPage, agents: agentsPage };

function route() {
  if (!token) return;
  const [name, ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  const page = pages[name] ? name : 'overview';
  for (const link of document.querySelectorAll('nav a')) {
    link.classList.toggle('active', link.id === 'nav-' + (page === 'task' ? 'tasks' : page));
  }
  clearInterval(current.timer);
  current = { page, refresh: null, onFeed: null };
  // Each visit draws into a container of its own. A load the page before left running (a
  // timer, a throttled reload, a fetch in flight) then draws into a detached container,
  // never over the page now shown (the console test saw the push page come back over a
  // task's page that way).
  const root = el('div', {});
  $('page').replaceChildren(root);
  pages[page](root, rest.map(decodeURIComponent)).catch((e) => root.append(el('p', { class: 'error' }, e.message)));
}

/** Calls `fn` at most once per `ms`, trailing. */
function throttle(fn, ms) {
  let timer = null;
  return () => {
    if (timer) return;
    timer = setTimeout(() => { timer = null; fn(); }, ms);
  };
}

// ---------- Overview ----------

async function overviewPage(root) {
  const grid = el('div', { class: 'grid', id: 'overview' });
  const drawn = el('div', { class: 'charts', id: 'charts' });
  const tenants = el('tbody');
  root.append(
    el('h1', {}, 'Overview'),
    grid,
    el('h2', {}, 'The last hour'),
    drawn,
    el('h2', {}, 'Tasks per tenant'),
    el('table', { id: 'tenants' }, el('thead', {}, el('tr', {}, el('th', {}, 'tenant'), el('th', {}, 'tasks'), el('th', {}, 'by state'))), tenants),
  );
  const load = async () => {
    const [s] = await Promise.all([api('/status'), loadSeries()]);
    drawn.replaceChildren(...charts(series));
    const now = Date.now();
    const requests = Object.values(s.requests).reduce((a, b) => a + b, 0);
    const turns = (s.requests.SendMessage || 0) + (s.requests.SendStreamingMessage || 0);
    const seconds = (now - lastRates.at) / 1000;
    const rate = (n, before) => (lastRates.at && seconds > 0 ? ((n - before) / seconds).toFixed(1) : '…');
    const figures = [
      ['health', s.health], ['version', s.version], ['uptime', ago(s.uptimeSeconds)],
      ['requests/s', rate(requests, lastRates.requests)], ['turns/s', rate(turns, lastRates.turns)],
      ['running turns', s.runningTurns], ['live contexts', s.liveContexts], ['open streams', s.openStreams],
      ['push queue', s.pushQueueDepth === null ? 'off' : s.pushQueueDepth], ['dead letters', s.deadLetters],
      ['tasks', s.store.totalTasks], ['events', s.store.events], ['store', (s.store.storeBytes / 1048576).toFixed(1) + ' MiB'],
      ['agents', s.agents.join(', ')],
    ];
    Object.assign(lastRates, { at: now, requests, turns });
    // The failures of the last hour, from the samples, linked to the list of them.
    const hourAgo = now - 3600 * 1000;
    const failed = series.samples.filter((x) => x.atMs >= hourAgo).reduce((a, x) => a + x.turnsFailed, 0);
    const failures = el('a', { class: 'figure failures', id: 'failures', href: '#/tasks/' + encodeURIComponent('state=failed&since=' + hourAgo) },
      el('span', { class: 'value' }, failed), el('span', { class: 'label' }, 'failed, last hour'));
    grid.replaceChildren(...figures.map(([label, value]) =>
      el('div', { class: 'figure', 'data-figure': label }, el('span', { class: 'value' }, value), el('span', { class: 'label' }, label))), failures);
    tenants.replaceChildren(...Object.entries(s.store.tasks).map(([tenant, states]) => el('tr', {},
      el('td', {}, el('a', { href: '#/tasks/' + encodeURIComponent('tenant=' + tenant) }, tenant || '(default)')),
      el('td', {}, Object.values(states).reduce((a, b) => a + b, 0)),
      el('td', {}, Object.entries(states).map(([state, n]) => el('span', { class: 'pair' }, stateBadge(state), ' ' + n))))));
  };
  current.refresh = load;
  current.onFeed = throttle(load, 1000);
  current.timer = setInterval(() => load().catch(() => {}), 3000);
  await load();
}

/** Adds the samples newer than those held, and forgets those older than an hour. */
async function loadSeries() {
  const held = series.samples;
  const newest = held.length ? held[held.length - 1].atMs : 0;
  const fresh = await api('/series' + (newest ? '?since=' + newest : ''));
  const hour = Date.now() - 3600 * 1000;
  series = { intervalSeconds: fresh.intervalSeconds, samples: held.concat(fresh.samples).filter((x) => x.atMs >= hour) };
}

// ---------- Tasks ----------

const STATES = ['', 'submitted', 'working', 'input-required', 'auth-required', 'completed', 'canceled', 'failed', 'rejected'];

/** The Tasks page's filter form. Tenant and agent: typed, or picked from the node's known
 * values (a <datalist>, filled from GET /tasks/facets once it answers; typing still works
 * without it); the state, a drop-down. */
function taskFilters(query) {
  const field = (name, label, list) => el('label', {}, label, el('input', { name, value: query.get(name) || '', size: 14, list, autocomplete: 'off' }));
  const known = { tenant: el('datalist', { id: 'known-tenants' }), agent: el('datalist', { id: 'known-agents' }) };
  const chosen = query.get('state') || '';
  const state = el('select', { name: 'state', id: 'state-filter' }, STATES.map((s) => el('option', { value: s, selected: s === chosen }, s || 'any state')));
  api('/tasks/facets').then((f) => {
    known.tenant.replaceChildren(...f.tenants.filter(Boolean).map((t) => el('option', { value: t })));
    known.agent.replaceChildren(...f.agents.map((a) => el('option', { value: a })));
    state.replaceChildren(el('option', { value: '' }, 'any state'), ...f.states.map((s) => el('option', { value: s, selected: s === chosen }, s)));
  }).catch(() => {});
  return el('form', { class: 'filters', id: 'filters' },
    el('label', {}, 'search', el('input', { name: 'q', id: 'search', type: 'search', value: query.get('q') || '', size: 22, placeholder: 'id, tenant, agent, text' })),
    field('tenant', 'tenant', 'known-tenants'), el('label', {}, 'state', state), field('contextId', 'context'), field('agent', 'agent', 'known-agents'),
    known.tenant, known.agent, el('button', { type: 'submit' }, 'Filter'));
}

async function tasksPage(root, rest) {
  const query = new URLSearchParams(rest[0] || '');
  const form = taskFilters(query);
  const rows = el('tbody', { id: 'task-rows' });
  const more = el('div', { class: 'pager' });
  root.append(el('h1', {}, 'Tasks'), form,
    el('table', { id: 'tasks' }, el('thead', {}, el('tr', {}, ['updated', 'tenant', 'state', 'agent', 'task', 'last message'].map((h) => el('th', {}, h)))), rows),
    more);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    for (const [key, value] of new FormData(form)) if (value) chosen.set(key, value);
    location.hash = '#/tasks/' + encodeURIComponent(chosen.toString());
  });
  const row = (t) => el('tr', { 'data-task': t.id, class: ['failed', 'rejected'].includes(t.state) ? 'row-failed' : null },
    el('td', {}, when(t.updatedMs)), el('td', {}, t.tenant || '(default)'), el('td', { class: 'task-state' }, stateBadge(t.state)),
    el('td', {}, t.agent), el('td', {}, taskLink(t.id)),
    el('td', { class: t.error ? 'preview failure' : 'preview' }, t.error
      ? [el('span', { class: 'task-error' }, t.error), t.correlationId ? el('div', { class: 'correlation mono' }, 'correlation ' + t.correlationId) : '']
      : t.preview));
  const load = async (pageToken) => {
    const params = new URLSearchParams(query);
    if (pageToken) params.set('pageToken', pageToken);
    const list = await api('/tasks?' + params.toString());
    rows.replaceChildren(...list.tasks.map(row));
    if (!list.tasks.length) rows.append(el('tr', {}, el('td', { colspan: 6, class: 'empty' }, 'No task matches.')));
    more.replaceChildren(
      pageToken ? el('button', { type: 'button', onclick: () => load(null) }, 'First page') : '',
      list.nextPageToken ? el('button', { type: 'button', id: 'next-page', onclick: () => load(list.nextPageToken) }, 'Next page') : '');
    current.firstPage = !pageToken;
  };
  const matches = (item) => !query.get('q') && ['tenant', 'contextId', 'agent', 'state'].every((key) => {
    const wanted = query.get(key);
    const have = key === 'contextId' ? item.contextId : item[key];
    return !wanted || wanted === have;
  });
  current.refresh = () => load(null);
  current.onFeed = (item) => {
    const existing = rows.querySelector('tr[data-task="' + CSS.escape(item.taskId) + '"]');
    if (existing) {
      existing.querySelector('.task-state').replaceChildren(stateBadge(item.state));
      existing.classList.add('flash');
    } else if (current.firstPage && matches(item)) {
      const empty = rows.querySelector('.empty');
      if (empty) empty.parentElement.remove();
      const preview = previewOf(item.event);
      rows.prepend(row({ id: item.taskId, tenant: item.tenant, state: item.state, agent: item.agent, updatedMs: Date.now(), preview }));
    }
  };
  await load(null);
}

/** The text of a feed event's message, if it carries one. */
function previewOf(event) {
  const message = (event.task && (event.task.status.message || (event.task.history || []).slice(-1)[0]))
    || (event.statusUpdate && event.statusUpdate.status.message) || event.message;
  return message ? textOf(message.parts) : '';
}

function textOf(parts) {
  return (parts || []).filter((p) => typeof p.text === 'string').map((p) => p.text).join(' ');
}

// ---------- Task ----------

async function taskPage(root, rest) {
  const id = rest[0];
  // One button for the page's life: the page re-renders on each of the task's events, and
  // a button replaced under the pointer loses the click.
  const cancel = el('button', { type: 'button', id: 'cancel', class: 'danger', onclick: () => cancelTask(id, load) }, 'Cancel task');
  const load = async () => {
    const d = await api('/tasks/' + encodeURIComponent(id));
    const t = d.task;
    const state = t.status.state.replace(/^TASK_STATE_/, '').toLowerCase().replace(/_/g, '-');
    const ended = ['completed', 'canceled', 'failed', 'rejected'].includes(state);
    const took = taskDuration(t, d.events, ended);
    root.replaceChildren(
      el('h1', {}, 'Task ', el('span', { class: 'mono' }, t.id), ' ', el('span', { id: 'task-state' }, stateBadge(state))),
      el('p', { class: 'meta' }, 'tenant ', el('b', {}, d.tenant || '(default)'), ' · principal ', el('b', {}, d.principal || '-'), ' · agent ', el('b', {}, d.agent),
        ' · context ', el('span', { class: 'mono' }, t.contextId), ' · ', d.events.length + ' event(s) · updated ' + (t.status.timestamp || '-'),
        took ? [' · ', took.ended ? 'took ' : 'running for ', el('b', { id: 'task-duration' }, duration(took.ms))] : ''),
      ended ? '' : cancel,
      el('div', { class: 'columns' },
        el('section', {}, el('h2', {}, 'Conversation'), conversation(t)),
        el('section', {}, el('h2', {}, 'Timeline'), timeline(d.events))),
      el('h2', {}, 'Artifacts'), artifacts(t.id, t.artifacts || [], d.artifactSizes),
      el('h2', {}, 'Push'), pushOfTask(d.pushConfigs, d.deadDeliveries, d.deliveries || []));
  };
  current.refresh = load;
  // At most one reload per half second, however chatty the task (one throttle for the
  // page: a throttle made per event throttles nothing).
  const reload = throttle(load, 500);
  current.onFeed = (item) => { if (item.taskId === id) reload(); };
  await load();
}

function pushOfTask(configs, dead, attempts) {
  return el('div', {},
    configs.length
      ? el('ul', {}, configs.map((c) => el('li', {}, el('span', { class: 'mono' }, c.id), ' → ', el('span', { class: 'mono' }, c.url),
        c.hasToken ? ' (token set)' : '', c.authScheme ? ' (' + c.authScheme + ')' : '')))
      : el('p', { class: 'empty' }, 'No push config.'),
    attempts.length ? attemptTable(attempts) : '',
    dead.length ? deadTable(dead) : '');
}

/** Each delivery attempt of a task (kept in memory since the node started), oldest first. */
function attemptTable(attempts) {
  return el('table', { id: 'attempts' },
    el('caption', {}, 'Delivery attempts, since the node started'),
    el('thead', {}, el('tr', {}, ['when', 'config', 'event', 'attempt', 'outcome', 'detail'].map((h) => el('th', {}, h)))),
    el('tbody', {}, attempts.map((a) => el('tr', { class: 'attempt-' + a.outcome },
      el('td', {}, when(a.atMs)), el('td', { class: 'mono' }, a.configId), el('td', {}, a.eventId), el('td', {}, a.attempt),
      el('td', {}, a.outcome), el('td', {}, a.detail || '')))));
}

async function cancelTask(id, reload) {
  try {
    await api('/tasks/' + encodeURIComponent(id) + '/cancel', { body: {} });
    toast('Task canceled.');
  } catch (e) {
    toast('Cancel refused: ' + e.message, true);
  }
  await reload();
}

// ---------- Push ----------

/** Dead letters, each marked as dead, with the receiver's host (the URL's path and query
 * may hold a secret: the API never gives them) and the last response's status. */
function deadTable(dead, onAction) {
  return el('table', { id: 'dead' },
    el('thead', {}, el('tr', {}, ['job', 'task', 'receiver', 'response', 'attempts', 'died', 'reason', ''].map((h) => el('th', {}, h)))),
    el('tbody', {}, dead.map((d) => el('tr', { 'data-job': d.id, class: 'row-dead' },
      el('td', { class: 'mono' }, el('span', { class: 'dead-mark', title: 'dead letter' }, '✕ dead'), ' ', d.id),
      el('td', {}, taskLink(d.taskId)), el('td', { class: 'dead-host mono' }, d.host || '-'),
      el('td', { class: 'dead-status' }, d.lastStatus ? d.lastStatus + (d.lastStatusText ? ' ' + d.lastStatusText : '') : 'no response'),
      el('td', {}, d.attempts), el('td', {}, when(d.diedMs)),
      el('td', { class: 'dead-reason' }, d.reason),
      el('td', {}, onAction ? [
        el('button', { type: 'button', class: 'retry', onclick: () => onAction('retry', { id: d.id }) }, 'Retry'),
        el('button', { type: 'button', class: 'purge danger', onclick: () => onAction('purge', { id: d.id }) }, 'Purge'),
      ] : '')))));
}

async function pushPage(root) {
  const load = async () => {
    const [status, list] = await Promise.all([api('/status'), api('/push/dead').catch((e) => ({ error: e }))]);
    if (list.error) {
      root.replaceChildren(el('h1', {}, 'Push'), el('p', { class: 'empty' }, list.error.message));
      return;
    }
    let armed = false;
    const purgeAll = el('button', { type: 'button', class: 'danger', id: 'purge-all' }, 'Purge all');
    purgeAll.addEventListener('click', () => {
      if (!armed) { armed = true; purgeAll.textContent = 'Click again to purge every dead letter'; return; }
      act('purge', { all: true });
    });
    root.replaceChildren(
      el('h1', {}, 'Push'),
      el('div', { class: 'grid' },
        el('div', { class: 'figure' }, el('span', { class: 'value', id: 'queue-depth' }, status.pushQueueDepth), el('span', { class: 'label' }, 'queued')),
        el('div', { class: 'figure' }, el('span', { class: 'value', id: 'dead-count' }, list.dead.length), el('span', { class: 'label' }, 'dead letters'))),
      el('h2', {}, 'Dead letters'),
      list.dead.length ? el('p', {}, el('button', { type: 'button', id: 'retry-all', onclick: () => act('retry', { all: true }) }, 'Retry all'), ' ', purgeAll) : '',
      list.dead.length ? deadTable(list.dead, act) : el('p', { class: 'empty', id: 'no-dead' }, 'No dead letter.'));
  };
  const act = async (action, selection) => {
    try {
      const moved = await api('/push/dead/' + action, { body: selection });
      toast((action === 'retry' ? 'Queued again: ' : 'Purged: ') + moved.count + ' job(s).');
    } catch (e) {
      toast(action + ' refused: ' + e.message, true);
    }
    await load();
  };
  current.refresh = load;
  current.timer = setInterval(() => load().catch(() => {}), 3000);
  await load();
}

// ---------- Agents ----------

async function agentsPage(root) {
  const a = await api('/agents');
  const settings = Object.fromEntries((a.settings || []).map((s) => [s.id, s]));
  root.replaceChildren(el('h1', {}, 'Agents'), el('div', { class: 'cards', id: 'agents' }, (a.skills || []).map((skill) => {
    const running = a.running[skill.id] || [];
    return el('article', { class: 'card', 'data-skill': skill.id },
      el('h2', {}, skill.name, ' ', el('span', { class: 'mono' }, skill.id)),
      el('p', {}, skill.description),
      el('p', {}, (skill.tags || []).map((tag) => el('span', { class: 'tag' }, tag))),
      el('p', {}, el('b', {}, running.length + ' running')),
      running.length ? el('ul', { class: 'running' }, running.map((id) => el('li', {}, taskLink(id)))) : '',
      el('details', {}, el('summary', {}, 'settings'), el('pre', { class: 'json' }, JSON.stringify(settings[skill.id] || {}, null, 2))));
  })));
  current.refresh = () => agentsPage(root);
}

// ---------- start ----------

document.addEventListener('DOMContentLoaded', () => {
  $('sign-in').addEventListener('submit', signIn);
  $('sign-out').addEventListener('click', () => signOut());
  const kept = sessionStorage.getItem(KEPT_TOKEN);
  if (kept) signInWith(kept, true);
  window.addEventListener('hashchange', route);
  document.addEventListener('keydown', (event) => {
    const typing = /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName);
    if (!token || typing || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = { o: '#/overview', t: '#/tasks', p: '#/push', a: '#/agents' }[event.key];
    if (target) location.hash = target;
    if (event.key === 'r' && current.refresh) current.refresh();
  });
});
