// Workshop mode as a classroom uses it: learners are separate browsers (their own cookies),
// the instructor a third, with the token the server printed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startWorkshop, launch, joinAs, card, wcagViolations } from './harness.js';

let ws, browser;
before(async () => { ws = await startWorkshop(); browser = await launch(); });
after(async () => { await browser?.close(); ws?.stop(); });

/** The learner's own lab, read by their page (their cookie). */
const labOf = (page) => page.evaluate(async () => (await fetch('/api/state')).json());

/** Presses an experiment button and waits until the lab moved on and the panel is idle. */
async function click(page, selector) {
  const before = await page.evaluate(() => window.__version || 0);
  await page.click(selector);
  await page.waitForFunction((b) => (window.__version || 0) > b, before);
  await page.waitForFunction(() => !document.querySelector('.experiment').hasAttribute('aria-busy'));
}

async function openInstructor(hash = `#token=${ws.token}`) {
  return openInstructorOf(ws, hash);
}

async function openInstructorOf(server, hash = `#token=${server.token}`) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  await page.goto(`${server.url}/instructor${hash}`);
  await page.waitForSelector('#room:not([hidden]), #login:not([hidden])');
  return page;
}

test('two learners have labs of their own; the instructor sees both, their step and the quiz tallies; a pushed lesson reaches both', async () => {
  const ada = await joinAs(browser, ws.url, 'Ada');
  const bob = await joinAs(browser, ws.url, 'Bob <i>not italic</i>');
  assert.match(await ada.textContent('#learner-badge'), /Ada \(#1\)/);
  assert.match(await bob.textContent('#learner-badge'), /Bob <i>not italic<\/i> \(#2\)/, 'a name is text, never HTML');

  // Ada crashes her consumer mid-batch; Bob's lab does not move.
  const bobBefore = await labOf(bob);
  await click(ada, '#exp-crash');
  await ada.waitForFunction(() => document.querySelector('#fig-lost').textContent === '3');
  const bobAfter = await labOf(bob);
  assert.equal(bobAfter.version, bobBefore.version, "Bob's lab did not change");
  assert.equal(bobAfter.groups['analytics-prod'].audit.lost, 0);
  assert.equal(await card(bob, 'fig-lost'), '0');

  // A learner cannot reach another's lab: not through the instructor's API, not with a forged id.
  const refused = await bob.evaluate(async () => (await fetch('/api/instructor/learners/1/state')).status);
  assert.equal(refused, 401);
  const forged = await browser.newContext();
  await forged.addCookies([{ name: 'offsetlab_learner', value: '0123456789abcdef0123456789abcdef', url: ws.url }]);
  const stranger = await forged.newPage();
  await stranger.goto(ws.url);
  await stranger.waitForSelector('#join:not([hidden])');
  assert.equal(await stranger.evaluate(async () => (await fetch('/api/state')).status), 401, 'a forged id opens nobody’s lab');
  await forged.close();

  // The instructor's room shows both, with Ada's figures.
  const teacher = await openInstructor();
  await teacher.waitForFunction(() => document.querySelectorAll('#learners tr[data-number]').length === 2);
  assert.match(await teacher.textContent('#learners tr[data-number="1"]'), /lost 3/, "Ada's figures");
  assert.match(await teacher.textContent('#learners tr[data-number="2"]'), /lost 0/, "Bob's");

  // Ada starts lesson 1 and takes its first step; the quiz: Ada believes auto-commit never
  // loses records, Bob knows better.
  await ada.click('#tab-lessons');
  await ada.click('button[aria-label^="Start lesson 1:"]');
  await ada.waitForSelector('#lesson-panel:not([hidden])');
  await ada.click('#lesson-panel button:has-text("Run this step")');
  await ada.waitForFunction(() => /Step 2 of/.test(document.querySelector('#lesson-panel').textContent));
  for (const [page, choice] of [[ada, 0], [bob, 1]]) {
    await page.click('#tab-learn');
    await page.locator('input[name="quiz-1"]').nth(choice).check();
  }

  await teacher.waitForFunction(() => /Lesson 1.*step 2 of/.test(document.querySelector('#learners tr[data-number="1"]').textContent));
  assert.match(await teacher.textContent('#learners tr[data-number="1"]'), /topic orders/, 'her last action');
  assert.equal(await teacher.$$eval('#learners i', (els) => els.length), 0, 'a learner’s name is shown as text');
  assert.match(await teacher.textContent('#learners tr[data-number="2"] .learner-name'), /^Bob <i>not italic<\/i>$/);
  await teacher.waitForFunction(() => /1 of 2 still believe the wrong answer/.test(document.querySelector('.tally[data-question="1"]').textContent));

  // The instructor reads Ada's lab as a scenario.
  await teacher.click('button[aria-label^="Ada\'s lab as a scenario"]');
  await teacher.waitForSelector('#learner-view:not([hidden])');
  assert.match(await teacher.textContent('#learner-view-body'), /topic orders partitions=1/, 'her lab as she has it: lesson 1, one step in');

  // "Everyone: lesson 2" reaches both open pages.
  await teacher.selectOption('#push-lesson-number', '2');
  await teacher.click('#push-lesson button[type="submit"]');
  await teacher.waitForFunction(() => /Pushed #1/.test(document.querySelector('#push-status').textContent));
  for (const page of [ada, bob]) {
    await page.waitForFunction(() => /Lesson 2:/.test(document.querySelector('#lesson-panel').textContent), null, { timeout: 10000 });
    assert.match(await page.textContent('#alert'), /instructor started lesson 2/);
  }
  await teacher.waitForFunction(() => [...document.querySelectorAll('#learners tr[data-number]')].every((tr) => /Lesson 2/.test(tr.textContent)));

  // The instructor's page, the join form and a learner's lab pass WCAG 2 A and AA.
  assert.deepEqual(await wcagViolations(teacher), [], 'the instructor’s page, a learner’s lab open');
  const newcomer = await (await browser.newContext()).newPage();
  await newcomer.goto(ws.url);
  await newcomer.waitForSelector('#join:not([hidden])');
  assert.deepEqual(await wcagViolations(newcomer), [], 'the join form');
  assert.deepEqual(await wcagViolations(ada), [], 'a learner’s lab in a pushed lesson');
  for (const page of [ada, bob, teacher]) assert.deepEqual(page.errors, []);
});

test('a wrong instructor token opens nothing', async () => {
  const page = await openInstructor('#token=not-the-token-at-all');
  await page.waitForSelector('#login:not([hidden])');
  assert.match(await page.textContent('#alert'), /not this workshop’s/);
  assert.equal(await page.isHidden('#room'), true);
  // With the right one typed in, the room opens.
  await page.fill('#token', ws.token);
  await page.click('#login-form button[type="submit"]');
  await page.waitForSelector('#room:not([hidden])');
  assert.deepEqual(await wcagViolations(page), [], 'the token form and the room');
  await page.setViewportSize({ width: 390, height: 844 });
  assert.deepEqual(await wcagViolations(page), [], 'the room on a phone');
  assert.deepEqual(page.errors, []);
});

/** A learner that is only a browser with a cookie: joins and reports with fetch (what their page sends), from a page that runs no script of the lab's. */
async function fetchingLearner(url, name) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${url}/api/workshop/me`);
  const status = await page.evaluate(async (n) => (await fetch('/api/workshop/join', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: n }) })).status, name);
  assert.equal(status, 201, `${name} joined`);
  page.post = (path, body) => page.evaluate(async ([p, b]) => {
    const res = await fetch(p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(b) });
    return { status: res.status, body: await res.json() };
  }, [path, body]);
  page.get = (path) => page.evaluate(async (p) => { const res = await fetch(p); return { status: res.status, body: await res.json() }; }, path);
  return page;
}

/** The next dialog's text, answered `accept`. */
function nextDialog(page, accept) {
  return new Promise((resolve) => page.once('dialog', async (d) => { resolve(d.message()); await (accept ? d.accept() : d.dismiss()); }));
}

test('the instructor’s room: actions named as pressed, learners per lesson step, a lab opened read-only, learners removed, an empty push asked first', async () => {
  const room = await startWorkshop(['--max-learners', '3']);
  try {
    const [ada, bob, cy] = [await fetchingLearner(room.url, 'Ada'), await fetchingLearner(room.url, 'Bob'), await fetchingLearner(room.url, 'Cy')];
    const label = await ada.post('/api/actions', { lines: ['poll c1'], label: 'Crash mid-batch' });
    assert.equal(label.status, 200);
    const steps = (await ada.get('/api/lessons')).body[0].steps.length;
    assert.equal((await ada.post('/api/workshop/progress', { lesson: 1, step: 1, steps, guided: 1 })).status, 200);
    assert.equal((await bob.post('/api/workshop/progress', { lesson: 1, step: 3, steps, guided: 3 })).status, 200);
    assert.equal((await bob.post('/api/workshop/progress', { lesson: 1, step: 3, steps, guided: 9 })).status, 400, 'no such guided step');

    const teacher = await openInstructorOf(room);
    // The action as Ada pressed it, its lines kept as the detail.
    await teacher.waitForFunction(() => /Crash mid-batch/.test(document.querySelector('#learners tr[data-number="1"] .last-action')?.textContent || ''));
    assert.equal(await teacher.textContent('#learners tr[data-number="1"] .action-label'), 'Crash mid-batch');
    assert.equal(await teacher.getAttribute('#learners tr[data-number="1"] .action-lines', 'title'), 'poll c1');
    // Where the room is: per lesson step, the guided experiment, free play.
    const lesson1 = await teacher.textContent('#summary li[data-lesson="1"]');
    assert.match(lesson1, new RegExp(`1 on step 2/${steps}, 1 on step 4/${steps}`), lesson1);
    assert.match(await teacher.textContent('#summary li[data-guided]'), /1 on step 2\/3, 1 finished \(Bob\)/);
    assert.match(await teacher.textContent('#summary li[data-free-play]'), /Free play: 1/);
    assert.match(await teacher.textContent('#learners tr[data-number="2"]'), /guided experiment finished/);

    // Ada's lab opens in a tab of its own, as her page, the token in that tab's sessionStorage and never in its URL.
    const [tab] = await Promise.all([teacher.context().waitForEvent('page'), teacher.click('button[aria-label^="Open Ada"]')]);
    await tab.waitForLoadState('domcontentloaded');
    assert.equal(new URL(tab.url()).pathname + new URL(tab.url()).search, '/?learner=1');
    assert.ok(!tab.url().includes(room.token), 'no token in the URL');
    assert.equal(await tab.evaluate(() => sessionStorage.getItem('offsetlab.instructor-token')), room.token);
    const seen = await tab.evaluate(async () => {
      const headers = { Authorization: `Bearer ${sessionStorage.getItem('offsetlab.instructor-token')}`, 'X-Offsetlab-Learner': new URLSearchParams(location.search).get('learner') };
      const state = await fetch('/api/state', { headers });
      const change = await fetch('/api/actions', { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ lines: ['crash c1'] }) });
      return { state: state.status, version: (await state.json()).version, change: change.status, error: (await change.json()).error };
    });
    assert.deepEqual(seen, { state: 200, version: (await ada.get('/api/state')).body.version, change: 403, error: 'read-only: the instructor views this lab' });
    await tab.close();

    // The room is full; Cy never did anything: cleared, her cookie refused, the seat free.
    assert.equal((await (await browser.newContext()).request.post(`${room.url}/api/workshop/join`, { data: { name: 'Dee' } })).status(), 503);
    await teacher.selectOption('#clear-minutes', '0');
    await teacher.waitForFunction(() => document.querySelector('#clear-room button').textContent === 'Remove 1 learner');
    const asked = nextDialog(teacher, true);
    await teacher.click('#clear-room button');
    assert.match(await asked, /Remove the 1 learner who never did anything/);
    await teacher.waitForFunction(() => document.querySelectorAll('#learners tr[data-number]').length === 2);
    const refused = await cy.get('/api/state');
    assert.deepEqual([refused.status, refused.body.join], [401, true], 'her page shows the join form');
    await fetchingLearner(room.url, 'Dee');

    // One learner removed by hand, after a confirm that names them.
    const dismissed = nextDialog(teacher, false);
    await teacher.click('button[aria-label="Remove Bob (learner 2)"]');
    assert.match(await dismissed, /Remove Bob \(learner 2\)/);
    assert.equal((await bob.get('/api/state')).status, 200, 'not removed when the instructor says no');
    const accepted = nextDialog(teacher, true);
    await teacher.click('button[aria-label="Remove Bob (learner 2)"]');
    await accepted;
    await teacher.waitForFunction(() => !document.querySelector('#learners tr[data-number="2"]'));
    assert.equal((await bob.get('/api/state')).status, 401);

    // An empty scenario asks first, naming how many labs it empties; no is no push.
    await teacher.fill('#push-scenario-text', '# nothing to run\n\n');
    const no = nextDialog(teacher, false);
    await teacher.click('#push-scenario button[type="submit"]');
    assert.match(await no, /empty: pushing it empties all 2 learners’ labs/);
    assert.equal(await teacher.textContent('#push-status'), '');
    const yes = nextDialog(teacher, true);
    await teacher.click('#push-scenario button[type="submit"]');
    await yes;
    await teacher.waitForFunction(() => /Pushed #1: an empty scenario/.test(document.querySelector('#push-status').textContent));

    assert.deepEqual(await wcagViolations(teacher), [], 'the room with its summary, labels and removal');
    assert.deepEqual(teacher.errors, []);
    await teacher.context().close();
  } finally {
    room.stop();
  }
});

test("through the learner's own page: its Crash mid-batch reaches the room as pressed, and the instructor opens that page read-only", async () => {
  const room = await startWorkshop();
  try {
    // A new learner in a fresh browser: the guided experiment, played through its buttons.
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.errors = [];
    page.on('pageerror', (e) => page.errors.push(e.message));
    await page.goto(room.url);
    await page.fill('#join-name', 'Ada');
    await page.click('#join-form button[type="submit"]');
    await page.waitForSelector('#guided-run');
    await page.click('#guided .choice:text-is("3")');
    await page.click('#guided-run');
    await page.waitForSelector('#guided .guided-result');

    const teacher = await openInstructorOf(room);
    await teacher.waitForFunction(() => document.querySelector('#learners tr[data-number="1"] .action-label')?.textContent === 'Crash mid-batch');
    assert.match(await teacher.getAttribute('#learners tr[data-number="1"] .action-lines', 'title'), /poll c1/);
    // The page tells the room which guided step it reached (step 1 done, on step 2 after "Next").
    await page.click('#guided .guided-result button.primary');
    await teacher.waitForFunction(() => /1 on step 2\/3/.test(document.querySelector('#summary li[data-guided]')?.textContent || ''));

    // Opened read-only: the learner's own page, her figures, and nothing it can change.
    const [tab] = await Promise.all([teacher.context().waitForEvent('page'), teacher.click('button[aria-label^="Open Ada"]')]);
    tab.errors = [];
    tab.on('pageerror', (e) => tab.errors.push(e.message));
    await tab.waitForFunction(() => document.querySelector('#fig-lost')?.textContent === '3');
    assert.match(await tab.textContent('#conn'), /read-only: learner 1/);
    assert.ok(await tab.evaluate(() => document.body.classList.contains('read-only')));
    const before = (await (await context.request.get(`${room.url}/api/state`)).json()).version;
    await tab.evaluate(() => document.querySelector('#exp-crash')?.click());
    await tab.waitForSelector('#alert:not([hidden])');
    assert.match(await tab.textContent('#alert'), /read-only view/);
    assert.equal((await (await context.request.get(`${room.url}/api/state`)).json()).version, before, 'nothing changed');
    assert.deepEqual([...page.errors, ...tab.errors, ...teacher.errors], []);
  } finally {
    room.stop();
  }
});
