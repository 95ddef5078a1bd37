// The dashboard in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven by
// playwright-core. Run by dashboard_test.sh, which starts a coordinator and a worker with fake
// sensors and passes: URL (dashboard base), TOKEN, JOB (a running job of 2 tasks that each wait for
// RELEASE_DIR/<index>), SENSORS (the worker's fake sensor dir), SHOT (screenshot path), WORKER, and
// GONE (a worker that left the pool). More screenshots (pool and job page, 900 and 1400 px wide)
// go next to SHOT.
// Each step waits on the page's state (bounded by playwright timeouts), never on the clock.
'use strict';
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

const env = k => { const v = process.env[k]; if (!v) throw new Error(`set ${k}`); return v; };
const URL = env('URL').replace(/\/$/, ''), TOKEN = env('TOKEN'), JOB = env('JOB');
const RELEASE = env('RELEASE_DIR'), SENSORS = env('SENSORS'), SHOT = env('SHOT'), WORKER = env('WORKER');
const GONE = env('GONE');
const T = 30000;  // a bound on a hang per step, not a speed assertion

function sense(key, value) {  // as an owner's script would: write, then rename
  const tmp = path.join(SENSORS, '.' + key + '.tmp');
  fs.writeFileSync(tmp, value + '\n');
  fs.renameSync(tmp, path.join(SENSORS, key));
}
function ok(msg) { console.log('ok: ' + msg); }
function check(cond, msg) { if (!cond) throw new Error('FAIL: ' + msg); }
const text = (page, sel) => page.locator(sel).innerText();
// At 900 px and 1400 px: a screenshot, and the page itself never scrolls sideways (wide tables
// scroll in their wrapper).
async function atWidths(page, name) {
  for (const width of [900, 1400]) {
    await page.setViewportSize({ width, height: 1000 });
    const over = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    check(over <= 0, `${name} at ${width} px overflows the page by ${over} px`);
    await page.screenshot({ path: SHOT.replace(/\.png$/, `-${name}-${width}.png`), fullPage: true });
  }
}

// The login form, as a person fills it in (POST /login, the token in the body).
async function logIn(page, token) {
  await page.goto(`${URL}/login`);
  await page.fill('input[name="token"]', token);
  await Promise.all([page.waitForNavigation({ timeout: T }), page.click('button[type="submit"]')]);
}

(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
                                          args: ['--no-sandbox', '--disable-gpu'] });
  // The coordinator's certificate comes from a CA made at its start: not one Chromium knows.
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 }, ignoreHTTPSErrors: true });
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  try {
    // 1. A wrong token gets no data: the API answers 401 without job or worker data, a wrong
    //    token in the login form gets the form again, a token in the address is refused, and the
    //    dashboard without a session is the login form.
    let r = await page.request.get(`${URL}/api/v1/workers`, { headers: { Authorization: 'Bearer wrong' } });
    check(r.status() === 401, `wrong bearer token: status ${r.status()}`);
    let body = await r.text();
    check(!body.includes(WORKER), 'a 401 body names the worker');
    r = await page.request.get(`${URL}/api/v1/jobs/${JOB}`);
    check(r.status() === 401, `no token: status ${r.status()}`);
    r = await page.goto(`${URL}/login?token=${encodeURIComponent(TOKEN)}`);
    check(r.status() === 400, `a token in the address: status ${r.status()}`);
    check((await ctx.cookies()).length === 0, 'a token in the address set a cookie');
    await logIn(page, 'wrong');
    await page.waitForSelector('#login-error', { timeout: T });
    check((await ctx.cookies()).length === 0, 'a wrong token set a cookie');
    r = await page.goto(`${URL}/`);
    check(r.status() === 401, `the dashboard without a session: status ${r.status()}`);
    await page.waitForSelector('form[action="/login"][method="post"]', { timeout: T });
    check(!(await page.content()).includes(WORKER), 'the page without a session shows the worker');
    ok('a wrong token gets 401 and no data; no token in addresses');

    // 2. The right token, typed into the form: a session cookie that is not the token (HttpOnly,
    //    Secure, SameSite=Strict); the pool page lists the worker (running) and the running job.
    await logIn(page, TOKEN);
    await page.waitForURL(`${URL}/`, { timeout: T });
    const cookies = await ctx.cookies();
    const session = cookies.find(c => c.name === 'idlepool_session');
    check(cookies.length === 1 && session, 'cookies after login: ' + JSON.stringify(cookies.map(c => c.name)));
    check(session.value !== TOKEN && !session.value.includes(TOKEN), 'the cookie carries the token');
    check(session.httpOnly && session.secure && session.sameSite === 'Strict', 'cookie flags: ' + JSON.stringify(session));
    check(!page.url().includes(TOKEN), 'the token is in the address bar');
    await page.waitForSelector(`#workers tr[data-worker="${WORKER}"][data-activity="running"]`, { timeout: T });
    await page.waitForSelector(`#jobs tr[data-job="${JOB}"]`, { timeout: T });
    await page.waitForSelector('#live.on', { timeout: T });
    await page.waitForSelector('#logout:not([hidden])', { timeout: T });
    // The page's own request with the cookie but without the CSRF header cannot change state.
    const bare = await page.evaluate(async () => (await fetch('/logout', { method: 'POST' })).status);
    check(bare === 403, `POST /logout with the cookie alone: status ${bare}`);
    ok('pool page: the worker is running and the job is listed; live updates connected');
    check(await page.locator('link[rel="icon"]').count() === 1, 'no inline favicon');
    // Cards count workers in the pool, pluralized; the one that left is counted apart.
    check((await text(page, '#card-workers')).replace(/\s+/g, ' ') === '1 worker', 'card-workers: ' + await text(page, '#card-workers'));
    check((await text(page, '#card-a-running')).replace(/\s+/g, ' ') === '1 worker running', 'card-a-running: ' + await text(page, '#card-a-running'));
    check((await text(page, '#card-jobs')).replace(/\s+/g, ' ') === '1 job running', 'card-jobs: ' + await text(page, '#card-jobs'));
    check((await text(page, '#card-left')).replace(/\s+/g, ' ').startsWith('1 left'), 'card-left: ' + await text(page, '#card-left'));
    check(await page.locator('#card-a-left').count() === 0, 'a left worker counted as an activity');
    // The worker that left is not listed until asked for.
    check(await page.locator(`#workers tr[data-worker="${GONE}"]`).count() === 0, 'a left worker is listed');
    await page.check('#show-left');
    await page.waitForSelector(`#workers tr[data-worker="${GONE}"][data-activity="left"]`, { timeout: T });
    await page.uncheck('#show-left');
    await page.waitForFunction(g => !document.querySelector(`#workers tr[data-worker="${g}"]`), GONE, { timeout: T });
    // "Why" only while the owner policy stops work: empty for a running worker.
    check(await text(page, `#workers tr[data-worker="${WORKER}"] td.why`) === '', 'a Why for a running worker');
    ok('pool page: cards pluralized and count workers; the left worker hidden behind a checkbox; no Why while running');
    await atWidths(page, 'pool');
    // The ETA rule is the terminal's (tests/unit/progress_test.cc has the same cases).
    const etas = await page.evaluate(() => {
      const job = (o) => Object.assign({ state: 'running', tasks: 100, succeeded: 0, failed: 0, cancelled: 0, running: 8,
                                         submitted_ms: 1000000, lost_seconds: 0, prediction: null }, o);
      const pred = (s, lost) => ({ makespan_s: s, pool: { lost_work_s: lost || 0 } });
      return [eta(job({}), 1050000),                                                  // nothing yet
              eta(job({ prediction: pred(300) }), 1050000),                           // predicted 250
              eta(job({ prediction: pred(300), succeeded: 7 }), 1400000),             // overdue 100
              eta(job({ prediction: pred(300), succeeded: 8 }), 1400000),             // rate 4600
              eta(job({ tasks: 6, running: 6, prediction: pred(20), lost_seconds: 84 }), 1014000)];  // 20
    });
    check(JSON.stringify(etas) === JSON.stringify([null, { kind: 'predicted', s: 250 }, { kind: 'overdue', s: 100 },
      { kind: 'rate', s: 4600 }, { kind: 'predicted', s: 20 }]), 'eta(): ' + JSON.stringify(etas));
    ok('the ETA rule matches the terminal\'s');

    // 3. The job page: its timeline has a bar per attempt; releasing task 0 turns its bar into a
    //    succeeded one without a reload (server-sent events).
    await page.goto(`${URL}/#/jobs/${JOB}`);
    await page.waitForSelector('#timeline svg rect.attempt', { timeout: T });
    const succeeded = () => page.locator('#timeline svg .attempt.outcome-succeeded').count();
    check(await succeeded() === 0, 'a succeeded bar before any task finished');
    check(await text(page, '#card-succeeded b') === '0/2', 'card-succeeded: ' + await text(page, '#card-succeeded'));
    check(await text(page, '#card-failed b') === '0', 'card-failed: ' + await text(page, '#card-failed'));
    const loads = await page.evaluate(() => performance.getEntriesByType('navigation').length);
    fs.writeFileSync(path.join(RELEASE, '0'), '');
    await page.waitForFunction(() => document.querySelectorAll('#timeline svg .attempt.outcome-succeeded').length === 1, null, { timeout: T });
    check(await page.evaluate(() => performance.getEntriesByType('navigation').length) === loads, 'the page reloaded');
    await page.waitForFunction(() => document.querySelector('#card-succeeded b').textContent === '1/2', null, { timeout: T });
    ok('the timeline gained a succeeded bar when task 0 finished, live; the succeeded card says 1/2');

    // 4. A preemption made with fake sensors: the lid closes, the running attempt is vacated, the
    //    timeline marks the preemption, the pool page says lid closed; the lid opens, the task runs
    //    again and the requeue arrow appears.
    sense('lid_closed', '1');
    await page.waitForSelector('#timeline svg .preemption', { timeout: T });
    await page.waitForFunction(() => document.querySelectorAll('#timeline svg .attempt.outcome-preempted').length >= 1, null, { timeout: T });
    ok('the timeline marks the preemption (lid closed)');
    await page.goto(`${URL}/#/`);
    await page.waitForSelector(`#workers tr[data-worker="${WORKER}"][data-activity="lid_closed"]`, { timeout: T });
    check((await text(page, `#workers tr[data-worker="${WORKER}"] td.why`)) !== '', 'no Why for a worker whose owner took it back');
    ok('pool page: the worker shows lid closed, and why');
    sense('lid_closed', '0');
    await page.goto(`${URL}/#/jobs/${JOB}`);
    await page.waitForSelector('#timeline svg .requeue', { timeout: T });
    await page.waitForFunction(() => document.querySelectorAll('#timeline svg .attempt.outcome-running').length === 1, null, { timeout: T });
    ok('the requeued task runs again; the timeline draws its requeue arrow');
    fs.writeFileSync(path.join(RELEASE, '1'), '');
    await page.waitForFunction(() => document.querySelectorAll('#timeline svg .attempt.outcome-succeeded').length === 2, null, { timeout: T });
    await page.waitForSelector('#tasks tr[data-attempt]', { timeout: T });
    ok('both tasks succeeded; the task table lists the attempts');
    // Each attempt links to its kept output (issue 18), served as text to the session's cookie.
    const logs = await page.evaluate(async () => {
      const out = [];
      for (const a of document.querySelectorAll('#tasks tr[data-attempt] a.attempt-log')) {
        const r = await fetch(a.getAttribute('href'), { credentials: 'same-origin' });
        out.push({ status: r.status, type: r.headers.get('content-type') || '', text: await r.text() });
      }
      return out;
    });
    check(logs.length >= 2, 'the task table links ' + logs.length + ' attempts to their logs');
    check(logs.some(l => l.status === 200 && l.type.startsWith('text/plain') && /^task [01]\n/.test(l.text)),
      'no attempt log link gives its output: ' + JSON.stringify(logs).slice(0, 300));
    ok('the task table links each attempt to its kept log');
    await page.screenshot({ path: SHOT, fullPage: true });
    ok('screenshot saved: ' + SHOT);
    await atWidths(page, 'job');
    await page.setViewportSize({ width: 1400, height: 1000 });
    await page.goto(`${URL}/#/`);
    await page.waitForFunction(() => { const j = document.querySelector('#jobs'); return !!j && /No running jobs/.test(j.innerText); }, null, { timeout: T });
    ok('pool page: "No running jobs" once the job is done');

    // 5. Live updates come back after the server refused the stream (503: all streams taken),
    //    which EventSource does not retry by itself: the page says "reconnecting…" and retries
    //    with backoff until a stream opens.
    await page.route('**/api/v1/events', route => route.fulfill({ status: 503, contentType: 'application/json', body: '{"error":"busy"}' }));
    await page.reload();
    await page.waitForFunction(() => Number(document.getElementById('live').dataset.retries || 0) >= 2, null, { timeout: T });
    check(await text(page, '#live') === 'reconnecting…', 'live badge: ' + await text(page, '#live'));
    await page.unroute('**/api/v1/events');
    await page.waitForSelector('#live.on', { timeout: T });
    ok('live updates reconnect after 503 answers (with backoff)');

    // 6. The Services page shows each replica's time to first token (p50 / p95 of the gateway's
    //    recent answers, '-' when none) and the service's in its summary line. The API answer is
    //    a fixture in the shape of `idlepool services --json` (a live service's figures are
    //    checked end to end by tests/integration/serve_pool_test.sh).
    const replica = (n, o) => Object.assign({ replica: n, attempt: 10 + n, worker: 'w' + n, state: 'ready', in_flight: 0,
                                               requests: 5, errors: 0, attempts: 1, ttft_answers: 0,
                                               ttft_p50_ms: null, ttft_p95_ms: null }, o);
    const services = { gateway: 'https://127.0.0.1:7880', services: [{ job: 77, name: 'chat', state: 'running',
      protocol: 'openai', model: 'tiny', replicas: 2, min_replicas: 2, max_replicas: 2, max_concurrent: 4,
      queue_length: 0, requests: 10, errors: 0, ttft_answers: 5, ttft_p50_ms: 41.23, ttft_p95_ms: 55.6,
      replica_status: [replica(0, { ttft_answers: 5, ttft_p50_ms: 3.456, ttft_p95_ms: 55.6 }), replica(1)] }] };
    await page.route('**/api/v1/services', route => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(services) }));
    await page.goto(`${URL}/#/services`);
    await page.waitForSelector('#service-77', { timeout: T });
    const heads = await page.locator('table.replicas th').allInnerTexts();
    check(heads.includes('TTFT p50 / p95 ms'), 'replica table headers: ' + JSON.stringify(heads));
    check(await text(page, 'tr[data-replica="0"] td.ttft') === '3.46 / 56', 'replica 0 ttft: ' + await text(page, 'tr[data-replica="0"] td.ttft'));
    check(await text(page, 'tr[data-replica="1"] td.ttft') === '-', 'replica 1 ttft: ' + await text(page, 'tr[data-replica="1"] td.ttft'));
    check((await page.innerText('main')).includes('time to first token p50 / p95 41 / 56 ms'), 'no service time to first token');
    await atWidths(page, 'services');
    await page.setViewportSize({ width: 1400, height: 1000 });
    await page.unroute('**/api/v1/services');
    ok('services page: time to first token per replica (p50 / p95 ms, - when none) and per service');

    // 6b. The Usage page: users (share, quotas, standing) and usage since a chosen day by user
    //     and by lending machine. The live API answers (real figures are checked end to end by
    //     tests/integration/quota_test.sh and serve_keys_test.sh); the page from fixtures of its
    //     shape, so the figures shown are known.
    r = await page.request.get(`${URL}/api/v1/usage?since=7d&by=worker`);
    check(r.status() === 200 && (await r.json()).by === 'worker', `/api/v1/usage: status ${r.status()}`);
    r = await page.request.get(`${URL}/api/v1/usage?by=nope`);
    check(r.status() === 400 && (await r.text()).includes("by: 'user' or 'worker'"), `/api/v1/usage?by=nope: status ${r.status()}`);
    r = await page.request.get(`${URL}/api/v1/users`);
    check(r.status() === 200 && Array.isArray((await r.json()).users), `/api/v1/users: status ${r.status()}`);
    const users = { half_life_s: 86400, fair_preemption_after_s: 600, users: [
      { user: 'alice', share: 2, max_slots: 4, max_gpus: 0, max_queued_tasks: 0, max_stored_bytes: 0, usage_slot_s: 7200,
        usage_gpu_s: 0, slots: 3, gpus: 0, queued_tasks: 12, starving_s: 0 },
      { user: 'bob', share: 1, max_slots: 0, max_gpus: 0, max_queued_tasks: 100, max_stored_bytes: 0, usage_slot_s: 0,
        usage_gpu_s: 0, slots: 0, gpus: 0, queued_tasks: 2, starving_s: 90 }] };
    const row = (key, o) => Object.assign({ key, slot_s: 3600, gpu_s: 0, attempts: 4, tasks: 3, preempted: 1, bytes_in: 2000000,
                                            bytes_out: 0, requests: 0, tokens: 0 }, o);
    const seen = [];
    await page.route('**/api/v1/users', route => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(users) }));
    await page.route('**/api/v1/usage?*', route => {
      const q = new URLSearchParams(route.request().url().split('?')[1]);
      seen.push(q.get('since'));
      const rows = q.get('by') === 'worker' ? [row('laptop-1'), row('gpu-box', { gpu_s: 1800 })] : [row('alice', { requests: 40, tokens: 1234 })];
      route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ since_unix_s: 0, by: q.get('by'), rows }) });
    });
    await page.goto(`${URL}/#/usage`);
    await page.waitForSelector('#usage-by-worker tr[data-key="gpu-box"]', { timeout: T });
    check(await page.locator('#nav-usage').getAttribute('class') === 'active', 'nav-usage is not active');
    check(await text(page, 'tr[data-user="bob"] td:last-child') === '1m30s', 'bob below half his share: ' + await text(page, 'tr[data-user="bob"] td:last-child'));
    check((await text(page, 'tr[data-user="alice"]')).includes('2.00'), 'alice decayed slot-hours: ' + await text(page, 'tr[data-user="alice"]'));
    check((await text(page, '#usage-by-user tr[data-key="alice"]')).includes('1234'), 'alice tokens: ' + await text(page, '#usage-by-user tr[data-key="alice"]'));
    check((await text(page, '#usage-by-worker tr[data-key="gpu-box"]')).includes('0.50'), 'gpu-box GPU-hours');
    await page.selectOption('#usage-since', '30d');
    await page.waitForFunction(() => document.getElementById('usage-since') && document.getElementById('usage-since').value === '30d', null, { timeout: T });
    check(seen.includes('30d'), 'choosing 30d did not ask for it: ' + JSON.stringify(seen));
    await atWidths(page, 'usage');
    await page.setViewportSize({ width: 1400, height: 1000 });
    await page.unroute('**/api/v1/users');
    await page.unroute('**/api/v1/usage?*');
    ok('usage page: users with shares, quotas and standing; usage by user and by lending machine since a chosen day');

    // 7. Log out: the button ends the session; the cookie no longer reads anything.
    await page.click('#logout');
    await page.waitForURL(`${URL}/login`, { timeout: T });
    r = await page.request.get(`${URL}/api/v1/workers`);
    check(r.status() === 401, `after logout: status ${r.status()}`);
    ok('log out ends the session');
    check(errors.length === 0, 'page errors: ' + errors.join('; '));
  } catch (e) {
    try { await page.screenshot({ path: SHOT.replace(/\.png$/, '-failed.png'), fullPage: true }); } catch (_) { /* closed */ }
    console.error(e.message || e);
    console.error('page errors: ' + errors.join('; '));
    try { console.error('page text: ' + (await page.innerText('body')).slice(0, 2000)); } catch (_) { /* closed */ }
    await browser.close();
    process.exit(1);
  }
  await browser.close();
})();
