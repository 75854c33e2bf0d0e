// `offsetlab serve --bootstrap-server`: the page driving a real cluster — here the lab's own
// Kafka listener in another process, a broker this page's lab knows nothing of — with real
// librdkafka consumers. Produce, poll, crash (kill -9), restart: the cards show the cluster's
// figures, and the cluster itself holds them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { BIN, launch, openLab, press, typeLine, card, wcagViolations } from './harness.js';

/** Starts `offsetlab ARGS` and resolves with the first match of `pattern` in what it prints. */
function started(args, pattern) {
  const child = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const found = new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`offsetlab ${args.join(' ')} did not start: ${out}`)), 20000);
    const look = (d) => {
      out += d;
      const m = out.match(pattern);
      if (m) { clearTimeout(timer); resolve(m); }
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.on('exit', (code) => reject(new Error(`offsetlab exited (${code}): ${out}`)));
  });
  return { child, found };
}

let cluster, page, browser, clusterKafka, clusterUrl, url;
before(async () => {
  // The "cluster": a lab with its Kafka listener, on a live clock (sessions time out in wall time).
  cluster = started(['serve', '--ephemeral', '--http', '127.0.0.1:0', '--kafka', '127.0.0.1:0', '--clock', 'live'],
    /lab on (http:\/\/[\d.:]+)[\s\S]*Kafka listener on ([\d.:]+)/);
  const m = await cluster.found;
  [clusterUrl, clusterKafka] = [m[1], m[2]];
  page = started(['serve', '--http', '127.0.0.1:0', '--bootstrap-server', clusterKafka, '--prefix', 'web-'], /lab on (http:\/\/[\d.:]+)/);
  url = (await page.found)[1];
  browser = await launch();
});
after(async () => {
  await browser?.close();
  // SIGTERM stops the page as Ctrl-C does: it closes its consumers and deletes its topics and
  // groups on the cluster, so the cluster is stopped only after it has exited.
  if (page && page.child.exitCode === null) {
    const exited = new Promise((resolve) => page.child.once('exit', resolve));
    page.child.kill('SIGTERM');
    await exited;
  }
  cluster?.child.kill('SIGTERM');
});

test('produce, poll, crash, restart on a real cluster: the cards show its figures', async () => {
  const tab = await openLab(browser, url);
  await typeLine(tab, 'topic orders partitions=1');
  await typeLine(tab, 'produce orders count=12');
  await typeLine(tab, 'consumer c1 group=billing topic=orders commit=manual-batch max-poll=4 sink=append reset=earliest session-timeout=6s');
  assert.match(await tab.textContent('#cluster-banner'), new RegExp(`On the cluster at ${clusterKafka.replaceAll('.', '\\.')}: every action runs there first`));
  assert.match(await tab.textContent('#cluster-banner'), /prefixed web-/);

  await press(tab, 'poll c1');
  await press(tab, 'process c1 count=all');
  assert.equal(await card(tab, 'fig-committed'), '4 / 12', 'the batch committed on the cluster');
  await press(tab, 'poll c1');
  await press(tab, 'process c1');
  await press(tab, 'process c1');
  assert.equal(await card(tab, 'fig-rows'), '6');
  assert.match(await tab.textContent('#group-info'), /the coordinator lists: c1 \(/);

  // kill -9 of the consumer's process: no commit of 4..5, no LeaveGroup.
  await press(tab, 'crash c1');
  assert.equal(await card(tab, 'fig-committed'), '4 / 12');
  // The process is dead, yet the cluster's coordinator still lists it: nothing told it so.
  assert.match(await tab.textContent('#group-info'), /the coordinator lists: c1 \(/);
  // The dead member holds the partition until its 6 s session runs out on the cluster.
  await tab.waitForTimeout(7000);
  await press(tab, 'restart c1');
  await press(tab, 'poll c1');
  await press(tab, 'process c1 count=all');
  assert.equal(await card(tab, 'fig-committed'), '8 / 12', 'the restarted process re-read 4..7 and committed 8');
  assert.equal(await card(tab, 'fig-rows'), '10');
  assert.equal(await card(tab, 'fig-lost'), '0');
  assert.equal(await card(tab, 'fig-dup'), '2', 'two rows written twice');
  assert.match(await card(tab, 'fig-dup-sub'), /rows written twice · 2 records redelivered \(2 after a crash\)/);

  // The figures are the cluster's: its coordinator holds 8 for the run's prefixed group.
  const held = await (await fetch(`${clusterUrl}/api/state`)).json();
  assert.equal(held.groups['web-billing'].committed['web-orders-0'], 8);

  // A line a cluster cannot run is refused, and says why.
  await tab.fill('#line-input', 'tick 5s');
  await tab.press('#line-input', 'Enter');
  await tab.waitForFunction(() => /cannot run on a real cluster/.test(document.querySelector('#alert')?.textContent || ''));

  assert.deepEqual(await wcagViolations(tab), []);
  assert.deepEqual(tab.errors, []);
});
