// A consumer-protocol group (KIP-848) on the page, during a scale-out: its epochs, and per member
// its epoch and partitions — owned, being revoked, awaited — read off the drawing as lesson 13
// plays: a third member joins, two members each give up one partition, the third picks them up.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startLab, launch, openLab, selectGroup, repo, wcagViolations } from './harness.js';

let lab, browser;
before(async () => { lab = await startLab(); browser = await launch(); });
after(async () => { await browser?.close(); lab?.stop(); });

const LESSON = readFileSync(`${repo}/lessons/13-one-scale-out-three-protocols.scn`, 'utf8')
  .split('\n').filter((l) => l.trim() && !l.startsWith('#') && !l.startsWith('expect'));

/** The lesson's action lines from the one after `from` (or the start) up to and including `until`. */
function lines(from, until) {
  const start = from ? LESSON.indexOf(from) + 1 : 0;
  const end = LESSON.indexOf(until, start);
  assert.ok(end >= start, `${until} after ${from}`);
  return LESSON.slice(start, end + 1);
}

async function apply(ls) {
  const r = await fetch(`${lab.url}/api/actions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ lines: ls }) });
  assert.ok(r.ok, await r.text());
}

/** The panel's members: epoch, state word and partitions by kind. */
async function members(page) {
  return page.$$eval('#consumer-group tbody tr[data-member]', (rows) => Object.fromEntries(rows.map((r) => [
    r.querySelector('.who').textContent,
    {
      epoch: Number(r.querySelector('.epoch').textContent),
      behind: r.querySelector('.epoch').classList.contains('behind'),
      state: r.querySelector('.mstate').textContent,
      owned: [...r.querySelectorAll('.tp.owned')].map((c) => c.textContent),
      revoking: [...r.querySelectorAll('.tp.revoking')].map((c) => c.textContent),
      awaiting: [...r.querySelectorAll('.tp.awaiting')].map((c) => c.textContent),
    },
  ])));
}

const K3 = 'consumer k3 group=kip848 topic=orders commit=manual-batch max-poll=6 reset=earliest commit-on-revoke=no group-protocol=consumer';

const epochs = (page) => page.$$eval('#consumer-group .cg-epochs .ep', (es) => es.map((e) => e.textContent));

test('a scale-out under the consumer protocol, drawn step by step: only the partitions that move pause', async () => {
  // The lesson from its start, as a new lab (the seed's topic would clash).
  const load = await fetch(`${lab.url}/api/scenario`, { method: 'POST', body: `${lines(null, K3).join('\n')}\n` });
  assert.ok(load.ok, await load.text());
  for (const viewport of [{ width: 1280, height: 900 }, { width: 390, height: 844 }]) {
    const page = await openLab(browser, lab.url, viewport);
    await selectGroup(page, 'kip848');
    await page.waitForSelector('#consumer-group:not([hidden]) tbody tr[data-member]');
    assert.deepEqual(await epochs(page), ['group epoch 4', 'assignment epoch 4', 'uniform assignor']);
    assert.match(await page.textContent('#group-info'), /Reconciling.*group epoch 4/);
    // k3 is at epoch 4 and owns nothing yet: orders-2 and orders-5 are still k1's and k2's,
    // which go on fetching all three of theirs.
    let m = await members(page);
    assert.deepEqual(m.k3, { epoch: 4, behind: false, state: 'waiting for partitions', owned: [], revoking: [], awaiting: ['orders-2', 'orders-5'] });
    assert.deepEqual([m.k1.epoch, m.k1.behind, m.k1.owned], [3, true, ['orders-0', 'orders-1', 'orders-2']]);
    assert.deepEqual(m.k2.owned, ['orders-3', 'orders-4', 'orders-5']);
    assert.match(await page.textContent('#consumer-group'), /only the partitions that move pause/);
    const shot = `${repo}/target/screenshots/consumer-group-${viewport.width}.png`;
    await page.screenshot({ path: shot, fullPage: false });
    // Nothing of the panel is wider than the screen.
    const fits = await page.evaluate(() => document.querySelector('#consumer-group').getBoundingClientRect().right <= document.documentElement.clientWidth);
    assert.ok(fits, `the panel fits ${viewport.width} px`);
    assert.deepEqual(await wcagViolations(page), []);
    await page.close();
  }
  // Their heartbeats tell k1 and k2 to give one partition up each.
  await apply(lines(K3, 'tick 4s'));
  const page = await openLab(browser, lab.url, { width: 1280, height: 900 });
  await selectGroup(page, 'kip848');
  await page.waitForSelector('#consumer-group tbody tr[data-member] .tp.revoking');
  let m = await members(page);
  assert.deepEqual([m.k1.owned, m.k1.revoking, m.k1.state], [['orders-0', 'orders-1'], ['orders-2'], 'revoking']);
  assert.deepEqual([m.k2.owned, m.k2.revoking], [['orders-3', 'orders-4'], ['orders-5']]);
  // Their next polls revoke; k3's next heartbeat picks both up: Stable at epoch 4.
  await apply(['poll k1', 'poll k2', 'tick 5s']);
  await page.waitForFunction(() => !document.querySelector('#consumer-group tbody .tp.awaiting'));
  m = await members(page);
  assert.deepEqual([m.k1.epoch, m.k2.epoch, m.k3.epoch], [4, 4, 4]);
  assert.deepEqual(m.k3.owned, ['orders-2', 'orders-5']);
  assert.match(await page.textContent('#consumer-group'), /nothing moves/);
  await page.close();
});
