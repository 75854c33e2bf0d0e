// The transaction coordinator's view: one row per transactional.id, and each partition's LSO.
import { $, h, keyed, setText } from '../dom.js';
import { fmtT } from '../format.js';
import { ui } from '../store.js';

export function renderTransactions() {
  const txns = ui.state.transactions;
  $('#txn-panel').hidden = !txns.length;
  keyed($('#txn-table tbody'), ui.state.version, () => $('#txn-table tbody').replaceChildren(...txns.map((t) => h('tr', { class: t.state === 'Ongoing' ? 'ongoing' : '' },
    h('td', {}, h('code', {}, t.transactional_id)), h('td', {}, `${t.producer_id} / ${t.epoch}`), h('td', {}, t.state),
    h('td', {}, t.state === 'Ongoing' ? `${t.pending_records} record(s) on ${t.partitions.join(', ')}` : '–'),
    h('td', {}, t.expires_at === null ? '–' : fmtT(t.expires_at)), h('td', {}, `${t.committed} / ${t.aborted}`)))));
  const lso = ui.state.topics.flatMap((tp) => tp.partitions.filter((p) => p.markers || p.open_transactions.length)
    .map((p) => `${tp.name}-${p.partition}: LSO ${p.last_stable_offset} of LEO ${p.log_end_offset} · ${p.markers} marker(s) · ${p.aborted_records} aborted record(s)`));
  setText($('#txn-lso'), lso.join(' · '));
}
