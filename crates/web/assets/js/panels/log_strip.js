// A strip of records: each box is one offset, drawn with what the group did with it (applied,
// applied again, in flight, lost, skipped), with the markers above it (log start, committed,
// position, LSO, LEO). The Lab's partition log and the guided experiment both draw with it.
import { h } from '../dom.js';
import { fmtT } from '../format.js';
import { delivered, inRanges } from '../view.js';

/** One record in the strip: its markers stacked above it, then the box. */
function slot(marks, box, label, offset) {
  return h('div', { class: 'slot', role: 'listitem', 'aria-label': label, dataset: { offset: String(offset) } },
    h('div', { class: 'marks', 'aria-hidden': 'true' }, ...marks), box);
}

/**
 * A record's key or value as the window carries it: text as it is; bytes that are not text as
 * hex (`0x…`); a Schema Registry frame (magic byte 0, a 4-byte schema id) as `[schema N] <hex>`.
 */
function shown(r, field) {
  const v = r[field];
  if (v === null || v === undefined) return null;
  const cut = r[`${field}_bytes`] ? '…' : '';
  switch (r[`${field}_form`]) {
    case 'schema-registry': return `[schema ${r[`${field}_schema_id`]}] ${v}${cut}`;
    case 'hex': return `0x${v}${cut}`;
    default: return v + cut;
  }
}

/** A tag under the key saying what the value's bytes are, when they are not text. */
function valueTag(r) {
  if (r.value_form === 'schema-registry') return h('span', { class: 'fmt' }, `schema ${r.value_schema_id}`);
  if (r.value_form === 'hex') return h('span', { class: 'fmt' }, 'bytes');
  return null;
}

const mark = (cls, text) => h('span', { class: `mk ${cls}` }, text);

function positionMarks(p, o) {
  const marks = [];
  if (p && p.committed === o) marks.push(mark('m-committed', 'committed'));
  if (p && p.position === o) marks.push(mark('m-position', 'position'));
  return marks;
}

const said = (marks) => marks.map((m) => `, ${m.textContent}`).join('');

/**
 * The boxes for `page` (an `/api/records` answer) as group partition view `p` sees them;
 * offsets in `affected` are outlined (what the last press changed). `from` is the first offset
 * asked for; `compact` leaves out keys' format tags.
 */
export function stripBoxes(page, p, { from, affected = () => false, topicInfo = null } = {}) {
  const recs = page.records;
  const inflight = new Set(p ? p.in_flight : []);
  const boxes = recs.map((r) => {
    const o = r.offset;
    const hit = affected(o) ? ' affected' : '';
    if (r.control) {
      const marks = [];
      if (o === page.log_start_offset) marks.push(mark('m-start', 'log start'));
      marks.push(...positionMarks(p, o));
      const status = `${r.control} marker (a control record): it takes an offset but no application is ever handed it`;
      return slot(marks, h('div', { class: `rec marker m-${r.control.toLowerCase()}${hit}`, title: `offset ${o} · ${status}\n${fmtT(r.timestamp)}` },
        h('span', { class: 'off' }, o), h('span', { class: 'key' }, r.control)), `offset ${o}, ${status}${said(marks)}`, o);
    }
    const n = p ? delivered(p, o) : 0;
    const lost = p && inRanges(p.lost_ranges, o);
    const skipped = p && n === 0 && inRanges(p.skipped_ranges, o);
    let cls = 'rec', badge = null, status = 'not read yet';
    if (inflight.has(o)) { cls += ' inflight'; status = 'in flight: polled, not processed'; }
    else if (lost) { cls += ' lost'; badge = '✗'; status = 'silently lost'; }
    else if (n >= 2) { cls += ' dup'; badge = `×${n}`; status = `applied ${n} times`; }
    else if (n === 1) { cls += ' applied'; status = 'applied once'; }
    else if (skipped) { cls += ' skipped'; status = 'skipped on purpose'; }
    if (inflight.has(o) && n >= 1) badge = `×${n}`;
    if (r.txn === 'aborted') { cls += ' aborted'; status += ' · from an ABORTED transaction: read_committed readers skip it'; }
    if (r.txn === 'open') { cls += ' opentxn'; status += ' · in an OPEN transaction: invisible to read_committed readers until it commits'; }
    const marks = [];
    if (o === page.last_stable_offset && page.last_stable_offset < page.log_end_offset) marks.push(mark('m-lso', 'LSO'));
    if (o === page.log_start_offset) marks.push(mark('m-start', 'log start'));
    marks.push(...positionMarks(p, o));
    const key = shown(r, 'key'), value = shown(r, 'value');
    return slot(marks, h('div', { class: cls + hit, title: `offset ${o} · ${key || '(no key)'} · ${status}\n${value ?? 'null'}\n${fmtT(r.timestamp)}` },
      badge ? h('span', { class: 'badge' }, badge) : null,
      h('span', { class: 'off' }, o), h('span', { class: r.key_form ? 'key bin' : 'key' }, key || '∅'), valueTag(r)),
      `offset ${o}, ${key || 'no key'}, ${status}` + (r.value_form ? `, value ${value}` : '') + (hit ? ', changed by the last press' : '') + said(marks), o);
  });
  // Offsets below the log start are gone: retention (or DeleteRecords) removed their segments.
  const start = page.log_start_offset;
  const ghosts = [];
  for (let o = Math.max(0, start - 3); from <= start && o < start; o++) {
    const lostHere = p && inRanges(p.lost_ranges, o);
    const why = topicInfo && topicInfo.cleanup_policy.includes('compact') ? 'removed by compaction' : 'deleted by retention';
    ghosts.push(slot(o === start - 1 ? [mark('m-start', 'deleted')] : [],
      h('div', { class: `rec gone${lostHere ? ' lost' : ''}`, title: `offset ${o}: ${why}${lostHere ? ' before this group read it (lost)' : ''}` },
        lostHere ? h('span', { class: 'badge' }, '✗') : null, h('span', { class: 'off' }, o), h('span', { class: 'key' }, 'gone')),
      `offset ${o}, ${why}` + (lostHere ? ', silently lost' : ''), o));
  }
  boxes.unshift(...ghosts);
  const end = page.log_end_offset;
  if (!recs.length || recs[recs.length - 1].offset === end - 1 || end === from) {
    const marks = [mark('m-end', 'LEO'), ...positionMarks(p, end)];
    if (page.last_stable_offset === end && recs.some((r) => r.control)) marks.push(mark('m-lso', 'LSO'));
    boxes.push(slot(marks, h('div', { class: 'rec leo' }, h('span', { class: 'off' }, end), h('span', { class: 'key' }, 'next')),
      `log end offset ${end}: the next record goes here${said(marks)}`, end));
  }
  return boxes;
}
