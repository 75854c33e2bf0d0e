// What is on screen, derived from the state: the group, its partition, the log being drawn.
import { ui } from './store.js';
import { tpKey } from './format.js';

export function group() { return ui.state && ui.group ? ui.state.groups[ui.group] : null; }

/** The selected group's view of the partition on screen (or its first partition). */
export function partitionView() {
  const g = group();
  if (!g) return null;
  return g.partitions.find((p) => tpKey(p) === ui.tp) || g.partitions[0] || null;
}

/** The partition on screen, as the topic lists it. */
export function currentLog() {
  if (!ui.tp) return null;
  const i = ui.tp.lastIndexOf('-');
  const topic = ui.tp.slice(0, i), partition = Number(ui.tp.slice(i + 1));
  const t = ui.state.topics.find((x) => x.name === topic);
  const p = t && t.partitions.find((x) => x.partition === partition);
  return p ? { topic, partition, ...p } : null;
}

/** How many times the group applied `offset` (from the partition view's delivery runs). */
export function delivered(p, offset) {
  for (const [a, b, n] of p.delivery_counts) if (offset >= a && offset < b) return n;
  return 0;
}

export const inRanges = (ranges, o) => ranges.some(([a, b]) => o >= a && o < b);

/** The lab's consumers reading `group`, and its members that are real Kafka clients. */
export function membersOf(name) {
  const g = ui.state.groups[name];
  const lab = ui.state.consumers.filter((c) => c.group === name);
  const ours = new Set(lab.map((c) => c.member_id));
  const external = g ? g.members.filter((m) => !ours.has(m) && !lab.some((c) => m.startsWith(`${c.name}#`))) : [];
  return { lab, external };
}
