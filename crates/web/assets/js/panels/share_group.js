// A share group (KIP-932): its cards (in flight, acquired, archived, redelivered), its share
// consumers with their buttons, and each share partition drawn as a strip of offsets — every
// record of the in-flight window coloured by its delivery state, with its owner and delivery
// count, the SPSO and the SPEO marked, the records behind the SPSO drawn as done — above a
// consumer group on the same partition (or the log itself), offset under offset: the share
// group acknowledged and archived records, and the log still holds every one of them.
import { $, h, q, keyed, fill, setText } from '../dom.js';
import { fmtDur, fmtT, plural, tpKey } from '../format.js';
import { ui } from '../store.js';
import { act } from '../actions.js';
import { delivered, inRanges } from '../view.js';

/** Offsets a strip draws at most: the SPSO's neighbourhood, the window, what comes after it. */
const SHOWN = 48;
let chosen = null;

const STATE_WORD = { available: 'available', acquired: 'acquired', acknowledged: 'acked', archived: 'archived' };
const mark = (cls, text) => h('span', { class: `mk ${cls}` }, text);

function slot(marks, box, label, data) {
  return h('div', { class: 'slot', role: 'listitem', 'aria-label': label, dataset: data },
    h('div', { class: 'marks', 'aria-hidden': 'true' }, ...marks), box);
}

/**
 * How the panel names a member: the lab's own share consumers by their member id (`s1#2`), a real
 * client's by its client id — its member id is a 22-character UUID that says nothing — with the
 * id's first characters when two of its members share a client id.
 */
let memberNames = new Map();

function namesOf(g) {
  const clients = g.members.filter((m) => m.client);
  const count = (c) => clients.filter((m) => m.consumer === c).length;
  return new Map(g.members.map((m) => [m.id, !m.client ? m.id
    : count(m.consumer) > 1 || !m.consumer ? `${m.consumer || 'client'} ${m.id.slice(0, 4)}…` : m.consumer]));
}

const nameOf = (id) => memberNames.get(id) || id;

/** What the share group did with offset `o` of partition view `sp`. */
function shareRecord(sp, o, byOffset, done) {
  const r = byOffset.get(o) || done.get(o);
  if (r) return r;
  if (sp.spso !== null && o < sp.spso) return { offset: o, state: 'done', delivery_count: null };
  if (sp.speo !== null && o < sp.speo) return { offset: o, state: 'none', delivery_count: null };
  return { offset: o, state: 'new', delivery_count: null };
}

function describe(r, behind) {
  const n = r.delivery_count;
  const times = n ? `, delivered ${plural(n, 'time')}` : '';
  switch (r.state) {
    case 'acquired': return `acquired by ${nameOf(r.owner)}, locked until ${fmtT(r.lock_expires_at)}${times}`;
    case 'available': return `available again: the next poll of any member acquires it${times}`;
    case 'acknowledged': return `acknowledged${behind ? ', behind the SPSO' : ''}${times}${r.applied > 1 ? `, applied ${r.applied} times` : ''}`;
    case 'archived': return `archived${r.archive_reason === 'delivery-limit' ? ' after its last allowed delivery (a poison record)' : r.archive_reason === 'rejected' ? ': rejected' : ''}${times}${r.applied ? '' : ', never applied'}`;
    case 'done': return 'behind the SPSO: its delivery is complete';
    case 'none': return 'in the window, but no record a consumer is handed';
    default: return 'not acquired yet';
  }
}

function shareBox(sp, o, byOffset, done, now) {
  const r = shareRecord(sp, o, byOffset, done);
  const behind = sp.spso !== null && o < sp.spso;
  const marks = [];
  if (o === sp.spso) marks.push(mark('m-spso', 'SPSO'));
  if (o === sp.speo && sp.speo !== sp.spso) marks.push(mark('m-speo', 'SPEO'));
  const word = STATE_WORD[r.state] || (r.state === 'done' ? 'done' : r.state === 'none' ? 'gap' : 'not yet');
  const n = r.delivery_count;
  const lockIn = r.lock_expires_at ? ` · lock ${fmtDur(Math.max(0, r.lock_expires_at - now))}` : '';
  const box = h('div', { class: `rec s-${r.state}${behind ? ' behind' : ''}${r.archive_reason === 'delivery-limit' ? ' poison' : ''}`, title: `offset ${o}: ${describe(r, behind)}` },
    n ? h('span', { class: `badge${n > 1 ? ' again' : ''}` }, `×${n}`) : null,
    h('span', { class: 'off' }, o), h('span', { class: 'word' }, word),
    r.owner ? h('span', { class: 'owner' }, nameOf(r.owner)) : r.archive_reason === 'delivery-limit' ? h('span', { class: 'owner' }, 'limit') : null);
  return slot(marks, box, `offset ${o}, ${describe(r, behind)}${lockIn}${marks.map((m) => `, ${m.textContent}`).join('')}`,
    { offset: String(o), state: r.state, owner: r.owner || '', deliveryCount: n === null || n === undefined ? '' : String(n) });
}

function endSlot(end, marks, label) {
  return slot(marks, h('div', { class: 'rec leo' }, h('span', { class: 'off' }, end), h('span', { class: 'word' }, 'next')), label, { offset: String(end), state: 'end' });
}

/** The consumer group's view of the same offsets, or the log alone when no group reads it. */
function groupBox(p, o) {
  const marks = [];
  if (p && p.committed === o) marks.push(mark('m-committed', 'committed'));
  if (!p) return slot([], h('div', { class: 'rec s-kept' }, h('span', { class: 'off' }, o), h('span', { class: 'word' }, 'kept')),
    `offset ${o}, still in the log`, { offset: String(o), state: 'kept' });
  const n = delivered(p, o);
  let cls = 'rec', word = 'unread', status = 'in the log, not read by this group yet';
  if (p.in_flight.includes(o)) { cls += ' inflight'; word = 'polled'; status = 'polled, not processed'; }
  else if (inRanges(p.lost_ranges, o)) { cls += ' lost'; word = 'lost'; status = 'silently lost'; }
  else if (n >= 2) { cls += ' dup'; word = 'read'; status = `read and applied ${n} times`; }
  else if (n === 1) { cls += ' applied'; word = 'read'; status = 'read and applied'; }
  return slot(marks, h('div', { class: cls }, n >= 2 ? h('span', { class: 'badge' }, `×${n}`) : null, h('span', { class: 'off' }, o), h('span', { class: 'word' }, word)),
    `offset ${o}, ${status}${marks.length ? ', committed' : ''}`, { offset: String(o), state: word, applied: String(n) });
}

/** The consumer group shown beside a share partition: the one on screen if it reads it, else the first that does. */
function groupBeside(key) {
  const reading = Object.entries(ui.state.groups).filter(([, g]) => g.partitions.some((p) => tpKey(p) === key));
  const pick = reading.find(([n]) => n === ui.group) || reading[0];
  return pick ? { name: pick[0], p: pick[1].partitions.find((p) => tpKey(p) === key) } : null;
}

function partitionFigure(name, sp) {
  const key = tpKey(sp);
  const byOffset = new Map(sp.records.map((r) => [r.offset, r]));
  const done = new Map(sp.completed.map((r) => [r.offset, r]));
  const anchor = sp.spso ?? sp.log_start_offset;
  const from = Math.max(sp.log_start_offset, Math.min(anchor - 12, sp.log_end_offset - SHOWN));
  const to = Math.min(sp.log_end_offset, from + SHOWN);
  const offsets = [];
  for (let o = from; o < to; o++) offsets.push(o);
  const now = ui.state.clock_ms;
  const atEnd = to === sp.log_end_offset;
  const endMarks = (extra) => [mark('m-end', 'LEO'), ...extra];
  const share = offsets.map((o) => shareBox(sp, o, byOffset, done, now));
  if (atEnd) {
    const extra = [];
    if (sp.spso === sp.log_end_offset) extra.push(mark('m-spso', 'SPSO'));
    if (sp.speo === sp.log_end_offset && sp.speo !== sp.spso) extra.push(mark('m-speo', 'SPEO'));
    share.push(endSlot(sp.log_end_offset, endMarks(extra), `log end offset ${sp.log_end_offset}${extra.map((m) => `, ${m.textContent}`).join('')}`));
  }
  const beside = groupBeside(key);
  const p = beside && beside.p;
  const group = offsets.map((o) => groupBox(p, o));
  if (atEnd) {
    const extra = p && p.committed === sp.log_end_offset ? [mark('m-committed', 'committed')] : [];
    group.push(endSlot(sp.log_end_offset, endMarks(extra), `log end offset ${sp.log_end_offset}${extra.length ? ', committed' : ''}`));
  }
  const window = sp.spso === null ? 'not read yet: the first fetch sets its SPSO (share.auto.offset.reset)'
    : `SPSO ${sp.spso} · SPEO ${sp.speo} · ${sp.in_flight} in flight (${sp.acquired} acquired, ${sp.available} available, ${sp.acknowledged} acked, ${sp.archived} archived)`;
  const below = p
    ? `Consumer group ${beside.name}: committed ${p.committed ?? '–'} / LEO ${p.log_end_offset} — it reads the same records; acknowledging deleted none of them.`
    : `No consumer group reads ${key}: the log itself, offsets ${sp.log_start_offset}–${sp.log_end_offset - 1} all kept — an acknowledgement never deletes a record; only retention does.`;
  const hidden = from > sp.log_start_offset ? h('p', { class: 'hint' }, `Offsets ${sp.log_start_offset}–${from - 1} are further left (drawn: ${from}–${to - 1}).`) : null;
  return h('figure', { class: 'share-figure', dataset: { tp: key } },
    h('figcaption', {}, h('strong', {}, `${key}`), ` as share group ${name} and a consumer group see it`),
    hidden,
    h('div', { class: 'share-scroll', tabindex: '0', role: 'region', 'aria-label': `${key}: share group ${name} above, ${p ? `consumer group ${beside.name}` : 'the log'} below` },
      h('p', { class: 'share-row-label' }, h('strong', {}, `Share group ${name}`), ` · ${window}`),
      h('div', { class: 'share-row log-strip', role: 'list', 'aria-label': `Share group ${name}, ${key}`, dataset: { row: 'share' } }, ...share),
      h('p', { class: 'share-row-label' }, below),
      h('div', { class: 'share-row log-strip', role: 'list', 'aria-label': p ? `Consumer group ${beside.name}, ${key}` : `The log of ${key}`, dataset: { row: p ? 'group' : 'log', group: p ? beside.name : '' } }, ...group)));
}

function cards(g) {
  const a = g.audit;
  const parts = g.partitions;
  const sum = (k) => parts.reduce((s, p) => s + p[k], 0);
  const acquired = parts.flatMap((p) => p.records.filter((r) => r.state === 'acquired'));
  const owners = {};
  for (const r of acquired) owners[r.owner] = (owners[r.owner] || 0) + 1;
  const firstLock = acquired.reduce((m, r) => Math.min(m, r.lock_expires_at), Infinity);
  setText($('#share-fig-inflight'), String(sum('in_flight')));
  setText($('#share-fig-inflight-sub'), parts.length === 1 && parts[0].spso !== null
    ? `window [${parts[0].spso}, ${parts[0].speo}) · ${sum('available')} available` : `${sum('available')} available`);
  setText($('#share-fig-acquired'), String(acquired.length));
  setText($('#share-fig-acquired-sub'), acquired.length
    ? `${Object.entries(owners).map(([m, n]) => `${nameOf(m)}: ${n}`).join(' · ')} · first lock ends in ${fmtDur(Math.max(0, firstLock - ui.state.clock_ms))}`
    : 'no record locked by a member');
  setText($('#share-fig-archived'), String(a.archived));
  setText($('#share-fig-archived-sub'), `${a.lost} lost to the application (never applied) · ${a.skipped} rejected on purpose`);
  $('#share-card-archived').classList.toggle('alarm', a.archived > 0);
  setText($('#share-fig-redelivered'), String(a.redelivered_records));
  setText($('#share-fig-redelivered-sub'), `${plural(a.redeliveries, 'extra delivery', 'extra deliveries')} · ${plural(a.duplicates, 'record')} applied twice`);
  $('#share-card-redelivered').classList.toggle('alarm', a.duplicates > 0);
}

function consumerRow(c) {
  const st = c.state.state;
  const running = st === 'running';
  const line = (cmd, rest = '') => `${cmd} ${q(c.name)}${rest}`;
  const btn = (label, l, enabled) => h('button', { class: 'btn small', 'data-line': l, disabled: !enabled, onclick: () => act([l], { label: `${label} ${c.name}` }) }, label);
  const held = c.held.map((r) => `${r.offset}${r.processed ? '✔' : ''}`).join(', ');
  return h('li', { class: `share-consumer ${st}` },
    h('div', { class: 'consumer-head' }, h('strong', {}, c.name), h('span', { class: `state ${st}` }, st), h('span', { class: 'muted' }, `${c.member_id} · ${c.acknowledgement_mode} acks · holds ${held || 'nothing'}`)),
    h('div', { class: 'btns' },
      btn('share-poll', line('share-poll'), running), btn('process all', line('process', ' count=all'), running && c.held.some((r) => !r.processed)),
      btn('accept', line('share-ack', ' accept'), running && c.held.length > 0), btn('release', line('share-ack', ' release'), running && c.held.length > 0),
      btn('crash ✗', line('crash'), running), btn('restart', line('restart'), !running)));
}

/** The real clients' members (ShareConsumers through the Kafka listener), each with what it has. */
function clientsLine(g) {
  const clients = g.members.filter((m) => m.client);
  if (!clients.length) return null;
  return h('p', { class: 'muted share-clients' }, `Real clients in ${g.name || chosen}, through the Kafka listener: `,
    ...clients.flatMap((m, i) => [i ? ' · ' : '', h('strong', {}, nameOf(m.id)), ` (member ${m.id}, assigned ${m.assignment.join(', ') || 'nothing'})`]));
}

export function renderShareGroup() {
  const groups = (ui.state && ui.state.share_groups) || {};
  const names = Object.keys(groups);
  const panel = $('#share-panel');
  panel.hidden = names.length === 0;
  if (!names.length) return;
  if (!chosen || !groups[chosen]) chosen = names[0];
  const g = groups[chosen];
  memberNames = namesOf(g);
  keyed($('#share-tabs'), `${ui.state.version}/${chosen}`, () => fill($('#share-tabs'), names.length > 1 ? names.map((n) => h('button', { class: 'chip', type: 'button', 'aria-pressed': String(n === chosen), onclick: () => { chosen = n; renderShareGroup(); } }, n)) : []));
  const c = g.config;
  setText($('#share-info'), `${g.state} · epoch ${g.epoch} · ${plural(g.members.length, 'member')} · lock ${fmtDur(c.record_lock_duration_ms)} · delivery limit ${c.delivery_count_limit} · ${c.auto_offset_reset} · session ${fmtDur(c.session_timeout_ms)}`);
  cards(g);
  keyed($('#share-partitions'), `${ui.state.version}/${chosen}/${ui.group}`, () => {
    const consumers = ui.state.share_consumers.filter((x) => x.group === chosen);
    fill($('#share-partitions'),
      consumers.length ? h('ul', { class: 'share-consumers', 'aria-label': `Share consumers of ${chosen}` }, consumers.map(consumerRow)) : null,
      clientsLine(g),
      g.members.filter((m) => m.crashed_at !== null).map((m) => h('p', { class: 'callout' }, `${m.id} crashed at ${fmtT(m.crashed_at)}: its connection closed, and the records it held were released at once; it stays a member, silent, until share.session.timeout.ms removes it at ${fmtT(m.session_expires_at)}.`)),
      g.partitions.map((sp) => partitionFigure(chosen, sp)));
  });
}
