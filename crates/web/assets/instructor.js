// offsetlab — the instructor's view of a workshop. Plain JavaScript, no build step.
//
// The token comes from the URL's fragment (`/instructor#token=…`, which a browser never sends
// to a server or a log) or the form, is kept for this tab only (sessionStorage), and goes with
// every request as `Authorization: Bearer …`. The room is read every two seconds. Everything a
// learner typed — their name, their lines — is put on the page as text, never as HTML.
'use strict';

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

const state = { token: null, lessons: [], viewing: null, timer: null };

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

function lessonCell(p) {
  if (!p) return h('span', { class: 'muted' }, 'free play');
  const l = state.lessons.find((x) => x.number === p.lesson);
  const title = l ? `: ${l.title}` : '';
  return p.step >= p.steps ? `Lesson ${p.lesson}${title} · complete` : `Lesson ${p.lesson}${title} · step ${p.step + 1} of ${p.steps}`;
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
    h('td', {}, lessonCell(l.progress)),
    h('td', {}, l.last_action ? [h('code', {}, l.last_action), h('br'), h('span', { class: 'muted' }, ago(l.last_action_ms))] : h('span', { class: 'muted' }, 'nothing yet')),
    h('td', {}, figuresCell(l.figures)),
    h('td', {}, h('button', { class: 'btn small', type: 'button', 'aria-label': `Open ${l.name}'s lab (learner ${l.number})`, onclick: () => openLearner(l.number, l.name) }, 'Open'))));
  if (room.demo) {
    rows.unshift(h('tr', {}, h('td', {}, '0'), h('td', {}, 'your own lab (the Kafka listener)'), h('td', {}, ''), h('td', {}, ''), h('td', {}, ''),
      h('td', {}, h('button', { class: 'btn small', type: 'button', onclick: () => openLearner(0, 'your own lab') }, 'Open'))));
  }
  if (!rows.length) rows.push(h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'Nobody has joined yet: give the room this page’s address without /instructor.')));
  $('#learners').replaceChildren(...rows);
  $('#room-summary').textContent = `${room.learners.length} of at most ${room.max_learners} learners · ${room.resident} labs in memory${room.push ? ` · last push #${room.push.seq}` : ''}`;
}

function renderQuiz(room) {
  const C = window.OFFSETLAB_CONTENT;
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
  renderLearners(res.data);
  renderQuiz(res.data);
}

async function openLearner(number, name) {
  state.viewing = number;
  const [st, scn] = await Promise.all([api('GET', `/api/instructor/learners/${number}/state`), fetch(`/api/instructor/learners/${number}/scenario`, { headers: { Authorization: `Bearer ${state.token}` } }).then((r) => r.text())]);
  if (!st.ok) { alertText(`That lab could not be read: ${(st.data && st.data.error) || st.status}`); return; }
  const s = st.data;
  const groups = Object.entries(s.groups).map(([g, v]) => h('tr', {}, h('th', { scope: 'row' }, g),
    h('td', {}, Object.entries(v.committed).map(([tp, c]) => `${tp}: ${c ?? '–'} / ${v.log_end_offset[tp]}`).join(', ')),
    h('td', {}, String(v.audit.lost)), h('td', {}, String(v.audit.duplicates)), h('td', {}, `${v.sink.rows} / ${v.sink.distinct_keys}`)));
  const events = (s.narrative.events || []).slice(-8).map((e) => h('li', {}, e.text || JSON.stringify(e)));
  $('#learner-view-title').textContent = `${name}'s lab (learner ${number})`;
  $('#learner-view-body').replaceChildren(
    h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Their groups' }, h('table', { class: 'room-table' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Group'), h('th', { scope: 'col' }, 'Committed / log end'), h('th', { scope: 'col' }, 'Lost'), h('th', { scope: 'col' }, 'Duplicates'), h('th', { scope: 'col' }, 'Rows / keys'))),
      h('tbody', {}, groups))),
    h('h3', {}, 'What happened last'), h('ul', {}, events),
    h('h3', {}, `Their lab as a scenario (${s.history_lines} lines)`),
    h('pre', { class: 'scenario-text', tabindex: 0, 'aria-label': 'Their scenario' }, scn));
  const view = $('#learner-view');
  view.hidden = false;
  view.focus();
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
  sessionStorage.setItem('offsetlab.instructor', token);
  const probe = await api('GET', '/api/instructor/room');
  if (!probe.ok) { showLogin(probe.status === 401 ? 'That token is not this workshop’s.' : (probe.data && probe.data.error) || `error ${probe.status}`); return; }
  $('#login').hidden = true;
  $('#room').hidden = false;
  await refreshRoom();
  clearInterval(state.timer);
  state.timer = setInterval(refreshRoom, 2000);
}

async function main() {
  const lessons = await fetch('/api/lessons').then((r) => r.json()).catch(() => []);
  state.lessons = Array.isArray(lessons) ? lessons : [];
  $('#push-lesson-number').replaceChildren(...state.lessons.map((l) => h('option', { value: l.number }, `${l.number}. ${l.title}`)));
  $('#push-lesson').addEventListener('submit', (e) => { e.preventDefault(); const n = Number($('#push-lesson-number').value); push({ lesson: n }, `lesson ${n}`); });
  $('#push-scenario').addEventListener('submit', (e) => { e.preventDefault(); push({ scenario: $('#push-scenario-text').value }, 'a scenario'); });
  $('#close-view').addEventListener('click', () => { $('#learner-view').hidden = true; state.viewing = null; });
  $('#login-form').addEventListener('submit', (e) => { e.preventDefault(); start($('#token').value.trim()); });
  const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromHash) history.replaceState(null, '', location.pathname);
  const token = fromHash || sessionStorage.getItem('offsetlab.instructor');
  if (token) start(token); else showLogin();
}

main();
