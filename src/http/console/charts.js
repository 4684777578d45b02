// The Overview's charts: the samples of GET /admin/v1/series drawn as small inline SVG
// line charts. Built with createElementNS and attributes only (no style attribute, no
// markup parsed), so they run under the console's strict policy; colours are app.css's.
'use strict';

const SVG_NS = 'http://www.w3.org/2000/svg';
const CHART = { width: 260, height: 64, pad: 2 };

/** What each chart draws: its title, its unit, and one line per value a sample gives. */
const CHARTS = [
  { id: 'requests', title: 'requests/s', lines: [['all', (s) => sum(Object.values(s.requests)) / 10]] },
  { id: 'turns', title: 'turns per 10 s', lines: [['started', (s) => s.turnsStarted], ['completed', (s) => s.turnsCompleted], ['failed', (s) => s.turnsFailed]] },
  { id: 'latency', title: 'turn time, ms', lines: [['p50', (s) => s.turnP50Ms], ['p99', (s) => s.turnP99Ms]] },
  { id: 'streams', title: 'open streams', lines: [['open', (s) => s.openStreams]] },
  { id: 'push', title: 'push per 10 s', lines: [['delivered', (s) => s.pushDelivered], ['retries', (s) => s.pushRetries], ['dead letters', (s) => s.deadLetters]] },
  { id: 'queue', title: 'push queue', lines: [['depth', (s) => s.queueDepth]] },
];

function sum(values) {
  return values.reduce((a, b) => a + (b || 0), 0);
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

/** One chart of `samples` (oldest first, `intervalMs` apart), as a <figure>. */
function chart(spec, samples, intervalMs) {
  const values = spec.lines.map(([, read]) => samples.map((s) => { const v = read(s); return typeof v === 'number' ? v : null; }));
  const peak = Math.max(0, ...values.flat().filter((v) => v !== null));
  const { width, height, pad } = CHART;
  const end = samples.length ? samples[samples.length - 1].atMs : Date.now();
  const span = 360 * intervalMs;
  const x = (at) => (pad + (width - 2 * pad) * (1 - (end - at) / span)).toFixed(1);
  const y = (v) => (height - pad - (height - 2 * pad) * (peak > 0 ? v / peak : 0)).toFixed(1);
  const drawing = svg('svg', { viewBox: '0 0 ' + width + ' ' + height, class: 'spark', role: 'img', 'aria-label': spec.title });
  drawing.append(svg('line', { x1: 0, y1: height - pad, x2: width, y2: height - pad, class: 'axis' }));
  values.forEach((line, i) => {
    const points = line.map((v, j) => (v === null ? null : x(samples[j].atMs) + ',' + y(v))).filter(Boolean);
    if (!points.length) return;
    drawing.append(svg('polyline', { points: points.join(' '), class: 'line line-' + i }));
    // The newest point as a dot: a single sample draws no line.
    const [cx, cy] = points[points.length - 1].split(',');
    drawing.append(svg('circle', { cx, cy, r: 2.5, class: 'dot dot-' + i }));
  });
  const latest = spec.lines.map(([name], i) => {
    const last = values[i].length ? values[i][values[i].length - 1] : null;
    return el('span', { class: 'key key-' + i }, name + ' ' + (last === null ? '-' : Number(last.toFixed(2))));
  });
  return el('figure', { class: 'chart', 'data-chart': spec.id, 'data-samples': samples.length, 'data-peak': peak },
    el('figcaption', {}, el('b', {}, spec.title), ' ', el('span', { class: 'meta' }, 'peak ' + Number(peak.toFixed(2)))),
    drawing, el('div', { class: 'keys' }, latest));
}

/** The charts of the last hour's samples. */
function charts(series) {
  const samples = series.samples || [];
  const intervalMs = (series.intervalSeconds || 10) * 1000;
  if (!samples.length) return [el('p', { class: 'empty', id: 'no-samples' }, 'The first sample comes ' + (intervalMs / 1000) + ' s after start.')];
  return CHARTS.map((spec) => chart(spec, samples, intervalMs));
}
