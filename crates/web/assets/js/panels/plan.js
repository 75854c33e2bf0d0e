// The last offset reset's plan: per partition, where the group moves and what that replays or
// skips — the blast radius, before anything is executed.
import { $, h } from '../dom.js';
import { dash, fmtT } from '../format.js';
import { ui } from '../store.js';

export function renderPlan() {
  const box = $('#reset-plan');
  const plan = ui.lastPlan;
  if (!plan) { box.replaceChildren(); return; }
  const rows = plan.rows.map((r) => h('tr', {},
    h('td', {}, `${r.topic}-${r.partition}`), h('td', {}, dash(r.current)), h('td', {}, r.target + (r.clamped ? ' (clamped)' : '')),
    h('td', {}, r.replayed), h('td', {}, r.skipped), h('td', {}, r.predicted_duplicate_rows)));
  const sum = (f) => plan.rows.reduce((s, r) => s + f(r), 0);
  const spans = plan.rows.filter((r) => r.span).map((r) => `${fmtT(r.span[0])}…${fmtT(r.span[1])}`);
  box.replaceChildren(h('div', { class: 'plan' },
    h('strong', {}, plan.executed ? `Executed for ${plan.group}` : `Dry run for ${plan.group} — nothing changed`),
    h('div', { class: 'table-wrap' }, h('table', {}, h('thead', {}, h('tr', {}, ['partition', 'current', 'new', 'replayed', 'skipped', 'dup rows'].map((x) => h('th', {}, x)))), h('tbody', {}, rows))),
    h('p', { class: 'radius' }, `Blast radius: ${sum((r) => r.replayed)} record(s) read again (${sum((r) => r.reapplied)} of them already applied: those come back as replays), ${sum((r) => r.skipped)} skipped for good, ${sum((r) => r.predicted_duplicate_rows)} duplicate row(s) expected in the sink` + (spans.length ? `; records from ${spans.join(', ')}` : '') + '.')));
}
