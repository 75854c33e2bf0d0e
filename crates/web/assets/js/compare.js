// "Strategies compared": every (commit strategy, sink) pair the learner crashed or rewound keeps
// its row, so the seed's contrast — auto-commit + append loses, manual + upsert converges — is on
// one screen, whichever group the cards show.
import { $, h, keyed } from './dom.js';
import { plural } from './format.js';
import { ui, rerender } from './store.js';

/** The groups whose pair was put to the test: a crash, a redelivery, a loss or a rewind. */
export function testedPairs() {
  const rows = [];
  for (const [name, g] of Object.entries(ui.state.groups)) {
    const cs = ui.state.consumers.filter((c) => c.group === name);
    if (!cs.length || !g.has_sink) continue;
    const a = g.audit;
    const crashed = cs.some((c) => c.state.state === 'crashed' || c.incarnation > 1);
    if (!(crashed || a.lost || a.lost_before_rewind || a.redeliveries || a.replays)) continue;
    rows.push({ group: name, strategy: cs[0].strategy, sink: g.sink.kind, g, consumers: cs.map((c) => c.name) });
  }
  return rows;
}

function lostCell(a) {
  if (!a.lost_before_rewind) return String(a.lost);
  const back = a.replayed_since_rewind === a.lost_before_rewind ? 'replayed since' : `${a.replayed_since_rewind} replayed since`;
  return a.lost ? `${a.lost} · ${a.lost_before_rewind} before the rewind, ${back}` : `${a.lost_before_rewind} before the rewind, ${back}`;
}

export function renderCompare() {
  const box = $('#compare');
  const rows = testedPairs();
  box.hidden = rows.length === 0;
  keyed(box, JSON.stringify([ui.group, rows.map((r) => [r.group, r.g.audit, r.g.sink])]), () => {
    const tbody = h('tbody', {}, rows.map((r) => {
      const a = r.g.audit, s = r.g.sink;
      const lostAny = a.lost > 0 || a.lost_before_rewind > 0;
      return h('tr', { class: r.group === ui.group ? 'on-screen' : '', dataset: { group: r.group } },
        h('th', { scope: 'row' }, h('span', { class: 'pair' }, `${r.strategy} + ${r.sink}`), h('small', {}, `group ${r.group}`)),
        h('td', { class: lostAny ? 'bad' : 'good' }, lostCell(a)),
        h('td', {}, `${a.redeliveries} after a crash or restart · ${a.replays} on purpose`),
        h('td', { class: a.duplicate_rows ? 'bad' : 'good' }, String(a.duplicate_rows)),
        h('td', { class: s.rows > s.distinct_keys ? 'bad' : '' }, `${s.rows} rows for ${plural(s.distinct_keys, 'order')}`),
        h('td', {}, r.group === ui.group ? h('span', { class: 'muted' }, 'on the cards')
          : h('button', { class: 'btn small', type: 'button', 'aria-label': `Show ${r.strategy} + ${r.sink} on the cards`, onclick: () => { ui.group = r.group; ui.windowFrom = null; rerender(); } }, 'Show')));
    }));
    box.replaceChildren(
      h('h2', { id: 'compare-title' }, 'Strategies compared'),
      h('p', { class: 'muted' }, 'Every commit strategy and sink you crashed or rewound keeps its row here.'),
      h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-labelledby': 'compare-title' },
        h('table', { class: 'rows compare' },
          h('caption', { class: 'sr-only' }, 'Strategies compared'),
          h('thead', {}, h('tr', {}, ['Commit + sink', 'Silently lost', 'Redelivered', 'Duplicate rows', 'Sink rows', ''].map((x) => h('th', { scope: 'col' }, x)))),
          tbody)));
  });
}
