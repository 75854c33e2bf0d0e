// The learner's first five minutes: a new lab opens on the guided experiment, played here as a
// new learner with no other clicks, at desktop and phone width; then each papercut a learner met.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, launch, openLab, state, typeLine, card, wcagViolations } from './harness.js';

let lab, browser;
before(async () => { lab = await startLab(); browser = await launch(); });
after(async () => { await browser?.close(); lab?.stop(); });

/** Back to the seed, from outside the page (a new learner arrives at a fresh lab). */
async function seed(url = lab.url) {
  const res = await fetch(`${url}/api/reset`, { method: 'POST' });
  assert.equal(res.status, 200);
}

/** The pair's group (strategy + sink) in the lab's state. */
function pairOf(s, strategy, sink) {
  const c = s.consumers.find((x) => x.topic === 'orders' && x.strategy === strategy && x.sink === sink);
  return c && s.groups[c.group];
}

/** The outlined offsets of the guided strip lie inside the viewport. */
async function affectedInView(page) {
  return page.evaluate(() => {
    const boxes = [...document.querySelectorAll('#guided-strips .rec.affected')].map((e) => e.getBoundingClientRect());
    return boxes.length > 0 && boxes.every((r) => r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth);
  });
}

async function guess(page, text) {
  assert.ok(await page.isDisabled('#guided-run'), 'no run before a prediction');
  await page.click(`#guided .choice:text-is("${text}")`);
  await page.waitForSelector('#guided-run:not([disabled])');
}

async function runStep(page) {
  await page.click('#guided-run');
  await page.waitForSelector('#guided .guided-result #guided-strips .strip-mini');
  await page.waitForFunction(() => !document.querySelector('#guided').hasAttribute('aria-busy'));
}

for (const viewport of [{ width: 1280, height: 900 }, { width: 390, height: 844 }]) {
  test(`a new learner plays the guided experiment at ${viewport.width} px: the seed's contrast on one screen`, async () => {
    await seed();
    const page = await openLab(browser, lab.url, viewport, { fresh: true });
    // The guided strip is the first thing; the full controls are one click away, not on screen.
    await page.waitForSelector('#guided:not([hidden]) #guided-run');
    assert.equal(await page.isVisible('#consumers'), false, 'the developer console waits behind "All controls"');
    assert.equal(await page.isVisible('#all-controls'), true);
    assert.deepEqual(await wcagViolations(page), [], 'the guided strip, step 1');

    // ① auto-commit + append, crashed mid-batch: 3 lost.
    await guess(page, '3');
    await runStep(page);
    let s = await state(lab.url);
    let ledger = pairOf(s, 'auto-timer', 'append');
    assert.equal(ledger.audit.lost, 3);
    assert.match(await page.textContent('#guided .verdict'), /You said “3” — right/);
    assert.match(await page.textContent('#guided .callout'), /skipped for good/, 'the line that explains it, pinned');
    assert.equal(await page.locator('#guided-strips .rec.affected.lost').count(), 3, 'the lost offsets outlined in the strip');
    assert.ok(await affectedInView(page), 'the effect is next to the press');
    assert.equal(await card(page, 'fig-lost'), '3');
    // A rewind has not happened yet; the commit lags on a paused clock and the card says why.
    assert.match(await card(page, 'fig-lag'), /auto-commit is due in 5s: the clock is paused/);
    assert.equal(await page.locator('table.compare tbody tr').count(), 1, 'the first pair has its row');
    await page.click('#guided .guided-result button.primary');

    // ② manual commit + upsert, the same crash: nothing lost, no duplicate row, a redelivery.
    await guess(page, 'Nothing lost, no row written twice');
    await runStep(page);
    s = await state(lab.url);
    const table = pairOf(s, 'manual-batch', 'upsert');
    assert.equal(table.audit.lost, 0);
    assert.equal(table.audit.duplicate_rows, 0);
    assert.ok(table.audit.redeliveries > 0, 'redelivered after the crash');
    assert.equal(await card(page, 'fig-dup'), '0', 'the Duplicates headline is the harm: no row written twice');
    assert.match(await card(page, 'fig-dup-sub'), /1 record redelivered \(1 after a crash\)/);
    assert.ok(await affectedInView(page));
    assert.equal(await page.locator('table.compare tbody tr').count(), 2, 'both pairs on one screen');
    await page.click('#guided .guided-result button.primary');

    // ③ both rewound: the ledger grows copies, the table converges; the earlier loss stays in view.
    await guess(page, 'Ledger: more rows than orders · table: one per order');
    await runStep(page);
    s = await state(lab.url);
    ledger = pairOf(s, 'auto-timer', 'append');
    const view = pairOf(s, 'manual-batch', 'upsert');
    assert.ok(ledger.sink.rows > ledger.sink.distinct_keys, 'append: rows > distinct orders');
    assert.equal(view.sink.rows, view.sink.distinct_keys, 'upsert: rows = distinct orders');
    assert.equal(ledger.audit.lost_before_rewind, 3, 'the loss is kept');
    assert.ok(await affectedInView(page));
    // "Strategies compared" holds both rows at the end, the loss shown as replayed since.
    const compared = page.getByRole('table', { name: 'Strategies compared' });
    assert.equal(await compared.locator('tbody tr').count(), 2);
    const rows = await compared.locator('tbody tr').allTextContents();
    assert.match(rows.find((r) => r.includes('auto-timer + append')), /3 before the rewind, replayed since/);
    assert.match(rows.find((r) => r.includes('manual-batch + upsert')), /12 rows for 12 orders/);
    assert.deepEqual(await wcagViolations(page), [], 'the result and the comparison');

    // Done: every control, and the strip is not forced on the learner again.
    await page.click('#guided .guided-result button.primary');
    await page.waitForSelector('#consumers .consumer');
    await page.reload();
    await page.waitForFunction(() => (window.__version || 0) > 0);
    assert.equal(await page.isVisible('#consumers'), true, 'a learner who did the strip comes back to every control');
    assert.match(await page.textContent('#guided'), /Guided experiment done/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
}

test('a crash with nothing in flight says what it does before producing anything', async () => {
  await seed();
  const page = await openLab(browser, lab.url);
  for (const l of ['poll c1', 'process c1 count=all', 'poll c1', 'process c1 count=all', 'poll c1', 'process c1 count=all']) await typeLine(page, l);
  await page.waitForFunction(() => /read the whole log/.test(document.querySelector('#exp-note').textContent));
  assert.match(await page.textContent('#exp-note'), /first produces 4 new orders to orders/);
  assert.equal(await page.textContent('#exp-crash'), 'Produce 4 and crash mid-batch');
  assert.equal((await state(lab.url)).topics.find((t) => t.name === 'orders').partitions[0].log_end_offset, 12, 'nothing produced before the press');
  assert.deepEqual(page.errors, []);
});

test('a refused line is shown where the learner is, not at the top of the page', async () => {
  await seed();
  const page = await openLab(browser, lab.url);
  await page.locator('#line-input').scrollIntoViewIfNeeded();
  await page.fill('#line-input', 'poll ghost');
  await page.press('#line-input', 'Enter');
  await page.waitForSelector('#alert:not([hidden])');
  const box = await page.locator('#alert').boundingBox();
  const height = await page.evaluate(() => innerHeight);
  assert.ok(box.y >= 0 && box.y + box.height <= height, `the notice is in view (${box.y}..${box.y + box.height} of ${height})`);
  assert.match(await page.textContent('#alert'), /unknown consumer 'ghost'.*Nothing changed/);
  assert.deepEqual(page.errors, []);
});

test("the narrative keeps to the group on screen; other topics' records stay out unless asked", async () => {
  await seed();
  const page = await openLab(browser, lab.url);
  await typeLine(page, 'topic payments partitions=1');
  await typeLine(page, 'produce payments count=30');
  await page.waitForFunction(() => document.querySelector('#narrative-count').textContent.includes('concern analytics-prod'));
  assert.doesNotMatch(await page.textContent('#narrative'), /payments-0/, 'another topic’s produce lines stay out');
  assert.match(await page.textContent('#narrative'), /c1#1 starts orders-0/);
  await page.check('#narrative-all');
  await page.waitForFunction(() => /payments-0/.test(document.querySelector('#narrative').textContent));
  assert.deepEqual(page.errors, []);
});

test('a real client’s commit names no "?", and the Consumers panel follows the group on screen with its real members', async () => {
  await seed();
  const page = await openLab(browser, lab.url);
  await typeLine(page, 'rebalance kcat-group generation=1 protocol=range members=[{"id":"rdkafka-1","client":"rdkafka","host":"/127.0.0.1","partitions":{"orders":[0]}}]');
  await typeLine(page, 'commit-offsets kcat-group member=rdkafka-1 generation=1 offsets=orders:0=9');
  await page.click('#group-tabs button:text-is("kcat-group")');
  await page.waitForSelector('#consumers article[aria-label="Kafka client rdkafka-1"]');
  assert.doesNotMatch(await page.textContent('#offsets-key'), /by \?/);
  assert.match(await page.textContent('#offsets-key'), /by a Kafka client, no metadata/);
  // The group's own members come first; c1 of analytics-prod under "Other groups".
  const order = await page.$$eval('#consumers > *', (els) => els.map((e) => e.getAttribute('aria-label') || e.textContent));
  assert.ok(order.indexOf('Kafka client rdkafka-1') < order.findIndex((t) => /Other groups/.test(t)));
  assert.ok(order.findIndex((t) => /Other groups/.test(t)) < order.indexOf('consumer c1'));
  assert.doesNotMatch(await page.textContent('#consumers'), /\bnull\b/, 'nothing but the cards');
  assert.deepEqual(page.errors, []);
});

test('the upsert table numbers its rows without gaps', async () => {
  await seed();
  const page = await openLab(browser, lab.url);
  for (const l of ['close c1', 'consumer u1 group=view topic=orders commit=manual-batch sink=upsert max-poll=12 reset=earliest',
    'poll u1', 'process u1 count=all', 'seek u1 to=earliest', 'poll u1', 'process u1 count=all', 'produce orders count=3', 'poll u1', 'process u1 count=all']) await typeLine(page, l);
  await page.click('#group-tabs button:text-is("view")');
  await page.waitForFunction(() => document.querySelectorAll('#sink-table tbody tr').length === 15);
  const ids = await page.$$eval('#sink-table tbody tr td:first-child', (els) => els.map((e) => Number(e.textContent.replace(/\D+$/, ''))));
  assert.deepEqual(ids, Array.from({ length: 15 }, (_, i) => i + 1));
  assert.deepEqual(page.errors, []);
});

test('a rewind never makes an earlier loss vanish from the card', async () => {
  await seed();
  const page = await openLab(browser, lab.url);
  await page.click('#exp-crash');
  await page.waitForFunction(() => document.querySelector('#fig-lost').textContent === '3');
  await page.waitForFunction(() => !document.querySelector('.experiment').hasAttribute('aria-busy'));
  await page.click('#exp-rewind');
  await page.waitForFunction(() => /lost before the rewind, replayed since/.test(document.querySelector('#fig-lost-sub').textContent));
  assert.equal(await card(page, 'fig-lost'), '0');
  assert.match(await card(page, 'fig-lost-sub'), /3 records lost before the rewind, replayed since/);
  assert.deepEqual(page.errors, []);
});

test('the layout: the LEO box stays on the log’s row at 1280 px, narrative times never overlap their text', async () => {
  const live = await startLab({ clock: 'live' });
  try {
    const page = await openLab(browser, live.url, { width: 1280, height: 900 });
    await page.waitForSelector('#log-strip .rec.leo');
    const tops = await page.$$eval('#log-strip .rec', (els) => els.map((e) => Math.round(e.getBoundingClientRect().top)));
    assert.equal(new Set(tops).size, 1, `twelve records and the LEO box on one row (${tops})`);
    // A live clock writes dates: the time column is wide enough for them.
    await typeLine(page, 'produce orders count=1');
    const overlaps = await page.$$eval('#narrative li', (lis) => lis.filter((li) => {
      const t = li.querySelector('.t').getBoundingClientRect(), x = li.querySelector('.x').getBoundingClientRect();
      return t.right > x.left || li.querySelector('.t').scrollWidth > li.querySelector('.t').clientWidth + 1;
    }).length);
    assert.equal(overlaps, 0);
    // One sentence for the clock, the same in the footer as at its button.
    assert.equal(await page.textContent('#clock-foot'), await page.textContent('#clock-mode-why'));
    assert.match(await page.textContent('#clock-foot'), /The clock is live/);
    assert.deepEqual(page.errors, []);
  } finally {
    live.stop();
  }
});

test('at phone width: the log comes before the consumer controls, tables scroll inside their card, no blank bands in the log', async () => {
  await seed();
  const page = await openLab(browser, lab.url, { width: 390, height: 844 });
  for (const l of ['poll c1', 'process c1 count=all', 'tick 5s', 'poll c1', 'process c1 count=all']) await typeLine(page, l);
  await page.waitForSelector('#log-strip .rec.applied');
  const y = async (sel) => (await page.locator(sel).first().boundingBox()).y;
  assert.ok(await y('#log-strip') < await y('#consumers'), 'the log above the consumer controls');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - innerWidth);
  assert.ok(overflow <= 1, `nothing sticks out of the page (${overflow}px)`);
  // Every table is whole: wider ones scroll inside their own frame.
  const clipped = await page.$$eval('.table-wrap', (ws) => ws.filter((w) => {
    const t = w.querySelector('table');
    if (!t || !w.offsetParent) return false;
    const style = getComputedStyle(w);
    return t.scrollWidth > w.clientWidth + 1 && !['auto', 'scroll'].includes(style.overflowX);
  }).length);
  assert.equal(clipped, 0);
  // Rows of records follow each other closely unless markers stand above them.
  const gaps = await page.$$eval('#log-strip .slot', (slots) => {
    const rows = [];
    for (const s of slots) {
      const r = s.querySelector('.rec').getBoundingClientRect();
      const row = rows.find((x) => Math.abs(x.top - r.top) < 2);
      if (row) row.marks ||= s.querySelector('.marks').children.length > 0;
      else rows.push({ top: r.top, bottom: r.bottom, marks: s.querySelector('.marks').children.length > 0 });
    }
    return rows.slice(1).map((r, i) => (r.marks ? 0 : r.top - rows[i].bottom));
  });
  assert.ok(gaps.every((g) => g < 16), `no blank band between rows of records (${gaps})`);
  assert.deepEqual(page.errors, []);
});

test('the quiz keeps a score, its answers are of even length, each linked to the lesson that runs it', async () => {
  const page = await openLab(browser, lab.url);
  await page.click('#tab-learn');
  await page.waitForSelector('#learn-quiz .quiz-q');
  const questions = await page.$$eval('#learn-quiz .quiz-q', (qs) => qs.map((q) => ({
    legend: q.querySelector('legend').textContent,
    options: [...q.querySelectorAll('label')].map((l) => l.textContent.trim()),
  })));
  for (const q of questions) {
    const [a, b] = q.options.map((o) => o.length);
    assert.ok(Math.max(a, b) <= 1.25 * Math.min(a, b), `${q.legend}: answers of ${a} and ${b} characters`);
  }
  assert.match(await page.textContent('#learn-quiz .quiz-score'), /Score: 0 of 12/);
  // Answer every question with its first option: the score counts the right ones.
  for (let i = 0; i < questions.length; i++) await page.check(`#learn-quiz input[name="quiz-${i}"] >> nth=0`);
  const score = await page.textContent('#learn-quiz .quiz-score');
  const right = Number(/Score: (\d+) of 12\./.exec(score)[1]);
  assert.ok(right > 0 && right < 12, `the first option is not always the right one (${score})`);
  // The session-timeout question runs the lesson about crashes and session timeouts.
  const timeout = page.locator('#learn-quiz .quiz-q', { hasText: 'hands its partitions to another member' });
  assert.match(await timeout.locator('.answer button').textContent(), /Run lesson 7/);
  assert.deepEqual(page.errors, []);
});

test("a lesson's highlighted control is brought into view, the lesson's panel with it", async () => {
  const page = await openLab(browser, lab.url, { width: 390, height: 844 });
  await page.click('#tab-lessons');
  await page.click('.lesson-list li:has-text("Lesson 1") button:has-text("Start")');
  await page.waitForSelector('#lesson-panel:not([hidden])');
  // The setup, the first batch, the second batch; then "tick 1s": the +1s button.
  for (let i = 0; i < 3; i++) {
    const before = await page.evaluate(() => window.__version);
    await page.click('#lesson-panel button.primary');
    await page.waitForFunction((b) => window.__version > b, before);
  }
  await page.waitForSelector('.btn.hl');
  await page.waitForFunction(() => {
    const r = document.querySelector('.btn.hl').getBoundingClientRect();
    return r.top >= 0 && r.bottom <= innerHeight;
  });
  const panel = await page.locator('#lesson-panel').boundingBox();
  const hl = await page.locator('.btn.hl').boundingBox();
  assert.ok(panel.y >= 0 && panel.y + panel.height <= hl.y, 'the panel above the control, both in view');
  assert.deepEqual(page.errors, []);
});

test('on a live clock (what cargo run starts), the guided strip steps its crashes on a paused clock and lets it go live again when done', async () => {
  const live = await startLab({ clock: 'live' });
  try {
    const page = await openLab(browser, live.url, { width: 1280, height: 900 }, { fresh: true });
    const guesses = ['3', 'Nothing lost, no row written twice', 'Ledger: more rows than orders · table: one per order'];
    for (const g of guesses) {
      await guess(page, g);
      await runStep(page);
      if (g === '3') {
        assert.equal((await state(live.url)).clock_mode, 'paused', 'paused for the stepped story');
        assert.equal(await page.isVisible('#alert'), false, 'no notice about a clock button the strip does not show');
        assert.equal((await state(live.url)).groups['analytics-prod'].audit.lost, 3, 'the same figures as on a paused lab');
      }
      await page.click('#guided .guided-result button.primary');
    }
    await page.waitForFunction(() => document.querySelector('#clock').textContent.endsWith('· live'));
    assert.equal((await state(live.url)).clock_mode, 'live');
    assert.deepEqual(page.errors, []);
  } finally {
    live.stop();
  }
});
