// The four figures of the group on screen. Each headline is the harm (records lost, rows
// written twice); the line under it says how it came about.
import { $, flash, setText } from '../dom.js';
import { dash, fmtDur, plural, ranges, tpKey } from '../format.js';
import { ui } from '../store.js';
import { group, partitionView } from '../view.js';

const ids = ['fig-committed', 'fig-rows', 'fig-lost', 'fig-dup'];

/** Why the committed offset lags what was processed, when a timer is waiting on a paused clock. */
function timerNote(g, p) {
  if (ui.state.clock_mode === 'live' || !p) return '';
  const due = ui.state.consumers.find((c) => c.group === ui.group && c.state.state === 'running'
    && c.auto_commit_due_in_ms !== null && c.auto_commit_due_in_ms !== undefined
    && c.assignment.some((a) => a.topic === p.topic && a.partition === p.partition && a.position > (p.committed ?? -1)));
  return due ? ` · ${due.name}'s auto-commit is due in ${fmtDur(due.auto_commit_due_in_ms)}: the clock is paused, so step time or go live` : '';
}

function committedCard(g, p) {
  // A negative committed offset (an admin's −2 "earliest" / −1 "latest") is what
  // __consumer_offsets holds, but no position: the group's consumers reset from it.
  const stored = p.committed === null && p.kafka_committed !== null ? p.kafka_committed : p.committed;
  setText($('#fig-committed'), `${dash(stored)} / ${p.log_end_offset}`);
  const lags = Object.values(g.lag);
  const totalLag = lags.reduce((s, l) => s + (l || 0), 0);
  const uncommitted = lags.filter((l) => l === null).length;
  const total = g.partitions.length > 1
    ? ` · group total ${totalLag}` + (uncommitted ? ` (+ ${uncommitted} partition(s) with nothing committed)` : '')
    : '';
  const noLag = p.kafka_committed !== null && p.kafka_committed < 0
    ? `${tpKey(p)} lag: – (committed ${p.kafka_committed} is no position: auto.offset.reset decides)`
    : `${tpKey(p)} lag: – (nothing committed yet)`;
  setText($('#fig-lag'), (p.lag === null ? noLag : `${tpKey(p)} lag: ${p.lag} record(s)`)
    + total + (g.offsets_source === 'sink' ? ' · offsets in the sink' : '')
    + (g.isolation === 'read_committed' ? ` · read_committed${p.last_stable_offset < p.log_end_offset ? `, held at the last stable offset ${p.last_stable_offset}` : ''}` : '')
    + timerNote(g, p));
}

function lostCard(g) {
  const a = g.audit;
  setText($('#fig-lost'), String(a.lost));
  $('#card-lost').classList.toggle('alarm', a.lost > 0);
  const lostRanges = g.partitions.filter((q) => q.lost_ranges.length).map((q) => `${tpKey(q)} ${ranges(q.lost_ranges)}`);
  let sub = a.lost ? `never applied: ${lostRanges.join(', ')}` : 'passed but never applied, no error raised';
  // A rewind takes a loss back (the group will read those records again): it stays in view.
  if (a.lost_before_rewind) {
    const replayed = a.replayed_since_rewind;
    sub += ` · ${plural(a.lost_before_rewind, 'record')} lost before the rewind, `
      + (replayed === a.lost_before_rewind ? 'replayed since' : `${replayed} replayed since`);
  }
  setText($('#fig-lost-sub'), sub);
}

function duplicatesCard(g) {
  const a = g.audit;
  setText($('#fig-dup'), String(a.duplicate_rows));
  $('#card-dup').classList.toggle('alarm', a.duplicate_rows > 0);
  setText($('#fig-dup-sub'), `rows written twice · ${plural(a.redeliveries, 'record')} redelivered (${a.crash_redeliveries} after a crash) · ${a.replays} replayed on purpose`
    + (a.redeliveries + a.replays > 0 && a.duplicate_rows === 0 && g.sink.kind === 'upsert' ? ' · the upsert overwrote its rows' : '')
    + (a.aborted_read ? ` · ${a.aborted_read} record(s) of aborted transactions applied (read_uncommitted)` : ''));
}

export function renderCards(previous) {
  const g = group();
  const p = partitionView();
  const prevG = previous && ui.group ? previous.groups[ui.group] : null;
  if (!g || !p) {
    for (const id of ids) setText($(`#${id}`), '–');
    setText($('#fig-lag'), g ? `${ui.tp}: not read by group ${ui.group}` : 'no group yet');
    setText($('#fig-distinct'), ''); setText($('#fig-dup-sub'), '');
    setText($('#fig-lost-sub'), 'passed but never applied, no error raised');
    $('#card-lost').classList.remove('alarm'); $('#card-dup').classList.remove('alarm');
    return;
  }
  committedCard(g, p);
  setText($('#fig-rows'), String(g.sink.rows));
  setText($('#fig-distinct'), g.has_sink
    ? `${g.sink.distinct_keys} distinct orders written · ${g.sink.kind} sink`
    : 'no sink: none of the lab\'s consumers has joined this group');
  lostCard(g);
  duplicatesCard(g);
  if (prevG && previous.version !== ui.state.version) {
    if (prevG.audit.lost !== g.audit.lost) flash('card-lost');
    if (prevG.audit.duplicate_rows !== g.audit.duplicate_rows) flash('card-dup');
    if (prevG.sink.rows !== g.sink.rows) flash('card-rows');
  }
}
