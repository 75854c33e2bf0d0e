// What the page knows: the lab's last state and the learner's choices. Panels read `ui`; a new
// state is drawn by the renderers registered with `onState` (main.js registers the view).
import { request, readOnly } from './api.js';
import { $ } from './dom.js';

export const ui = {
  state: null,
  meta: null,
  lessons: [],
  group: null,         // the group on screen
  tp: null,            // the partition on screen, "orders-0"
  windowFrom: null,    // first offset drawn; null = follow the consumer
  lesson: null,        // { lesson, step, sub, answered, note, predicted }
  lastPlan: null,      // the last reset plan, on screen until the next action
  workshop: null,      // in workshop mode: { learner: { number, name }, caps }
  allGroupsNarrative: false,
};

const renderers = [];

/** Registers `fn(previousState)`, called after every new state. */
export function onState(fn) { renderers.push(fn); }

/** Draws the current state again (a choice on the page changed, the state did not). */
export function rerender() {
  if (!ui.state) return;
  for (const fn of renderers) fn(ui.state);
  // The group on screen may be another now (a switch of the experiment's pair): tests read it.
  window.__group = ui.group;
}

export function setState(s) {
  if (ui.state && s.version < ui.state.version) return;
  const previous = ui.state;
  ui.state = s;
  if (!ui.group || !s.groups[ui.group]) ui.group = Object.keys(s.groups)[0] || null;
  for (const fn of renderers) fn(previous);
  window.__version = s.version; // lets tests and tools wait for a given state (drawn)
  window.__group = ui.group;
}

// Refreshes are coalesced: however many changes are announced while one fetch is on its way,
// one more fetch follows it, not one per change.
let inflight = null;
let again = false;
// The newest version the server announced: it announces a version once the state at it is
// built, so asking for it (`min_version`) is answered from the state the server keeps, without
// waiting for the lab's lock. 0: none announced — the state as the lab is when asked.
let announced = 0;

/** Fetches the state again: at least `version` (an announced one), or as the lab is now. */
export function refresh(version = 0) {
  announced = Math.max(announced, version);
  if (inflight) { again = true; return inflight; }
  inflight = (async () => {
    do {
      again = false;
      const res = await request('GET', announced > 0 ? `/api/state?min_version=${announced}` : '/api/state');
      if (res.ok) setState(res.data);
    } while (again);
  })().finally(() => { inflight = null; });
  return inflight;
}

/**
 * Follows the lab: the server announces each new version over server-sent events and the page
 * fetches the state once per burst. The instructor's read-only view cannot send its token with
 * an event stream, so it reads the state every two seconds instead.
 */
export function listen(onPush, retryIn = 1000) {
  const conn = $('#conn');
  if (readOnly) {
    conn.textContent = `read-only: learner ${readOnly.learner}'s lab`;
    setInterval(refresh, 2000);
    return;
  }
  const es = new EventSource('/api/events');
  let lost = false;
  es.addEventListener('open', () => {
    conn.textContent = 'live';
    // Back after the server restarted: its lab counts versions from 1 again, so the next
    // state is taken whatever its number.
    if (lost && ui.state) { ui.state.version = -1; announced = 0; refresh(); }
    lost = false;
  });
  es.addEventListener('error', () => {
    conn.textContent = 'reconnecting…';
    lost = true;
    // An answer that is not a stream (a 429, a server going away) closes it for good: open a
    // new one after a while, waiting longer each time.
    if (es.readyState === EventSource.CLOSED) {
      setTimeout(() => { if (ui.state) ui.state.version = -1; announced = 0; listen(onPush, Math.min(retryIn * 2, 30000)); refresh(); }, retryIn);
    }
  });
  es.addEventListener('state', (ev) => {
    const { version } = JSON.parse(ev.data);
    if (!ui.state || version > ui.state.version) refresh(version);
  });
  es.addEventListener('push', () => onPush());
}
