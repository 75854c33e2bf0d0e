// offsetlab — the web lab. Plain ES modules, no build step: the server embeds each file.
//
// Layout: `api.js` talks to the lab, `store.js` holds its last state (refreshes coalesced),
// `actions.js` changes it, `panels/*` draw the Lab tab (each rebuilt only when its input
// changed), `guided.js` is the guided experiment a new lab opens on, `compare.js` the table of
// strategies tried, `experiment.js` the runs both press, and `lessons.js`, `explorer.js`,
// `learn.js`, `workshop.js` the other tabs and modes. This file wires them together.
import { $, $$, setText } from './dom.js';
import { request, readOnly } from './api.js';
import { ui, onState, rerender, refresh, listen } from './store.js';
import { hideAlert, showAlert } from './toast.js';
import { renderCards } from './panels/cards.js';
import { renderLog, renderPartitionSelect, setupLog } from './panels/log.js';
import { renderNarrative, setupNarrative } from './panels/narrative.js';
import { renderSink } from './panels/sink.js';
import { renderConsumerOffsets } from './panels/consumer_offsets.js';
import { renderTransactions } from './panels/transactions.js';
import { renderShareGroup } from './panels/share_group.js';
import { renderConsumerGroup } from './panels/consumer_group.js';
import { renderConsumers } from './panels/consumers.js';
import { renderGroupTabs, renderClock, setupClock } from './panels/group_bar.js';
import { renderPlan } from './panels/plan.js';
import { renderCluster } from './panels/cluster.js';
import { renderExperiment, setupExperiment } from './panels/experiment.js';
import { renderGuided, setMode, setupGuided } from './guided.js';
import { renderCompare } from './compare.js';
import { fillFormChoices, renderSelects, setupForms } from './forms.js';
import { loadLessons, renderLessonList, renderLessonPanel, startLesson } from './lessons.js';
import { loadMatrix } from './explorer.js';
import { renderLearn } from './learn.js';
import { applyPush, joinWorkshop, reportProgress, showLearnerBadge } from './workshop.js';

/** Draws the Lab tab for the current state, keeping the keyboard's place. */
function render(previous) {
  const active = document.activeElement;
  const focusKey = active && active.dataset ? (active.dataset.line || active.dataset.focus) : null;
  renderGroupTabs();
  renderConsumerGroup();
  renderCards(previous);
  renderPartitionSelect();
  renderLog();
  renderNarrative();
  renderSink();
  renderConsumerOffsets();
  renderTransactions();
  renderShareGroup();
  renderConsumers();
  renderExperiment();
  renderGuided();
  renderCompare();
  renderSelects();
  renderPlan();
  renderClock();
  renderCluster();
  const st = ui.state.storage;
  const lost = recoveredText(ui.state.recovered);
  setText($('#storage'), (st && st.logs === 'disk' ? `logs on disk (segment files) · --flush ${st.flush}` : 'logs in memory') + (lost ? ` · ${lost}` : ''));
  $('#storage').classList.toggle('lost', Boolean(lost));
  // Said once per page: what the last start lost stays in the footer and the narrative.
  if (lost && !toldRecovered) { toldRecovered = true; showAlert(lost); }
  $('#storage').title = st && st.dir ? `${st.dir}: segment files, SQLite sinks and the lab's snapshot; a restart (even kill -9) picks up here` : 'nothing survives a restart';
  renderLessonPanel();
  reportProgress();
  if (focusKey && document.activeElement === document.body) {
    const again = $$('[data-line], [data-focus]').find((el) => (el.dataset.line || el.dataset.focus) === focusKey && !el.disabled);
    if (again) again.focus();
  }
}

let toldRecovered = false;

// The partitions whose tail the last start found torn (a machine crash under --flush never),
// the offsets lost, and the groups left committed past the new end.
function recoveredText(recovered) {
  if (!recovered || !recovered.length) return '';
  const each = recovered.map((r) => {
    const groups = (r.committed_past_end || []).map(([g, o]) => `group ${g} committed ${o}, past the end: its next fetch meets OFFSET_OUT_OF_RANGE`);
    return [`${r.topic}-${r.partition}: offsets ${r.from}–${r.to - 1} lost, the log now ends at ${r.from}`, ...groups].join('; ');
  });
  return `The lab restarted after a crash and cut a damaged log tail — ${each.join(' · ')}. The cut bytes are kept in the partition's cut/ directory.`;
}

function showView(name) {
  hideAlert();
  $$('.tabs [role=tab]').forEach((t) => t.setAttribute('aria-selected', String(t.dataset.view === name)));
  $$('.view').forEach((v) => { v.hidden = v.id !== `view-${name}`; });
  if (name === 'explorer') loadMatrix();
  if (name === 'lessons') renderLessonList();
  if (location.hash !== `#${name}`) history.replaceState(null, '', `${location.search}#${name}`);
}

function setupTabs() {
  const tabs = $$('.tabs [role=tab]');
  tabs.forEach((t, i) => {
    t.addEventListener('click', () => showView(t.dataset.view));
    t.addEventListener('keydown', (e) => {
      if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
      const next = tabs[(i + (e.key === 'ArrowRight' ? 1 : tabs.length - 1)) % tabs.length];
      next.focus(); showView(next.dataset.view);
    });
  });
  // Other modules ask for a tab, or for every control (a lesson, a loaded scenario).
  document.addEventListener('offsetlab:view', (e) => showView(e.detail));
  document.addEventListener('offsetlab:full', () => setMode('full'));
}

async function main() {
  setupTabs();
  setupForms();
  setupLog();
  setupNarrative(rerender);
  setupClock();
  setupExperiment();
  setupGuided();
  if (readOnly) document.body.classList.add('read-only');
  onState(render);
  const meta = await request('GET', '/api/meta');
  ui.meta = meta.data;
  fillFormChoices();
  $('#free-play').addEventListener('click', () => { $('#reset-lab').click(); showView('lab'); });
  const me = readOnly ? { ok: false } : await request('GET', '/api/workshop/me');
  if (me.ok && me.data && me.data.workshop) {
    ui.workshop = me.data;
    if (!ui.workshop.learner) await joinWorkshop();
    showLearnerBadge();
  }
  await refresh();
  listen(applyPush);
  await loadLessons();
  applyPush();
  renderLearn(startLesson, showView);
  const view = location.hash.replace('#', '');
  if (['lab', 'lessons', 'explorer', 'learn'].includes(view)) showView(view);
}

main();
