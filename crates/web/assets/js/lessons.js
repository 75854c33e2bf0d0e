// The lessons: each a scenario walked through step by step. A step runs its lines (a poll and
// its batch together), a crash asks for a prediction first, a check asks the learner to read a
// figure off the lab (and the lab checks the claim too), and the end recaps and points on.
import { $, $$, h, fill } from './dom.js';
import { request } from './api.js';
import { ui, rerender, setState } from './store.js';
import { act, confirmReplace, loadScenario, onApplied } from './actions.js';
import { showAlert, hideAlert } from './toast.js';

const DONE = 'offsetlab.done';
const doneList = () => { try { return JSON.parse(localStorage.getItem(DONE) || '[]'); } catch { return []; } };

export const KEY_LABELS = {
  lost: 'Silently lost', duplicates: 'records applied more than once', 'duplicate-rows': 'Duplicates (rows written twice)',
  redeliveries: 'redeliveries', 'crash-redeliveries': 'redeliveries after a crash', replays: 'deliberate replays',
  skipped: 'records skipped on purpose', deliveries: 'deliveries', 'sink-rows': 'Sink rows', 'distinct-keys': 'distinct orders written',
  committed: 'the committed offset', lag: 'the lag', 'log-end-offset': 'the log end offset', 'log-start-offset': 'the log start offset',
  state: 'the consumer state', 'last-stable-offset': 'the last stable offset', 'aborted-read': 'records of aborted transactions applied',
  position: 'the consumer position', 'in-flight': 'records in flight', generation: 'the generation',
  spso: 'the share-partition start offset (SPSO)', speo: 'the share-partition end offset (SPEO)', acquired: 'records acquired',
  available: 'records available', archived: 'records archived', 'record-state': 'the record’s state', 'delivery-count': 'its delivery count',
  owner: 'the member holding it', acquisitions: 'acquisitions', 'group-state': 'the group’s state', polled: 'the offsets the last poll handed over',
};

const PREDICT_QUESTION = {
  lost: 'how many records will be silently lost?',
  'duplicate-rows': 'how many rows will be written twice?',
  duplicates: 'how many records will be applied more than once?',
};

function parseExpect(line) {
  const scope = [], checks = [];
  for (const tok of line.split(/\s+/).slice(1)) {
    const [k, raw] = tok.split('=');
    // A quoted value (`owner="s1#1"`) is what a learner reads on the page, unquoted.
    let v = raw;
    if (raw && raw.startsWith('"')) { try { v = JSON.parse(raw); } catch { v = raw; } }
    if (['group', 'share-group', 'topic', 'partition', 'consumer', 'offset'].includes(k)) scope.push(`${k} ${v}`);
    else checks.push({ key: k, value: v });
  }
  return { scope, checks };
}

export async function loadLessons() {
  const res = await request('GET', '/api/lessons');
  if (res.ok) ui.lessons = res.data;
  renderLessonList();
}

/** The lessons tab: each lesson with its length, and a tick once completed here. */
export function renderLessonList() {
  const done = doneList();
  $('#lesson-list').replaceChildren(...ui.lessons.map((l) => h('li', { class: done.includes(l.number) ? 'is-done' : '' },
    h('span', { class: 'num' }, `Lesson ${l.number}`, done.includes(l.number) ? h('span', { class: 'done' }, ' ✔ completed') : null),
    h('strong', {}, l.title), h('p', {}, l.introduction),
    h('div', {}, h('button', { class: 'btn primary', 'aria-label': `Start lesson ${l.number}: ${l.title}`, onclick: () => startLesson(l.number) }, done.includes(l.number) ? 'Again' : 'Start'),
      ' ', h('span', { class: 'muted' }, `~${l.minutes} min · ${l.steps.length} steps`)))));
}

/** Starts a lesson in an empty lab; `true` once it is on screen. */
export async function startLesson(number, { pushed = false } = {}) {
  const lesson = ui.lessons.find((l) => l.number === number);
  if (!lesson || (!pushed && !confirmReplace(`Starting lesson ${number}`))) return false;
  const state = await loadScenario('');
  if (!state || state.error) { showAlert(`The lesson could not start: ${(state && state.error && state.error.error) || 'error'}.`); return false; }
  ui.lesson = { lesson, step: 0, sub: 0, answered: {}, note: null, predicted: {}, scrolledFor: null };
  ui.windowFrom = null; ui.lastPlan = null;
  focusStep();
  setState(state);
  document.dispatchEvent(new CustomEvent('offsetlab:view', { detail: 'lab' }));
  document.dispatchEvent(new CustomEvent('offsetlab:full'));
  hideAlert();
  $('#lesson-panel').scrollIntoView({ block: 'start' });
  return true;
}

function advance(run) {
  run.step += 1; run.sub = 0; run.answered = {}; run.note = null;
  focusStep();
}

/** Follows the lab's applied lines through the current step (a button pressed in the lab counts). */
onApplied((lines) => {
  const run = ui.lesson;
  if (!run) return;
  const step = run.lesson.steps[run.step];
  if (!step || step.kind === 'check') return;
  let matched = 0;
  for (const l of lines) {
    if (step.lines[run.sub] === l) { run.sub += 1; matched += 1; }
    if (run.sub >= step.lines.length) break;
  }
  if (run.sub >= step.lines.length) advance(run);
  else if (!matched) run.note = `That was “${lines.join('; ')}”, not this step. It happened anyway; to keep the lesson’s figures exact, do this step next.`;
});

/** Shows what the step is about: the group a check asks about, the group of the consumer the next line drives. */
function focusStep() {
  const run = ui.lesson;
  const step = run && run.lesson.steps[run.step];
  if (!step || !ui.state) return;
  if (step.kind === 'check') {
    const scope = Object.fromEntries(step.lines[0].split(/\s+/).slice(1).map((t) => t.split('=')).filter(([k]) => ['group', 'topic', 'partition'].includes(k)));
    if (scope.group) ui.group = scope.group;
    if (scope.topic || scope.partition !== undefined) {
      const topic = scope.topic || (ui.tp ? ui.tp.slice(0, ui.tp.lastIndexOf('-')) : 'orders');
      ui.tp = `${topic}-${scope.partition ?? 0}`;
      ui.windowFrom = null;
    }
    return;
  }
  const m = /^(?:poll|process|commit|crash|restart|close|seek|abort) (\S+)/.exec(step.lines[run.sub] || '');
  const c = m && ui.state.consumers.find((x) => x.name === m[1]);
  if (c && ui.state.groups[c.group]) ui.group = c.group;
}

/** What the workshop's instructor is told: the lesson step, or free play. */
export function lessonProgress() {
  const run = ui.lesson;
  return run ? { lesson: run.lesson.number, step: Math.min(run.step, run.lesson.steps.length), steps: run.lesson.steps.length } : { lesson: null };
}

function head(lesson, run) {
  const total = lesson.steps.length;
  return [
    h('div', { class: 'row' }, h('h2', {}, `Lesson ${lesson.number}: ${lesson.title}`),
      h('button', { class: 'btn small', onclick: () => { ui.lesson = null; rerender(); } }, 'Leave lesson')),
    h('div', { class: 'progress', role: 'progressbar', 'aria-label': 'Lesson progress', 'aria-valuemin': 0, 'aria-valuemax': total, 'aria-valuenow': run.step, 'aria-valuetext': `step ${run.step} of ${total}` }, h('span', { style: `width:${(100 * run.step) / total}%` })),
  ];
}

function completed(panel, lesson, run) {
  const done = doneList();
  if (!done.includes(lesson.number)) { done.push(lesson.number); localStorage.setItem(DONE, JSON.stringify(done)); }
  const nextLesson = ui.lessons.find((l) => l.number === lesson.number + 1);
  fill(panel, ...head(lesson, run),
    h('p', { class: 'explain' }, h('strong', {}, '✔ Lesson complete. '), 'Every claim it made was checked against the lab.'),
    lesson.recap ? h('p', { class: 'recap' }, lesson.recap) : null,
    h('div', { class: 'row' },
      nextLesson ? h('button', { class: 'btn primary', onclick: () => startLesson(nextLesson.number) }, `Next lesson: ${nextLesson.title}`) : null,
      h('button', { class: nextLesson ? 'btn' : 'btn primary', onclick: () => { ui.lesson = null; document.dispatchEvent(new CustomEvent('offsetlab:view', { detail: 'lessons' })); } }, 'All lessons'),
      h('button', { class: 'btn', onclick: () => { ui.lesson = null; rerender(); } }, 'Keep playing with this lab')));
}

function checkStep(panel, lesson, run, step, counter, explain) {
  const { scope, checks } = parseExpect(step.lines[0]);
  const maybeAdvance = async () => {
    if (run.checking || !checks.every((c) => run.answered[c.key] === c.value)) return;
    // The lab itself checks the claim too: the expect line runs on the server.
    const at = run.step;
    run.checking = true;
    const ok = await act(step.lines, { silent: true, label: `Lesson ${lesson.number} · check` });
    run.checking = false;
    if (run.step !== at || ui.lesson !== run) return;
    if (ok) { advance(run); rerender(); } else { run.note = `The lab disagrees with “${step.lines[0]}”: did an extra action change it? Restart the lesson to replay it exactly.`; renderLessonPanel(); }
  };
  const rows = checks.map((c) => {
    const input = h('input', { class: 'narrow', 'aria-label': KEY_LABELS[c.key] || c.key, 'data-key': c.key, value: run.answered[c.key] ?? '' });
    const feedback = h('span', { class: 'feedback' });
    const predicted = run.predicted[c.key];
    const check = () => {
      // "–", "—", "none" and "-" all mean "nothing".
      const v = input.value.trim().replace(/^([–—−]|none)$/i, '-');
      run.answered[c.key] = v;
      if (v === c.value) {
        feedback.textContent = predicted === undefined ? '✔ right' : `✔ right${String(predicted) === c.value ? ' — as you predicted' : ` — you had predicted ${predicted}`}`;
        feedback.className = 'feedback good';
      } else { feedback.textContent = v ? `not quite — look again${/lost|dup|rows|keys|redeliv|replay/.test(c.key) ? ' at the cards' : ''}` : ''; feedback.className = 'feedback bad'; }
      maybeAdvance();
    };
    input.addEventListener('change', check);
    input.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); check(); } });
    if (run.answered[c.key] === c.value) { feedback.textContent = '✔ right'; feedback.className = 'feedback good'; }
    return h('div', { class: 'q' }, h('label', {}, `What does the lab show for ${KEY_LABELS[c.key] || c.key}?`, input), feedback);
  });
  const reveal = h('button', { class: 'btn small', onclick: () => { for (const c of checks) run.answered[c.key] = c.value; maybeAdvance(); } }, 'Show me the answer');
  fill(panel, ...head(lesson, run), counter, explain, h('p', {}, h('strong', {}, 'Check what you see'), scope.length ? ` (${scope.join(', ')}; the lab now shows it)` : '', ' — “–” for nothing'), ...rows,
    run.note ? h('p', { class: 'feedback bad' }, run.note) : null, h('div', { class: 'row' }, reveal));
  const first = rows[0] && rows[0].querySelector('input');
  if (first && document.activeElement === document.body) first.focus();
}

function prediction(run, step) {
  const p = step.predict;
  if (!p) return null;
  const key = `${run.step}`;
  const chosen = run.predicted[`step-${key}`];
  const who = p.group ? ` (group ${p.group})` : '';
  return h('div', { class: 'predict', role: 'group', 'aria-labelledby': `predict-${key}` },
    h('p', { id: `predict-${key}` }, h('strong', {}, 'Predict first: '), `after this crash, ${PREDICT_QUESTION[p.key] || p.key}${who}`),
    h('div', { class: 'choices' }, p.choices.map((c) => h('button', {
      class: 'choice', type: 'button', 'aria-pressed': String(chosen === c),
      onclick: () => { run.predicted[`step-${key}`] = c; run.predicted[p.key] = c; renderLessonPanel(); },
    }, String(c)))));
}

function actionStep(panel, lesson, run, step, counter, explain) {
  const remaining = step.lines.slice(run.sub);
  const nextLine = remaining[0];
  const target = $$('[data-line]').find((b) => b.dataset.line === nextLine && !b.disabled);
  if (target) {
    target.classList.add('hl');
    // Brought into view once per line, so a learner can use the highlighted button itself.
    const at = `${run.step}/${run.sub}`;
    if (run.scrolledFor !== at && remaining.length === 1) { run.scrolledFor = at; target.scrollIntoView({ block: 'center' }); }
  }
  const needsGuess = step.predict && run.predicted[`step-${run.step}`] === undefined;
  const lines = remaining.length > 3
    ? h('details', { class: 'lines' }, h('summary', {}, `${remaining.length} lines: ${remaining.slice(0, 2).join(' · ')} …`), h('pre', {}, remaining.join('\n')))
    : h('p', {}, h('strong', {}, 'Do this: '), ...remaining.flatMap((l, i) => [i ? ' then ' : '', h('code', { class: 'line' }, l)]));
  fill(panel, ...head(lesson, run), counter, explain, prediction(run, step), lines,
    h('p', { class: 'muted' }, remaining.length === 1 && target ? 'Use the highlighted button in the lab, or run it from here.' : 'Run it from here, or type the lines in the “Scenario line” box.'),
    run.note ? h('p', { class: 'feedback bad' }, run.note) : null,
    h('div', { class: 'row' }, h('button', { class: 'btn primary', disabled: needsGuess, onclick: () => act(remaining, { label: `Lesson ${lesson.number} · step ${run.step + 1}` }) },
      step.kind === 'crash' ? 'Crash it' : remaining.length > 1 ? `Run this step (${remaining.length} lines)` : 'Run this step'),
    needsGuess ? h('span', { class: 'muted' }, 'Make a prediction first.') : null));
}

export function renderLessonPanel() {
  const panel = $('#lesson-panel');
  $$('.btn.hl').forEach((b) => b.classList.remove('hl'));
  const run = ui.lesson;
  if (!run) { panel.hidden = true; return; }
  panel.hidden = false;
  const { lesson } = run;
  if (run.step >= lesson.steps.length) { completed(panel, lesson, run); return; }
  const step = lesson.steps[run.step];
  const counter = h('p', { class: 'muted' }, `Step ${run.step + 1} of ${lesson.steps.length}` + (step.kind === 'setup' ? ' · setting up' : ''));
  const text = step.explanation || (step.kind === 'setup' ? 'Set up the lab for this lesson: its topic, its records and its consumers.' : '');
  const explain = text ? h('p', { class: 'explain' }, text) : null;
  if (step.kind === 'check') checkStep(panel, lesson, run, step, counter, explain);
  else actionStep(panel, lesson, run, step, counter, explain);
}

export { focusStep };
