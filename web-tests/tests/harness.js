// Starts an offsetlab web lab for a test file and opens Chromium pages on it.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repo = path.resolve(here, '..', '..');
export const BIN = process.env.OFFSETLAB_BIN || path.join(repo, 'target', 'debug', 'offsetlab');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

/** axe-core's browser build (npm, locked in package-lock.json): the accessibility rules. */
export const AXE = path.join(repo, 'web-tests', 'node_modules', 'axe-core', 'axe.min.js');

for (const [what, file] of [['the offsetlab binary (cargo build)', BIN], ["Debian's chromium (apt-get install chromium)", CHROMIUM], ['axe-core (cd web-tests && npm ci)', AXE]]) {
  if (!existsSync(file)) throw new Error(`browser tests need ${what}: ${file} is missing`);
}

/**
 * Starts `offsetlab serve --ephemeral` on a free port. Its clock is paused unless `clock` says
 * `live`: the tests step time themselves, so every figure they check is exact.
 */
export async function startLab({ clock = 'paused' } = {}) {
  const child = spawn(BIN, ['serve', '--ephemeral', '--http', '127.0.0.1:0', '--kafka', 'off', '--clock', clock], { stdio: ['ignore', 'pipe', 'pipe'] });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the lab did not start: ${out}`)), 15000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/lab on (http:\/\/[\d.:]+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.stderr.on('data', (d) => { out += d; });
    child.on('exit', (code) => reject(new Error(`the lab exited (${code}): ${out}`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

/**
 * Starts `offsetlab serve --workshop --ephemeral` on a free port, clocks paused; resolves with
 * its address and the instructor's token it printed.
 */
export async function startWorkshop(extra = []) {
  const child = spawn(BIN, ['serve', '--workshop', '--ephemeral', '--http', '127.0.0.1:0', '--clock', 'paused', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
  const started = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the workshop did not start: ${out}`)), 15000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/workshop on (http:\/\/[\d.:]+)[\s\S]*#token=([0-9a-f]{32})/);
      if (m) { clearTimeout(timer); resolve({ url: m[1], token: m[2] }); }
    });
    child.stderr.on('data', (d) => { out += d; });
    child.on('exit', (code) => reject(new Error(`the workshop exited (${code}): ${out}`)));
  });
  return { ...started, stop: () => child.kill('SIGTERM') };
}

/** A new browser (its own cookies) joining the workshop at `url` as `name`; the lab's page once it shows the lab. */
export async function joinAs(browser, url, name, viewport = { width: 1280, height: 800 }) {
  const context = await browser.newContext({ viewport });
  await context.addInitScript(() => localStorage.setItem('offsetlab.view', 'full'));
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  page.on('dialog', (d) => d.accept());
  await page.goto(url);
  await page.waitForSelector('#join:not([hidden])');
  await page.fill('#join-name', name);
  await page.click('#join-form button[type="submit"]');
  await page.waitForSelector('#consumers .consumer');
  return page;
}

/** axe-core's WCAG 2 A and AA rules on the page as it is: the violations, each with where. */
export async function wcagViolations(page) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) {
    await page.addScriptTag({ path: AXE });
  }
  return page.evaluate(async () => {
    const r = await window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa'] } });
    return r.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).slice(0, 5).join(', ')}`);
  });
}

export async function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * A page on the lab that fails the test on any page error. A new learner's lab opens on the
 * guided experiment; the tests of the full lab come as a learner who has asked for every control
 * (`fresh: true` comes as a new learner).
 */
export async function openLab(browser, url, viewport = { width: 1280, height: 800 }, { fresh = false } = {}) {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  if (!fresh) await context.addInitScript(() => localStorage.setItem('offsetlab.view', 'full'));
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  page.on('dialog', (d) => d.accept()); // "replace the current lab?" — yes
  await page.goto(url);
  await page.waitForFunction(() => (window.__version || 0) > 0);
  if (!fresh) await page.waitForSelector('#consumers .consumer, #consumers p');
  return page;
}

export async function state(url) {
  const res = await fetch(`${url}/api/state`);
  return res.json();
}

/** Runs `offsetlab run FILE --json` and returns the parsed state. */
export function runScenario(file) {
  return JSON.parse(execFileSync(BIN, ['run', file, '--json'], { encoding: 'utf8' }));
}

/**
 * Clicks a consumer's button by its scenario line, e.g. `poll c1`, and waits for the state it
 * brings. The page draws its buttons anew on every state it receives (a live update may land
 * between finding the button and clicking it): a click that sent no action within 5 s missed
 * and is made again — never one that did, so no action is applied twice. A refused action
 * fails with the server's reason.
 */
export async function press(page, line) {
  const before = await page.evaluate(() => window.__version || 0);
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const sent = page
      .waitForRequest((r) => r.method() === 'POST' && r.url().endsWith('/api/actions'), { timeout: 5000 })
      .catch(() => null);
    await page.click(`button[data-line="${line}"]`);
    const request = await sent;
    if (request) {
      const response = await request.response();
      if (response && !response.ok()) throw new Error(`${line}: refused: ${await response.text()}`);
      await page.waitForFunction((b) => (window.__version || 0) > b, before);
      return;
    }
  }
  throw new Error(`${line}: three clicks sent no action`);
}

/**
 * Shows group `name`: clicks its tab until the page has it selected. A click can land while a
 * state update redraws the tabs (the action's answer and the event stream's fetch both render
 * them), and then selects nothing; it is clicked again, at most three times.
 */
export async function selectGroup(page, name) {
  const tab = `#group-tabs button:text-is("${name}")`;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    await page.click(tab);
    const selected = await page
      .waitForSelector(`${tab}[aria-pressed="true"]`, { timeout: 5000 })
      .catch(() => null);
    if (selected) return;
  }
  throw new Error(`the group tab ${name} was clicked three times and never selected`);
}

/**
 * Types an accepted scenario line into the line form and waits for its own answer: the state
 * moved on *and* the form was cleared. The event stream can draw the new state before the
 * action's answer arrives; waiting only for the state would let the next line be typed while
 * that answer is still on its way (and the answer hides any alert the next line raised).
 */
export async function typeLine(page, line) {
  const before = await page.evaluate(() => window.__version || 0);
  await page.fill('#line-input', line);
  await page.press('#line-input', 'Enter');
  await page.waitForFunction((b) => (window.__version || 0) > b
    && document.querySelector('#line-input').value === '', before);
}

export async function card(page, id) {
  return (await page.textContent(`#${id}`)).trim();
}
