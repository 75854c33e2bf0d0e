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
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  await page.goto(`${ws.url}/instructor${hash}`);
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

  // The instructor opens Ada's lab, read-only.
  await teacher.click('button[aria-label^="Open Ada"]');
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
