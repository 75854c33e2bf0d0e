// The bar above the cards: which group is on screen, what its coordinator says of it, and the
// clock.
import { $, h, keyed, setText } from '../dom.js';
import { clockSentence, fmtT } from '../format.js';
import { ui, rerender } from '../store.js';
import { group } from '../view.js';
import { setClockMode } from '../actions.js';

export function renderGroupTabs() {
  const box = $('#group-tabs');
  const names = Object.keys(ui.state.groups);
  keyed(box, JSON.stringify([names, ui.group]), () => {
    box.replaceChildren(...names.map((name) =>
      h('button', { class: 'chip', 'aria-pressed': String(name === ui.group), onclick: () => { ui.group = name; ui.windowFrom = null; rerender(); } }, name)));
    if (!names.length) box.append(h('span', { class: 'muted' }, 'no group yet — start a consumer'));
  });
  // The coordinator's view of the selected group: state, generation, members, who it waits for.
  const g = group();
  const info = $('#group-info');
  if (!g) { info.replaceChildren(); return; }
  const waiting = g.waiting_for.length ? ` · rebalancing: waiting for ${g.waiting_for.join(', ')}` : '';
  const c = ui.state.cluster;
  const cluster = c && g.cluster_members ? ` · the coordinator lists: ${g.cluster_members.length ? g.cluster_members.join(', ') : 'no member'}` : '';
  // A consumer-protocol group has epochs, not generations (its panel below draws them).
  const era = g.consumer_group ? `group epoch ${g.consumer_group.group_epoch}` : `generation ${g.generation}`;
  const text = ` ${era} · members: ${g.members.length ? g.members.join(', ') : 'none'}${waiting}${cluster}`;
  keyed(info, g.state + text, () => info.replaceChildren(h('span', { class: `gstate gs-${g.state}` }, g.state), text));
}

// A live clock reads wall time: the pill shows it moving between changes (the lab writes a
// `clock` line when something happens or a timer falls due, not every second).
export function renderClock() {
  if (!ui.state) return;
  const live = ui.state.clock_mode === 'live';
  const shown = live ? Math.max(Date.now(), ui.state.clock_ms) : ui.state.clock_ms;
  setText($('#clock'), `clock ${fmtT(live ? Math.floor(shown / 1000) * 1000 : shown)}${live ? ' · live' : ''}`);
  $('#clock').title = clockSentence(ui.state);
  const b = $('#clock-mode');
  setText(b, live ? 'pause' : 'go live');
  b.dataset.mode = live ? 'paused' : 'live';
  setText($('#clock-mode-why'), clockSentence(ui.state));
  setText($('#clock-foot'), clockSentence(ui.state));
}

export function setupClock() {
  setInterval(() => { if (ui.state && ui.state.clock_mode === 'live') renderClock(); }, 1000);
  $('#clock-mode').addEventListener('click', (e) => setClockMode(e.currentTarget.dataset.mode));
}
