// idlepool dashboard: a small single-page app over the coordinator's HTTP API (/api/v1, see the
// docs/guide/http-api.md). No framework, no external files: it is served from the coordinator binary.
// Every value from the API is put into the page as text (never as HTML); the timeline SVG is
// rendered and escaped by the coordinator and parsed as XML here, with scripts stripped.
'use strict';

const $main = document.getElementById('main');
const $live = document.getElementById('live');
const $who = document.getElementById('who');
const $logout = document.getElementById('logout');

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
function plural(n, one, many) { return n === 1 ? one : (many || one + 's'); }
// A table in a wrapper that scrolls sideways on narrow screens instead of overflowing the page.
function scroller(table) { return el('div', { class: 'table-wrap' }, table); }

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
// A running job's time left, the same rule as the terminal's (src/cli/progress.h EstimateEta;
// docs/guide/cli.md "Terminal output"): the prediction until a first round of tasks has finished (as many as
// are running, at most 10% of the tasks), its end pushed back by lost work beyond what it
// expected spread over the running tasks, and "overdue" once that end is passed; then the
// observed rate, tasks left × elapsed / tasks finished. {kind: 'rate'|'predicted'|'overdue', s}
// or null.
function eta(j, nowMs) {
  if (j.state !== 'running' || !(j.submitted_ms > 0)) return null;
  const finished = j.succeeded + j.failed + j.cancelled;
  const left = Math.max(0, j.tasks - finished);
  const elapsed = (nowMs - j.submitted_ms) / 1000;
  const round = Math.max(1, Math.min(Math.ceil(j.tasks / 10), j.running));
  const p = j.prediction;
  const predicted = !!p && typeof p.makespan_s === 'number' && isFinite(p.makespan_s) && p.makespan_s > 0;
  if (finished > 0 && elapsed > 0 && (finished >= round || !predicted)) return { kind: 'rate', s: left * elapsed / finished };
  if (!predicted) return null;
  const expected = p.pool && typeof p.pool.lost_work_s === 'number' && isFinite(p.pool.lost_work_s) ? p.pool.lost_work_s : 0;
  const extra = Math.max(0, (j.lost_seconds || 0) - expected) / Math.max(1, j.running);
  const ahead = p.makespan_s + extra - elapsed;
  return ahead > 0 ? { kind: 'predicted', s: ahead } : { kind: 'overdue', s: -ahead };
}
function etaText(e) { return !e ? '-' : e.kind === 'overdue' ? 'overdue' : fmtDur(e.s); }
function etaTitle(j, e) {
  if (!e) return 'no estimate yet: nothing finished and no prediction';
  if (e.kind === 'rate') return 'from the rate of finished tasks';
  if (e.kind === 'predicted') return "from the job's prediction (until a first round of tasks finished)";
  return `past the predicted makespan ${fmtDur(j.prediction.makespan_s)} by ${fmtDur(e.s)}`;
}
function jobRow(j, nowMs) {
  const e = eta(j, nowMs);
  const done = j.succeeded + j.failed + j.cancelled;
  const b = j.transfer || {};
  return el(
      'tr', {'data-job': j.job}, el('td', {}, el('a', {href: '#/jobs/' + j.job}, String(j.job))),
      el('td', {}, el('a', {href: '#/jobs/' + j.job}, j.name)), el('td', {}, j.user || '-'),
      el('td', {}, badge('s-' + j.state, j.state)), el('td', {}, progressBar(j)),
      el('td', {class: 'num'}, `${done}/${j.tasks}`),
      el('td', {class: 'num eta-' + (e ? e.kind : 'none'), title: etaTitle(j, e)}, etaText(e)),
      el('td', {class: 'num'}, String(j.attempts)), el('td', {class: 'num'}, String(j.failures)),
      el('td', {class: 'num'}, String(j.preemptions)),
      el('td', {class: 'num'}, String(j.suspensions)),
      el('td', {class: 'num'}, fmtDur(j.lost_seconds)),
      el('td', {
        class: 'num',
        title: `inputs ${fmtBytes(b.input_bytes)} (cached ${
            fmtBytes(b.cached_bytes)}), from peers ${fmtBytes(b.peer_bytes)}`
      },
         fmtBytes((b.coordinator_bytes || 0) + (b.peer_bytes || 0) + (b.output_bytes || 0))));
}
function jobsTable(jobs, nowMs, empty) {
  return scroller(
      el('table', {id: 'jobs'},
         el('thead', {},
            el('tr', {},
               [
                 'Job', 'Name', 'User', 'State', 'Progress', 'Done', 'ETA', 'Attempts', 'Failures',
                 'Preemptions', 'Suspensions', 'Lost work', 'Bytes moved'
               ].map((h, i) => el('th', {class: i >= 5 ? 'num' : null}, h)))),
         el('tbody', {},
            jobs.length ? jobs.map(j => jobRow(j, nowMs)) :
                          el('tr', {},
                             el('td', {colspan: 13, class: 'muted'},
                                empty || 'No jobs yet: idlepool submit JOB.toml')))));
}
// Temperature and battery; '-' for a worker that is not connected (its last readings are stale).
function sensorsText(s, connected) {
  if (!s || !connected) return { temp: '-', batt: '-' };
  const temp = s.temperature_c !== undefined && s.temperature_c !== null ? s.temperature_c.toFixed(0) + ' °C' : '-';
  let batt = '-';
  if (s.battery_percent !== undefined && s.battery_percent !== null) batt = s.battery_percent.toFixed(0) + '%';
  if (s.on_ac_power === false) batt = (batt === '-' ? '' : batt + ' ') + 'on battery';
  else if (s.on_ac_power === true && batt !== '-') batt += ' (AC)';
  return { temp, batt };
}
// Why a worker does no work: the owner policy's reason, only while it stops work (owner_state
// suspend or vacate) on a connected worker; "owner unknown" while it cannot sense its owner;
// an unhealthy worker's failure first.
function whyText(w) {
  if (w.unhealthy) return `${w.unhealthy} (no new work for ${fmtDur(w.unhealthy_s_left || 0)}; idlepool workers reset ${w.worker})`;
  if (w.state !== 'connected' || !w.owner_state || w.owner_state === 'run') return '';
  if (w.owner_state === 'unknown') {
    return w.owner_cause === 'owner_unknown' ? (w.owner_reason || 'owner unknown') : 'owner unknown';
  }
  return w.owner_reason || w.owner_state;
}
// GPUs: busy/total, the hottest device's temperature while connected; each device in the tooltip.
function gpuCell(w, connected) {
  const devs = w.gpu_devices || [];
  if (!devs.length) return el('td', { class: 'num gpus' }, String(w.gpus || 0));
  const busy = devs.filter(g => g.busy).length;
  const temps = devs.map(g => g.temperature_c).filter(t => t !== null && t !== undefined);
  const title = devs.map(g => `${g.index}: ${g.name} (${g.vendor}), ${(g.memory_mb / 1024).toFixed(0)} GiB` +
    (g.apis.length ? `, ${g.apis.join('/')}` : '') + (g.busy ? ', in use' : ', free') +
    (g.unavailable ? `, held: ${g.unavailable.replace('_', ' ')}` : '') +
    (connected && g.temperature_c !== null ? `, ${g.temperature_c.toFixed(0)} °C` : '') +
    (connected && g.utilization !== null ? `, ${(100 * g.utilization).toFixed(0)}% busy` : '')).join('\n');
  const text = `${busy}/${devs.length}` + (connected && temps.length ? ` · ${Math.max(...temps).toFixed(0)} °C` : '');
  return el('td', { class: 'num gpus', title, 'data-gpus': devs.length }, text);
}
function workersTable(workers, leftCount) {
  const num = new Set(['Slots', 'Temp', 'CPU', 'GPUs', 'Up']);
  return scroller(el('table', { id: 'workers' },
    el('thead', {}, el('tr', {}, ['Worker', 'State', 'Slots', 'Temp', 'Battery', 'Link', 'CPU', 'GPUs', 'Sandbox', 'Up', 'Why']
      .map(h => el('th', { class: num.has(h) ? 'num' : null }, h)))),
    el('tbody', {}, workers.length ? workers.map(w => {
      const act = w.activity || w.state;
      const why = whyText(w);
      const s = sensorsText(w.sensors, w.state === 'connected');
      const link = w.link ? `${w.link.rtt_ms.toPrecision(2)} ms, ${fmtRate(w.link.down_bytes_per_s)}↓ ${fmtRate(w.link.up_bytes_per_s)}↑` : '-';
      const a = w.availability || {};
      return el('tr', { 'data-worker': w.worker, 'data-activity': act },
        el('td', { title: w.hostname }, w.worker),
        el('td', {}, badge('a-' + act, act.replace('_', ' '), why || null)),
        el('td', { class: 'num' }, `${w.slots_busy}/${w.slots}`),
        el('td', { class: 'num' }, s.temp),
        el('td', {}, s.batt),
        el('td', {}, link),
        el('td', { class: 'num', title: 'SHA-256 MB/s per core' }, w.cpu_score ? `${w.cores || '?'} × ${w.cpu_score.toFixed(0)}` : '-'),
        gpuCell(w, w.state === 'connected'),
        el('td', { class: 'sandbox', title: w.allow_host_network ? 'host network allowed' : 'host network refused' }, w.sandbox || '-'),
        el('td', { class: 'num' }, a.observed_s ? (100 * a.up_fraction).toFixed(0) + '%' : '-'),
        el('td', { class: 'muted why' }, why));
    }) : el('tr', {}, el('td', { colspan: 11, class: 'muted' },
      leftCount ? 'No workers in the pool now.' : 'No workers: idlepool worker --coordinator HOST:PORT')))));
}
function card(label, value, id, title) { return el('div', { class: 'card', id, title }, el('b', {}, String(value)), label); }
// "3 workers running", "1 worker idle", "2 workers with lid closed".
const ACTIVITY_WORDS = { lid_closed: 'with lid closed', outside_window: 'outside their window', on_battery: 'on battery' };
function activityLabel(a, n) { return plural(n, 'worker') + ' ' + (ACTIVITY_WORDS[a] || a.replace(/_/g, ' ')); }
let showLeft = false;  // the pool page lists workers that left the pool only when asked

// ---- pages ---------------------------------------------------------------------------------
async function pagePool() {
  const [w, j] = await Promise.all([api('/api/v1/workers'), api('/api/v1/jobs')]);
  const now = Date.now();
  const all = w.workers || [];
  const isLeft = x => x.state === 'left' || x.activity === 'left';
  const present = all.filter(x => !isLeft(x));
  const leftCount = all.length - present.length;
  const counts = {};
  for (const x of present) { const a = x.activity || x.state; counts[a] = (counts[a] || 0) + 1; }
  const slots = present.filter(x => x.state === 'connected').reduce((n, x) => n + x.slots, 0);
  const busy = present.reduce((n, x) => n + x.slots_busy, 0);
  const running = (j.jobs || []).filter(x => x.state === 'running');
  const toggle = leftCount ? el('label', { class: 'left-toggle muted', id: 'left-toggle' },
    el('input', { type: 'checkbox', id: 'show-left', checked: showLeft }), ` show ${leftCount} ${plural(leftCount, 'worker')} that left the pool`) : null;
  if (toggle) toggle.querySelector('input').addEventListener('change', e => { showLeft = e.target.checked; render(); });
  return [el('h1', {}, 'Pool'),
    el('div', { class: 'cards' }, card(plural(present.length, 'worker'), present.length, 'card-workers'),
      card('slots busy', `${busy}/${slots}`, 'card-slots'),
      card(plural(running.length, 'job') + ' running', running.length, 'card-jobs'),
      ...Object.entries(counts).sort().map(([k, v]) => card(activityLabel(k, v), v, 'card-a-' + k)),
      leftCount ? card('left', leftCount, 'card-left', 'workers that left the pool (not counted above)') : null),
    workersTable(showLeft ? all : present, leftCount), toggle,
    el('h2', {}, 'Running jobs'), jobsTable(running, now, 'No running jobs')];
}
async function pageJobs() {
  const j = await api('/api/v1/jobs');
  const jobs = (j.jobs || []).slice().sort((a, b) => b.job - a.job);
  return [el('h1', {}, 'Jobs'), jobsTable(jobs, Date.now())];
}
// Services (issue 17): each service's replicas, their worker and state, requests in flight,
// requests per second (from the change since the last look), time to first token and errors.
// Time to first token: the gateway's p50 / p95 over its last 60 s of 2xx answers, from the
// request read to the first byte of the answer's body (a stream's first event); '-' when none.
function ttft(x) {
  if (!x.ttft_answers) return '-';
  const ms = v => v < 10 ? v.toFixed(2) : v.toFixed(0);
  return `${ms(x.ttft_p50_ms)} / ${ms(x.ttft_p95_ms)}`;
}
const lastSeen = new Map();  // attempt -> {requests, at}
function reqRate(r, now) {
  const prev = lastSeen.get(r.attempt);
  lastSeen.set(r.attempt, { requests: r.requests, at: now });
  if (!prev || now <= prev.at || r.requests < prev.requests) return '-';
  return ((r.requests - prev.requests) * 1000 / (now - prev.at)).toFixed(1);
}
async function pageServices() {
  const s = await api('/api/v1/services');
  const now = Date.now();
  const out = [el('h1', {}, 'Services'),
    el('p', { class: 'muted' }, s.gateway ? `Gateway: ${s.gateway}/v1 (OpenAI clients), ${s.gateway}/services/NAME/ (HTTP)` : 'The gateway is off (--serve-listen).')];
  if (!(s.services || []).length) out.push(el('p', { class: 'muted', id: 'no-services' }, 'No services running.'));
  for (const x of s.services || []) {
    const rows = (x.replica_status || []).map(r => el('tr', { 'data-replica': r.replica },
      el('td', { class: 'num' }, String(r.replica)),
      el('td', { class: 'num' }, r.attempt ? String(r.attempt) : '-'),
      el('td', {}, r.worker || '-'),
      el('td', {}, badge('r-' + r.state, r.state)),
      el('td', { class: 'num' }, String(r.in_flight)),
      el('td', { class: 'num' }, String(r.requests)),
      el('td', { class: 'num' }, r.attempt ? reqRate(r, now) : '-'),
      el('td', { class: 'num ttft' }, ttft(r)),
      el('td', { class: 'num' }, String(r.errors)),
      el('td', { class: 'num' }, String(r.attempts))));
    out.push(el('h2', { id: 'service-' + x.job }, `${x.name} `, badge('s-' + x.state, x.state)),
      el('p', { class: 'muted' }, `${x.protocol}${x.model ? ' · model ' + x.model : ''} · ${x.replicas} wanted (${x.min_replicas}–${x.max_replicas}) · queue ${x.queue_length} · ${x.requests} requests · ${x.errors} errors${x.ttft_answers ? ' · time to first token p50 / p95 ' + ttft(x) + ' ms' : ''}`),
      scroller(el('table', { class: 'replicas' },
        el('thead', {}, el('tr', {}, ['Replica', 'Attempt', 'Worker', 'State', 'In flight', 'Requests', 'Req/s', 'TTFT p50 / p95 ms', 'Errors', 'Starts']
          .map(h => el('th', { class: ['Worker', 'State'].includes(h) ? null : 'num' }, h)))),
        el('tbody', {}, rows))));
  }
  return out;
}
// Usage: each user's share, quotas and standing now (decayed usage, slots held), and what the
// pool gave since a day, by user and by lending machine (its lender's credit).
let usageSince = '7d';
function quota(n) { return n ? String(n) : '-'; }
function usageTable(rows, keyName) {
  const hours = s => (s / 3600).toFixed(2);
  return scroller(el('table', { class: 'usage', id: 'usage-by-' + keyName.toLowerCase() },
    el('thead', {}, el('tr', {}, [keyName, 'Slot-hours', 'GPU-hours', 'Attempts', 'Tasks', 'Preempted', 'In', 'Out', 'Requests', 'Tokens']
      .map(h => el('th', { class: h === keyName ? null : 'num' }, h)))),
    el('tbody', {}, rows.map(r => el('tr', { 'data-key': r.key },
      el('td', {}, r.key || '(none)'),
      el('td', { class: 'num' }, hours(r.slot_s)), el('td', { class: 'num' }, hours(r.gpu_s)),
      el('td', { class: 'num' }, String(r.attempts)), el('td', { class: 'num' }, String(r.tasks)),
      el('td', { class: 'num' }, String(r.preempted)),
      el('td', { class: 'num' }, fmtBytes(r.bytes_in)), el('td', { class: 'num' }, fmtBytes(r.bytes_out)),
      el('td', { class: 'num' }, String(r.requests)), el('td', { class: 'num' }, String(r.tokens)))))));
}
async function pageUsage() {
  const q = encodeURIComponent(usageSince);
  const [u, byUser, byWorker] = await Promise.all([api('/api/v1/users'),
    api(`/api/v1/usage?since=${q}&by=user`), api(`/api/v1/usage?since=${q}&by=worker`)]);
  const pick = el('select', { id: 'usage-since' }, ['1d', '7d', '30d', 'all'].map(v =>
    el('option', { value: v, selected: v === usageSince }, v === 'all' ? 'everything kept' : 'the last ' + v)));
  pick.addEventListener('change', () => { usageSince = pick.value; render(); });
  const users = (u.users || []).map(x => el('tr', { 'data-user': x.user },
    el('td', {}, x.user), el('td', { class: 'num' }, String(x.share)),
    el('td', { class: 'num' }, String(x.slots)), el('td', { class: 'num' }, String(x.gpus)),
    el('td', { class: 'num' }, String(x.queued_tasks)),
    el('td', { class: 'num' }, (x.usage_slot_s / 3600).toFixed(2)),
    el('td', { class: 'num' }, quota(x.max_slots)), el('td', { class: 'num' }, quota(x.max_gpus)),
    el('td', { class: 'num' }, quota(x.max_queued_tasks)),
    el('td', { class: 'num' }, x.max_stored_bytes ? fmtBytes(x.max_stored_bytes) : '-'),
    el('td', { class: 'num' }, x.starving_s ? fmtDur(x.starving_s) : '-')));
  return [el('h1', {}, 'Usage'),
    el('p', { class: 'muted' }, `Fair share orders by usage decayed with a half-life of ${fmtDur(u.half_life_s)}; fair preemption ${u.fair_preemption_after_s === null ? 'off' : 'after ' + fmtDur(u.fair_preemption_after_s)}.`),
    scroller(el('table', { class: 'users', id: 'users' },
      el('thead', {}, el('tr', {}, ['User', 'Share', 'Slots', 'GPUs', 'Queued', 'Usage (slot-h, decayed)', 'Max slots', 'Max GPUs', 'Max queued', 'Max stored', 'Below half its share']
        .map(h => el('th', { class: h === 'User' ? null : 'num' }, h)))),
      el('tbody', {}, users))),
    el('h2', {}, 'Since ', pick),
    el('h3', {}, 'By user'), usageTable(byUser.rows || [], 'User'),
    el('h3', {}, 'By lending machine'), usageTable(byWorker.rows || [], 'Worker')];
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
  const out = [
    el('h1', {}, `Job ${j.job}: `, j.name, ' ', badge('s-' + j.state, j.state),
       j.user ? el('span', {class: 'muted'}, ` by ${j.user}`) : null),
    el('div', {class: 'cards'}, card('succeeded', `${j.succeeded}/${j.tasks}`, 'card-succeeded'),
       card('failed', j.failed, 'card-failed'),
       j.cancelled ? card('cancelled', j.cancelled, 'card-cancelled') : null,
       card(j.finished_ms ? 'makespan' : 'elapsed', fmtDur(makespan)),
       card(
           e && e.kind === 'predicted' ? 'ETA (predicted)' : 'ETA', etaText(e), 'card-eta',
           etaTitle(j, e)),
       card('predicted', j.prediction ? fmtDur(j.prediction.makespan_s) : '-'),
       card('attempts', j.attempts, 'card-attempts'), card('failures', j.failures),
       card('preemptions', j.preemptions, 'card-preemptions'), card('suspensions', j.suspensions),
       card('lost work', fmtDur(j.lost_seconds)),
       card(
           'bytes moved',
           fmtBytes(
               (j.transfer.coordinator_bytes || 0) + (j.transfer.peer_bytes || 0) +
               (j.transfer.output_bytes || 0)))),
    progressBar(j),
    // Workers that keep failing this job get none of its tasks while others can run them.
    (j.held_off || []).length ?
        el('p', {class: 'held-off'}, 'Held off: ',
           ...j.held_off.map(
               h =>
                   el('span', {title: h.last_error},
                      `${h.worker} (${h.failures} failed: ${h.last_error}) `))) :
        null,
    el('h2', {}, 'Timeline'), el('div', {class: 'timeline', id: 'timeline'}, inlineSvg(svg)),
    t.truncated ? el('p', {class: 'muted'}, 'Only the newest attempts are shown.') : null
  ];
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
        // The attempt's kept output (stdout and stderr), as text (GET .../attempts/A/log).
        el('td', { class: 'num' }, el('a', { class: 'attempt-log', href: `/api/v1/jobs/${j.job}/attempts/${a.attempt}/log`, target: '_blank', rel: 'noopener', title: 'its output' }, String(a.attempt))),
        el('td', {}, a.worker),
        el('td', {}, badge('s-' + (a.outcome === 'succeeded' ? 'succeeded' : a.outcome === 'running' ? 'running' : a.outcome === 'failed' || a.outcome === 'timed_out' ? 'failed' : 'cancelled'), a.outcome)),
        el('td', { class: 'num' }, fmtDur(dur)),
        // Exit codes only of attempts that exited on their own (not stopped, lost or running).
        el('td', { class: 'num' }, a.outcome === 'succeeded' || a.outcome === 'failed' ? String(a.exit_code) : ''),
        el('td', { class: 'wrap' }, a.message || '', a.log_tail ? el('details', {}, el('summary', {}, 'log tail'), el('pre', { class: 'log' }, a.log_tail)) : null)));
    });
  }
  out.push(el('h2', {}, 'Tasks'),
    scroller(el('table', { id: 'tasks' },
      el('thead', {}, el('tr', {}, ['Task', 'Attempt', 'Worker', 'Outcome', 'Time', 'Exit', 'Message / log']
        .map(h => el('th', { class: ['Task', 'Attempt', 'Time', 'Exit'].includes(h) ? 'num' : null }, h)))),
      el('tbody', {}, rows))),
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
    document.getElementById('nav-services').classList.toggle('active', h === '#/services');
    document.getElementById('nav-usage').classList.toggle('active', h === '#/usage');
    let nodes;
    if ((m = h.match(/^#\/jobs\/(\d+)$/))) nodes = await pageJob(m[1]);
    else if (h === '#/jobs') nodes = await pageJobs();
    else if (h === '#/services') nodes = await pageServices();
    else if (h === '#/usage') nodes = await pageUsage();
    else nodes = await pagePool();
    const openLogs = new Set([...$main.querySelectorAll('tr[data-attempt] details[open]')].map(d => d.closest('tr').dataset.attempt));
    $main.replaceChildren(...nodes.filter(Boolean));
    for (const id of openLogs) { const d = $main.querySelector(`tr[data-attempt="${CSS.escape(id)}"] details`); if (d) d.open = true; }
    document.body.dataset.rendered = String(Number(document.body.dataset.rendered || 0) + 1);
  } catch (e) {
    if (e instanceof Unauthorized) {
      $main.replaceChildren(el('h1', {}, 'Not signed in'),
        el('p', {}, 'Your session ended (logged out, unused for hours, or the coordinator restarted). ',
          el('a', { href: '/login' }, 'Log in'), ' again with a read or submit token.'));
      document.body.dataset.unauthorized = '1';
      $who.textContent = ''; $logout.hidden = true;
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
// Server-sent events. The browser retries a dropped stream by itself, but not one answered with
// an error status (the coordinator answers 503 when its streams are all taken): then the stream
// is CLOSED and we reconnect after 1 s, doubling to 30 s, back to 1 s once a stream opens.
const RETRY_MIN_MS = 1000, RETRY_MAX_MS = 30000;
let retryMs = RETRY_MIN_MS, retryTimer = null;
function offline(text) { $live.textContent = text; $live.className = 'live off'; }
function connect() {
  retryTimer = null;
  const es = new EventSource('/api/v1/events');
  es.addEventListener('open', () => {
    retryMs = RETRY_MIN_MS;
    $live.textContent = 'live'; $live.className = 'live on';
    soon();  // whatever changed while the stream was down
  });
  es.addEventListener('change', soon);
  es.addEventListener('error', () => {
    offline('reconnecting…');
    if (es.readyState !== EventSource.CLOSED || retryTimer) return;  // the browser retries itself
    es.close();
    $live.dataset.retries = String(Number($live.dataset.retries || 0) + 1);
    $live.title = `live updates: reconnecting in ${Math.round(retryMs / 1000)} s`;
    retryTimer = setTimeout(connect, retryMs);
    retryMs = Math.min(RETRY_MAX_MS, retryMs * 2);
  });
}
// Who is logged in, and the session's CSRF token: every state change made with the session
// cookie sends it in X-Idlepool-CSRF (the server refuses the cookie alone).
let csrf = null;
async function whoAmI() {
  try {
    const s = await api('/api/v1/session');
    csrf = s.csrf || null;
    $who.textContent = `${s.name} (${s.role})`;
    $logout.hidden = !csrf;
  } catch (_) { /* not signed in: render() says so */ }
}
$logout.addEventListener('click', async () => {
  await fetch('/logout', { method: 'POST', credentials: 'same-origin', headers: { 'X-Idlepool-CSRF': csrf || '' } });
  location.href = '/login';
});
window.addEventListener('hashchange', render);
whoAmI();
render();
connect();
// Running jobs' ETA and elapsed times move without events: refresh every 10 s as well.
setInterval(() => { if (!document.hidden) soon(); }, 10000);
