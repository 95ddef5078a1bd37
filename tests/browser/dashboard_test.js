// The dashboard in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven by
// playwright-core. Run by dashboard_test.sh, which starts a coordinator and a worker with fake
// sensors and passes: URL (dashboard base), TOKEN, JOB (a running job of 2 tasks that each wait for
// RELEASE_DIR/<index>), SENSORS (the worker's fake sensor dir), SHOT (screenshot path), WORKER.
// Each step waits on the page's state (bounded by playwright timeouts), never on the clock.
'use strict';
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

const env = k => { const v = process.env[k]; if (!v) throw new Error(`set ${k}`); return v; };
const URL = env('URL').replace(/\/$/, ''), TOKEN = env('TOKEN'), JOB = env('JOB');
const RELEASE = env('RELEASE_DIR'), SENSORS = env('SENSORS'), SHOT = env('SHOT'), WORKER = env('WORKER');
const T = 30000;  // a bound on a hang per step, not a speed assertion

function sense(key, value) {  // as an owner's script would: write, then rename
  const tmp = path.join(SENSORS, '.' + key + '.tmp');
  fs.writeFileSync(tmp, value + '\n');
  fs.renameSync(tmp, path.join(SENSORS, key));
}
function ok(msg) { console.log('ok: ' + msg); }
function check(cond, msg) { if (!cond) throw new Error('FAIL: ' + msg); }

(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
                                          args: ['--no-sandbox', '--disable-gpu'] });
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  try {
    // 1. A wrong token gets no data: the API answers 401 without job or worker data, and the page
    //    says it is not signed in.
    let r = await page.request.get(`${URL}/api/v1/workers`, { headers: { Authorization: 'Bearer wrong' } });
    check(r.status() === 401, `wrong bearer token: status ${r.status()}`);
    let body = await r.text();
    check(!body.includes(WORKER), 'a 401 body names the worker');
    r = await page.request.get(`${URL}/api/v1/jobs/${JOB}`);
    check(r.status() === 401, `no token: status ${r.status()}`);
    r = await page.goto(`${URL}/login?token=wrong`);
    check(r.status() === 401, `login with a wrong token: status ${r.status()}`);
    await page.waitForSelector('#login-error', { timeout: T });
    r = await page.goto(`${URL}/`);
    check(r.status() === 401, `the dashboard without a session: status ${r.status()}`);
    await page.waitForSelector('form[action="/login"]', { timeout: T });
    check(!(await page.content()).includes(WORKER), 'the page without a session shows the worker');
    ok('a wrong token gets 401 and no data');

    // 2. The right token: the pool page lists the worker (running) and the running job.
    await page.goto(`${URL}/login?token=${encodeURIComponent(TOKEN)}`);
    check(!page.url().includes(TOKEN), 'the token stays in the address bar after login');
    await page.waitForSelector(`#workers tr[data-worker="${WORKER}"][data-activity="running"]`, { timeout: T });
    await page.waitForSelector(`#jobs tr[data-job="${JOB}"]`, { timeout: T });
    await page.waitForSelector('#live.on', { timeout: T });
    ok('pool page: the worker is running and the job is listed; live updates connected');

    // 3. The job page: its timeline has a bar per attempt; releasing task 0 turns its bar into a
    //    succeeded one without a reload (server-sent events).
    await page.goto(`${URL}/#/jobs/${JOB}`);
    await page.waitForSelector('#timeline svg rect.attempt', { timeout: T });
    const succeeded = () => page.locator('#timeline svg .attempt.outcome-succeeded').count();
    check(await succeeded() === 0, 'a succeeded bar before any task finished');
    const loads = await page.evaluate(() => performance.getEntriesByType('navigation').length);
    fs.writeFileSync(path.join(RELEASE, '0'), '');
    await page.waitForFunction(() => document.querySelectorAll('#timeline svg .attempt.outcome-succeeded').length === 1, null, { timeout: T });
    check(await page.evaluate(() => performance.getEntriesByType('navigation').length) === loads, 'the page reloaded');
    ok('the timeline gained a succeeded bar when task 0 finished, live');

    // 4. A preemption made with fake sensors: the lid closes, the running attempt is vacated, the
    //    timeline marks the preemption, the pool page says lid closed; the lid opens, the task runs
    //    again and the requeue arrow appears.
    sense('lid_closed', '1');
    await page.waitForSelector('#timeline svg .preemption', { timeout: T });
    await page.waitForFunction(() => document.querySelectorAll('#timeline svg .attempt.outcome-preempted').length >= 1, null, { timeout: T });
    ok('the timeline marks the preemption (lid closed)');
    await page.goto(`${URL}/#/`);
    await page.waitForSelector(`#workers tr[data-worker="${WORKER}"][data-activity="lid_closed"]`, { timeout: T });
    ok('pool page: the worker shows lid closed');
    sense('lid_closed', '0');
    await page.goto(`${URL}/#/jobs/${JOB}`);
    await page.waitForSelector('#timeline svg .requeue', { timeout: T });
    await page.waitForFunction(() => document.querySelectorAll('#timeline svg .attempt.outcome-running').length === 1, null, { timeout: T });
    ok('the requeued task runs again; the timeline draws its requeue arrow');
    fs.writeFileSync(path.join(RELEASE, '1'), '');
    await page.waitForFunction(() => document.querySelectorAll('#timeline svg .attempt.outcome-succeeded').length === 2, null, { timeout: T });
    await page.waitForSelector('#tasks tr[data-attempt]', { timeout: T });
    ok('both tasks succeeded; the task table lists the attempts');
    await page.screenshot({ path: SHOT, fullPage: true });
    ok('screenshot saved: ' + SHOT);
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
