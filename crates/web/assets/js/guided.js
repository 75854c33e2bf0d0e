// The guided experiment, the first thing a new lab shows: the seed's three steps — ① auto-commit
// + append, crashed mid-batch; ② manual commit + upsert, crashed the same way; ③ both rewound
// to the first offset. Each asks for a prediction, runs, and shows its effect next to the
// press: the affected offsets in a strip of the log, the narrative line that explains them, and
// one sentence of why. Every other control is one click away ("All controls").
import { $, h, keyed } from './dom.js';
import { fmtT, plural, ranges } from './format.js';
import { request, readOnly } from './api.js';
import { setClockMode } from './actions.js';
import { ui, rerender, setState } from './store.js';
import { crashPreface, expCrash, expRewind, expSwitch, expTarget, EXP_TOPIC } from './experiment.js';
import { stripBoxes } from './panels/log_strip.js';
import { delivered } from './view.js';

const STORE = 'offsetlab.guided';
const MODE = 'offsetlab.view';

const REWIND_CHOICES = [
  'Both: one row per order',
  'Ledger: more rows than orders · table: one per order',
  'Both: more rows than orders',
  'Ledger: one per order · table: more rows than orders',
];

const STEPS = [
  {
    title: 'Auto-commit + append',
    strategy: 'auto-timer', sink: 'append',
    setup: 'The consumer c1 commits on a 5-second timer, librdkafka’s auto-commit, and appends one row per order to a ledger.',
    story: 'It polls a batch of 4 orders and finishes the first. The timer fires, and the process is killed (kill -9) with 3 orders still in its hands; a new process starts.',
    question: 'How many orders will be silently lost?',
    choices: ['0', '1', '3', '4'],
    button: 'Crash mid-batch',
  },
  {
    title: 'Manual commit + upsert',
    strategy: 'manual-batch', sink: 'upsert',
    setup: 'A second application commits only after its whole batch is written (commitSync after processing), into a table keyed by order id.',
    story: 'The same crash: a batch of 4, one order written, then kill -9 and a new process.',
    question: 'What will this crash cost?',
    choices: ['3 orders lost, as before', 'Nothing lost, a row written twice', 'Nothing lost, no row written twice', 'One order lost, a row written twice'],
    button: 'Crash mid-batch',
  },
  {
    title: 'Rewind to earliest',
    setup: 'Both applications seek back to offset 0 and read the whole log again: the replay that rebuilds a projection.',
    story: 'The ledger and the table are each handed every order a second time.',
    question: 'How many rows will each sink hold?',
    choices: REWIND_CHOICES,
    button: 'Rewind both to earliest',
  },
];

function load() {
  try {
    const g = JSON.parse(localStorage.getItem(STORE) || 'null');
    if (g && Number.isInteger(g.step) && Array.isArray(g.guesses) && Array.isArray(g.results)) return g;
  } catch { /* a damaged record starts the strip over */ }
  return { step: 0, guesses: [], results: [] };
}

const guided = load();
const save = () => localStorage.setItem(STORE, JSON.stringify(guided));

/** `guided` while the learner has not finished the strip nor asked for every control. */
export function mode() {
  // The instructor's read-only view of a learner's lab shows all of it.
  if (readOnly) return 'full';
  return localStorage.getItem(MODE) || (guided.step >= STEPS.length ? 'full' : 'guided');
}

export function setMode(m) {
  localStorage.setItem(MODE, m);
  applyMode();
  rerender();
}

export function applyMode() {
  document.body.classList.toggle('mode-guided', mode() === 'guided');
  document.body.classList.toggle('mode-full', mode() !== 'guided');
}

/** The step the learner reached, 0..3 (3: done), for the instructor's room. */
export const guidedStep = () => Math.min(guided.step, STEPS.length);

/** Back to step ① (the lab was reset to the seed). */
export function restartGuided() {
  guided.step = 0; guided.guesses = []; guided.results = []; guided.pausedLive = false;
  save();
}

/** A pair's group and its figures on orders-0. */
function pair(strategy, sink) {
  const t = expTarget(strategy, sink);
  const g = t.existing ? ui.state.groups[t.group] : null;
  return { target: t, g, p: g ? g.partitions.find((x) => x.topic === EXP_TOPIC) || g.partitions[0] : null };
}

/** Whether the lab still holds what the steps done so far did (a new server starts from the seed). */
function consistent() {
  if (guided.step === 0) return true;
  const first = pair(STEPS[0].strategy, STEPS[0].sink);
  return Boolean(first.g && (first.g.audit.lost || first.g.audit.lost_before_rewind || first.g.audit.redeliveries));
}

/** Was the guess right, given the lab's figures after the step? */
function judge(i) {
  const guess = guided.guesses[i];
  if (i === 0) {
    const { g } = pair(STEPS[0].strategy, STEPS[0].sink);
    return { right: g && String(g.audit.lost) === guess, truth: g ? `${g.audit.lost} lost` : '' };
  }
  if (i === 1) {
    const { g } = pair(STEPS[1].strategy, STEPS[1].sink);
    if (!g) return { right: false, truth: '' };
    const a = g.audit;
    const truth = a.lost ? (a.duplicate_rows ? STEPS[1].choices[3] : STEPS[1].choices[0]) : (a.duplicate_rows ? STEPS[1].choices[1] : STEPS[1].choices[2]);
    return { right: truth === guess, truth };
  }
  const ledger = pair(STEPS[0].strategy, STEPS[0].sink).g, table = pair(STEPS[1].strategy, STEPS[1].sink).g;
  if (!ledger || !table) return { right: false, truth: '' };
  const more = (g) => g.sink.rows > g.sink.distinct_keys;
  const truth = REWIND_CHOICES[more(ledger) ? (more(table) ? 2 : 1) : (more(table) ? 3 : 0)];
  return { right: truth === guess, truth };
}

/** One sentence of why, from the figures the step produced. */
function why(i) {
  if (i === 2) {
    const ledger = pair(STEPS[0].strategy, STEPS[0].sink).g, table = pair(STEPS[1].strategy, STEPS[1].sink).g;
    if (!ledger || !table) return '';
    const back = ledger.audit.replayed_since_rewind
      ? ` (and wrote, at last, the ${plural(ledger.audit.replayed_since_rewind, 'order')} the crash had lost)` : '';
    return `Reading deleted nothing, so both read every order again. The ledger appended what it already had once more${back}: ${ledger.sink.rows} rows for ${plural(ledger.sink.distinct_keys, 'order')}. The table keyed by order id overwrote its rows: ${table.sink.rows} rows for ${plural(table.sink.distinct_keys, 'order')}. Rewinding rebuilds — safely only into an idempotent sink.`;
  }
  const { g, p } = pair(STEPS[i].strategy, STEPS[i].sink);
  if (!g) return '';
  const a = g.audit;
  if (a.lost) {
    return `The commit moved to offset ${p.committed ?? '–'} while ${ranges(p.lost_ranges)} were still being processed. The restarted consumer began at the commit, so those orders were never written, and nothing reported an error: at-most-once for whatever is in flight.`;
  }
  const again = `${plural(a.redeliveries, 'record')} came back after the crash`;
  return a.duplicate_rows
    ? `Nothing was committed past unfinished work, so nothing was lost — but ${again} and the ledger appended them again: ${plural(a.duplicate_rows, 'duplicate row')}. At-least-once.`
    : `Nothing was committed past unfinished work, so the restart read the batch again: ${again}. The upsert wrote each over its own row, so no order has two rows. At-least-once, made harmless by an idempotent sink.`;
}

/** The narrative line that explains step `i`, among the events since `mark`. */
function callout(i, mark) {
  const { events, total } = ui.state.narrative;
  const since = events.slice(Math.max(0, events.length - (total - mark)));
  const find = (test) => since.find(test);
  const e = i === 0 ? find((x) => x.kind === 'warning' && /skipped for good/.test(x.text)) || find((x) => x.kind === 'crash')
    : i === 1 ? find((x) => /starts \S+ at (committed )?offset/.test(x.text)) || find((x) => x.kind === 'crash')
      : find((x) => x.kind === 'seek');
  return e ? { at: e.at, text: e.text } : null;
}

/** A strip of `orders-0` as `group` sees it, the offsets the step changed outlined. */
async function miniStrip(box, label, strategy, sink, affectedOf) {
  const { g, p } = pair(strategy, sink);
  if (!g || !p) return;
  const res = await request('GET', `/api/records?topic=${EXP_TOPIC}&partition=${p.partition}&from=0&limit=16`);
  if (!res.ok) return;
  const boxes = stripBoxes(res.data, p, { from: 0, affected: (o) => affectedOf(p, o) });
  box.append(h('div', { class: 'mini' }, h('p', { class: 'mini-label' }, label),
    h('div', { class: 'log-strip strip-mini', role: 'list', 'aria-label': `${label}: records of ${EXP_TOPIC}-${p.partition}` }, ...boxes)));
}

const lostAt = (p, o) => p.lost_ranges.some(([a, b]) => o >= a && o < b);
const againAt = (p, o) => delivered(p, o) >= 2;

async function drawStrips(box, i) {
  box.replaceChildren();
  if (i === 0) await miniStrip(box, 'c1’s log: the lost orders outlined', STEPS[0].strategy, STEPS[0].sink, lostAt);
  if (i === 1) await miniStrip(box, 'The table’s log: the redelivered orders outlined', STEPS[1].strategy, STEPS[1].sink, againAt);
  if (i === 2) {
    await miniStrip(box, 'Ledger (append): outlined, the orders written a second time', STEPS[0].strategy, STEPS[0].sink, againAt);
    await miniStrip(box, 'Table (upsert): outlined, the same replays, overwritten in place', STEPS[1].strategy, STEPS[1].sink, againAt);
  }
}

function figuresLine(strategy, sink) {
  const { g } = pair(strategy, sink);
  if (!g) return null;
  const a = g.audit, s = g.sink;
  return h('p', { class: 'guided-figures' }, `${strategy} + ${sink}: `,
    h('strong', {}, `${a.lost} lost`), a.lost_before_rewind ? ` (${a.lost_before_rewind} before the rewind)` : '', ' · ',
    `${a.redeliveries + a.replays} applied again · `, h('strong', {}, `${a.duplicate_rows} duplicate rows`), ` · ${s.rows} rows for ${plural(s.distinct_keys, 'order')}`);
}

async function run(i) {
  const step = STEPS[i];
  const panel = $('#guided');
  if (panel.getAttribute('aria-busy') === 'true') return;
  panel.setAttribute('aria-busy', 'true');
  try {
    let mark = ui.state.narrative.total;
    if (i < 2) {
      const target = await expSwitch(step.strategy, step.sink);
      if (!target) return;
      const c = ui.state.consumers.find((x) => x.name === target.consumer);
      // The guided strip has no clock button: a live clock paused for the crash goes live again
      // once the strip is done.
      const done = await expCrash(c, { label: 'Crash mid-batch', notice: false });
      if (!done) return;
      mark = done.mark;
      if (done.paused) guided.pausedLive = true;
    } else {
      for (const [strategy, sink] of [[STEPS[0].strategy, STEPS[0].sink], [STEPS[1].strategy, STEPS[1].sink]]) {
        const c = expTarget(strategy, sink).existing;
        if (!c || !(await expRewind(ui.state.consumers.find((x) => x.name === c.name), { label: 'Rewind to earliest' }))) return;
      }
      ui.group = expTarget(STEPS[0].strategy, STEPS[0].sink).group;
    }
    guided.results[i] = { callout: callout(i, mark) };
    save();
  } finally {
    panel.removeAttribute('aria-busy');
  }
  // The effect next to the press: the strip of the log it changed, drawn and in view.
  await renderGuided();
  rerender();
  $('#guided-strips')?.scrollIntoView({ block: 'center' });
}

async function next() {
  guided.step += 1;
  save();
  if (guided.step >= STEPS.length) {
    if (guided.pausedLive) { guided.pausedLive = false; save(); await setClockMode('live'); }
    setMode('full');
    return;
  }
  rerender();
  $('#guided')?.scrollIntoView({ block: 'start' });
}

function stepper() {
  return h('ol', { class: 'stepper' }, STEPS.map((s, i) => h('li', {
    class: i < guided.step ? 'done' : i === guided.step ? 'current' : '',
    'aria-current': i === guided.step ? 'step' : null,
  }, h('span', { class: 'n' }, i < guided.step ? '✔' : String(i + 1)), s.title)));
}

function compact() {
  const done = guided.step >= STEPS.length;
  return [h('div', { class: 'guided-compact' },
    h('strong', {}, done ? '✔ Guided experiment done' : `Guided experiment: step ${guided.step + 1} of ${STEPS.length}`),
    h('button', { class: 'btn small', type: 'button', onclick: () => { if (done) restartAll(); else setMode('guided'); } }, done ? 'Run it again' : 'Continue it'))];
}

async function restartAll() {
  if (!window.confirm('Running the guided experiment again resets the lab to the seed. Continue?')) return;
  const res = await request('POST', '/api/reset');
  if (!res.ok) return;
  restartGuided();
  localStorage.removeItem(MODE);
  applyMode();
  setState(res.data);
}

function question(i) {
  const step = STEPS[i];
  const guess = guided.guesses[i];
  const result = guided.results[i];
  return h('div', { class: 'predict', role: 'group', 'aria-labelledby': `guided-q-${i}` },
    h('p', { id: `guided-q-${i}`, class: 'q' }, h('strong', {}, 'Predict: '), step.question),
    h('div', { class: 'choices' }, step.choices.map((c) => h('button', {
      class: 'choice', type: 'button', 'aria-pressed': String(guess === c), disabled: Boolean(result),
      onclick: () => { guided.guesses[i] = c; save(); rerender(); },
    }, c))));
}

function resultBlock(i) {
  const result = guided.results[i];
  const { right, truth } = judge(i);
  const last = i === STEPS.length - 1;
  return h('div', { class: 'guided-result' },
    h('p', { class: `verdict ${right ? 'good' : 'bad'}`, role: 'status' }, right ? `✔ You said “${guided.guesses[i]}” — right.` : `✗ You said “${guided.guesses[i]}”; the lab shows: ${truth}.`),
    h('div', { id: 'guided-strips', class: 'guided-strips' }),
    i < 2 ? figuresLine(STEPS[i].strategy, STEPS[i].sink) : [figuresLine(STEPS[0].strategy, STEPS[0].sink), figuresLine(STEPS[1].strategy, STEPS[1].sink)],
    h('p', { class: 'why' }, why(i)),
    result.callout ? h('blockquote', { class: 'callout' }, h('span', { class: 'muted' }, `What happened, ${fmtT(result.callout.at)}: `), result.callout.text) : null,
    h('div', { class: 'row' }, h('button', { class: 'btn primary', type: 'button', onclick: next }, last ? 'Done: show all controls' : `Next: ${STEPS[i + 1].title} →`)));
}

/** Draws the strip: the step on, its question, and — once it ran — its result. */
export async function renderGuided() {
  const panel = $('#guided');
  if (!ui.state || !panel) return;
  if (!consistent()) restartGuided();
  // The instructor's read-only view, and a lesson under way, leave the strip out.
  if (readOnly || ui.lesson) { panel.hidden = true; return; }
  panel.hidden = false;
  const i = Math.min(guided.step, STEPS.length);
  if (mode() !== 'guided' || i >= STEPS.length) {
    keyed(panel, `compact/${i}`, () => panel.replaceChildren(...compact()));
    return;
  }
  const step = STEPS[i];
  const result = guided.results[i];
  const c = i < 2 ? expTarget(step.strategy, step.sink).existing : null;
  const preface = c ? crashPreface(c) : '';
  const key = JSON.stringify([i, guided.guesses[i], Boolean(result), preface]);
  const built = keyed(panel, key, () => {
    panel.replaceChildren(
      h('div', { class: 'guided-head' },
        h('h2', { id: 'guided-title' }, 'Feel the difference: one crash, two designs, one rewind'),
        h('button', { class: 'btn small', type: 'button', id: 'all-controls', onclick: () => setMode('full') }, 'All controls')),
      stepper(),
      h('div', { class: 'guided-step' },
        h('h3', {}, `${i + 1}. ${step.title}`),
        h('p', {}, step.setup), h('p', { class: 'muted' }, step.story),
        preface ? h('p', { class: 'preface' }, preface) : null,
        question(i),
        result ? resultBlock(i) : h('div', { class: 'row' },
          h('button', { class: 'btn primary', id: 'guided-run', type: 'button', disabled: !guided.guesses[i], onclick: () => run(i) }, step.button),
          h('span', { class: 'muted' }, guided.guesses[i] ? '' : 'Make a guess first.'))));
  });
  if (built && result) await drawStrips($('#guided-strips'), i);
}

export function setupGuided() {
  applyMode();
}
