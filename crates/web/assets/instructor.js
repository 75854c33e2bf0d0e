// offsetlab — the instructor's view of a workshop. Plain JavaScript, no build step.
//
// The token comes from the URL's fragment (`/instructor#token=…`, which a browser never sends
// to a server or a log) or the form, is kept for this tab only (sessionStorage), and goes with
// every request as `Authorization: Bearer …`. The room is read every two seconds. Everything a
// learner typed — their name, their lines, the labels their page sent — is put on the page as
// text, never as HTML.
'use strict';

/** Where the token is kept, here and in a learner's lab opened read-only (the learner's page reads it). */
const TOKEN_KEY = 'offsetlab.instructor-token';

const $ = (sel, el = document) => el.querySelector(sel);

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const state = { token: null, lessons: [], viewing: null, timer: null, room: null, content: { quiz: [] } };

/** The guided experiment's steps (the room's `summary.guided.steps`). */
let GUIDED_STEPS = 3;

async function api(method, path, body) {
  const opts = { method, headers: { Authorization: `Bearer ${state.token}` } };
  if (body !== undefined) { opts.body = JSON.stringify(body); opts.headers['Content-Type'] = 'application/json'; }
  const res = await fetch(path, opts);
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  return { ok: res.ok, status: res.status, data };
}

function alertText(text, ok = false) {
  const a = $('#alert');
  a.textContent = text; a.classList.toggle('ok', ok); a.hidden = !text;
}

function ago(ms) {
  if (!ms) return '';
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  return s < 60 ? `${s} s ago` : s < 3600 ? `${Math.floor(s / 60)} min ago` : `${Math.floor(s / 3600)} h ago`;
}

function lessonCell(l) {
  const p = l.progress;
  const title = p && state.lessons.find((x) => x.number === p.lesson);
  const where = !p ? h('span', { class: 'muted' }, 'free play')
    : p.step >= p.steps ? `Lesson ${p.lesson}${title ? `: ${title.title}` : ''} · complete`
      : `Lesson ${p.lesson}${title ? `: ${title.title}` : ''} · step ${p.step + 1} of ${p.steps}`;
  const more = [];
  if (l.completed && l.completed.length) more.push(`finished lesson${l.completed.length > 1 ? 's' : ''} ${l.completed.join(', ')}`);
  if (l.guided !== null && l.guided !== undefined) more.push(l.guided >= GUIDED_STEPS ? 'guided experiment finished' : `guided experiment: step ${l.guided + 1} of ${GUIDED_STEPS}`);
  return more.length ? [where, h('br'), h('span', { class: 'muted small-text' }, more.join(' · '))] : [where];
}

/** What the learner last did: the label of what they pressed, its lines as the detail; the lines alone when the page named nothing. */
function actionCell(l) {
  if (!l.last_action && !l.last_label) return h('span', { class: 'muted' }, 'nothing yet');
  const when = h('span', { class: 'muted' }, ago(l.last_action_ms));
  if (!l.last_label) return [h('code', {}, l.last_action), h('br'), when];
  return [h('strong', { class: 'action-label' }, l.last_label), h('br'),
    h('span', { class: 'muted small-text action-lines', title: l.last_action || '' }, h('code', {}, l.last_action || ''), ' · ', ago(l.last_action_ms))];
}

function figuresCell(figures) {
  if (!figures || !figures.length) return h('span', { class: 'muted' }, '–');
  return figures.map((g) => h('div', { class: 'fig' },
    h('strong', {}, g.group), ` (${g.sink}): `,
    `lag ${g.lag}, lost ${g.lost}, duplicates ${g.duplicates}, rows ${g.sink_rows} / keys ${g.distinct_keys}`));
}

function renderLearners(room) {
  const rows = room.learners.map((l) => h('tr', { 'data-number': l.number },
    h('td', {}, String(l.number)),
    h('td', { class: 'learner-name' }, l.name),
    h('td', {}, lessonCell(l)),
    h('td', { class: 'last-action' }, actionCell(l)),
    h('td', {}, figuresCell(l.figures)),
    h('td', { class: 'row-actions' },
      h('button', { class: 'btn small', type: 'button', 'aria-label': `Open ${l.name}'s lab, read-only, in a new tab (learner ${l.number})`, onclick: () => openLab(l.number) }, 'Open ↗'),
      h('button', { class: 'btn small', type: 'button', 'aria-label': `${l.name}'s lab as a scenario (learner ${l.number})`, onclick: () => showScenario(l.number, l.name) }, 'Scenario'),
      h('button', { class: 'btn small danger', type: 'button', 'aria-label': `Remove ${l.name} (learner ${l.number})`, onclick: () => removeLearner(l.number, l.name) }, 'Remove'))));
  if (room.demo) {
    rows.unshift(h('tr', {}, h('td', {}, '0'), h('td', {}, 'your own lab (the Kafka listener)'), h('td', {}, ''), h('td', {}, ''), h('td', {}, ''),
      h('td', {}, h('button', { class: 'btn small', type: 'button', onclick: () => showScenario(0, 'your own lab') }, 'Scenario'))));
  }
  if (!rows.length) rows.push(h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'Nobody has joined yet: give the room this page’s address without /instructor.')));
  $('#learners').replaceChildren(...rows);
  $('#room-summary').textContent = `${room.learners.length} of at most ${room.max_learners} learners · ${room.resident} labs in memory${room.push ? ` · last push #${room.push.seq}` : ''}`;
  renderClearing(room);
}

/** "3 on step 2/9, 1 on step 5/9, 2 finished (Ada, Bob)" */
function stepCounts(onStep, steps, finished, names) {
  const parts = Object.entries(onStep).sort(([a], [b]) => a - b).map(([step, n]) => `${n} on step ${Number(step) + 1}/${steps}`);
  if (finished.length) parts.push(`${finished.length} finished (${finished.map((n) => names.get(n) || `#${n}`).join(', ')})`);
  return parts.length ? parts.join(', ') : 'nobody';
}

/** Where the room is, at the top of the page: per lesson, per step; free play; the guided experiment. */
function renderSummary(room) {
  const s = room.summary;
  if (!s) return;
  GUIDED_STEPS = s.guided.steps;
  const names = new Map(room.learners.map((l) => [l.number, l.name]));
  const items = s.lessons.map((l) => h('li', { 'data-lesson': l.lesson },
    h('strong', {}, `Lesson ${l.lesson}${l.title ? `: ${l.title}` : ''}`), ` — ${stepCounts(l.on_step, l.steps, l.finished, names)}`));
  if (Object.keys(s.guided.on_step).length || s.guided.finished.length) {
    items.push(h('li', { 'data-guided': '' }, h('strong', {}, 'Guided experiment'), ` — ${stepCounts(s.guided.on_step, s.guided.steps, s.guided.finished, names)}`));
  }
  items.push(h('li', { 'data-free-play': '' }, h('strong', {}, 'Free play'), `: ${s.free_play}`));
  if (s.untouched) items.push(h('li', { class: 'muted' }, `${s.untouched} of ${s.learners} never did anything yet`));
  // Learners whose file did not read when the server started: set aside, their work untouched.
  for (const u of room.unreadable || []) {
    items.unshift(h('li', { 'data-unreadable': '' }, h('strong', {}, 'A learner is set aside'),
      ` — ${u.problem}. Their lab is untouched in ${u.dir}; fix or remove that file and restart the server, and they are back.`));
  }
  // Learners whose lab lost acknowledged records in a crash (a torn log tail, cut at restart).
  for (const l of room.learners) {
    for (const r of l.recovered || []) {
      const groups = (r.committed_past_end || []).map(([g, o]) => `; group ${g} committed ${o}, past the new end: its next fetch meets OFFSET_OUT_OF_RANGE and auto.offset.reset decides`).join('');
      items.unshift(h('li', { 'data-recovered': l.number }, h('strong', {}, `Learner ${l.number} (${l.name}) lost records in a crash`),
        ` — ${r.topic}-${r.partition}: offsets ${r.from}–${r.to - 1} lost, the log now ends at ${r.from}${groups}. The cut bytes are kept in ${(r.kept_aside || []).join(', ') || 'their lab'}.`));
    }
  }
  $('#summary').replaceChildren(...items);
}

function renderQuiz(room) {
  const C = state.content;
  const total = room.learners.length;
  const items = C.quiz.map((q, i) => {
    const counts = room.quiz[i] || {};
    const answered = Object.values(counts).reduce((a, b) => a + b, 0);
    const wrong = answered - (counts[q.correct] || 0);
    const lines = q.options.map((o, j) => {
      const n = counts[j] || 0;
      return h('li', {}, h('span', { class: `bar${j === q.correct ? ' right' : ''}`, style: `width:${answered ? (8 * n) / answered : 0}rem`, 'aria-hidden': 'true' }),
        `${n} chose “${o}”${j === q.correct ? ' (right)' : ''}`);
    });
    const headline = answered === 0
      ? 'nobody has answered yet'
      : wrong > 0 ? `${wrong} of ${total} still believe the wrong answer` : `all ${answered} who answered are right`;
    return h('div', { class: 'tally', 'data-question': i }, h('h3', {}, `${i + 1}. ${q.question}`),
      h('p', { class: 'tally-headline' }, headline, answered < total ? ` (${total - answered} have not answered)` : ''), h('ul', {}, lines));
  });
  $('#quiz').replaceChildren(...items);
}

async function refreshRoom() {
  const res = await api('GET', '/api/instructor/room');
  if (res.status === 401) { showLogin('That token is not this workshop’s.'); return; }
  if (!res.ok) { alertText(`The room could not be read: ${(res.data && res.data.error) || res.status}`); return; }
  alertText('');
  state.room = res.data;
  renderSummary(res.data);
  renderLearners(res.data);
  renderQuiz(res.data);
}

/**
 * Learner `number`'s lab, read-only, as their own page shows it: `/?learner=N` in a new tab,
 * whose requests carry the token (`Authorization`) and `X-Offsetlab-Learner: N`.
 *
 * The token reaches that tab through its sessionStorage, never its URL (a URL is kept in
 * history and server logs, and shows in the address bar on a projector). A tab this page opens
 * with window.open — same origin, no `noopener` — starts with a copy of this tab's
 * sessionStorage (HTML's rule for auxiliary browsing contexts; Chromium and Firefox copy it
 * when the tab is opened), and the key is set on the new window as well: its first document
 * (about:blank) already has this origin, and the storage stays with the tab as it goes on to
 * `/?learner=N`. Nothing else ever holds it: not localStorage, not a cookie.
 */
function openLab(number) {
  sessionStorage.setItem(TOKEN_KEY, state.token);
  const tab = window.open(`/?learner=${encodeURIComponent(number)}`, `offsetlab-learner-${number}`);
  if (!tab) { alertText('The browser blocked the new tab: allow pop-ups for this page, then press Open again.'); return; }
  try { tab.sessionStorage.setItem(TOKEN_KEY, state.token); } catch { /* the copy made at opening holds it */ }
}

/** Learner `number`'s lab as a scenario (what Export gives them), in the panel under the room. */
async function showScenario(number, name) {
  state.viewing = number;
  const res = await fetch(`/api/instructor/learners/${number}/scenario`, { headers: { Authorization: `Bearer ${state.token}` } });
  const text = await res.text();
  if (!res.ok) { alertText(`That lab could not be read: ${text}`); return; }
  $('#learner-view-title').textContent = `${name}'s lab as a scenario (learner ${number})`;
  $('#learner-view-body').replaceChildren(
    h('pre', { class: 'scenario-text', tabindex: 0, 'aria-label': 'Their lab as a scenario' }, text),
    h('div', { class: 'row' }, h('button', { class: 'btn small', type: 'button', onclick: () => { $('#push-scenario-text').value = text; $('#push-scenario-text').focus(); } }, 'Put it in the push box')));
  const view = $('#learner-view');
  view.hidden = false;
  view.focus();
}

async function removeLearner(number, name) {
  if (!window.confirm(`Remove ${name} (learner ${number}) from the workshop? Their page goes back to the join form, and their lab is moved aside on the server (workshop/removed/), not deleted.`)) return;
  const res = await api('DELETE', `/api/instructor/learners/${number}`);
  $('#clear-status').textContent = res.ok ? `Removed ${name} (learner ${number}).` : `Not removed: ${(res.data && res.data.error) || res.status}`;
  refreshRoom();
}

/** The learners "clear the room" would remove now: never did anything, no page open, idle for the minutes chosen. */
function clearable(room) {
  const minutes = Number($('#clear-minutes').value);
  return room.learners.filter((l) => l.untouched && !l.pages && Date.now() - l.seen_ms >= minutes * 60000);
}

function renderClearing(room) {
  const n = clearable(room).length;
  const button = $('#clear-room button[type="submit"]');
  button.textContent = n ? `Remove ${n} learner${n > 1 ? 's' : ''}` : 'Nobody to remove';
  button.disabled = n === 0;
}

async function clearRoom() {
  const minutes = Number($('#clear-minutes').value);
  const n = state.room ? clearable(state.room).length : 0;
  if (!n || !window.confirm(`Remove the ${n} learner${n > 1 ? 's' : ''} who never did anything, have no page open and made no request for ${minutes} minutes? Their labs are moved aside on the server (workshop/removed/).`)) return;
  const res = await api('POST', '/api/instructor/remove-untouched', { idle_minutes: minutes });
  const removed = (res.data && res.data.removed) || [];
  $('#clear-status').textContent = res.ok ? `Removed ${removed.length} learner${removed.length === 1 ? '' : 's'}.` : `${(res.data && res.data.error) || res.status}`;
  refreshRoom();
}

/** Whether a scenario has no line to run (blank, or only comments): pushed, it empties every lab. */
const emptyScenario = (text) => text.split('\n').every((l) => !l.trim() || l.trim().startsWith('#'));

function confirmScenario(text) {
  const n = state.room ? state.room.learners.length : 0;
  const labs = `${n} learner${n === 1 ? '’s lab' : 's’ labs'}`;
  return window.confirm(emptyScenario(text)
    ? `This scenario is empty: pushing it empties ${n === 1 ? 'the' : 'all'} ${labs} (every topic, group and record). Push it anyway?`
    : `Load this scenario into ${n === 1 ? 'the' : 'all'} ${labs}? It replaces what each has now.`);
}

async function push(body, what) {
  const res = await api('POST', '/api/instructor/push', body);
  $('#push-status').textContent = res.ok ? `Pushed #${res.data.seq}: ${what}. Open pages apply it now, others when they next open.` : `Refused: ${(res.data && res.data.error) || res.status}`;
  refreshRoom();
}

function showLogin(why) {
  clearInterval(state.timer);
  $('#room').hidden = true;
  $('#login').hidden = false;
  if (why) alertText(why);
  $('#token').focus();
}

async function start(token) {
  state.token = token;
  sessionStorage.setItem(TOKEN_KEY, token);
  const probe = await api('GET', '/api/instructor/room');
  if (!probe.ok) { showLogin(probe.status === 401 ? 'That token is not this workshop’s.' : (probe.data && probe.data.error) || `error ${probe.status}`); return; }
  $('#login').hidden = true;
  $('#room').hidden = false;
  await refreshRoom();
  clearInterval(state.timer);
  state.timer = setInterval(refreshRoom, 2000);
}

async function main() {
  // The quiz's questions, from the learner's page's own module (the one text of them).
  const content = await import('/js/content.js').catch(() => null);
  if (content && content.default) state.content = content.default;
  const lessons = await fetch('/api/lessons').then((r) => r.json()).catch(() => []);
  state.lessons = Array.isArray(lessons) ? lessons : [];
  $('#push-lesson-number').replaceChildren(...state.lessons.map((l) => h('option', { value: l.number }, `${l.number}. ${l.title}`)));
  $('#push-lesson').addEventListener('submit', (e) => { e.preventDefault(); const n = Number($('#push-lesson-number').value); push({ lesson: n }, `lesson ${n}`); });
  $('#push-scenario').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = $('#push-scenario-text').value;
    if (confirmScenario(text)) push({ scenario: text }, emptyScenario(text) ? 'an empty scenario' : 'a scenario');
  });
  $('#clear-room').addEventListener('submit', (e) => { e.preventDefault(); clearRoom(); });
  $('#clear-minutes').addEventListener('change', () => { if (state.room) renderClearing(state.room); });
  $('#close-view').addEventListener('click', () => { $('#learner-view').hidden = true; state.viewing = null; });
  $('#login-form').addEventListener('submit', (e) => { e.preventDefault(); start($('#token').value.trim()); });
  const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromHash) history.replaceState(null, '', location.pathname);
  const token = fromHash || sessionStorage.getItem(TOKEN_KEY);
  if (token) start(token); else showLogin();
}

main();
