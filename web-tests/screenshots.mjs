// Captures the screenshots in docs/screenshots from a fresh lab: `node screenshots.mjs`.
import path from 'node:path';
import { startLab, launch, openLab, repo } from './tests/harness.js';

const out = (name) => path.join(repo, 'docs', 'screenshots', name);
const lab = await startLab();
const browser = await launch();
try {
  const page = await openLab(browser, lab.url);
  const line = async (l) => {
    const before = await page.evaluate(() => window.__version || 0);
    await page.fill('#line-input', l);
    await page.press('#line-input', 'Enter');
    await page.waitForFunction((b) => (window.__version || 0) > b, before);
  };
  for (const l of ['poll c1', 'process c1 count=all', 'tick 4s', 'poll c1', 'process c1', 'tick 1s', 'crash c1']) await line(l);
  await page.waitForTimeout(300);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: out('lab-crash.png') });

  await page.click('#tab-explorer');
  await page.waitForSelector('table.matrix');
  await page.screenshot({ path: out('explorer.png'), fullPage: true });

  await page.click('#tab-lessons');
  await page.click('.lesson-list li:has-text("Lesson 2") button:has-text("Start")');
  await page.waitForSelector('#lesson-panel:not([hidden])');
  for (let i = 0; i < 5; i++) {
    const before = await page.evaluate(() => window.__version || 0);
    await page.click('#lesson-panel button:has-text("Run this step")');
    await page.waitForFunction((b) => (window.__version || 0) > b, before);
  }
  await page.waitForTimeout(300);
  await page.screenshot({ path: out('lesson.png') });

  // Kafka transactions: one committed, one aborted, one open; read by a read_committed group.
  await page.click('#tab-lab');
  await page.click('#lesson-panel button:has-text("Leave lesson")');
  await line('close c1');
  for (const l of [
    'topic orders-copy partitions=1',
    'consumer copier group=copy topic=orders commit=manual-batch max-poll=4 sink=kafka-tx output=orders-copy reset=earliest',
    'consumer strict group=strict topic=orders-copy isolation=read_committed commit=manual-batch reset=earliest',
    'poll copier', 'process copier count=all', 'poll copier', 'process copier count=2', 'abort copier',
    'poll copier', 'process copier count=all', 'poll copier', 'process copier count=2',
    'poll strict', 'process strict count=all',
  ]) await line(l);
  await page.click('.chip:has-text("strict")');
  await page.selectOption('#log-partition', 'orders-copy-0');
  await page.click('[data-jump="start"]');
  await page.waitForSelector('#log-strip .rec.marker');
  await page.waitForTimeout(300);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: out('transactions.png'), fullPage: true });

  const phone = await openLab(browser, lab.url, { width: 390, height: 844 });
  await phone.waitForTimeout(300);
  await phone.screenshot({ path: out('phone.png') });
} finally {
  await browser.close();
  lab.stop();
}
