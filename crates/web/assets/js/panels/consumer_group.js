// A group that speaks Kafka 4's consumer protocol (KIP-848): its group epoch and the epoch of its
// target assignment, and per member its own epoch and its partitions — owned (it fetches them),
// being revoked (it gives them up on its next poll), awaited (the target gives them to it, but
// another member still owns them). Drawn so that a rebalance shows as it happens here: members
// go on fetching what they keep, only the partitions that move pause, one hand-over at a time.
import { $, h, keyed } from '../dom.js';
import { group } from '../view.js';

const chip = (cls, tp, why) => h('span', { class: `tp ${cls}`, title: `${tp}: ${why}` }, tp);

function memberRow(m, cg) {
  const behind = m.member_epoch < cg.assignment_epoch;
  const parts = [
    ...m.assigned.map((tp) => chip('owned', tp, 'owned — the member fetches it')),
    ...m.revoking.map((tp) => chip('revoking', tp, 'being revoked — the member gives it up on its next poll, then the coordinator hands it on')),
    ...m.awaiting.map((tp) => chip('awaiting', tp, 'awaited — the target gives it to this member once its owner has revoked it')),
  ];
  // A stable member behind the assignment epoch has not heartbeated since the group moved: it
  // fetches what it owns, and learns what to give up at its next heartbeat.
  const state = m.member_epoch === -2 ? 'left (static): its partitions wait for its next process'
    : m.state === 'unrevoked-partitions' ? 'revoking'
      : m.state === 'unreleased-partitions' ? 'waiting for partitions'
        : behind ? 'told at its next heartbeat' : 'stable';
  return h('tr', { dataset: { member: m.member_id } },
    h('th', { scope: 'row' }, h('span', { class: 'who' }, m.consumer || m.member_id),
      m.consumer && m.consumer !== m.member_id ? h('span', { class: 'mid' }, m.member_id) : null,
      m.protocol === 'classic' ? h('span', { class: 'mid' }, 'classic member') : null),
    h('td', { class: `epoch${behind ? ' behind' : ''}`, title: behind ? `behind the assignment epoch ${cg.assignment_epoch}: still reconciling` : 'at the assignment epoch' }, m.member_epoch),
    h('td', { class: `mstate ms-${m.state}` }, state),
    h('td', { class: 'tps' }, parts.length ? parts : h('span', { class: 'muted' }, 'nothing yet')));
}

export function renderConsumerGroup() {
  const box = $('#consumer-group');
  const g = group();
  const cg = g && g.consumer_group;
  box.hidden = !cg;
  if (!cg) return;
  keyed(box, JSON.stringify([g.name, cg]), () => {
    const moving = cg.members.some((m) => m.revoking.length || m.awaiting.length);
    const assigning = cg.assignment_epoch < cg.group_epoch;
    const sentence = assigning
      ? `The group moved to epoch ${cg.group_epoch}; the coordinator computes its new target assignment (at most once a second) — until then members reconcile towards epoch ${cg.assignment_epoch}.`
      : moving
        ? 'Reconciling: only the partitions that move pause — each is revoked by its owner, then handed to its new one. Every other partition is fetched throughout: no stop-the-world.'
        : 'Every member owns its target: nothing moves.';
    box.replaceChildren(
      h('h2', { id: 'consumer-group-title' }, 'Consumer protocol (KIP-848)'),
      h('p', { class: 'cg-epochs' },
        h('span', { class: 'ep' }, 'group epoch ', h('b', {}, cg.group_epoch)),
        h('span', { class: 'ep' }, 'assignment epoch ', h('b', {}, cg.assignment_epoch)),
        h('span', { class: 'ep' }, `${cg.assignor} assignor`)),
      h('p', { class: 'sub' }, sentence),
      h('table', { class: 'cg-members', 'aria-label': 'Members, their epochs and partitions' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'member'), h('th', { scope: 'col' }, 'epoch'), h('th', { scope: 'col' }, 'state'), h('th', { scope: 'col' }, 'partitions'))),
        h('tbody', {}, ...(cg.members.length ? cg.members.map((m) => memberRow(m, cg)) : [h('tr', {}, h('td', { colspan: '4', class: 'muted' }, 'no member'))]))),
      h('p', { class: 'legend sub' },
        chip('owned', 'owned', 'fetched by its member'), ' ',
        chip('revoking', 'revoking', 'given up on the next poll'), ' ',
        chip('awaiting', 'awaited', 'still owned by another member')));
  });
}
