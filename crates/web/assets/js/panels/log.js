// The Lab's partition log: a window of records around the group's position, its
// `__consumer_offsets` key, and the controls that move the window.
import { $, $$, h } from '../dom.js';
import { fmtT } from '../format.js';
import { request } from '../api.js';
import { ui, rerender } from '../store.js';
import { currentLog, partitionView } from '../view.js';
import { stripBoxes } from './log_strip.js';

export const WINDOW = 48; // records drawn at a time

/** Where the window starts when it follows the group: a little before its position. */
export function followFrom(log, p) {
  const anchors = [p && p.position, p && p.committed].filter((x) => x !== null && x !== undefined);
  const anchor = anchors.length ? Math.min(...anchors) : log.log_start_offset;
  let from = Math.max(log.log_start_offset, anchor - 8);
  if (log.log_end_offset - from < WINDOW) from = Math.max(log.log_start_offset, log.log_end_offset - WINDOW + 1);
  return from;
}

/** The partitions the selector offers: the group's own first. */
export function renderPartitionSelect() {
  const g = ui.group ? ui.state.groups[ui.group] : null;
  const sel = $('#log-partition');
  const all = ui.state.topics.flatMap((t) => t.partitions.map((p) => `${t.name}-${p.partition}`));
  const mine = g ? g.partitions.map((p) => `${p.topic}-${p.partition}`) : [];
  const tps = [...mine, ...all.filter((k) => !mine.includes(k))];
  if (!ui.tp || !tps.includes(ui.tp)) { ui.tp = tps[0] || null; ui.windowFrom = null; }
  sel.replaceChildren(...tps.map((k) => h('option', { value: k, selected: k === ui.tp }, k)));
}

function offsetsKey(log) {
  const key = ui.group ? `('${ui.group}', '${log.topic}', ${log.partition})` : null;
  if (!key) return h('span', { class: 'muted' }, 'start a consumer to see its group’s offsets');
  const latest = ui.state.consumer_offsets.latest.find((e) => e.key === key);
  // A real client's commit usually carries no metadata: say so rather than "by ?".
  const by = latest && (latest.metadata ? `by ${latest.metadata}` : 'by a Kafka client, no metadata');
  return h('span', {}, '__consumer_offsets key ', h('code', {}, key), ' → ', h('strong', {}, latest ? `offset ${latest.offset}` : 'nothing committed'),
    latest ? h('span', { class: 'muted' }, ` (${by}, at ${fmtT(latest.commit_timestamp)})`) : '');
}

let logFetch = 0;

export async function renderLog() {
  const log = currentLog();
  const strip = $('#log-strip');
  if (!log) {
    strip.replaceChildren(h('p', { class: 'muted', role: 'listitem' }, 'No topic yet.'));
    $('#log-title').textContent = 'Partition log';
    $('#offsets-key').replaceChildren();
    $('#log-range').textContent = '';
    return;
  }
  const p = partitionView();
  $('#log-title').textContent = `Partition ${ui.tp} log`;
  const topicInfo = ui.state.topics.find((t) => t.name === log.topic);
  $('#compact-topic').hidden = !topicInfo || !topicInfo.cleanup_policy.includes('compact');
  $('#offsets-key').replaceChildren(offsetsKey(log));
  const from = ui.windowFrom ?? followFrom(log, p);
  const my = ++logFetch;
  const res = await request('GET', `/api/records?topic=${encodeURIComponent(log.topic)}&partition=${log.partition}&from=${from}&limit=${WINDOW}`);
  if (my !== logFetch || !res.ok) return;
  strip.replaceChildren(...stripBoxes(res.data, p, { from, topicInfo }));
  const recs = res.data.records;
  const end = res.data.log_end_offset;
  const last = recs.length ? recs[recs.length - 1].offset : from;
  $('#log-range').textContent = recs.length ? `offsets ${recs[0].offset}–${last} of ${res.data.log_start_offset}–${end - 1}` : (end > 0 ? `log start ${res.data.log_start_offset}, log end ${end}` : 'empty');
}

function moveWindow(delta) {
  const log = currentLog();
  if (!log) return;
  const cur = ui.windowFrom ?? followFrom(log, partitionView());
  ui.windowFrom = Math.min(Math.max(log.log_start_offset, cur + delta), Math.max(log.log_start_offset, log.log_end_offset - 1));
  renderLog();
}

export function setupLog() {
  $('#log-partition').addEventListener('change', (e) => { ui.tp = e.target.value; ui.windowFrom = null; rerender(); });
  $('#log-prev').addEventListener('click', () => moveWindow(-WINDOW));
  $('#log-next').addEventListener('click', () => moveWindow(WINDOW));
  $('#log-goto').addEventListener('change', (e) => { ui.windowFrom = Math.max(0, Number(e.target.value) - 4); renderLog(); });
  $$('[data-jump]').forEach((b) => b.addEventListener('click', () => {
    const log = currentLog(); const p = partitionView();
    if (!log) return;
    const to = { start: log.log_start_offset, end: Math.max(log.log_start_offset, log.log_end_offset - WINDOW + 1), committed: p && p.committed, position: p && p.position }[b.dataset.jump];
    ui.windowFrom = to === null || to === undefined ? null : Math.max(log.log_start_offset, b.dataset.jump === 'end' || b.dataset.jump === 'start' ? to : to - 8);
    renderLog();
  }));
}
