// Captures the screenshots in docs/screenshots from a fresh lab: `node screenshots.mjs`.
// (The `-before` pictures of the Lab tab were taken once, from the page as it was before the
// guided experiment, and are kept for comparison.)
import path from 'node:path';
import { startLab, launch, openLab, repo, typeLine } from './tests/harness.js';

const out = (name) => path.join(repo, 'docs', 'screenshots', name);
const lab = await startLab();
const browser = await launch();

/** A new learner's first press: the guided experiment's step ① played, its effect in view. */
async function guided(viewport, name) {
  await fetch(`${lab.url}/api/reset`, { method: 'POST' });
  const page = await openLab(browser, lab.url, viewport, { fresh: true });
  await page.screenshot({ path: out(`${name}-start.png`) });
  await page.click('#guided .choice:text-is("3")');
  await page.click('#guided-run');
  await page.waitForSelector('#guided-strips .strip-mini');
  await page.waitForTimeout(300);
  await page.evaluate(() => document.querySelector('#alert').hidden = true);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: out(`${name}.png`) });
  return page;
}

try {
  await guided({ width: 1280, height: 900 }, 'guided-1280');
  const phone = await guided({ width: 390, height: 844 }, 'guided-390');
  await phone.evaluate(() => document.querySelector('#guided-strips').scrollIntoView({ block: 'center' }));
  await phone.screenshot({ path: out('guided-390-effect.png') });

  // Every control, after the same crash, the comparison on top.
  await fetch(`${lab.url}/api/reset`, { method: 'POST' });
  const page = await openLab(browser, lab.url, { width: 1280, height: 900 });
  for (const l of ['poll c1', 'process c1 count=all', 'tick 4s', 'poll c1', 'process c1', 'tick 1s', 'crash c1']) await typeLine(page, l);
  await page.waitForTimeout(300);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: out('lab-crash.png') });

  await page.click('#tab-explorer');
  await page.waitForSelector('table.matrix');
  await page.screenshot({ path: out('explorer.png'), fullPage: true });

  await page.click('#tab-lessons');
  await page.click('.lesson-list li:has-text("Lesson 2") button:has-text("Start")');
  await page.waitForSelector('#lesson-panel:not([hidden])');
  // The setup and the first batch run; the third step asks what the cards show.
  for (let i = 0; i < 2; i++) {
    const before = await page.evaluate(() => window.__version || 0);
    await page.click('#lesson-panel button.primary');
    await page.waitForFunction((b) => (window.__version || 0) > b, before);
  }
  await page.waitForTimeout(300);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: out('lesson.png') });

  // Kafka transactions: one committed, one aborted, one open; read by a read_committed group.
  await page.click('#tab-lab');
  await page.click('#lesson-panel button:has-text("Leave lesson")');
  await typeLine(page, 'close c1');
  for (const l of [
    'topic orders-copy partitions=1',
    'consumer copier group=copy topic=orders commit=manual-batch max-poll=4 sink=kafka-tx output=orders-copy reset=earliest',
    'consumer strict group=strict topic=orders-copy isolation=read_committed commit=manual-batch reset=earliest',
    'poll copier', 'process copier count=all', 'poll copier', 'process copier count=2', 'abort copier',
    'poll copier', 'process copier count=all', 'poll copier', 'process copier count=2',
    'poll strict', 'process strict count=all',
  ]) await typeLine(page, l);
  await page.click('.chip:has-text("strict")');
  await page.selectOption('#log-partition', 'orders-copy-0');
  await page.click('[data-jump="start"]');
  await page.waitForSelector('#log-strip .rec.marker');
  await page.waitForTimeout(300);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: out('transactions.png'), fullPage: true });

  const all = await openLab(browser, lab.url, { width: 390, height: 844 });
  await all.waitForTimeout(300);
  await all.screenshot({ path: out('phone.png') });
} finally {
  await browser.close();
  lab.stop();
}
