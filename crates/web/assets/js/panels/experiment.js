// "All controls"' experiment panel: two toggles — how the consumer commits, where it writes —
// and the two presses, "Crash mid-batch" and "Rewind to earliest".
import { $, h, setText } from '../dom.js';
import { ui, rerender } from '../store.js';
import { EXP_SINKS, EXP_TOPIC, crashPreface, expConsumer, expCrash, expRewind, expSwitch } from '../experiment.js';

function chip(label, pressed, focus, onclick, title) {
  return h('button', { class: 'chip', type: 'button', 'aria-pressed': String(pressed), 'data-focus': focus, title, onclick }, label);
}

export function renderExperiment() {
  if (!ui.meta || !ui.state) return;
  const c = expConsumer();
  const cur = c ? { strategy: c.strategy, sink: c.sink } : { strategy: 'auto-timer', sink: 'append' };
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.focus : null;
  $('#exp-commit').replaceChildren(...ui.meta.strategies.map((s) =>
    chip(s.name, s.name === cur.strategy, `exp-commit:${s.name}`, () => busy(() => toggle(s.name, cur.sink)), s.explanation)));
  $('#exp-sink').replaceChildren(...ui.meta.sinks.filter((k) => EXP_SINKS.includes(k.name)).map((k) =>
    chip(k.name, k.name === cur.sink, `exp-sink:${k.name}`, () => busy(() => toggle(cur.strategy, k.name)), k.explanation)));
  // The keyboard's place survives the redraw.
  if (focused && focused.startsWith('exp-')) document.querySelector(`[data-focus="${focused}"]`)?.focus();
  const strategy = ui.meta.strategies.find((s) => s.name === cur.strategy);
  const sink = ui.meta.sinks.find((k) => k.name === cur.sink);
  const sentence = (t) => (t && !/[.!?]$/.test(t) ? `${t}.` : t || '');
  setText($('#exp-explain'), `${cur.strategy}: ${sentence(strategy && strategy.explanation)} ${cur.sink}: ${sentence(sink && sink.explanation)}`);
  setText($('#exp-who'), c
    ? `${c.name} in group ${c.group} (${c.state.state})`
    : `no consumer of ${EXP_TOPIC} yet: pick a commit mode and a sink`);
  const preface = crashPreface(c);
  setText($('#exp-note'), preface);
  setText($('#exp-crash'), preface ? `Produce ${c.max_poll_records} and crash mid-batch` : 'Crash mid-batch');
}

async function toggle(strategy, sink) {
  if (await expSwitch(strategy, sink)) rerender();
}

/** Runs one of the panel's presses, the panel busy (its buttons off) until it is done: a run is
 *  several requests, and a second press in between would interleave with them. */
export async function busy(run) {
  const panel = $('.experiment');
  if (panel.getAttribute('aria-busy') === 'true') return;
  panel.setAttribute('aria-busy', 'true');
  for (const b of ['#exp-crash', '#exp-rewind']) $(b).disabled = true;
  try {
    await run();
  } finally {
    panel.removeAttribute('aria-busy');
    for (const b of ['#exp-crash', '#exp-rewind']) $(b).disabled = false;
  }
}

export function setupExperiment() {
  $('#exp-crash').addEventListener('click', () => busy(() => expCrash(expConsumer())));
  $('#exp-rewind').addEventListener('click', () => busy(() => expRewind(expConsumer())));
}
