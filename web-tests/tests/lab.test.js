// The web lab, driven in Chromium the way a learner uses it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startLab, launch, openLab, state, runScenario, press, selectGroup, typeLine, card, wcagViolations } from './harness.js';

let lab, browser;
before(async () => { lab = await startLab(); browser = await launch(); });
after(async () => { await browser?.close(); lab?.stop(); });

/** Resets the lab and waits for the reset's own answer (its notice), not only the new state. */
async function resetLab(page) {
  const before = await page.evaluate(() => {
    document.querySelector('#alert').textContent = ''; // an earlier reset's notice is not this one's
    return window.__version || 0;
  });
  await page.click('#reset-lab');
  await page.waitForFunction((b) => (window.__version || 0) > b
    && document.querySelector('#alert').textContent.includes('Back to the seed lab'), before);
}

test('the seed walk-through: timer auto-commit loses, manual + upsert does not, rewinding rebuilds', async () => {
  const page = await openLab(browser, lab.url);
  await resetLab(page);
  assert.equal(await card(page, 'fig-committed'), '0 / 12');
  assert.match(await card(page, 'fig-lag'), /lag: 12/);
  assert.match(await page.textContent('#storage'), /logs on disk \(segment files\) · --flush never/, 'the durability policy is shown');

  // Auto-commit on a timer + append: crash right after the timer fired mid-batch.
  await press(page, 'poll c1');
  await press(page, 'process c1 count=all');
  await page.click('button[data-tick="1s"]'); await page.waitForTimeout(50);
  await typeLine(page, 'tick 3s');
  await press(page, 'poll c1');
  await press(page, 'process c1');
  await typeLine(page, 'tick 1s');
  assert.equal(await card(page, 'fig-committed'), '8 / 12', 'the timer committed 8 with 5..7 in flight');
  await press(page, 'crash c1');
  assert.ok(Number(await card(page, 'fig-lost')) > 0, 'silently lost > 0 once the group passed 5..7');
  await page.waitForSelector('.rec.lost');
  await typeLine(page, 'tick 45s');
  await press(page, 'restart c1');
  await press(page, 'poll c1');
  await press(page, 'process c1 count=all');
  assert.equal(await card(page, 'fig-lost'), '3');
  assert.match(await card(page, 'fig-lost-sub'), /orders-0 5\.\.7/);

  // Manual commit after processing + upsert, same crash: nothing lost, no duplicate rows.
  await resetLab(page);
  await typeLine(page, 'close c1');
  await page.click('#add-consumer-panel summary');
  await page.fill('#consumer-form input[name=name]', 'c2');
  await page.fill('#consumer-form input[name=group]', 'billing');
  await page.selectOption('#strategy-select', 'manual-batch');
  await page.selectOption('#sink-select', 'upsert');
  await page.selectOption('#consumer-form select[name=reset]', 'earliest');
  await page.fill('#consumer-form input[name=max-poll]', '4');
  await page.click('#consumer-form button[type=submit]');
  await page.waitForSelector('button[data-line="poll c2"]');
  await page.click('.chip:has-text("billing")');
  await press(page, 'poll c2');
  await press(page, 'process c2 count=all');
  await press(page, 'poll c2');
  await press(page, 'process c2');
  await press(page, 'process c2');
  await press(page, 'crash c2');
  await typeLine(page, 'tick 45s');
  await press(page, 'restart c2');
  for (let i = 0; i < 2; i++) { await press(page, 'poll c2'); await press(page, 'process c2 count=all'); }
  assert.equal(await card(page, 'fig-lost'), '0');
  assert.equal(await card(page, 'fig-dup'), '0', 'the headline is the harm: no row was written twice');
  assert.match(await card(page, 'fig-dup-sub'), /2 records redelivered \(2 after a crash\)/);
  assert.equal(await card(page, 'fig-rows'), '12', 'the upsert converged');

  // Rewind to earliest: the upsert converges, an append sink grows copies.
  await typeLine(page, 'close c2');
  await page.click('#reset-panel summary');
  await page.fill('#reset-form input[name=group]', 'billing');
  await page.selectOption('#reset-spec', 'to-earliest');
  await page.click('#reset-form button[type=submit]');
  await page.waitForSelector('#reset-plan .radius');
  assert.match(await page.textContent("#reset-plan"), /Dry run.*12 record\(s\) read again \(12 of them already applied/s);
  assert.match(await card(page, 'fig-committed'), /^12 \//, 'a dry run changes nothing');
  await page.click('#reset-execute');
  await page.waitForFunction(() => document.querySelector('#fig-committed').textContent.startsWith('0 /'));
  await press(page, 'restart c2');
  for (let i = 0; i < 3; i++) { await press(page, 'poll c2'); await press(page, 'process c2 count=all'); }
  assert.equal(await card(page, 'fig-rows'), '12', 'upsert: rows converge');
  const s = await state(lab.url);
  assert.equal(s.groups.billing.audit.replays, 12);
  assert.equal(s.groups.billing.sink.duplicate_rows, 0);
  assert.ok(s.groups['analytics-prod'].sink.rows === 0, 'the other group was untouched');
  assert.deepEqual(page.errors, []);
});

test("the seed's experiment with the toggles alone: auto + append loses, manual + upsert converges, rewinding rebuilds", async () => {
  const page = await openLab(browser, lab.url);
  await resetLab(page);
  // A press is done once the lab moved on and the panel is no longer busy (a rewind is a request
  // per poll).
  const click = async (selector) => {
    const before = await page.evaluate(() => window.__version || 0);
    await page.click(selector);
    await page.waitForFunction((b) => (window.__version || 0) > b, before);
    await page.waitForFunction(() => !document.querySelector('.experiment').hasAttribute('aria-busy'));
  };
  const figure = async (id) => Number(await card(page, id));
  const group = async () => (await state(lab.url)).groups[await page.evaluate(() => window.__group)];
  // The seed's consumer is the experiment's: auto-commit on a timer into an append-only sink.
  assert.equal(await page.getAttribute('#exp-commit .chip:has-text("auto-timer")', 'aria-pressed'), 'true');
  assert.equal(await page.getAttribute('#exp-sink .chip:has-text("append")', 'aria-pressed'), 'true');
  await click('#exp-crash');
  await page.waitForFunction(() => document.querySelector('#fig-lost').textContent === '3');
  assert.equal(await figure('fig-lost'), 3, 'the timer committed 4 while 1..3 were in flight: skipped for good');
  assert.match(await card(page, 'fig-lost-sub'), /orders-0 1\.\.3/);

  // Manual commit after the batch, into an upsert sink: a consumer of its own group.
  await click('#exp-commit .chip:has-text("manual-batch")');
  await click('#exp-sink .chip:has-text("upsert")');
  assert.match(await page.textContent('#exp-who'), /manual-batch-upsert in group orders-manual-batch-upsert \(running\)/);
  assert.equal(await page.evaluate(() => window.__group), 'orders-manual-batch-upsert', 'its group on screen');
  await click('#exp-crash');
  await page.waitForFunction(() => /[1-9]\d* records? redelivered/.test(document.querySelector('#fig-dup-sub').textContent));
  assert.equal(await figure('fig-lost'), 0, 'nothing lost');
  assert.match(await card(page, 'fig-dup-sub'), /1 record redelivered \(1 after a crash\)/, 'the processed record came back after the crash');
  assert.equal(await figure('fig-dup'), 0, 'the headline is the harm: the upsert wrote no row twice');
  let g = await group();
  assert.ok(g.audit.crash_redeliveries > 0, 'redelivered after the crash');
  assert.equal(g.sink.duplicate_rows, 0, 'upsert: the redelivery overwrote its row, no duplicate row');

  // Rewind to earliest: the whole log again; upsert converges on one row per order.
  await click('#exp-rewind');
  g = await group();
  assert.equal(g.partitions[0].position, 12, 'read to the end again');
  assert.equal(g.sink.rows, 12);
  assert.equal(g.sink.distinct_keys, 12);
  assert.ok(g.audit.replays > 0, 'replayed on purpose');

  // Back to auto + append, rewound: the append-only ledger grows copies.
  await click('#exp-commit .chip:has-text("auto-timer")');
  await click('#exp-sink .chip:has-text("append")');
  assert.match(await page.textContent('#exp-who'), /c1 in group analytics-prod \(running\)/);
  const rowsBefore = (await group()).sink.rows;
  await click('#exp-rewind');
  g = await group();
  assert.ok(g.sink.rows > rowsBefore, 'more rows');
  assert.ok(g.sink.rows > g.sink.distinct_keys, 'append: copies of the same orders');
  // Every press was scenario lines: the export replays to the same groups.
  const dir = mkdtempSync(path.join(tmpdir(), 'offsetlab-experiment-'));
  const file = path.join(dir, 'experiment.scn');
  writeFileSync(file, await (await fetch(`${lab.url}/api/scenario`)).text());
  assert.deepEqual(runScenario(file).groups, (await state(lab.url)).groups);
  assert.deepEqual(page.errors, []);
});

test('a lesson completed end to end, answering its questions', async () => {
  const page = await openLab(browser, lab.url);
  await page.click('#tab-lessons');
  await page.click('.lesson-list li:has-text("Lesson 3") button:has-text("Start")');
  await page.waitForSelector('#lesson-panel:not([hidden])');
  let predicted = 0;
  for (let guard = 0; guard < 200; guard++) {
    const panel = await page.textContent('#lesson-panel');
    if (panel.includes('Lesson complete')) break;
    const question = await page.$('#lesson-panel .q input');
    if (question) {
      assert.ok(!panel.includes('expect '), 'a question does not show its own answer');
      // Read the answer off the lab, as a learner would, and type it.
      const inputs = await page.locator('#lesson-panel .q input').all();
      const s = await state(lab.url);
      const g = Object.values(s.groups)[0];
      const value = {
        lost: g.audit.lost, duplicates: g.audit.duplicates, redeliveries: g.audit.redeliveries,
        'sink-rows': g.sink.rows, 'distinct-keys': g.sink.distinct_keys, 'duplicate-rows': g.sink.duplicate_rows,
        committed: g.committed['orders-0'],
      };
      for (const input of inputs) {
        await input.fill(String(value[await input.getAttribute('data-key')]));
        await input.press('Enter');
      }
      await page.waitForFunction((n) => !document.querySelector('#lesson-panel').textContent.includes(`Step ${n} of`), Number((panel.match(/Step (\d+) of/) || [])[1]));
    } else if (await page.$('#lesson-panel .predict .choice[aria-pressed="false"]') && !(await page.$('#lesson-panel .predict .choice[aria-pressed="true"]'))) {
      // A crash asks for a prediction first: the run button waits for one.
      assert.ok(await page.isDisabled('#lesson-panel button.primary'), 'no crash before a prediction');
      await page.click('#lesson-panel .predict .choice >> nth=0');
      predicted += 1;
    } else {
      const before = await page.evaluate(() => window.__version || 0);
      // Locators re-resolve if a live update re-renders the controls under the click.
      if (await page.locator('.btn.hl').count()) await page.locator('.btn.hl').first().click();
      else await page.locator('#lesson-panel button.primary').click();
      await page.waitForFunction((b) => (window.__version || 0) > b, before);
    }
  }
  assert.match(await page.textContent('#lesson-panel'), /Lesson complete/);
  assert.equal(predicted, 1, 'one crash, one prediction');
  assert.match(await page.textContent('#lesson-panel'), /the second write replaced the first/, 'the recap');
  assert.match(await page.textContent('#lesson-panel button.primary'), /Next lesson: Rewind to earliest/);
  const s = await state(lab.url);
  assert.equal(s.groups['analytics-prod'].sink.rows, 12);
  assert.equal(s.groups['analytics-prod'].sink.duplicate_rows, 0);
  // The lessons list ticks it off.
  await page.click('#lesson-panel button:has-text("All lessons")');
  await page.waitForSelector('.lesson-list li:has-text("Lesson 3") .done');
  assert.match(await page.textContent('.lesson-list li:has-text("Lesson 3")'), /~\d+ min/);
  assert.deepEqual(page.errors, []);
});

test('a bad action is shown as an error and changes nothing', async () => {
  const page = await openLab(browser, lab.url);
  await resetLab(page);
  const before = await state(lab.url);
  await page.fill('#line-input', 'poll ghost');
  await page.press('#line-input', 'Enter');
  await page.waitForFunction(() => document.querySelector('#alert').textContent.includes('ghost'));
  assert.match(await page.textContent('#alert'), /unknown consumer 'ghost'.*Nothing changed/);
  await page.fill('#line-input', 'produce orders count=-1');
  await page.press('#line-input', 'Enter');
  await page.waitForFunction(() => document.querySelector('#alert').textContent.includes('must not be negative'));
  const after = await state(lab.url);
  assert.equal(after.version, before.version);
  assert.deepEqual(after.groups, before.groups);
  // The API answers bad requests with a JSON error and a 4xx, and refuses foreign origins.
  const bad = await fetch(`${lab.url}/api/actions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ lines: ['poll c1', 'crash nobody'] }) });
  assert.equal(bad.status, 422);
  assert.deepEqual(await bad.json(), { error: "unknown consumer 'nobody'", line: 2, text: 'crash nobody' });
  assert.deepEqual((await state(lab.url)).groups, before.groups, 'the first line was undone');
  const foreign = await fetch(`${lab.url}/api/actions`, { method: 'POST', headers: { 'content-type': 'application/json', origin: 'http://evil.example' }, body: JSON.stringify({ lines: ['crash c1'] }) });
  assert.equal(foreign.status, 403);
  assert.deepEqual(page.errors, []);
});

test('two tabs stay in sync', async () => {
  const a = await openLab(browser, lab.url);
  await resetLab(a);
  const b = await openLab(browser, lab.url);
  await b.waitForFunction(() => document.querySelector('#fig-committed').textContent === '0 / 12');
  await press(a, 'poll c1');
  await press(a, 'process c1 count=all');
  await typeLine(a, 'tick 5s');
  await b.waitForFunction(() => document.querySelector('#fig-committed').textContent === '4 / 12', null, { timeout: 5000 });
  await b.waitForFunction(() => document.querySelector('#fig-rows').textContent === '4');
  assert.deepEqual([...a.errors, ...b.errors], []);
});

test('export, then offsetlab run of the exported file gives the same figures', async () => {
  const page = await openLab(browser, lab.url);
  await resetLab(page);
  for (const l of ['poll c1', 'process c1 count=2', 'tick 5s', 'crash c1', 'tick 45s', 'restart c1', 'poll c1', 'process c1 count=all']) await typeLine(page, l);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
  const dir = mkdtempSync(path.join(tmpdir(), 'offsetlab-export-'));
  const file = path.join(dir, 'session.scn');
  await download.saveAs(file);
  const replayed = runScenario(file);
  const live = await state(lab.url);
  assert.deepEqual(replayed.groups, live.groups);
  assert.equal(replayed.clock_ms, live.clock_ms);
  // Import it back: the same lab again.
  writeFileSync(file, `${(await (await fetch(`${lab.url}/api/scenario`)).text())}`);
  await page.setInputFiles('#import', file);
  await page.waitForSelector('#alert.ok');
  assert.deepEqual((await state(lab.url)).groups, live.groups);
  assert.deepEqual(page.errors, []);
});

test('the explorer matrix replays its worst crash in the lab', async () => {
  const page = await openLab(browser, lab.url);
  await page.click('#tab-explorer');
  await page.waitForSelector('table.matrix');
  assert.equal(await page.locator('table.matrix td button[data-cell]').count(), 20);
  assert.match(await page.textContent('[data-cell="auto-timer/append"]'), /loses up to 3/);
  assert.match(await page.textContent('[data-cell="manual-batch/transactional"]'), /no loss, no duplicate/);
  assert.match(await page.textContent('[data-cell="manual-batch/kafka-tx"]'), /no loss, no duplicate/);
  assert.match(await page.textContent('[data-cell="manual-record/kafka-tx"]'), /no loss, no duplicate/);
  await page.click('[data-cell="auto-timer/append"]');
  await page.waitForSelector('#view-lab:not([hidden])');
  const s = await state(lab.url);
  assert.equal(s.consumers[0].state.state, 'crashed');
  assert.equal(s.groups['analytics-prod'].committed['orders-0'], 8);
  assert.equal(s.groups['analytics-prod'].audit.lost, 3);
  assert.deepEqual(page.errors, []);
});

test('the explorer share rows: a queue-style consumer loses nothing to a crash, and processes some records twice', async () => {
  const page = await openLab(browser, lab.url);
  await page.click('#tab-explorer');
  await page.waitForSelector('[data-share="implicit"]');
  assert.match(await page.textContent('[data-share="implicit"]'), /processes up to 4 twice/);
  assert.match(await page.textContent('[data-share="explicit"]'), /processes up to 1 twice/);
  assert.match(await page.textContent('[data-share="explicit"]'), /lost ≤ 0/);
  await page.click('[data-share="implicit"]');
  await page.waitForSelector('#view-lab:not([hidden])');
  const s = await state(lab.url);
  const c1 = s.share_consumers.find((c) => c.name === 'c1');
  assert.ok(c1, JSON.stringify(Object.keys(s)));
  assert.equal(c1.state.state, 'crashed');
  assert.ok(s.share_groups['analytics-prod'], 'the share group is on the page');
  assert.deepEqual(page.errors, []);
});

test('Kafka transactions: markers, the last stable offset, and the two isolation levels', async () => {
  const page = await openLab(browser, lab.url);
  await resetLab(page);
  await typeLine(page, 'close c1');
  // An output topic, created from the form.
  await page.click('summary:has-text("Create a topic")');
  await page.fill('#topic-form input[name=name]', 'orders-copy');
  await page.fill('#topic-form input[name=partitions]', '1');
  await page.click('#topic-form button[type=submit]');
  await page.waitForFunction(() => [...document.querySelectorAll('#output-topic option')].some((o) => o.value === 'orders-copy'));
  // The read-process-write application, from the consumer form.
  await page.click('#add-consumer-panel summary');
  await page.fill('#consumer-form input[name=name]', 'copier');
  await page.fill('#consumer-form input[name=group]', 'copy');
  await page.selectOption('#sink-select', 'kafka-tx');
  assert.equal(await page.isVisible('#txn-options'), true, 'the output topic appears with kafka-tx');
  assert.equal(await page.inputValue('#strategy-select'), 'manual-batch', 'transactions commit after processing');
  await page.selectOption('#output-topic', 'orders-copy');
  await page.selectOption('#consumer-form select[name=reset]', 'earliest');
  await page.fill('#consumer-form input[name=max-poll]', '4');
  await page.click('#consumer-form button[type=submit]');
  await page.waitForSelector('button[data-line="poll copier"]');
  // Two downstream readers, one per isolation level, as scenario lines.
  await typeLine(page, 'consumer strict group=strict topic=orders-copy isolation=read_committed commit=manual-batch reset=earliest');
  await typeLine(page, 'consumer loose group=loose topic=orders-copy commit=manual-batch reset=earliest');
  await press(page, 'poll copier');
  await press(page, 'process copier count=all');
  await press(page, 'poll copier');
  await press(page, 'process copier');
  await press(page, 'process copier');
  // A transaction is open: the coordinator's table shows it and the Abort button is live.
  await page.waitForSelector('#txn-panel:not([hidden]) #txn-table tr.ongoing');
  assert.match(await page.textContent('#txn-table'), /copier.*Ongoing.*2 record\(s\) on orders-copy-0/s);
  assert.match(await page.textContent('#txn-lso'), /orders-copy-0: LSO 5 of LEO 7/);
  await press(page, 'poll strict');
  await press(page, 'process strict count=all');
  await press(page, 'poll loose');
  await press(page, 'process loose count=all');
  await press(page, 'abort copier');
  await press(page, 'poll copier');
  await press(page, 'process copier count=all');
  await press(page, 'poll strict');
  await press(page, 'process strict count=all');
  await press(page, 'poll loose');
  await press(page, 'process loose count=all');
  // The output log: markers, struck-through aborted records, no LSO mark once nothing is open.
  await page.click('.chip:has-text("strict")');
  await page.selectOption('#log-partition', 'orders-copy-0');
  await page.waitForSelector('#log-strip .rec.marker.m-commit');
  await page.waitForSelector('#log-strip .rec.marker.m-abort');
  assert.equal(await page.locator('#log-strip .rec.aborted').count(), 2);
  assert.match(await card(page, 'fig-lag'), /read_committed/);
  assert.equal(await card(page, 'fig-rows'), '8');
  assert.equal(await card(page, 'fig-lost'), '0', 'markers and aborted records are not lost');
  await page.click('.chip:has-text("loose")');
  assert.equal(await card(page, 'fig-rows'), '10');
  assert.match(await card(page, 'fig-dup-sub'), /2 record\(s\) of aborted transactions applied/);
  const s = await state(lab.url);
  assert.equal(s.groups.copy.audit.lost, 0);
  assert.equal(s.groups.copy.audit.duplicates, 0);
  assert.equal(s.groups.copy.sink.rows, 8);
  assert.deepEqual(page.errors, []);
});

test('a group of real Kafka clients shows its members, generation, committed offset and lag', async () => {
  const page = await openLab(browser, lab.url);
  await resetLab(page);
  // What the Kafka listener writes when kcat -G joins, commits and is then killed.
  await typeLine(page, 'rebalance kcat-group generation=1 protocol=range members=[{"id":"rdkafka-1","client":"rdkafka","host":"/127.0.0.1","partitions":{"orders":[0]}}]');
  await typeLine(page, 'commit-offsets kcat-group member=rdkafka-1 generation=1 offsets=orders:0=9');
  await selectGroup(page, 'kcat-group');
  await page.waitForFunction(() => document.querySelector('#group-info')?.textContent.includes('rdkafka-1'));
  assert.match(await page.textContent('#group-info'), /Stable\s*generation 1 · members: rdkafka-1/);
  assert.equal(await card(page, 'fig-committed'), '9 / 12');
  assert.match(await card(page, 'fig-lag'), /lag: 3/);
  assert.match(await page.textContent('#narrative'), /group kcat-group \(real Kafka clients\) rebalanced: generation 1/);
  // The coordinator's record of the rebalance sits in __consumer_offsets beside the commits.
  await page.waitForFunction(() => document.querySelector('#co-table')?.textContent.includes("GroupMetadata('kcat-group')"));
  assert.match(await page.textContent('#co-table'), /GroupMetadata\('kcat-group'\)generation 1 · rdkafka-1 ← orders-0/);
  // A zombie's commit from an older generation is refused, and changes nothing.
  await typeLine(page, 'rebalance kcat-group generation=2 protocol=range members=[]');
  await page.fill('#line-input', 'commit-offsets kcat-group member=rdkafka-1 generation=1 offsets=orders:0=12');
  await page.press('#line-input', 'Enter');
  await page.waitForFunction(() => document.querySelector('#alert').textContent.includes('UNKNOWN_MEMBER_ID'));
  assert.match(await page.textContent('#alert'), /not a member of group kcat-group.*Nothing changed/);
  assert.equal(await card(page, 'fig-committed'), '9 / 12');
  assert.match(await page.textContent('#group-info'), /Empty\s*generation 2 · members: none/);
  assert.deepEqual(page.errors, []);
});

test('binary records: hex, the Schema Registry framing with its schema id, and an export that replays them', async () => {
  const page = await openLab(browser, lab.url);
  await resetLab(page);
  await typeLine(page, 'topic payments partitions=1');
  // What the listener keeps when an Avro producer writes through the Schema Registry's serializer:
  // key ff 00 9c (not UTF-8), value magic byte 0, schema id 42, then the Avro payload 02 c8 01.
  await typeLine(page, 'send payments partition=0 client=avro-producer records=[{"key":{"base64":"/wCc"},"value":{"base64":"AAAAACoCyAE="}},{"key":"p-2","value":{"base64":"3q2+7w=="}},{"key":"p-3","value":"plain text"}]');
  await page.selectOption('#log-partition', 'payments-0');
  await page.waitForFunction(() => document.querySelectorAll('#log-strip .rec:not(.leo):not(.gone)').length === 3);
  const boxes = await page.$$eval('#log-strip .rec:not(.leo):not(.gone)', (els) => els.map((e) => ({
    key: e.querySelector('.key').textContent, tag: e.querySelector('.fmt')?.textContent ?? null, title: e.title,
  })));
  assert.equal(boxes[0].key, '0xff009c');
  assert.equal(boxes[0].tag, 'schema 42');
  assert.match(boxes[0].title, /\[schema 42\] 02c801/);
  assert.equal(boxes[1].key, 'p-2');
  assert.equal(boxes[1].tag, 'bytes');
  assert.match(boxes[1].title, /0xdeadbeef/);
  assert.equal(boxes[2].tag, null);
  assert.match(boxes[2].title, /plain text/);
  // The export writes the bytes as base64, and importing it gives back the same records.
  const exported = await (await fetch(`${lab.url}/api/scenario`)).text();
  assert.match(exported, /"key":\{"base64":"\/wCc"\},"value":\{"base64":"AAAAACoCyAE="\}/);
  const before = await (await fetch(`${lab.url}/api/records?topic=payments&partition=0`)).json();
  const dir = mkdtempSync(path.join(tmpdir(), 'offsetlab-binary-'));
  const file = path.join(dir, 'binary.scn');
  writeFileSync(file, exported);
  await page.setInputFiles('#import', file);
  await page.waitForSelector('#alert.ok');
  const after = await (await fetch(`${lab.url}/api/records?topic=payments&partition=0`)).json();
  assert.deepEqual(after.records, before.records);
  const whole = await (await fetch(`${lab.url}/api/record?topic=payments&partition=0&offset=0`)).json();
  assert.deepEqual([whole.key, whole.value], [{ base64: '/wCc' }, { base64: 'AAAAACoCyAE=' }]);
  assert.deepEqual(page.errors, []);
});

test('a group that only has offsets, set from outside as an admin client sets them', async () => {
  const page = await openLab(browser, lab.url);
  await resetLab(page);
  // kafkajs's admin.resetOffsets(earliest) commits −2 from outside the group: stored as given.
  await typeLine(page, 'alter-offsets audit offsets=orders:0=-2');
  await selectGroup(page, 'audit');
  await page.waitForFunction(() => document.querySelector('#group-info')?.textContent.includes('Empty'));
  assert.match(await page.textContent('#group-info'), /Empty\s*generation 0 · members: none/);
  assert.equal(await card(page, 'fig-committed'), '-2 / 12');
  assert.match(await card(page, 'fig-lag'), /committed -2 is no position/);
  assert.match(await page.textContent('#sink-title'), /no sink/);
  assert.match(await page.textContent('#narrative'), /altered from outside the group .* -2 — no position/);
  assert.deepEqual(page.errors, []);
});

test('the live clock: wall time on the page, paused and resumed with one button', async () => {
  const live = await startLab({ clock: 'live' });
  try {
    const page = await openLab(browser, live.url);
    assert.match(await page.textContent('#clock'), /^clock 20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ · live$/);
    assert.equal(await page.textContent('#clock-mode'), 'pause');
    assert.match(await page.textContent('#clock-mode-why'), /reads wall time/);
    await page.click('#clock-mode');
    await page.waitForFunction(() => document.querySelector('#clock-mode').textContent === 'go live');
    const paused = await page.textContent('#clock');
    assert.doesNotMatch(paused, /live/);
    await page.waitForTimeout(1200);
    assert.equal(await page.textContent('#clock'), paused, 'a paused clock stands still');
    assert.equal((await state(live.url)).clock_mode, 'paused');
    await page.click('#clock-mode');
    await page.waitForFunction(() => document.querySelector('#clock').textContent.endsWith('· live'));
    assert.equal((await state(live.url)).clock_mode, 'live');
    // The experiment's crash is a stepped story: it pauses a live clock (its ticks would run
    // ahead of wall time) and says so.
    await page.click('#exp-crash');
    await page.waitForFunction(() => document.querySelector('#alert.ok')?.textContent.includes('go live'));
    assert.equal((await state(live.url)).clock_mode, 'paused');
    assert.equal(Number(await page.textContent('#fig-lost')), 3);
    assert.deepEqual(page.errors, []);
  } finally {
    live.stop();
  }
});

test('compaction of a keyed topic, before and after, with a tombstone', async () => {
  const page = await openLab(browser, lab.url);
  await resetLab(page);
  await typeLine(page, 'topic users partitions=1 cleanup.policy=compact segment.records=2 delete.retention.ms=1h');
  for (const line of ['produce users key=u-1', 'produce users key=u-1', 'produce users key=u-2', 'produce users key=u-2 value=null', 'produce users key=u-3']) {
    await typeLine(page, line);
  }
  await page.selectOption('#log-partition', 'users-0');
  await page.waitForSelector('#compact-topic:not([hidden])');
  await page.waitForFunction(() => document.querySelectorAll('#log-strip .rec:not(.leo):not(.gone)').length === 5);
  await page.click('#compact-topic');
  await page.waitForFunction(() => document.querySelectorAll('#log-strip .rec:not(.leo):not(.gone)').length === 3);
  assert.match(await page.textContent('#narrative'), /removed 2 superseded record\(s\) and 0 tombstone/);
  await typeLine(page, 'tick 1h');
  await page.click('#compact-topic');
  await page.waitForFunction(() => document.querySelectorAll('#log-strip .rec:not(.leo):not(.gone)').length === 2);
  const offsets = await page.$$eval('#log-strip .rec:not(.leo):not(.gone) .off', (els) => els.map((e) => e.textContent));
  assert.deepEqual(offsets, ['1', '4'], 'offsets are kept: compaction leaves gaps');
  assert.deepEqual(page.errors, []);
});

test('every tab passes WCAG 2 A and AA (axe-core), in the states a class goes through, at desktop and phone width', async () => {
  for (const viewport of [{ width: 1280, height: 900 }, { width: 390, height: 844 }]) {
    const page = await openLab(browser, lab.url, viewport);
    await resetLab(page);
    const where = `${viewport.width}px`;
    assert.deepEqual(await wcagViolations(page), [], `${where}: the seed lab`);
    // Lost records and a crashed consumer's card, in the seed's group.
    const before = await page.evaluate(() => window.__version || 0);
    await page.click('#exp-crash');
    await page.waitForFunction((b) => (window.__version || 0) > b + 1, before);
    await page.waitForFunction(() => document.querySelector('#fig-lost').textContent === '3');
    await typeLine(page, 'crash c1');
    await page.waitForSelector('.consumer.crashed');
    await page.waitForSelector('.rec.lost');
    assert.deepEqual(await wcagViolations(page), [], `${where}: lost records, a crashed consumer`);
    // Duplicates, superseded commits, a long narrative.
    await page.click('#exp-commit .chip:has-text("manual-batch")');
    await page.waitForSelector('#exp-who:has-text("manual-batch-append")');
    await page.click('#exp-crash');
    await page.waitForFunction(() => Number(document.querySelector('#fig-dup').textContent) > 0);
    await typeLine(page, 'init-txn tx-a11y timeout=60s');
    await page.waitForSelector('#txn-panel:not([hidden])');
    assert.deepEqual(await wcagViolations(page), [], `${where}: after crashes, with a transactional producer`);
    for (const view of ['lessons', 'explorer', 'learn']) {
      await page.click(`#tab-${view}`);
      if (view === 'explorer') await page.waitForSelector('table.matrix td button', { timeout: 60000 });
      assert.deepEqual(await wcagViolations(page), [], `${where}: the ${view} tab`);
    }
    // A lesson under way: its panel over the lab.
    await page.click('#tab-lessons');
    await page.click('.lesson-list li:has-text("Lesson 1") button:has-text("Start")');
    await page.waitForSelector('#lesson-panel:not([hidden])');
    assert.deepEqual(await wcagViolations(page), [], `${where}: a lesson's panel`);
    // On to its first question: the answer fields are labelled, the panel still reads.
    for (let i = 0; i < 40 && !(await page.$('#lesson-panel input')); i++) {
      // Pressed in the page (the panel is drawn again on every state), then the step's action
      // awaited.
      const before = await page.evaluate(() => window.__version || 0);
      await page.evaluate(() => document.querySelector('#lesson-panel button.primary')?.click());
      await page.waitForFunction((b) => (window.__version || 0) > b || document.querySelector('#lesson-panel input'), before);
    }
    assert.ok(await page.$('#lesson-panel input'), 'a question step');
    assert.deepEqual(await wcagViolations(page), [], `${where}: a lesson's question`);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  }
});

test('the experiment can be driven from the keyboard alone', async () => {
  const page = await openLab(browser, lab.url);
  await resetLab(page);
  // Tab order reaches the toggles and the buttons; Enter and Space press them.
  await page.focus('#exp-commit .chip:has-text("auto-timer")');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.focus), 'exp-commit:manual-batch', 'Tab walks the toggles');
  let before = await page.evaluate(() => window.__version);
  await page.keyboard.press('Enter');
  await page.waitForFunction((b) => window.__version > b, before);
  await page.waitForSelector('#exp-who:has-text("manual-batch-append")');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.focus), 'exp-commit:manual-batch', 'the focus stays on the toggle pressed');
  await page.focus('#exp-crash');
  before = await page.evaluate(() => window.__version);
  await page.keyboard.press(' ');
  await page.waitForFunction((b) => window.__version > b + 1, before);
  assert.ok(Number(await card(page, 'fig-dup')) > 0, 'crashed mid-batch: a redelivery');
  // The scrollable regions take the focus, so a keyboard can scroll them.
  for (const id of ['#narrative', 'section[aria-labelledby="co-title"] .table-wrap']) {
    await page.focus(id);
    assert.ok(await page.evaluate((sel) => document.activeElement === document.querySelector(sel), id), id);
  }
  assert.deepEqual(page.errors, []);
});

test('it reads at phone width and is keyboard operable', async () => {
  const page = await openLab(browser, lab.url, { width: 390, height: 844 });
  await resetLab(page);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `no horizontal scrolling at phone width (overflow ${overflow}px)`);
  await page.focus('#tab-lab');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.getAttribute('#tab-lessons', 'aria-selected'), 'true');
  await page.keyboard.press('ArrowLeft');
  const poll = page.locator('button[data-line="poll c1"]');
  await poll.focus();
  const before = await page.evaluate(() => window.__version);
  await page.keyboard.press('Enter');
  await page.waitForFunction((b) => window.__version > b, before);
  assert.match(await card(page, 'fig-committed'), /0 \/ 12/);
  assert.deepEqual(page.errors, []);
});

test('a million-record log loads and pages without sending the log to the browser', async () => {
  const res = await fetch(`${lab.url}/api/actions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ lines: ['produce orders count=1000000'] }) });
  assert.equal(res.status, 200);
  const page = await openLab(browser, lab.url);
  await page.waitForSelector('#log-strip .slot');
  assert.ok(await page.locator('#log-strip .slot').count() <= 49, 'a window, not the log');
  await page.click('[data-jump="end"]');
  await page.waitForFunction(() => document.querySelector('#log-range').textContent.includes('1000011'));
  await page.fill('#log-goto', '500000');
  await page.dispatchEvent('#log-goto', 'change');
  await page.waitForFunction(() => /offsets 499996–/.test(document.querySelector('#log-range').textContent));
  assert.deepEqual(page.errors, []);
});
