// Workshop mode: a browser joins with a name and gets a lab of its own; the page tells the
// instructor which lesson step (and guided step) it is on, and applies what the instructor
// pushes to everyone.
import { $ } from './dom.js';
import { request } from './api.js';
import { ui, setState } from './store.js';
import { loadScenario } from './actions.js';
import { showAlert } from './toast.js';
import { lessonProgress, loadLessons, startLesson } from './lessons.js';
import { guidedStep } from './guided.js';

/** In a workshop, a browser first joins with a name: the server answers with the cookie that is its lab. */
export async function joinWorkshop() {
  const box = $('#join'), main = $('#main');
  box.hidden = false; main.hidden = true;
  $('#join-name').focus();
  await new Promise((resolve) => {
    $('#join-form').addEventListener('submit', async (e) => {
      e.preventDefault();
      const button = $('#join-form button[type="submit"]');
      if (button.disabled) return;
      button.disabled = true; // one join per press: a double click is not two learners
      const res = await request('POST', '/api/workshop/join', { name: $('#join-name').value });
      button.disabled = false;
      if (!res.ok) { $('#join-error').textContent = (res.data && res.data.error) || `error ${res.status}`; return; }
      ui.workshop.learner = res.data;
      resolve();
    });
  });
  box.hidden = true; main.hidden = false;
}

export function showLearnerBadge() {
  const b = $('#learner-badge');
  const l = ui.workshop.learner;
  b.textContent = `workshop · ${l.name} (#${l.number})`;
  b.hidden = false;
}

let reported = null;

/** Tells the instructor where this page is (only when it changed). */
export function reportProgress() {
  if (!ui.workshop || !ui.workshop.learner) return;
  const body = { ...lessonProgress(), guided: guidedStep() };
  const key = JSON.stringify(body);
  if (key === reported) return;
  reported = key;
  request('POST', '/api/workshop/progress', body);
}

let applying = false;
let pending = false;

/**
 * What the instructor pushed to everyone and this learner has not applied yet: a lesson to
 * start, or a scenario. The push is claimed from the server first, so two tabs (or a push event
 * racing the page's start) apply it once.
 */
export async function applyPush() {
  if (!ui.workshop) return;
  // A push that arrives while one is applied is looked for again once it is done.
  if (applying) { pending = true; return; }
  applying = true;
  pending = false;
  try {
    const me = await request('GET', '/api/workshop/me');
    const p = me.ok && me.data && me.data.push;
    if (!p) return;
    const claim = await request('POST', '/api/workshop/push-claim', { seq: p.seq });
    if (!claim.ok || !claim.data.claimed) return;
    if (p.lesson) {
      if (!ui.lessons.length) await loadLessons();
      const started = await startLesson(p.lesson, { pushed: true });
      if (started) showAlert(`Your instructor started lesson ${p.lesson} for everyone.`, true);
      else showAlert(`Your instructor started lesson ${p.lesson} for everyone, but it could not be loaded here: start it from the Lessons tab.`);
    } else if (typeof p.scenario === 'string') {
      const state = await loadScenario(p.scenario);
      if (!state || state.error) { showAlert(`Your instructor's scenario could not be loaded here: ${(state && state.error && state.error.error) || state?.status}.`); return; }
      ui.lesson = null; ui.windowFrom = null; ui.lastPlan = null;
      setState(state);
      document.dispatchEvent(new CustomEvent('offsetlab:view', { detail: 'lab' }));
      document.dispatchEvent(new CustomEvent('offsetlab:full'));
      showAlert('Your instructor loaded a scenario for everyone.', true);
    }
  } finally {
    applying = false;
    if (pending) applyPush();
  }
}
