// The group's sink table, the last rows, duplicates marked.
import { $, h, keyed, setText } from '../dom.js';
import { ui } from '../store.js';
import { group } from '../view.js';

export function renderSink() {
  const tbody = $('#sink-table tbody');
  const tail = ui.group && ui.state.sink_rows[ui.group];
  const g = group();
  setText($('#sink-title'), g ? `Sink table — ${ui.group} (${g.has_sink ? g.sink.kind : 'no sink: no lab consumer has joined'})` : 'Sink table');
  if (!tail) { tbody.replaceChildren(); setText($('#sink-meta'), ''); return; }
  setText($('#sink-meta'), `${tail.total} row(s)` + (tail.total > tail.rows.length ? `, the last ${tail.rows.length} shown` : '') + (g.sink.duplicate_rows ? ` · ${g.sink.duplicate_rows} duplicate` : ''));
  keyed(tbody, `${ui.state.version}/${ui.group}`, () => tbody.replaceChildren(...tail.rows.map((r) => {
    let status = '';
    try { status = JSON.parse(r.value).status || ''; } catch { status = ''; }
    return h('tr', { class: r.duplicate ? 'dup' : '' },
      h('td', {}, r.row_id), h('td', {}, r.key), h('td', {}, status), h('td', {}, `${r.topic}-${r.partition}@${r.offset}`),
      h('td', {}, `${r.consumer}#${r.incarnation}`), h('td', {}, h('span', { class: `tag r-${r.reason}` }, r.reason)), h('td', {}, r.writes));
  })));
}
