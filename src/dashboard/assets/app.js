// idlepool dashboard: a small single-page app over the coordinator's HTTP API (/api/v1, see the
// README "HTTP API"). No framework, no external files: it is served from the coordinator binary.
// Every value from the API is put into the page as text (never as HTML); the timeline SVG is
// rendered and escaped by the coordinator and parsed as XML here, with scripts stripped.
'use strict';

const $main = document.getElementById('main');
const $live = document.getElementById('live');

// ---- helpers -------------------------------------------------------------------------------
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return e;
}
function fmtBytes(b) {
  if (b === null || b === undefined) return '-';
  const u = ['B', 'kB', 'MB', 'GB', 'TB']; let i = 0; let x = Number(b);
  while (x >= 1000 && i < u.length - 1) { x /= 1000; i++; }
  return (i ? x.toPrecision(3) : String(x)) + ' ' + u[i];
}
function fmtRate(b) { return b ? fmtBytes(b) + '/s' : '-'; }
function fmtDur(s) {
  if (s === null || s === undefined || !isFinite(s)) return '-';
  s = Math.max(0, Math.round(s));
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm' + (s % 60 ? String(s % 60).padStart(2, '0') + 's' : '');
  if (s < 86400) return Math.floor(s / 3600) + 'h' + String(Math.floor(s % 3600 / 60)).padStart(2, '0') + 'm';
  return Math.floor(s / 86400) + 'd' + Math.floor(s % 86400 / 3600) + 'h';
}
function fmtTime(ms) { return ms ? new Date(Number(ms)).toLocaleString() : '-'; }
function badge(cls, text, title) { return el('span', { class: 'badge ' + cls, title }, text); }

class Unauthorized extends Error {}
async function api(path, asText) {
  const r = await fetch(path, { credentials: 'same-origin', headers: { Accept: asText ? 'image/svg+xml' : 'application/json' } });
  if (r.status === 401) throw new Unauthorized('unauthorized');
  if (!r.ok) {
    let msg = r.status + ' ' + r.statusText;
    try { const j = await r.json(); if (j.error) msg = j.error; } catch (_) { /* not JSON */ }
    throw new Error(msg);
  }
  return asText ? r.text() : r.json();
}

// ---- pieces --------------------------------------------------------------------------------
function progressBar(j) {
  const t = Math.max(1, j.tasks);
  const seg = (cls, n, what) => n > 0 ? el('span', { class: cls, style: `width:${(100 * n / t).toFixed(2)}%`, title: `${n} ${what}` }) : null;
  return el('div', { class: 'bar', role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': j.tasks, 'aria-valuenow': j.succeeded },
    seg('ok', j.succeeded, 'succeeded'), seg('run', j.running, 'running'), seg('fail', j.failed, 'failed'));
}
// Seconds left: the prediction when there is one, else the rate of tasks done so far.
function eta(j, nowMs) {
  if (j.state !== 'running') return null;
  const elapsed = (nowMs - j.submitted_ms) / 1000;
  if (j.prediction && isFinite(j.prediction.makespan_s)) return Math.max(0, j.prediction.makespan_s - elapsed);
  if (j.succeeded > 0 && elapsed > 0) return (j.tasks - j.succeeded - j.failed - j.cancelled) * elapsed / j.succeeded;
  return null;
}
function jobRow(j, nowMs) {
  const e = eta(j, nowMs);
  const done = j.succeeded + j.failed + j.cancelled;
  const b = j.transfer || {};
  return el('tr', { 'data-job': j.job },
    el('td', {}, el('a', { href: '#/jobs/' + j.job }, String(j.job))),
    el('td', {}, el('a', { href: '#/jobs/' + j.job }, j.name)),
    el('td', {}, badge('s-' + j.state, j.state)),
    el('td', {}, progressBar(j)),
    el('td', { class: 'num' }, `${done}/${j.tasks}`),
    el('td', { class: 'num' }, e === null ? '-' : fmtDur(e)),
    el('td', { class: 'num' }, String(j.attempts)),
    el('td', { class: 'num' }, String(j.failures)),
    el('td', { class: 'num' }, String(j.preemptions)),
    el('td', { class: 'num' }, String(j.suspensions)),
    el('td', { class: 'num' }, fmtDur(j.lost_seconds)),
    el('td', { class: 'num', title: `inputs ${fmtBytes(b.input_bytes)} (cached ${fmtBytes(b.cached_bytes)}), from peers ${fmtBytes(b.peer_bytes)}` },
      fmtBytes((b.coordinator_bytes || 0) + (b.peer_bytes || 0) + (b.output_bytes || 0))));
}
function jobsTable(jobs, nowMs) {
  return el('table', { id: 'jobs' },
    el('thead', {}, el('tr', {}, ['Job', 'Name', 'State', 'Progress', 'Done', 'ETA', 'Attempts', 'Failures', 'Preemptions', 'Suspensions', 'Lost work', 'Bytes moved']
      .map((h, i) => el('th', { class: i >= 4 ? 'num' : null }, h)))),
    el('tbody', {}, jobs.length ? jobs.map(j => jobRow(j, nowMs)) : el('tr', {}, el('td', { colspan: 12, class: 'muted' }, 'No jobs yet: idlepool submit JOB.toml'))));
}
function sensorsText(s) {
  if (!s) return { temp: '-', batt: '-' };
  const temp = s.temperature_c !== undefined && s.temperature_c !== null ? s.temperature_c.toFixed(0) + ' °C' : '-';
  let batt = '-';
  if (s.battery_percent !== undefined && s.battery_percent !== null) batt = s.battery_percent.toFixed(0) + '%';
  if (s.on_ac_power === false) batt = (batt === '-' ? '' : batt + ' ') + 'on battery';
  else if (s.on_ac_power === true && batt !== '-') batt += ' (AC)';
  return { temp, batt };
}
function workersTable(workers) {
  return el('table', { id: 'workers' },
    el('thead', {}, el('tr', {}, ['Worker', 'State', 'Slots', 'Temp', 'Battery', 'Link', 'CPU', 'GPUs', 'Up', 'Why']
      .map(h => el('th', {}, h)))),
    el('tbody', {}, workers.length ? workers.map(w => {
      const act = w.activity || w.state;
      const s = sensorsText(w.sensors);
      const link = w.link ? `${w.link.rtt_ms.toPrecision(2)} ms, ${fmtRate(w.link.down_bytes_per_s)}↓ ${fmtRate(w.link.up_bytes_per_s)}↑` : '-';
      const a = w.availability || {};
      return el('tr', { 'data-worker': w.worker, 'data-activity': act },
        el('td', { title: w.hostname }, w.worker),
        el('td', {}, badge('a-' + act, act.replace('_', ' '), w.owner_reason || '')),
        el('td', { class: 'num' }, `${w.slots_busy}/${w.slots}`),
        el('td', { class: 'num' }, s.temp),
        el('td', {}, s.batt),
        el('td', {}, link),
        el('td', { class: 'num', title: 'SHA-256 MB/s per core' }, w.cpu_score ? `${w.cores || '?'} × ${w.cpu_score.toFixed(0)}` : '-'),
        el('td', { class: 'num' }, String(w.gpus || 0)),
        el('td', { class: 'num' }, a.observed_s ? (100 * a.up_fraction).toFixed(0) + '%' : '-'),
        el('td', { class: 'muted' }, w.owner_reason || ''));
    }) : el('tr', {}, el('td', { colspan: 10, class: 'muted' }, 'No workers: idlepool worker --coordinator HOST:PORT'))));
}
function card(label, value, id) { return el('div', { class: 'card', id }, el('b', {}, String(value)), label); }

// ---- pages ---------------------------------------------------------------------------------
async function pagePool() {
  const [w, j] = await Promise.all([api('/api/v1/workers'), api('/api/v1/jobs')]);
  const now = Date.now();
  const workers = w.workers || [];
  const counts = {};
  for (const x of workers) { const a = x.activity || x.state; counts[a] = (counts[a] || 0) + 1; }
  const slots = workers.filter(x => x.state === 'connected').reduce((n, x) => n + x.slots, 0);
  const busy = workers.reduce((n, x) => n + x.slots_busy, 0);
  const running = (j.jobs || []).filter(x => x.state === 'running');
  return [el('h1', {}, 'Pool'),
    el('div', { class: 'cards' }, card('workers', workers.length, 'card-workers'), card('slots busy', `${busy}/${slots}`, 'card-slots'),
      card('jobs running', running.length, 'card-jobs'),
      ...Object.entries(counts).sort().map(([k, v]) => card(k.replace('_', ' '), v))),
    workersTable(workers),
    el('h2', {}, 'Running jobs'), jobsTable(running, now)];
}
async function pageJobs() {
  const j = await api('/api/v1/jobs');
  const jobs = (j.jobs || []).slice().sort((a, b) => b.job - a.job);
  return [el('h1', {}, 'Jobs'), jobsTable(jobs, Date.now())];
}
function inlineSvg(text) {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  const svg = doc.documentElement;
  if (!svg || svg.nodeName !== 'svg') return el('p', { class: 'error' }, 'timeline could not be read');
  for (const s of svg.querySelectorAll('script, foreignObject')) s.remove();
  return document.importNode(svg, true);
}
const TASK_ROWS = 1000;  // a job of 100k tasks: the table shows the first tasks with trouble first
async function pageJob(id) {
  const [t, svg] = await Promise.all([api(`/api/v1/jobs/${id}/timeline`), api(`/api/v1/jobs/${id}/timeline.svg`, true)]);
  const j = t.job;
  const nowMs = t.now_ms || Date.now();
  const e = eta(j, nowMs);
  const makespan = j.finished_ms ? (j.finished_ms - j.submitted_ms) / 1000 : (nowMs - j.submitted_ms) / 1000;
  const out = [el('h1', {}, `Job ${j.job}: `, j.name, ' ', badge('s-' + j.state, j.state)),
    el('div', { class: 'cards' },
      card('tasks done', `${j.succeeded + j.failed + j.cancelled}/${j.tasks}`, 'card-done'),
      card(j.finished_ms ? 'makespan' : 'elapsed', fmtDur(makespan)),
      card('ETA', e === null ? '-' : fmtDur(e)),
      card('predicted', j.prediction ? fmtDur(j.prediction.makespan_s) : '-'),
      card('attempts', j.attempts, 'card-attempts'), card('failures', j.failures), card('preemptions', j.preemptions, 'card-preemptions'),
      card('suspensions', j.suspensions), card('lost work', fmtDur(j.lost_seconds)),
      card('bytes moved', fmtBytes((j.transfer.coordinator_bytes || 0) + (j.transfer.peer_bytes || 0) + (j.transfer.output_bytes || 0)))),
    progressBar(j),
    el('h2', {}, 'Timeline'),
    el('div', { class: 'timeline', id: 'timeline' }, inlineSvg(svg)),
    t.truncated ? el('p', { class: 'muted' }, 'Only the newest attempts are shown.') : null];
  // Task table: one row per attempt, grouped by task; tasks with failures or preemptions first.
  const byTask = new Map();
  for (const a of t.attempts || []) { if (!byTask.has(a.task)) byTask.set(a.task, []); byTask.get(a.task).push(a); }
  const trouble = a => a.some(x => x.outcome !== 'succeeded' && x.outcome !== 'running') ? 0 : 1;
  const tasks = [...byTask.entries()].sort((x, y) => trouble(x[1]) - trouble(y[1]) || x[0] - y[0]);
  const rows = [];
  for (const [task, atts] of tasks.slice(0, TASK_ROWS)) {
    atts.forEach((a, i) => {
      const dur = ((a.ended_ms || nowMs) - a.started_ms) / 1000;
      rows.push(el('tr', { 'data-attempt': a.attempt },
        el('td', { class: 'num' }, i === 0 ? String(task) : ''),
        el('td', { class: 'num' }, String(a.attempt)),
        el('td', {}, a.worker),
        el('td', {}, badge('s-' + (a.outcome === 'succeeded' ? 'succeeded' : a.outcome === 'running' ? 'running' : a.outcome === 'failed' || a.outcome === 'timed_out' ? 'failed' : 'cancelled'), a.outcome)),
        el('td', { class: 'num' }, fmtDur(dur)),
        el('td', { class: 'num' }, a.ended_ms && a.outcome !== 'preempted' && a.outcome !== 'lost' ? String(a.exit_code) : ''),
        el('td', {}, a.message || '', a.log_tail ? el('details', {}, el('summary', {}, 'log tail'), el('pre', { class: 'log' }, a.log_tail)) : null)));
    });
  }
  out.push(el('h2', {}, 'Tasks'),
    el('table', { id: 'tasks' },
      el('thead', {}, el('tr', {}, ['Task', 'Attempt', 'Worker', 'Outcome', 'Time', 'Exit', 'Message / log'].map(h => el('th', {}, h)))),
      el('tbody', {}, rows)),
    tasks.length > TASK_ROWS ? el('p', { class: 'muted' }, `${tasks.length - TASK_ROWS} more tasks not shown (idlepool report ${j.job} --out FILE.html has them all).`) : null);
  return out;
}

// ---- routing and live updates ---------------------------------------------------------------
let rendering = false, again = false;
async function render() {
  if (rendering) { again = true; return; }
  rendering = true;
  try {
    const h = location.hash || '#/';
    let m;
    document.getElementById('nav-pool').classList.toggle('active', h === '#/');
    document.getElementById('nav-jobs').classList.toggle('active', h.startsWith('#/jobs'));
    let nodes;
    if ((m = h.match(/^#\/jobs\/(\d+)$/))) nodes = await pageJob(m[1]);
    else if (h === '#/jobs') nodes = await pageJobs();
    else nodes = await pagePool();
    const openLogs = new Set([...$main.querySelectorAll('tr[data-attempt] details[open]')].map(d => d.closest('tr').dataset.attempt));
    $main.replaceChildren(...nodes.filter(Boolean));
    for (const id of openLogs) { const d = $main.querySelector(`tr[data-attempt="${CSS.escape(id)}"] details`); if (d) d.open = true; }
    document.body.dataset.rendered = String(Number(document.body.dataset.rendered || 0) + 1);
  } catch (e) {
    if (e instanceof Unauthorized) {
      $main.replaceChildren(el('h1', {}, 'Not signed in'),
        el('p', {}, 'Open the dashboard link the coordinator printed (it ends in /login?token=…), or use the pool token in DATA_DIR/pool.token: ',
          el('code', {}, location.origin + '/login?token=TOKEN')));
      document.body.dataset.unauthorized = '1';
    } else {
      $main.replaceChildren(el('p', { class: 'error' }, 'Could not load: ' + e.message));
    }
  } finally {
    rendering = false;
    if (again) { again = false; render(); }
  }
}
let timer = null;
function soon() { if (!timer) timer = setTimeout(() => { timer = null; render(); }, 150); }
function connect() {
  const es = new EventSource('/api/v1/events');
  es.addEventListener('open', () => { $live.textContent = 'live'; $live.className = 'live on'; });
  es.addEventListener('change', soon);
  es.addEventListener('error', () => { $live.textContent = 'reconnecting…'; $live.className = 'live off'; });
}
window.addEventListener('hashchange', render);
render();
connect();
// Running jobs' ETA and elapsed times move without events: refresh every 10 s as well.
setInterval(() => { if (!document.hidden) soon(); }, 10000);
