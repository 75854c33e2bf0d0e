// The lab's consumers: the group on screen first (with the real Kafka clients among its
// members), then the other groups'. Each card is the consumer's state and its buttons, each
// button one scenario line.
import { $, h, q, keyed, fill } from '../dom.js';
import { fmtDur, fmtT } from '../format.js';
import { ui } from '../store.js';
import { act } from '../actions.js';
import { membersOf } from '../view.js';

function txnText(c) {
  const txn = c.sink === 'kafka-tx' ? ui.state.transactions.find((t) => t.transactional_id === c.name) : null;
  if (!txn) return { txn: null, text: null };
  const state = txn.state === 'Ongoing'
    ? `open: ${txn.pending_records} record(s) on ${txn.partitions.join(', ')} · aborted by the coordinator at ${fmtT(txn.expires_at)}`
    : txn.state === 'TimedOut' ? 'aborted by the coordinator on timeout: its next call fails (InvalidProducerEpochException), then it aborts and starts over' : 'none open';
  return { txn, text: `${state} · producer id ${txn.producer_id}, epoch ${txn.epoch} · ${txn.committed} committed, ${txn.aborted} aborted` };
}

function seekRow(c, running) {
  const seekSel = h('select', { 'aria-label': `seek target for ${c.name}` }, ['earliest', 'latest', 'offset…', '@time…', '@-ago…'].map((v) => h('option', { value: v }, v)));
  const seekVal = h('input', { class: 'narrow', placeholder: '0 / 5s / 1h', 'aria-label': `seek value for ${c.name}` });
  const doSeek = () => {
    const v = seekSel.value, x = seekVal.value.trim();
    const to = v === 'earliest' || v === 'latest' ? v : v === 'offset…' ? x : v === '@time…' ? `@${x}` : `@-${x}`;
    act([`seek ${q(c.name)} to=${q(to)}`], { label: `Seek ${c.name} to ${to}` });
  };
  return h('div', { class: 'seek-row' }, seekSel, seekVal, h('button', { class: 'btn small', disabled: !running, onclick: doSeek }, 'Seek'));
}

function consumerCard(c) {
  const st = c.state.state;
  const running = st === 'running';
  const line = (cmd) => `${cmd} ${q(c.name)}`;
  const btn = (label, l, enabled, extra = {}) => h('button', { class: 'btn small', 'data-line': l, disabled: !enabled, onclick: () => act([l], { label: `${label.replace(' ✗', '')} ${c.name}` }), ...extra }, label);
  const positions = c.assignment.length ? c.assignment.map((a) => `${a.topic}-${a.partition}@${a.position}`).join(', ') : (running ? 'none assigned' : '–');
  const strategy = ui.meta && ui.meta.strategies.find((s) => s.name === c.strategy);
  let timer = null;
  if (running && c.auto_commit_due_in_ms !== null && c.auto_commit_due_in_ms !== undefined) {
    timer = h('span', { class: 'timer' }, h('meter', { min: 0, max: c.auto_commit_interval_ms, value: c.auto_commit_interval_ms - c.auto_commit_due_in_ms, 'aria-label': 'auto-commit timer' }), `fires in ${fmtDur(c.auto_commit_due_in_ms)}`);
  }
  const g = ui.state.groups[c.group];
  const waiting = g && g.waiting_for.length && running ? `group rebalancing: waiting for ${g.waiting_for.join(', ')}` : null;
  const { txn, text } = txnText(c);
  const zombie = g && !g.members.includes(c.member_id) && running ? ' · NOT A MEMBER (zombie until its next poll)' : '';
  const row = (dt, dd, cls) => (dd ? [h('dt', {}, dt), h('dd', cls ? { class: cls } : {}, dd)] : null);
  return h('article', { class: `consumer ${st}`, 'aria-label': `consumer ${c.name}` },
    h('div', { class: 'consumer-head' }, h('strong', {}, c.name), h('span', { class: `state ${st}` }, st), h('span', { class: 'muted' }, `${c.member_id} · ${c.group} · gen ${c.generation}`)),
    h('dl', { class: 'kv' },
      row('commit', c.strategy + (strategy && strategy.auto_commits ? ` every ${fmtDur(c.auto_commit_interval_ms)}` : '')),
      row('group', `${c.assignor}${c.group_instance_id ? ` · static ${c.group_instance_id}` : ''}${zombie}`),
      row('output', c.output ? `${c.output} (Kafka transactions, transactional.id ${c.name})` : null),
      row('transaction', text, 'txn-state'),
      row('isolation', c.isolation === 'read_committed' ? 'read_committed: stops at the last stable offset, skips aborted records' : null),
      row('position', positions),
      row('in flight', `${c.in_flight} record(s)` + (c.pending_async_commits ? ` · ${c.pending_async_commits} async commit(s) pending` : '')),
      timer ? [h('dt', {}, 'auto-commit'), h('dd', {}, timer)] : null,
      row('note', waiting),
      row('error', c.state.error)),
    strategy ? h('p', { class: 'hint' }, strategy.explanation) : null,
    h('div', { class: 'btns' },
      btn('Poll', line('poll'), running),
      btn('Process next', line('process'), running && c.in_flight > 0),
      btn('Process all', `process ${q(c.name)} count=all`, running && c.in_flight > 0),
      btn(c.sink === 'kafka-tx' ? 'Commit txn' : 'Commit', line('commit'), running),
      c.sink === 'kafka-tx' ? btn('Abort txn', line('abort'), running && txn && txn.state === 'Ongoing') : null,
      btn('Crash ✗', line('crash'), running, { class: 'btn small danger' }),
      btn('Restart', line('restart'), !running),
      btn('Close', line('close'), running)),
    seekRow(c, running));
}

/** A member of the group that is a real Kafka client: the lab sees it, it cannot drive it. */
function clientCard(id) {
  return h('article', { class: 'consumer client', 'aria-label': `Kafka client ${id}` },
    h('div', { class: 'consumer-head' }, h('strong', {}, id), h('span', { class: 'state running' }, 'Kafka client')),
    h('p', { class: 'hint' }, 'A real client connected to the lab’s Kafka listener: its polls and commits arrive over the wire. Stop or kill its process to see what the group does.'));
}

export function renderConsumers() {
  const box = $('#consumers');
  // Drawn again only when something a card shows changed (not on every tick of another group).
  const key = JSON.stringify([ui.group, ui.state.consumers, ui.state.transactions, ui.state.groups[ui.group]?.members, ui.state.groups[ui.group]?.waiting_for]);
  keyed(box, key, () => {
    const cs = ui.state.consumers;
    if (!cs.length && !ui.group) { box.replaceChildren(h('p', { class: 'muted' }, 'No consumer yet: add one below.')); return; }
    const { lab, external } = ui.group ? membersOf(ui.group) : { lab: [], external: [] };
    const others = cs.filter((c) => c.group !== ui.group);
    fill(box,
      ui.group ? h('p', { class: 'muted group-of' }, `Group ${ui.group}: ${lab.length + external.length ? `${lab.length + external.length} consumer(s)` : 'no consumer of the lab, no client'}`) : null,
      ...lab.map(consumerCard), ...external.map(clientCard),
      others.length ? h('h3', { class: 'others' }, `Other groups (${others.length})`) : null,
      ...others.map(consumerCard));
  });
}
