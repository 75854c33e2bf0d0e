// "What happened": the lab's narrative, for the group on screen — its consumers, its commits,
// the records of the partitions it reads, and the clock — or, on request, for every group.
import { $, h, keyed, setText } from '../dom.js';
import { fmtShort, fmtT } from '../format.js';
import { ui } from '../store.js';

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A test of whether an event's text is about `name`: a whole word of a name, not a piece of one. */
const word = (name, after = '(?![A-Za-z0-9._-])') => new RegExp(`(?<![A-Za-z0-9._#-])${escape(name)}${after}`);

/** What an event must mention to concern the group on screen (or the partition on screen). */
export function concerns(groupName) {
  const g = ui.state.groups[groupName];
  if (!g) return () => true;
  const tests = [word(groupName)];
  if (ui.tp) {
    const topic = ui.tp.slice(0, ui.tp.lastIndexOf('-'));
    tests.push(word(ui.tp), new RegExp(`topic ${escape(topic)}(?![A-Za-z0-9._-])`), word(topic, '(?=:| |$)'));
  }
  for (const c of ui.state.consumers.filter((x) => x.group === groupName)) {
    tests.push(word(c.name, '(?=#|\\s|:|,|$)'));
  }
  const topics = new Set(g.partitions.map((p) => p.topic));
  for (const p of g.partitions) tests.push(word(`${p.topic}-${p.partition}`));
  for (const t of topics) tests.push(new RegExp(`topic ${escape(t)}(?![A-Za-z0-9._-])`));
  return (e) => e.kind === 'clock' || tests.some((re) => re.test(e.text));
}

export function renderNarrative() {
  const list = $('#narrative');
  const { events, total } = ui.state.narrative;
  const all = ui.allGroupsNarrative || !ui.group;
  keyed(list, `${ui.state.version}/${ui.group}/${ui.tp}/${all}`, () => {
    const shown = all ? events : events.filter(concerns(ui.group));
    list.replaceChildren(...shown.map((e) => h('li', { class: `k-${e.kind}` },
      h('span', { class: 't', title: fmtT(e.at) }, fmtShort(e.at)), h('span', { class: 'x' }, e.text))));
    setText($('#narrative-count'), all ? `${total} event(s)` : `${shown.length} of the last ${events.length} event(s) concern ${ui.group}`);
    list.scrollTop = list.scrollHeight;
  });
}

export function setupNarrative(rerender) {
  $('#narrative-all').addEventListener('change', (e) => { ui.allGroupsNarrative = e.target.checked; rerender(); });
}
