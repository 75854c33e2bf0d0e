// `__consumer_offsets` as the coordinator writes it: commits keyed (group, topic, partition)
// and the group metadata records of each rebalance, in one compacted log.
import { $, h, keyed } from '../dom.js';
import { ui } from '../store.js';

const keyOf = (k) => `('${k.group}', '${k.topic}', ${k.partition})`;

const groupValue = (v) => `generation ${v.generation}` + (v.members.length
  ? ` · ${v.members.map(([id, owned]) => `${id} ← ${owned.length ? owned.join(', ') : 'nothing'}`).join('; ')}`
  : ' · no members (Empty)');

export function renderConsumerOffsets() {
  const tbody = $('#co-table tbody');
  keyed(tbody, ui.state.version, () => {
    const groups = (ui.state.consumer_offsets_group_records || []).map((g) => ({ ...g, groupKey: `GroupMetadata('${g.group}')` }));
    const recs = [...ui.state.consumer_offsets_records, ...groups].sort((a, b) => a.offset - b.offset);
    const keyText = (r) => r.groupKey || keyOf(r.key);
    const newest = new Map();
    for (const r of recs) newest.set(keyText(r), r.offset);
    tbody.replaceChildren(...recs.slice().reverse().map((r) => {
      const k = keyText(r);
      const superseded = newest.get(k) !== r.offset;
      const value = !r.value ? 'tombstone' : r.groupKey ? groupValue(r.value) : `offset ${r.value.offset}`;
      const meta = r.value && !r.groupKey ? (r.value.metadata || 'a Kafka client (no metadata)') : (r.value && r.value.protocol ? `protocol ${r.value.protocol}` : '');
      return h('tr', { class: superseded ? 'superseded' : (r.groupKey ? 'group-record' : '') }, h('td', {}, r.offset), h('td', {}, h('code', {}, k)),
        h('td', {}, value), h('td', {}, meta));
    }));
    const co = ui.state.consumer_offsets;
    const latest = new Set(co.latest.map((e) => e.key));
    $('#co-title').replaceChildren(h('code', {}, '__consumer_offsets'), ` — ${co.records} record(s) retained, ${latest.size} key(s)`);
  });
}
