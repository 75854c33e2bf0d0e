// A share group (KIP-932) on the page: its share partition's strip read off the page — each record's state, owner and delivery count, the SPSO and the
// SPEO, the archived poison record — above a consumer group that reads every record from 0.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startLab, launch, openLab, state, press, repo, wcagViolations } from './harness.js';

let lab, browser;
before(async () => { lab = await startLab(); browser = await launch(); });
after(async () => { await browser?.close(); lab?.stop(); });

// The story lesson 12 tells (scenarios/share-groups.scn), its lines applied through the API.
const STORY = readFileSync(`${repo}/scenarios/share-groups.scn`, 'utf8');

/** The story's action lines (no comments, no expect lines), up to and including `until`. */
function linesUntil(until) {
  const out = [];
  for (const l of STORY.split('\n')) {
    if (!l.trim() || l.startsWith('#') || l.startsWith('expect')) continue;
    out.push(l);
    if (l === until) break;
  }
  return out;
}

/** A row of the share panel's drawing: `share` (the share partition), `group` or `log`. */
async function strip(page, row) {
  return page.$$eval(`#share-panel .share-row[data-row="${row}"] .slot`, (slots) => slots.map((s) => ({
    offset: Number(s.dataset.offset), state: s.dataset.state, owner: s.dataset.owner,
    count: s.dataset.deliveryCount, text: s.querySelector('.rec').textContent,
    marks: [...s.querySelectorAll('.mk')].map((m) => m.textContent),
  })));
}

const at = (row, offset) => row.find((s) => s.offset === offset);
const markedAt = (row, mark) => row.filter((s) => s.marks.includes(mark)).map((s) => s.offset);
const fig = async (page, id) => (await page.textContent(`#share-fig-${id}`)).trim();

/** Nothing of the page is wider than the viewport: the strips scroll inside their card. */
async function fitsWidth(page) {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const scroller = document.querySelector('#share-panel .share-scroll');
    return { page: document.documentElement.scrollWidth <= width, panel: document.querySelector('#share-panel').getBoundingClientRect().right <= width, scrolls: scroller.scrollWidth > scroller.clientWidth };
  });
}

for (const viewport of [{ width: 1280, height: 900 }, { width: 390, height: 844 }]) {
  test(`the share partition's strip at ${viewport.width} px: owners, delivery counts, the SPSO, the poison record, a consumer group reading from 0`, async () => {
    const load = await fetch(`${lab.url}/api/scenario`, { method: 'POST', body: `${linesUntil('share-poll s2').join('\n')}\n` });
    assert.ok(load.ok, await load.text());
    const page = await openLab(browser, lab.url, viewport);
    await page.waitForSelector('#share-panel:not([hidden]) .share-row[data-row="share"]');
    // Two members split orders-0: 0–2 are s1's, 3–5 s2's, each delivered once; 6 and 7 wait.
    let share = await strip(page, 'share');
    for (const o of [0, 1, 2]) assert.deepEqual([at(share, o).state, at(share, o).owner, at(share, o).count], ['acquired', 's1#1', '1'], `offset ${o}`);
    for (const o of [3, 4, 5]) assert.deepEqual([at(share, o).state, at(share, o).owner, at(share, o).count], ['acquired', 's2#1', '1'], `offset ${o}`);
    assert.match(at(share, 3).text, /acquired.*s2#1/);
    assert.equal(at(share, 6).state, 'new');
    assert.deepEqual([markedAt(share, 'SPSO'), markedAt(share, 'SPEO')], [[0], [6]]);
    assert.deepEqual([await fig(page, 'inflight'), await fig(page, 'acquired')], ['6', '6']);
    // No consumer group reads the topic yet: the log row shows every record kept.
    assert.deepEqual((await strip(page, 'log')).map((s) => s.state), ['kept', 'kept', 'kept', 'kept', 'kept', 'kept', 'kept', 'kept', 'end']);
    assert.deepEqual(await wcagViolations(page), [], 'axe, records in flight');

    // s2's buttons in the panel: it processes and accepts its records; the SPSO waits for s1's.
    await press(page, 'process s2 count=all');
    await press(page, 'share-ack s2 accept');
    share = await strip(page, 'share');
    for (const o of [3, 4, 5]) assert.equal(at(share, o).state, 'acknowledged', `offset ${o}`);
    assert.deepEqual(markedAt(share, 'SPSO'), [0]);

    // The rest of the story, up to the poison record's last release and a consumer group's read.
    const rest = linesUntil('process c1 count=all').slice(linesUntil('share-ack s2 accept').length);
    const applied = await fetch(`${lab.url}/api/actions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ lines: rest }) });
    assert.ok(applied.ok, await applied.text());
    const s = await state(lab.url);
    await page.waitForFunction((v) => (window.__version || 0) >= v, s.version);
    share = await strip(page, 'share');
    // s1's records came back when it was killed: delivered twice, accepted by s2.
    for (const o of [0, 1]) assert.deepEqual([at(share, o).state, at(share, o).count], ['acknowledged', '2'], `offset ${o}`);
    assert.match(at(share, 0).text, /×2/);
    // The poison record: archived after its third delivery, never applied.
    assert.deepEqual([at(share, 2).state, at(share, 2).count], ['archived', '3']);
    assert.match(at(share, 2).text, /×3.*archived/);
    assert.match(await page.getAttribute('#share-panel .share-row[data-row="share"] .slot[data-offset="2"]', 'aria-label'), /poison record.*never applied/);
    // Every delivery is complete: the SPSO is at the log end, with the SPEO.
    assert.deepEqual(markedAt(share, 'SPSO'), [10]);
    // Redelivered: 0 and 1 after the crash, the poison record, 8 and 9 after a stuck member's locks.
    assert.deepEqual([await fig(page, 'inflight'), await fig(page, 'archived'), await fig(page, 'redelivered')], ['0', '1', '5']);
    assert.match(await page.textContent('#share-fig-archived-sub'), /1 lost to the application/);
    assert.match(await page.textContent('#share-fig-redelivered-sub'), /6 extra deliveries · 2 records applied twice/);
    // Beside it, consumer group audit read all ten records from offset 0 and committed 10.
    const group = await strip(page, 'group');
    assert.equal(await page.getAttribute('#share-panel .share-row[data-row="group"]', 'data-group'), 'audit');
    assert.deepEqual(group.filter((g) => g.state !== 'end').map((g) => [g.offset, g.state]), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((o) => [o, 'read']));
    assert.deepEqual(markedAt(group, 'committed'), [10]);
    assert.match(await page.textContent('#share-panel figure'), /committed 10 \/ LEO 10/);

    const fits = await fitsWidth(page);
    assert.ok(fits.page && fits.panel, `nothing wider than ${viewport.width} px: ${JSON.stringify(fits)}`);
    if (viewport.width < 700) assert.ok(fits.scrolls, 'at phone width the strips scroll inside their card');
    assert.deepEqual(await wcagViolations(page), [], 'axe, the story told');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
}

test('lesson 12 walked through on the page: a prediction, the checks answered, the recap, and the quiz links to it', async () => {
  const page = await openLab(browser, lab.url);
  await page.click('#tab-lessons');
  await page.click('.lesson-list li:has-text("Lesson 12") button:has-text("Start")');
  await page.waitForSelector('#lesson-panel:not([hidden])');
  let predicted = null;
  // Each step is done once and then waited for: the panel moves on to the next step.
  const stepOf = (text) => Number((text.match(/Step (\d+) of/) || [])[1]);
  const moved = (n) => page.waitForFunction((k) => {
    const t = document.querySelector('#lesson-panel').textContent;
    return t.includes('Lesson complete') || !t.includes(`Step ${k} of`);
  }, n);
  for (let guard = 0; guard < 100; guard++) {
    const panel = await page.textContent('#lesson-panel');
    if (panel.includes('Lesson complete')) break;
    const step = stepOf(panel);
    if (await page.$('#lesson-panel .q input')) {
      const owner = await page.$('#lesson-panel input[data-key="owner"]');
      if (owner) {
        // Read off the strip, as a learner would: who holds offset 3, delivered how often.
        const slot = '#share-panel .share-row[data-row="share"] .slot[data-offset="3"]';
        await page.fill('#lesson-panel input[data-key="delivery-count"]', await page.getAttribute(slot, 'data-delivery-count'));
        await page.press('#lesson-panel input[data-key="delivery-count"]', 'Enter');
        await owner.fill(await page.getAttribute(slot, 'data-owner'));
        await owner.press('Enter');
      } else await page.locator('#lesson-panel button:has-text("Show me the answer")').click();
      await moved(step);
    } else if (await page.$('#lesson-panel .predict') && !(await page.$('#lesson-panel .predict .choice[aria-pressed="true"]'))) {
      predicted = await page.textContent('#lesson-panel .predict p');
      await page.click('#lesson-panel .predict .choice >> nth=1');
    } else {
      await page.locator('#lesson-panel button.primary').click();
      await moved(step);
    }
  }
  assert.match(await page.textContent('#lesson-panel'), /Lesson complete/);
  assert.match(predicted || '', /applied more than once/, 'the crash asks about the records applied twice, not the poison record');
  assert.match(await page.textContent('#lesson-panel .recap'), /acknowledging is not deleting/);
  const s = await state(lab.url);
  assert.equal(s.share_groups.workers.partitions[0].spso, 10);
  assert.equal(s.groups.audit.committed['orders-0'], 10);
  // The quiz's question about acknowledging runs this lesson.
  await page.click('#lesson-panel button:has-text("All lessons")');
  await page.click('#tab-learn');
  const q = page.locator('#learn-quiz .quiz-q', { hasText: 'acknowledging a record deletes it' });
  await q.locator('input >> nth=0').check();
  assert.match(await q.locator('.answer button').textContent(), /Run lesson 12/);
  assert.deepEqual(page.errors, []);
});

test('a share consumer crashed from its button: its records come back at once, with its connection', async () => {
  const load = await fetch(`${lab.url}/api/scenario`, { method: 'POST', body: `${linesUntil('share-poll s2').join('\n')}\n` });
  assert.ok(load.ok);
  const page = await openLab(browser, lab.url);
  await page.waitForSelector('#share-panel .share-row[data-row="share"]');
  assert.equal(at(await strip(page, 'share'), 0).owner, 's1#1', 'acquired by s1');
  await press(page, 'crash s1');
  await page.waitForSelector('#share-panel .callout');
  assert.match(await page.textContent('#share-panel .callout'), /s1#1 crashed.*released at once/);
  const share = await strip(page, 'share');
  for (const o of [0, 1, 2]) assert.deepEqual([at(share, o).state, at(share, o).owner], ['available', ''], `offset ${o}`);
  assert.deepEqual(page.errors, []);
});

test("a real client's share consumer (the listener's lines) drawn by its client id, not its member id", async () => {
  const member = 'qQTZJOBPQp+3Y6VqCoDHcw';
  const lines = [
    'topic payments partitions=1',
    'produce payments count=6 batch=1',
    'alter-share-group billing share.auto.offset.reset=earliest',
    `share-join billing member=${member} client=billing-y topics=payments`,
    `share-fetch billing member=${member} topic=payments partition=0 max=3`,
    `share-acknowledge billing member=${member} topic=payments partition=0 acks=0:accept,1:release`,
  ];
  const load = await fetch(`${lab.url}/api/scenario`, { method: 'POST', body: `${lines.join('\n')}\n` });
  assert.ok(load.ok, await load.text());
  const page = await openLab(browser, lab.url, { width: 390, height: 844 });
  await page.waitForSelector('#share-panel:not([hidden]) .share-row[data-row="share"]');
  const share = await strip(page, 'share');
  assert.deepEqual([at(share, 2).state, at(share, 2).owner], ['acquired', member], 'the member id is the data');
  assert.match(at(share, 2).text, /billing-y/, 'the client id is what a learner reads');
  assert.doesNotMatch(at(share, 2).text, /qQTZ/);
  assert.equal(at(share, 1).state, 'available');
  assert.match(await page.textContent('#share-panel .share-clients'), /billing-y \(member qQTZJOBPQp\+3Y6VqCoDHcw, assigned payments-0\)/);
  assert.match(await page.textContent('#share-fig-acquired-sub'), /billing-y: 1/);
  assert.deepEqual(await wcagViolations(page), [], 'axe, a real client in the share group');
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
