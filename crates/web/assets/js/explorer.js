// The explorer: every commit strategy × sink, crashed at every instant of the seed scenario;
// each cell the worst case, and a click loads that crash into the lab. Below it, the same
// application as a share group's consumer, in both acknowledgement modes.
import { $, h } from './dom.js';
import { request } from './api.js';
import { ui, setState } from './store.js';
import { confirmReplace } from './actions.js';
import { showAlert } from './toast.js';

let matrixLoaded = false;

export async function loadMatrix() {
  if (matrixLoaded) return;
  const res = await request('GET', '/api/explore');
  if (!res.ok) { $('#matrix').replaceChildren(h('p', {}, 'Could not compute the matrix.')); return; }
  matrixLoaded = true;
  const cells = res.data.cells;
  const sinks = [...new Set(cells.map((c) => c.sink))];
  const strategies = [...new Set(cells.map((c) => c.strategy))];
  const table = h('table', { class: 'matrix' },
    h('thead', {}, h('tr', {}, h('th', {}, 'strategy \\ sink'), sinks.map((s) => h('th', { scope: 'col' }, s)))),
    h('tbody', {}, strategies.map((st) => {
      const meta = ui.meta.strategies.find((x) => x.name === st);
      return h('tr', {}, h('th', { class: 'row', scope: 'row' }, st, h('small', {}, meta ? meta.explanation : '')),
        sinks.map((sk) => {
          const c = cells.find((x) => x.strategy === st && x.sink === sk);
          if (!c) return h('td', { class: 'na' }, h('span', { class: 'muted' }, 'n/a — Kafka transactions commit after processing'));
          const cls = c.max_lost > 0 ? 'lost' : (c.max_duplicate_rows > 0 || c.max_duplicates > 0) ? 'dup' : 'clean';
          const verdict = c.max_lost > 0 ? `loses up to ${c.max_lost}` : c.max_duplicate_rows > 0 ? `duplicates up to ${c.max_duplicate_rows} row${c.max_duplicate_rows === 1 ? '' : 's'}`
            : c.max_duplicates > 0 ? `redelivers ${c.max_duplicates}, rows converge` : 'no loss, no duplicate';
          return h('td', {}, h('button', { class: cls, 'data-cell': `${st}/${sk}`, onclick: () => replayCell(st, sk), 'aria-label': `${st} with ${sk} sink: ${verdict}. Load its worst crash into the lab.` },
            h('span', { class: 'verdict' }, verdict),
            h('span', {}, `lost ≤ ${c.max_lost} (total ${c.total_lost}) · duplicates ≤ ${c.max_duplicates} · dup rows ≤ ${c.max_duplicate_rows}`),
            h('br'), h('small', { class: 'muted' }, `${c.crash_points} crash points` + (cls === 'clean' ? '' : ` · worst: right after effect #${c.worst_crash_point}`))));
        }));
    })));
  $('#matrix').replaceChildren(table, shareRows(res.data.share || []));
}

// The same application as a share group's consumer (KIP-932): each acknowledgement mode,
// crashed at every instant. A share group has no sink of its own here: what the application
// applied twice is counted as duplicates.
function shareRows(rows) {
  if (!rows.length) return h('div');
  const explain = {
    implicit: 'the next poll accepts what the last one handed over — processed or not',
    explicit: 'each record accepted right after it is processed',
  };
  return h('section', { class: 'share-rows', 'aria-labelledby': 'share-rows-title' },
    h('h3', { id: 'share-rows-title' }, 'The same application as a share group (KIP-932, queues for Kafka)'),
    h('p', { class: 'muted' }, 'A crash ends the member\'s share session: what it held is released at once and handed out again. Nothing is lost to the crash — but what it processed and had not acknowledged is processed twice.'),
    h('table', { class: 'matrix' },
      h('thead', {}, h('tr', {}, h('th', {}, 'acknowledgement'), h('th', { scope: 'col' }, 'crashed at every instant'))),
      h('tbody', {}, rows.map((r) => {
        const cls = r.max_lost > 0 ? 'lost' : r.max_duplicates > 0 ? 'dup' : 'clean';
        const verdict = r.max_lost > 0 ? `loses up to ${r.max_lost}` : r.max_duplicates > 0
          ? `processes up to ${r.max_duplicates} twice` : 'no loss, no duplicate';
        return h('tr', {},
          h('th', { class: 'row', scope: 'row' }, `share, ${r.mode}`, h('small', {}, explain[r.mode] || '')),
          h('td', {}, h('button', { class: cls, 'data-share': r.mode, onclick: () => replayShare(r.mode),
            'aria-label': `share group, ${r.mode} acknowledgement: ${verdict}. Load its worst crash into the lab.` },
          h('span', { class: 'verdict' }, verdict),
          h('span', {}, `lost ≤ ${r.max_lost} (total ${r.total_lost}) · processed twice ≤ ${r.max_duplicates}`),
          h('br'), h('small', { class: 'muted' }, `${r.crash_points} crash points` + (cls === 'clean' ? '' : ` · worst: right after effect #${r.worst_crash_point}`)))));
      }))));
}

async function replayShare(mode) {
  if (!confirmReplace(`Loading the share group (${mode} acknowledgement)`)) return;
  const res = await request('POST', '/api/explore/replay', { share: mode });
  if (!res.ok) { showAlert(`Could not replay: ${res.data.error}`); return; }
  ui.lesson = null; ui.windowFrom = null;
  setState(res.data);
  document.dispatchEvent(new CustomEvent('offsetlab:view', { detail: 'lab', bubbles: false }));
  document.dispatchEvent(new CustomEvent('offsetlab:full'));
  showAlert(`Loaded the worst crash of a share consumer (${mode} acknowledgement): c1 just died, and what it held is available again. Restart c1, then share-poll and process to the end: the records it had processed come back and are processed twice.`, true);
}

async function replayCell(strategy, sink) {
  if (!confirmReplace(`Loading ${strategy} × ${sink}`)) return;
  const res = await request('POST', '/api/explore/replay', { strategy, sink });
  if (!res.ok) { showAlert(`Could not replay: ${res.data.error}`); return; }
  ui.lesson = null; ui.windowFrom = null;
  setState(res.data);
  document.dispatchEvent(new CustomEvent('offsetlab:view', { detail: 'lab', bubbles: false }));
  document.dispatchEvent(new CustomEvent('offsetlab:full'));
  showAlert(`Loaded the worst crash of ${strategy} × ${sink}: c1 just died. Tick 45s for its session to expire, restart c1 and process to the end to see what was lost or duplicated.`, true);
}
