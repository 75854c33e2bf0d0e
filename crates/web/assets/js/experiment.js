// The seed's experiment as runs of ordinary scenario lines: a consumer for each (commit
// strategy, sink) pair — a group's sink is fixed, so each pair is a consumer of its own group —
// crashed in the middle of a batch, or rewound to the first offset. The guided strip and the
// toggles of "all controls" both run them; an export replays every press.
import { q } from './dom.js';
import { clockSentence, fmtDur } from './format.js';
import { request } from './api.js';
import { ui, setState } from './store.js';
import { act } from './actions.js';
import { showAlert } from './toast.js';

export const EXP_TOPIC = 'orders';
export const EXP_SINKS = ['append', 'upsert', 'transactional'];

const consumerNamed = (name) => ui.state.consumers.find((c) => c.name === name) || null;

/** The consumer of `orders` with this commit mode and sink (the seed's c1 for auto-timer +
 *  append), or the name and group a new one would get: names nothing else uses. */
export function expTarget(strategy, sink) {
  const cs = ui.state.consumers.filter((c) => c.topic === EXP_TOPIC && c.strategy === strategy && c.sink === sink);
  const found = cs.find((c) => c.state.state === 'running') || cs[0];
  if (found) return { consumer: found.name, group: found.group, existing: found };
  const taken = (n) => ui.state.consumers.some((c) => c.name === n) || Boolean(ui.state.groups[n]);
  let consumer = `${strategy}-${sink}`;
  let group = `${EXP_TOPIC}-${strategy}-${sink}`;
  for (let i = 2; taken(consumer) || taken(group); i++) {
    consumer = `${strategy}-${sink}-${i}`;
    group = `${EXP_TOPIC}-${strategy}-${sink}-${i}`;
  }
  return { consumer, group, existing: null };
}

/** The experiment's consumer in the group on screen (the seed's c1 before any toggle). */
export function expConsumer() {
  if (!ui.state) return null;
  const cs = ui.state.consumers.filter((c) => c.topic === EXP_TOPIC);
  return cs.find((c) => c.group === ui.group) || cs.find((c) => c.name === 'c1') || null;
}

/** The lines that make `c` a running member reading: a crashed one waits out its session (the
 *  group keeps a dead member until then), a closed one starts again. */
export function expRunning(c) {
  const n = q(c.name);
  if (c.state.state === 'crashed') return ['tick 45s', `restart ${n}`];
  if (c.state.state !== 'running') return [`restart ${n}`];
  return [];
}

/** Whether `c` has read its partitions to the log end (so a crash would find nothing in flight). */
export function expCaughtUp(c) {
  const t = ui.state.topics.find((x) => x.name === EXP_TOPIC);
  return c.assignment.length > 0 && c.assignment.every((a) => {
    const p = t && t.partitions.find((x) => x.partition === a.partition);
    return p && a.position >= p.log_end_offset;
  });
}

/** Makes (strategy, sink) the pair on screen: the pair's consumer starts (or starts again), and
 *  — when `closeOthers` — the consumer on screen closes. */
export async function expSwitch(strategy, sink, { closeOthers = true } = {}) {
  const target = expTarget(strategy, sink);
  const lines = [];
  const cur = expConsumer();
  if (closeOthers && cur && cur.name !== target.consumer && cur.state.state === 'running') lines.push(`close ${q(cur.name)}`);
  if (!target.existing) {
    lines.push(`consumer ${q(target.consumer)} group=${q(target.group)} topic=${EXP_TOPIC} commit=${strategy} sink=${sink} max-poll=4 reset=earliest`);
  } else {
    lines.push(...expRunning(target.existing));
  }
  if (lines.length && !(await act(lines, { label: `Switch to ${strategy} + ${sink}` }))) return null;
  ui.group = target.group;
  ui.windowFrom = null;
  return target;
}

/** Pauses a live clock for a stepped story (its ticks would run ahead of wall time). */
async function pauseForStory() {
  if (ui.state.clock_mode !== 'live') return false;
  const res = await request('POST', '/api/clock', { mode: 'paused' });
  if (!res.ok) { showAlert(`Refused: ${(res.data && res.data.error) || res.status}. Nothing changed.`); return null; }
  setState(res.data);
  return true;
}

/** What "Crash mid-batch" will do for `c` before it does it: a caught-up consumer gets new orders first. */
export function crashPreface(c) {
  return c && expCaughtUp(c)
    ? `${c.name} has read the whole log: the crash first produces ${c.max_poll_records} new orders to ${EXP_TOPIC} (every group reading ${EXP_TOPIC} sees them), so there is a batch to die in.`
    : '';
}

/**
 * Poll a batch, process one record of it, crash (after the auto-commit timer fired, for
 * auto-timer), wait out the session, restart and read the batch that comes back. Returns the
 * narrative position before the crash and whether a live clock was paused for it, or null when
 * refused.
 */
export async function expCrash(c, { label = 'Crash mid-batch', notice = true } = {}) {
  if (!c) { showAlert('Pick a commit mode and a sink first.'); return null; }
  const n = q(c.name);
  const paused = await pauseForStory();
  if (paused === null) return null;
  const mark = ui.state.narrative.total;
  const lines = [...expRunning(c)];
  if (expCaughtUp(c)) lines.push(`produce ${EXP_TOPIC} count=${c.max_poll_records}`);
  lines.push(`poll ${n}`, `process ${n}`);
  if (c.strategy === 'auto-timer') lines.push(`tick ${fmtDur(c.auto_commit_interval_ms)}`);
  lines.push(`crash ${n}`, 'tick 45s', `restart ${n}`);
  if (!(await act(lines, { label }))) return null;
  // What the restarted process reads back: the batch after the committed offset.
  await act([`poll ${n}`, `process ${n} count=all`], { silent: true, label });
  if (paused && notice) showAlert(`${clockSentence(ui.state)} (It was paused to step through the crash.)`, true);
  return { mark, paused };
}

/** Seek to the first offset and read the whole log again, a poll and its processing at a time,
 *  until the consumer is at the log end (at most 1,000 polls). */
export async function expRewind(c, { label = 'Rewind to earliest' } = {}) {
  if (!c) { showAlert('Pick a commit mode and a sink first.'); return false; }
  const n = q(c.name);
  if (!(await act([...expRunning(c), `seek ${n} to=earliest`], { label }))) return false;
  for (let i = 0; i < 1000; i++) {
    const now = consumerNamed(c.name);
    if (!now || expCaughtUp(now)) return true;
    if (!(await act([`poll ${n}`, `process ${n} count=all`], { silent: true, label }))) return false;
  }
  return true;
}
