// Changing the lab: every control sends scenario lines to POST /api/actions, with a label that
// names what the learner pressed (the instructor's room shows it). The answer carries the new
// state; a server-sent event tells the other tabs.
import { request, readOnly } from './api.js';
import { ui, setState } from './store.js';
import { showAlert, hideAlert } from './toast.js';

const appliedHooks = [];

/** Registers `fn(lines)`, called with the lines of every action the lab applied. */
export function onApplied(fn) { appliedHooks.push(fn); }

/** Runs scenario lines; returns the applied result, or null (the refusal is shown unless `silent`). */
export async function act(lines, { silent = false, label } = {}) {
  if (readOnly) {
    if (!silent) showAlert('This is a read-only view of a learner’s lab: nothing can be changed from here.');
    return null;
  }
  const body = label ? { lines, label: label.slice(0, 80) } : { lines };
  const res = await request('POST', '/api/actions', body);
  if (!res.ok) {
    const e = res.data || {};
    const where = lines.length > 1 && e.line ? ` (line ${e.line}: ${e.text || lines[e.line - 1]})` : '';
    const why = String(e.error || `error ${res.status}`).replace(/\.+$/, '');
    if (!silent) showAlert(`Refused: ${why}${where}. Nothing changed.`);
    return null;
  }
  hideAlert();
  const applied = res.data.applied;
  // A reset's plan stays on screen until the next action.
  ui.lastPlan = applied.reset_plans && applied.reset_plans.length ? applied.reset_plans[applied.reset_plans.length - 1] : null;
  for (const fn of appliedHooks) fn(applied.lines);
  setState(res.data.state);
  return applied;
}

/** Pauses the clock or lets it follow wall time again. */
export async function setClockMode(mode) {
  if (readOnly) return false;
  const res = await request('POST', '/api/clock', { mode });
  if (!res.ok) {
    showAlert(`Refused: ${(res.data && res.data.error) || `error ${res.status}`}. Nothing changed.`);
    return false;
  }
  hideAlert();
  setState(res.data);
  return true;
}

/** Replaces the lab with a scenario's (`''` for an empty lab); the new state, or null. */
export async function loadScenario(text) {
  if (readOnly) return null;
  const res = await request('POST', '/api/scenario', text, true);
  return res.ok ? res.data : { error: res.data, status: res.status };
}

/** Loading another lab replaces this one in every open tab: ask first when there is work to lose. */
export function confirmReplace(what) {
  const actions = ui.state ? ui.state.history_lines : 0;
  if (actions <= 4) return true; // the seed lab, untouched
  return window.confirm(`${what} replaces the current lab (${actions} actions) in every open tab. Use Export first to keep it. Continue?`);
}
