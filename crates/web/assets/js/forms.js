// The forms of "all controls": each turns what was filled in into one scenario line.
import { $, $$, h, q } from './dom.js';
import { request } from './api.js';
import { ui, setState } from './store.js';
import { act, confirmReplace, loadScenario } from './actions.js';
import { showAlert } from './toast.js';
import { restartGuided } from './guided.js';

const value = (f, k) => String(f.get(k) || '').trim();
const opt = (f, k) => { const v = value(f, k); return v ? ` ${k}=${q(v)}` : ''; };

function consumerLine(f) {
  const revoke = (f.get('commit-on-revoke') === 'no' ? ' commit-on-revoke=no' : '')
    + (f.get('assignor') === 'cooperative-sticky' ? ' assignor=cooperative-sticky' : '');
  const tx = f.get('sink') === 'kafka-tx' ? ` output=${q(f.get('output'))}${opt(f, 'transaction-timeout')}` : '';
  const isolation = f.get('isolation') === 'read_committed' ? ' isolation=read_committed' : '';
  return `consumer ${q(f.get('name'))} group=${q(f.get('group'))} topic=${q(f.get('topic'))} commit=${q(f.get('commit'))} interval=${q(f.get('interval'))} max-poll=${q(f.get('max-poll'))} sink=${q(f.get('sink'))} reset=${q(f.get('reset'))}${opt(f, 'max-poll-interval')}${opt(f, 'instance-id')}${revoke}${isolation}${tx}`;
}

function resetLine(execute) {
  const f = new FormData($('#reset-form'));
  const spec = f.get('spec');
  const needsValue = !['to-earliest', 'to-latest', 'to-current'].includes(spec);
  return `reset-offsets ${q(f.get('group'))} topic=${q(f.get('topic'))} ${needsValue ? `${spec}=${q(value(f, 'value'))}` : spec}` + (execute ? ' execute' : '');
}

/** Every topic in the selects that name one; the group list the group fields offer. */
export function renderSelects() {
  const topics = ui.state.topics.map((t) => t.name);
  for (const id of ['produce-topic', 'consumer-topic', 'reset-topic', 'output-topic']) {
    const sel = $(`#${id}`);
    const cur = sel.value;
    if (JSON.stringify([...sel.options].map((o) => o.value)) === JSON.stringify(topics)) continue;
    sel.replaceChildren(...topics.map((t) => h('option', { value: t, selected: t === cur }, t)));
  }
  $('#group-list').replaceChildren(...Object.keys(ui.state.groups).map((g) => h('option', { value: g })));
  if (document.activeElement !== $('#sink-select')) syncGroupSink();
}

/** A group has one sink: when the form names an existing group, use that group's sink. */
function syncGroupSink() {
  const name = $('#consumer-form input[name=group]').value.trim();
  const g = ui.state && ui.state.groups[name];
  if (g) $('#sink-select').value = g.sink.kind;
  updateHints();
  if (g) $('#sink-hint').textContent = `Group ${name} already writes to its ${g.sink.kind} sink; every consumer of a group shares it. ` + $('#sink-hint').textContent;
}

export function updateHints() {
  if (!ui.meta) return;
  const s = ui.meta.strategies.find((x) => x.name === $('#strategy-select').value);
  const k = ui.meta.sinks.find((x) => x.name === $('#sink-select').value);
  $('#strategy-hint').textContent = s ? s.explanation : '';
  $('#sink-hint').textContent = k ? k.explanation : '';
  const tx = $('#sink-select').value === 'kafka-tx';
  $('#txn-options').hidden = !tx;
  // The strategies a kafka-tx sink accepts are the server's (`fits_transactions`), not a list here.
  const fits = ui.meta.strategies.filter((x) => x.fits_transactions).map((x) => x.name);
  if (tx && fits.length && !fits.includes($('#strategy-select').value)) $('#strategy-select').value = fits[0];
  if (tx) $('#consumer-form select[name=isolation]').value = 'read_committed';
}

export function fillFormChoices() {
  $('#strategy-select').replaceChildren(...ui.meta.strategies.map((s) => h('option', { value: s.name, selected: s.name === 'manual-batch' }, s.name)));
  $('#sink-select').replaceChildren(...ui.meta.sinks.map((s) => h('option', { value: s.name, selected: s.name === 'upsert' }, s.name)));
  updateHints();
}

async function resetLab() {
  if (!confirmReplace('Resetting')) return;
  ui.lesson = null;
  // The seed in the clock's mode: a live lab starts over at now and stays live.
  const res = await request('POST', '/api/reset');
  if (!res.ok) return;
  restartGuided();
  ui.windowFrom = null;
  setState(res.data);
  showAlert('Back to the seed lab.', true);
}

async function importFile(e) {
  const file = e.target.files[0];
  if (!file) return;
  const text = await file.text();
  const state = await loadScenario(text);
  e.target.value = '';
  if (state && !state.error) { ui.lesson = null; setState(state); showAlert(`Loaded ${file.name}.`, true); }
  else showAlert(`Could not load ${file.name}: line ${state?.error?.line}: ${state?.error?.error}. The lab is unchanged.`);
}

export function setupForms() {
  $('#produce-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    const key = value(f, 'key');
    act([`produce ${q(f.get('topic'))} count=${q(f.get('count'))}` + (key ? ` key=${q(key)}` : '')], { label: 'Produce' });
  });
  $$('[data-tick]').forEach((b) => b.addEventListener('click', () => act([`tick ${q(b.dataset.tick)}`], { label: `Step time +${b.dataset.tick}` })));
  $('#tick-form').addEventListener('submit', (e) => { e.preventDefault(); const d = new FormData(e.target).get('d'); if (d) act([`tick ${q(d)}`], { label: `Step time +${d}` }); });
  $('#consumer-form').addEventListener('submit', (e) => {
    e.preventDefault();
    act([consumerLine(new FormData(e.target))], { label: 'Start a consumer' });
  });
  $('#reset-form').addEventListener('submit', (e) => { e.preventDefault(); act([resetLine(false)], { label: 'Reset offsets (dry run)' }); });
  $('#reset-execute').addEventListener('click', () => act([resetLine(true)], { label: 'Reset offsets (execute)' }));
  $('#topic-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    act([`topic ${q(f.get('name'))} partitions=${f.get('partitions')}${opt(f, 'segment.records')}${opt(f, 'retention.ms')}${opt(f, 'retention.bytes')} cleanup.policy=${f.get('cleanup.policy')}${opt(f, 'delete.retention.ms')}`], { label: 'Create a topic' });
  });
  $('#line-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = $('#line-input');
    const line = input.value.trim();
    // The answer can arrive after the next line was typed (the event stream may have drawn
    // this action's state already): only the line that was sent is cleared.
    if (line) act([line]).then((ok) => { if (ok && input.value.trim() === line) input.value = ''; });
  });
  $('#compact-offsets').addEventListener('click', () => act(['compact __consumer_offsets'], { label: 'Compact __consumer_offsets' }));
  $('#compact-topic').addEventListener('click', () => { const t = ui.tp && ui.tp.slice(0, ui.tp.lastIndexOf('-')); if (t) act([`compact ${q(t)}`], { label: `Compact ${t}` }); });
  $('#restart-coordinator').addEventListener('click', () => act(['restart-coordinator'], { label: 'Restart the coordinator' }));
  $('#consumer-form input[name=group]').addEventListener('input', syncGroupSink);
  $('#strategy-select').addEventListener('change', updateHints);
  $('#sink-select').addEventListener('change', updateHints);
  $('#reset-lab').addEventListener('click', resetLab);
  $('#import-button').addEventListener('click', () => $('#import').click());
  $('#import').addEventListener('change', importFile);
}
