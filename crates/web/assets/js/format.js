// How the page writes times, durations and the clock — one way, everywhere.

export const EPOCH_MS = 1767225600000; // the lab clock starts at 2026-01-01T00:00:00Z
// Beyond 30 days from the epoch an instant is a date (a live lab runs on wall time), as the
// lab's narrative writes it.
const DATED_AFTER_MS = 30 * 86400000;

export function fmtT(ms) {
  if (Math.abs(ms - EPOCH_MS) > DATED_AFTER_MS) {
    const d = new Date(ms).toISOString();
    return ms % 1000 === 0 ? d.replace('.000Z', 'Z') : d;
  }
  const s = (ms - EPOCH_MS) / 1000;
  return Number.isInteger(s) ? `t=${s}s` : `t=${s.toFixed(3)}s`;
}

/** A time of day for the narrative's narrow column: `t=5s`, or `12:04:05` on a live clock. */
export function fmtShort(ms) {
  if (Math.abs(ms - EPOCH_MS) > DATED_AFTER_MS) return new Date(ms).toISOString().slice(11, 19);
  return fmtT(ms);
}

export const fmtDur = (ms) => (ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`);
export const dash = (v) => (v === null || v === undefined ? '–' : String(v));
export const tpKey = (p) => `${p.topic}-${p.partition}`;
export const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** Offset ranges as people read them: `5..7, 9`. */
export const ranges = (rs) => rs.map(([a, b]) => (b - a > 1 ? `${a}..${b - 1}` : `${a}`)).join(', ');

/**
 * The clock's state in one sentence, the same in every place that speaks of it (the clock
 * button's note, the footer, the notice after a crash).
 */
export function clockSentence(state) {
  if (!state) return '';
  return state.clock_mode === 'live'
    ? 'The clock is live: it reads wall time, so timers fire on their own.'
    : `The clock is paused at ${fmtT(state.clock_ms)}: time moves only when you step it (+1s, +5s…) — press “go live” to follow wall time.`;
}
