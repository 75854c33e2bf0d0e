// offsetlab — the web lab. Plain JavaScript, no build step: the server embeds this file.
//
// Every control sends one line of the scenario language to POST /api/actions; the response
// carries the new state, and a server-sent event tells the other tabs to fetch it too.
'use strict';

const EPOCH_MS = 1767225600000; // the lab clock starts at 2026-01-01T00:00:00Z
const WINDOW = 48;               // records drawn at a time in the log strip

/**
 * A value as a scenario line carries it: bare when it is a plain word, else a quoted string
 * (JSON's escapes, which the line reader decodes), so what was typed reads back as itself.
 */
const q = (v) => { const s = String(v); return /^[A-Za-z0-9._:\/@+,-]+$/.test(s) ? s : JSON.stringify(s); };

const $ = (sel, el = document) => el.querySelector(sel);
const $$ = (sel, el = document) => Array.from(el.querySelectorAll(sel));

/** Builds an element; children are nodes or text (never parsed as HTML). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const ui = {
  state: null,
  meta: null,
  lessons: [],
  group: null,
  tp: null,            // "orders-0"
  windowFrom: null,    // first offset drawn; null = follow the consumer
  records: [],
  lesson: null,        // { lesson, step, answered: {} }
  lastPlan: null,
  workshop: null,      // in workshop mode: { learner: { number, name }, caps }
  reported: null,      // the progress last reported to the workshop
};

// ───────────────────────────── talking to the lab ─────────────────────────────

async function request(method, path, body, raw = false) {
  const opts = { method, headers: {} };
  if (body !== undefined) {
    if (raw) { opts.body = body; opts.headers['Content-Type'] = 'text/plain'; }
    else { opts.body = JSON.stringify(body); opts.headers['Content-Type'] = 'application/json'; }
  }
  const res = await fetch(path, opts);
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  // In a workshop, a lab this browser no longer has (a new server, an expired cookie): join again.
  if (res.status === 401 && data && data.join && ui.workshop && ui.workshop.learner && !ui.rejoining) {
    ui.rejoining = true;
    location.reload();
  }
  return { ok: res.ok, status: res.status, data };
}

/** Runs scenario lines; returns the applied result or null (the error is shown). */
async function act(lines, { silent = false } = {}) {
  const res = await request('POST', '/api/actions', { lines });
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
  lessonObserve(applied.lines);
  setState(res.data.state);
  return applied;
}

async function refresh() {
  const res = await request('GET', '/api/state');
  if (res.ok) setState(res.data);
}

// A live clock reads wall time: the pill shows it moving between changes (the lab writes a
// `clock` line when something happens or a timer falls due, not every second).
function renderClock() {
  if (!ui.state) return;
  const live = ui.state.clock_mode === 'live';
  const shown = live ? Math.max(Date.now(), ui.state.clock_ms) : ui.state.clock_ms;
  $('#clock').textContent = `clock ${fmtT(live ? Math.floor(shown / 1000) * 1000 : shown)}${live ? ' · live' : ''}`;
  const b = $('#clock-mode');
  b.textContent = live ? 'pause' : 'go live';
  b.dataset.mode = live ? 'paused' : 'live';
  $('#clock-mode-why').textContent = live
    ? 'the clock reads wall time: timers fire on time, a +1s step jumps ahead of it'
    : 'paused: time moves only when you step it; going live moves it to now, firing every timer due on the way';
}
setInterval(() => { if (ui.state && ui.state.clock_mode === 'live') renderClock(); }, 1000);

async function setClockMode(mode) {
  const res = await request('POST', '/api/clock', { mode });
  if (!res.ok) {
    showAlert(`Refused: ${(res.data && res.data.error) || `error ${res.status}`}. Nothing changed.`);
    return;
  }
  hideAlert();
  setState(res.data);
}

function setState(s) {
  if (ui.state && s.version < ui.state.version) return;
  const previous = ui.state;
  ui.state = s;
  window.__version = s.version; // lets tests and tools wait for a given state
  const groups = Object.keys(s.groups);
  if (!ui.group || !s.groups[ui.group]) ui.group = groups[0] || null;
  render(previous);
}

function listen(retryIn = 1000) {
  const conn = $('#conn');
  const es = new EventSource('/api/events');
  let lost = false;
  es.addEventListener('open', () => {
    conn.textContent = 'live';
    // Back after the server restarted: its lab counts versions from 1 again, so the next
    // state is taken whatever its number.
    if (lost && ui.state) { ui.state.version = -1; refresh(); }
    lost = false;
  });
  es.addEventListener('error', () => {
    conn.textContent = 'reconnecting…';
    lost = true;
    // An answer that is not a stream (a 429, a server going away) closes it for good: open a
    // new one after a while, waiting longer each time.
    if (es.readyState === EventSource.CLOSED) {
      setTimeout(() => { if (ui.state) ui.state.version = -1; listen(Math.min(retryIn * 2, 30000)); refresh(); }, retryIn);
    }
  });
  es.addEventListener('state', (ev) => {
    const { version } = JSON.parse(ev.data);
    if (!ui.state || version > ui.state.version) refresh();
  });
  es.addEventListener('push', () => applyPush());
}

// ───────────────────────────── workshop mode ─────────────────────────────

/** In a workshop, a browser first joins with a name: the server answers with the cookie that is its lab. */
async function joinWorkshop() {
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

function showLearnerBadge() {
  const b = $('#learner-badge');
  const l = ui.workshop.learner;
  b.textContent = `workshop · ${l.name} (#${l.number})`;
  b.hidden = false;
}

/** Tells the instructor which lesson step this page is on (only when it changed). */
function reportProgress() {
  if (!ui.workshop) return;
  const run = ui.lesson;
  const body = run ? { lesson: run.lesson.number, step: Math.min(run.step, run.lesson.steps.length), steps: run.lesson.steps.length } : { lesson: null };
  const key = JSON.stringify(body);
  if (key === ui.reported) return;
  ui.reported = key;
  request('POST', '/api/workshop/progress', body);
}

/**
 * What the instructor pushed to everyone and this learner has not applied yet: a lesson to
 * start, or a scenario. The push is claimed from the server first, so two tabs (or a push event
 * racing the page's start) apply it once.
 */
async function applyPush() {
  if (!ui.workshop) return;
  // A push that arrives while one is applied is looked for again once it is done.
  if (ui.applyingPush) { ui.pushPending = true; return; }
  ui.applyingPush = true;
  ui.pushPending = false;
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
      const res = await request('POST', '/api/scenario', p.scenario, true);
      if (!res.ok) { showAlert(`Your instructor's scenario could not be loaded here: ${(res.data && res.data.error) || res.status}.`); return; }
      ui.lesson = null; ui.windowFrom = null; ui.lastPlan = null;
      setState(res.data);
      showView('lab');
      showAlert('Your instructor loaded a scenario for everyone.', true);
    }
  } finally {
    ui.applyingPush = false;
    if (ui.pushPending) applyPush();
  }
}

function showAlert(text, ok = false) {
  const a = $('#alert');
  a.textContent = text;
  a.classList.toggle('ok', ok);
  a.hidden = false;
}
function hideAlert() { $('#alert').hidden = true; }

// ───────────────────────────── helpers ─────────────────────────────

// Beyond 30 days from the epoch an instant is a date (a live lab runs on wall time), as the
// lab's narrative writes it.
const DATED_AFTER_MS = 30 * 86400000;
const fmtT = (ms) => {
  if (Math.abs(ms - EPOCH_MS) > DATED_AFTER_MS) {
    const d = new Date(ms).toISOString();
    return ms % 1000 === 0 ? d.replace('.000Z', 'Z') : d;
  }
  const s = (ms - EPOCH_MS) / 1000;
  return Number.isInteger(s) ? `t=${s}s` : `t=${s.toFixed(3)}s`;
};
const fmtDur = (ms) => (ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`);
const dash = (v) => (v === null || v === undefined ? '–' : String(v));
const tpKey = (p) => `${p.topic}-${p.partition}`;

function group() { return ui.state && ui.group ? ui.state.groups[ui.group] : null; }
function partitionView() {
  const g = group();
  if (!g) return null;
  return g.partitions.find((p) => tpKey(p) === ui.tp) || g.partitions[0] || null;
}
function delivered(p, offset) {
  for (const [a, b, n] of p.delivery_counts) if (offset >= a && offset < b) return n;
  return 0;
}
const inRanges = (ranges, o) => ranges.some(([a, b]) => o >= a && o < b);

function flash(id) {
  const el = document.getElementById(id);
  if (!el) return;
  el.classList.remove('flash');
  void el.offsetWidth;
  el.classList.add('flash');
}

// ───────────────────────────── rendering ─────────────────────────────

function render(previous) {
  // The controls are rebuilt on every change: put the keyboard focus back where it was.
  const active = document.activeElement;
  const focusKey = active && active.dataset ? (active.dataset.line || active.dataset.focus) : null;
  window.__group = ui.group; // the group on screen, for tests
  renderGroupTabs();
  renderCards(previous);
  renderPartitionSelect();
  renderLog();
  renderNarrative();
  renderSink();
  renderConsumerOffsets();
  renderTransactions();
  renderConsumers();
  renderExperiment();
  renderSelects();
  renderPlan();
  renderClock();
  const st = ui.state.storage;
  $('#storage').textContent = st && st.logs === 'disk'
    ? `logs on disk (segment files) · --flush ${st.flush}`
    : 'logs in memory';
  $('#storage').title = st && st.dir ? `${st.dir}: segment files, SQLite sinks and the lab's snapshot; a restart (even kill -9) picks up here` : 'nothing survives a restart';
  renderLessonPanel();
  renderCluster();
  if (focusKey && document.activeElement === document.body) {
    const again = $$('[data-line], [data-focus]').find((el) => (el.dataset.line || el.dataset.focus) === focusKey && !el.disabled);
    if (again) again.focus();
  }
}

// `serve --bootstrap-server`: every action runs on a real cluster, and the figures are its.
function renderCluster() {
  const c = ui.state.cluster;
  const banner = $('#cluster-banner');
  banner.hidden = !c;
  if (!c) return;
  banner.classList.toggle('bad', Boolean(c.error));
  banner.textContent = c.error
    ? `On the cluster at ${c.bootstrap}: its figures could not be read (${c.error}); the cards show the model's.`
    : `On the cluster at ${c.bootstrap}: every action runs there first — real consumers, a crash is kill -9 — and the cards show the cluster's figures. Topics and groups are prefixed ${c.prefix} there.`;
  const g = group();
  if (g && g.cluster_members) {
    $('#group-info').append(` · the coordinator lists: ${g.cluster_members.length ? g.cluster_members.join(', ') : 'no member'}`);
  }
}

function renderGroupTabs() {
  const box = $('#group-tabs');
  box.replaceChildren(...Object.keys(ui.state.groups).map((name) =>
    h('button', { class: 'chip', 'aria-pressed': String(name === ui.group), onclick: () => { ui.group = name; ui.windowFrom = null; render(); } }, name)));
  if (!Object.keys(ui.state.groups).length) box.append(h('span', { class: 'muted' }, 'no group yet — start a consumer'));
  // The coordinator's view of the selected group: state, generation, members, who it waits for.
  const g = group();
  const info = $('#group-info');
  if (!g) { info.replaceChildren(); return; }
  const waiting = g.waiting_for.length ? ` · rebalancing: waiting for ${g.waiting_for.join(', ')}` : '';
  info.replaceChildren(h('span', { class: `gstate gs-${g.state}` }, g.state), ` generation ${g.generation} · members: ${g.members.length ? g.members.join(', ') : 'none'}${waiting}`);
}

function renderCards(previous) {
  const g = group();
  const p = partitionView();
  const prevG = previous && ui.group ? previous.groups[ui.group] : null;
  if (!g || !p) {
    for (const id of ['fig-committed', 'fig-rows', 'fig-lost', 'fig-dup']) $('#' + id).textContent = '–';
    $('#fig-lag').textContent = g ? `${ui.tp}: not read by group ${ui.group}` : 'no group yet';
    $('#fig-distinct').textContent = ''; $('#fig-dup-sub').textContent = '';
    $('#fig-lost-sub').textContent = 'passed but never applied, no error raised';
    $('#card-lost').classList.remove('alarm'); $('#card-dup').classList.remove('alarm');
    return;
  }
  // A negative committed offset (an admin's −2 "earliest" / −1 "latest") is what
  // __consumer_offsets holds, but no position: the group's consumers reset from it.
  const stored = p.committed === null && p.kafka_committed !== null ? p.kafka_committed : p.committed;
  $('#fig-committed').textContent = `${dash(stored)} / ${p.log_end_offset}`;
  const lags = Object.values(g.lag);
  const totalLag = lags.reduce((s, l) => s + (l || 0), 0);
  const uncommitted = lags.filter((l) => l === null).length;
  const total = g.partitions.length > 1
    ? ` · group total ${totalLag}` + (uncommitted ? ` (+ ${uncommitted} partition(s) with nothing committed)` : '')
    : '';
  const noLag = p.kafka_committed !== null && p.kafka_committed < 0
    ? `${tpKey(p)} lag: – (committed ${p.kafka_committed} is no position: auto.offset.reset decides)`
    : `${tpKey(p)} lag: – (nothing committed yet)`;
  $('#fig-lag').textContent = (p.lag === null ? noLag : `${tpKey(p)} lag: ${p.lag} record(s)`)
    + total + (g.offsets_source === 'sink' ? ' · offsets in the sink' : '')
    + (g.isolation === 'read_committed' ? ` · read_committed${p.last_stable_offset < p.log_end_offset ? `, held at the last stable offset ${p.last_stable_offset}` : ''}` : '');
  $('#fig-rows').textContent = g.sink.rows;
  $('#fig-distinct').textContent = g.has_sink
    ? `${g.sink.distinct_keys} distinct orders written · ${g.sink.kind} sink`
    : 'no sink: none of the lab\'s consumers has joined this group';
  $('#fig-lost').textContent = g.audit.lost;
  $('#card-lost').classList.toggle('alarm', g.audit.lost > 0);
  const lostRanges = g.partitions.flatMap((q) => q.lost_ranges.map(([a, b]) => `${tpKey(q)} ${b - a > 1 ? `${a}..${b - 1}` : a}`));
  $('#fig-lost-sub').textContent = g.audit.lost ? `never applied: ${lostRanges.join(', ')}` : 'passed but never applied, no error raised';
  $('#fig-dup').textContent = g.audit.duplicates;
  $('#card-dup').classList.toggle('alarm', g.audit.duplicates > 0);
  $('#fig-dup-sub').textContent = `${g.audit.redeliveries} redelivered (${g.audit.crash_redeliveries} after a crash) · ${g.audit.replays} replayed on purpose · ${g.audit.duplicate_rows} duplicate rows`
    + (g.audit.aborted_read ? ` · ${g.audit.aborted_read} record(s) of aborted transactions applied (read_uncommitted)` : '');
  if (prevG) {
    if (prevG.audit.lost !== g.audit.lost) flash('card-lost');
    if (prevG.audit.duplicates !== g.audit.duplicates) flash('card-dup');
    if (prevG.sink.rows !== g.sink.rows) flash('card-rows');
  }
}

function renderPartitionSelect() {
  const g = group();
  const sel = $('#log-partition');
  const all = ui.state.topics.flatMap((t) => t.partitions.map((p) => `${t.name}-${p.partition}`));
  const mine = g ? g.partitions.map(tpKey) : [];
  const tps = [...mine, ...all.filter((k) => !mine.includes(k))];
  if (!ui.tp || !tps.includes(ui.tp)) { ui.tp = tps[0] || null; ui.windowFrom = null; }
  sel.replaceChildren(...tps.map((k) => h('option', { value: k, selected: k === ui.tp }, k)));
}

function currentLog() {
  if (!ui.tp) return null;
  const i = ui.tp.lastIndexOf('-');
  const topic = ui.tp.slice(0, i), partition = Number(ui.tp.slice(i + 1));
  const t = ui.state.topics.find((x) => x.name === topic);
  const p = t && t.partitions.find((x) => x.partition === partition);
  return p ? { topic, partition, ...p } : null;
}

function followFrom(log, p) {
  const anchors = [p && p.position, p && p.committed].filter((x) => x !== null && x !== undefined);
  const anchor = anchors.length ? Math.min(...anchors) : log.log_start_offset;
  let from = Math.max(log.log_start_offset, anchor - 8);
  if (log.log_end_offset - from < WINDOW) from = Math.max(log.log_start_offset, log.log_end_offset - WINDOW + 1);
  return from;
}

/** Replaces an element's children, skipping empty ones. */
function fill(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

/** One record in the strip: its markers stacked above it, then the box. */
function slot(marks, box, label) {
  return h('div', { class: 'slot', role: 'listitem', 'aria-label': label }, h('div', { class: 'marks', 'aria-hidden': 'true' }, ...marks), box);
}

/**
 * A record's key or value as the window carries it: text as it is; bytes that are not text as
 * hex (`0x…`); a Schema Registry frame (magic byte 0, a 4-byte schema id) as `[schema N] <hex>`.
 */
function shown(r, field) {
  const v = r[field];
  if (v === null || v === undefined) return null;
  const cut = r[`${field}_bytes`] ? '…' : '';
  switch (r[`${field}_form`]) {
    case 'schema-registry': return `[schema ${r[`${field}_schema_id`]}] ${v}${cut}`;
    case 'hex': return `0x${v}${cut}`;
    default: return v + cut;
  }
}

/** A tag under the key saying what the value's bytes are, when they are not text. */
function valueTag(r) {
  if (r.value_form === 'schema-registry') return h('span', { class: 'fmt' }, `schema ${r.value_schema_id}`);
  if (r.value_form === 'hex') return h('span', { class: 'fmt' }, 'bytes');
  return null;
}

let logFetch = 0;
async function renderLog() {
  const log = currentLog();
  const strip = $('#log-strip');
  const p = partitionView();
  if (!log) {
    strip.replaceChildren(h('p', { class: 'muted', role: 'listitem' }, 'No topic yet.'));
    $('#log-title').textContent = 'Partition log';
    $('#offsets-key').replaceChildren();
    $('#log-range').textContent = '';
    return;
  }
  $('#log-title').textContent = `Partition ${ui.tp} log`;
  const topicInfo = ui.state.topics.find((t) => t.name === log.topic);
  $('#compact-topic').hidden = !topicInfo || !topicInfo.cleanup_policy.includes('compact');
  const key = ui.group ? `('${ui.group}', '${log.topic}', ${log.partition})` : null;
  const latest = key && ui.state.consumer_offsets.latest.find((e) => e.key === key);
  $('#offsets-key').replaceChildren(
    key ? h('span', {}, '__consumer_offsets key ', h('code', {}, key), ' → ', h('strong', {}, latest ? `offset ${latest.offset}` : 'nothing committed'),
      latest ? h('span', { class: 'muted' }, ` (by ${latest.metadata || '?'}, at ${fmtT(latest.commit_timestamp)})`) : '') : h('span', { class: 'muted' }, 'start a consumer to see its group’s offsets'));
  const from = ui.windowFrom ?? followFrom(log, p);
  const my = ++logFetch;
  const res = await request('GET', `/api/records?topic=${encodeURIComponent(log.topic)}&partition=${log.partition}&from=${from}&limit=${WINDOW}`);
  if (my !== logFetch || !res.ok) return;
  const recs = res.data.records;
  const inflight = new Set(p ? p.in_flight : []);
  const boxes = recs.map((r) => {
    const o = r.offset;
    if (r.control) {
      const marks = [];
      if (o === res.data.log_start_offset) marks.push(h('span', { class: 'mk m-start' }, 'log start'));
      if (p && p.committed === o) marks.push(h('span', { class: 'mk m-committed' }, 'committed'));
      if (p && p.position === o) marks.push(h('span', { class: 'mk m-position' }, 'position'));
      const status = `${r.control} marker (a control record): it takes an offset but no application is ever handed it`;
      return slot(marks, h('div', { class: `rec marker m-${r.control.toLowerCase()}`, title: `offset ${o} · ${status}\n${fmtT(r.timestamp)}` },
        h('span', { class: 'off' }, o), h('span', { class: 'key' }, r.control)), `offset ${o}, ${status}` + marks.map((m) => `, ${m.textContent}`).join(''));
    }
    const n = p ? delivered(p, o) : 0;
    const lost = p && inRanges(p.lost_ranges, o);
    const skipped = p && n === 0 && inRanges(p.skipped_ranges, o);
    let cls = 'rec', badge = null, status = 'not read yet';
    if (inflight.has(o)) { cls += ' inflight'; status = 'in flight: polled, not processed'; }
    else if (lost) { cls += ' lost'; badge = '✗'; status = 'silently lost'; }
    else if (n >= 2) { cls += ' dup'; badge = `×${n}`; status = `applied ${n} times`; }
    else if (n === 1) { cls += ' applied'; status = 'applied once'; }
    else if (skipped) { cls += ' skipped'; status = 'skipped on purpose'; }
    if (inflight.has(o) && n >= 1) badge = `×${n}`;
    if (r.txn === 'aborted') { cls += ' aborted'; status += ' · from an ABORTED transaction: read_committed readers skip it'; }
    if (r.txn === 'open') { cls += ' opentxn'; status += ' · in an OPEN transaction: invisible to read_committed readers until it commits'; }
    const marks = [];
    if (o === res.data.last_stable_offset && res.data.last_stable_offset < res.data.log_end_offset) marks.push(h('span', { class: 'mk m-lso' }, 'LSO'));
    if (o === res.data.log_start_offset) marks.push(h('span', { class: 'mk m-start' }, 'log start'));
    if (p && p.committed === o) marks.push(h('span', { class: 'mk m-committed' }, 'committed'));
    if (p && p.position === o) marks.push(h('span', { class: 'mk m-position' }, 'position'));
    const key = shown(r, 'key'), value = shown(r, 'value');
    return slot(marks, h('div', { class: cls, title: `offset ${o} · ${key || '(no key)'} · ${status}\n${value ?? 'null'}\n${fmtT(r.timestamp)}` },
      badge ? h('span', { class: 'badge' }, badge) : null,
      h('span', { class: 'off' }, o), h('span', { class: r.key_form ? 'key bin' : 'key' }, key || '∅'), valueTag(r)),
      `offset ${o}, ${key || 'no key'}, ${status}` + (r.value_form ? `, value ${value}` : '') + marks.map((m) => `, ${m.textContent}`).join(''));
  });
  // Offsets below the log start are gone: retention (or DeleteRecords) removed their segments.
  const start = res.data.log_start_offset;
  const ghosts = [];
  for (let o = Math.max(0, start - 3); from <= start && o < start; o++) {
    const lostHere = p && inRanges(p.lost_ranges, o);
    const why = topicInfo && topicInfo.cleanup_policy.includes('compact') ? 'removed by compaction' : 'deleted by retention';
    ghosts.push(slot(o === start - 1 ? [h('span', { class: 'mk m-start' }, 'deleted')] : [],
      h('div', { class: `rec gone${lostHere ? ' lost' : ''}`, title: `offset ${o}: ${why}${lostHere ? ' before this group read it (lost)' : ''}` },
        lostHere ? h('span', { class: 'badge' }, '✗') : null, h('span', { class: 'off' }, o), h('span', { class: 'key' }, 'gone')),
      `offset ${o}, ${why}` + (lostHere ? ', silently lost' : '')));
  }
  boxes.unshift(...ghosts);
  const end = res.data.log_end_offset;
  if (!recs.length || recs[recs.length - 1].offset === end - 1 || end === from) {
    const marks = [h('span', { class: 'mk m-end' }, 'LEO')];
    if (p && p.committed === end) marks.push(h('span', { class: 'mk m-committed' }, 'committed'));
    if (p && p.position === end) marks.push(h('span', { class: 'mk m-position' }, 'position'));
    if (res.data.last_stable_offset === end && recs.some((r) => r.control)) marks.push(h('span', { class: 'mk m-lso' }, 'LSO'));
    boxes.push(slot(marks, h('div', { class: 'rec leo' }, h('span', { class: 'off' }, end), h('span', { class: 'key' }, 'next')), `log end offset ${end}: the next record goes here` + marks.map((m) => `, ${m.textContent}`).join('')));
  }
  strip.replaceChildren(...boxes);
  const last = recs.length ? recs[recs.length - 1].offset : from;
  $('#log-range').textContent = recs.length ? `offsets ${recs[0].offset}–${last} of ${res.data.log_start_offset}–${end - 1}` : (end > 0 ? `log start ${res.data.log_start_offset}, log end ${end}` : 'empty');
}

function renderNarrative() {
  const list = $('#narrative');
  const { events, total } = ui.state.narrative;
  if (list.dataset.version === String(ui.state.version)) return;
  list.dataset.version = String(ui.state.version);
  list.replaceChildren(...events.map((e) => h('li', { class: `k-${e.kind}` }, h('span', { class: 't' }, fmtT(e.at)), h('span', { class: 'x' }, e.text))));
  $('#narrative-count').textContent = `${total} event(s)`;
  list.scrollTop = list.scrollHeight;
}

function renderSink() {
  const tbody = $('#sink-table tbody');
  const tail = ui.group && ui.state.sink_rows[ui.group];
  const g = group();
  $('#sink-title').textContent = g ? `Sink table — ${ui.group} (${g.has_sink ? g.sink.kind : 'no sink: no lab consumer has joined'})` : 'Sink table';
  if (!tail) { tbody.replaceChildren(); $('#sink-meta').textContent = ''; return; }
  $('#sink-meta').textContent = `${tail.total} row(s)` + (tail.total > tail.rows.length ? `, the last ${tail.rows.length} shown` : '') + (g.sink.duplicate_rows ? ` · ${g.sink.duplicate_rows} duplicate` : '');
  tbody.replaceChildren(...tail.rows.map((r) => {
    let status = '';
    try { status = JSON.parse(r.value).status || ''; } catch { status = ''; }
    return h('tr', { class: r.duplicate ? 'dup' : '' },
      h('td', {}, r.row_id), h('td', {}, r.key), h('td', {}, status), h('td', {}, `${r.topic}-${r.partition}@${r.offset}`),
      h('td', {}, `${r.consumer}#${r.incarnation}`), h('td', {}, h('span', { class: `tag r-${r.reason}` }, r.reason)), h('td', {}, r.writes));
  }));
}

/** The transaction coordinator's view: one row per transactional.id. */
function renderTransactions() {
  const txns = ui.state.transactions;
  $('#txn-panel').hidden = !txns.length;
  $('#txn-table tbody').replaceChildren(...txns.map((t) => h('tr', { class: t.state === 'Ongoing' ? 'ongoing' : '' },
    h('td', {}, h('code', {}, t.transactional_id)), h('td', {}, `${t.producer_id} / ${t.epoch}`), h('td', {}, t.state),
    h('td', {}, t.state === 'Ongoing' ? `${t.pending_records} record(s) on ${t.partitions.join(', ')}` : '–'),
    h('td', {}, t.expires_at === null ? '–' : fmtT(t.expires_at)), h('td', {}, `${t.committed} / ${t.aborted}`))));
  const lso = ui.state.topics.flatMap((tp) => tp.partitions.filter((p) => p.markers || p.open_transactions.length)
    .map((p) => `${tp.name}-${p.partition}: LSO ${p.last_stable_offset} of LEO ${p.log_end_offset} · ${p.markers} marker(s) · ${p.aborted_records} aborted record(s)`));
  $('#txn-lso').textContent = lso.join(' · ');
}

function renderConsumerOffsets() {
  const tbody = $('#co-table tbody');
  const latest = new Map(ui.state.consumer_offsets.latest.map((e) => [e.key, e.offset]));
  // Commits keyed (group, topic, partition), and the coordinator's group metadata records —
  // each completed rebalance's members and assignment, keyed by the group — in one log.
  const groups = (ui.state.consumer_offsets_group_records || []).map((g) => ({ ...g, groupKey: `GroupMetadata('${g.group}')` }));
  const recs = [...ui.state.consumer_offsets_records, ...groups].sort((a, b) => a.offset - b.offset);
  const keyText = (r) => r.groupKey || keyOf(r.key);
  const newest = new Map();
  for (const r of recs) newest.set(keyText(r), r.offset);
  const groupValue = (v) => `generation ${v.generation}` + (v.members.length
    ? ` · ${v.members.map(([id, owned]) => `${id} ← ${owned.length ? owned.join(', ') : 'nothing'}`).join('; ')}`
    : ' · no members (Empty)');
  tbody.replaceChildren(...recs.slice().reverse().map((r) => {
    const k = keyText(r);
    const superseded = newest.get(k) !== r.offset;
    const value = !r.value ? 'tombstone' : r.groupKey ? groupValue(r.value) : `offset ${r.value.offset}`;
    const meta = r.value && !r.groupKey ? r.value.metadata : (r.value && r.value.protocol ? `protocol ${r.value.protocol}` : '');
    return h('tr', { class: superseded ? 'superseded' : (r.groupKey ? 'group-record' : '') }, h('td', {}, r.offset), h('td', {}, h('code', {}, k)),
      h('td', {}, value), h('td', {}, meta));
  }));
  const co = ui.state.consumer_offsets;
  $('#co-title').replaceChildren(h('code', {}, '__consumer_offsets'), ` — ${co.records} record(s) retained, ${latest.size} key(s)`);
}
const keyOf = (k) => `('${k.group}', '${k.topic}', ${k.partition})`;

function consumerCard(c) {
  const st = c.state.state;
  const running = st === 'running';
  const line = (cmd) => `${cmd} ${q(c.name)}`;
  const btn = (label, l, enabled, extra = {}) => h('button', { class: 'btn small', 'data-line': l, disabled: !enabled, onclick: () => act([l]), ...extra }, label);
  const positions = c.assignment.length ? c.assignment.map((a) => `${a.topic}-${a.partition}@${a.position}`).join(', ') : (running ? 'none assigned' : '–');
  const strategy = ui.meta && ui.meta.strategies.find((s) => s.name === c.strategy);
  let timer = null;
  if (running && c.auto_commit_due_in_ms !== null && c.auto_commit_due_in_ms !== undefined) {
    timer = h('span', { class: 'timer' }, h('meter', { min: 0, max: c.auto_commit_interval_ms, value: c.auto_commit_interval_ms - c.auto_commit_due_in_ms, 'aria-label': 'auto-commit timer' }), `fires in ${fmtDur(c.auto_commit_due_in_ms)}`);
  }
  const g = ui.state.groups[c.group];
  const waiting = g && g.waiting_for.length && running ? `group rebalancing: waiting for ${g.waiting_for.join(', ')}` : null;
  const txn = c.sink === 'kafka-tx' ? ui.state.transactions.find((t) => t.transactional_id === c.name) : null;
  const txnText = txn ? (txn.state === 'Ongoing'
    ? `open: ${txn.pending_records} record(s) on ${txn.partitions.join(', ')} · aborted by the coordinator at ${fmtT(txn.expires_at)}`
    : txn.state === 'TimedOut' ? 'aborted by the coordinator on timeout: its next call fails (InvalidProducerEpochException), then it aborts and starts over' : 'none open')
    + ` · producer id ${txn.producer_id}, epoch ${txn.epoch} · ${txn.committed} committed, ${txn.aborted} aborted` : null;
  const seekSel = h('select', { 'aria-label': `seek target for ${c.name}` }, ['earliest', 'latest', 'offset…', '@time…', '@-ago…'].map((v) => h('option', { value: v }, v)));
  const seekVal = h('input', { class: 'narrow', placeholder: '0 / 5s / 1h', 'aria-label': `seek value for ${c.name}` });
  const doSeek = () => {
    const v = seekSel.value, x = seekVal.value.trim();
    const to = v === 'earliest' || v === 'latest' ? v : v === 'offset…' ? x : v === '@time…' ? `@${x}` : `@-${x}`;
    act([`seek ${q(c.name)} to=${q(to)}`]);
  };
  return h('article', { class: `consumer ${st}`, 'aria-label': `consumer ${c.name}` },
    h('div', { class: 'consumer-head' }, h('strong', {}, c.name), h('span', { class: `state ${st}` }, st), h('span', { class: 'muted' }, `${c.member_id} · ${c.group} · gen ${c.generation}`)),
    h('dl', { class: 'kv' },
      h('dt', {}, 'commit'), h('dd', { title: strategy ? strategy.explanation : '' }, c.strategy + (strategy && strategy.auto_commits ? ` every ${fmtDur(c.auto_commit_interval_ms)}` : '')),
      h('dt', {}, 'group'), h('dd', {}, `${c.assignor}${c.group_instance_id ? ` · static ${c.group_instance_id}` : ''}${ui.state.groups[c.group] && !ui.state.groups[c.group].members.includes(c.member_id) && st === 'running' ? ' · NOT A MEMBER (zombie until its next poll)' : ''}`),
      c.output ? h('dt', {}, 'output') : null, c.output ? h('dd', {}, `${c.output} (Kafka transactions, transactional.id ${c.name})`) : null,
      txnText ? h('dt', {}, 'transaction') : null, txnText ? h('dd', { class: 'txn-state' }, txnText) : null,
      c.isolation === 'read_committed' ? h('dt', {}, 'isolation') : null, c.isolation === 'read_committed' ? h('dd', {}, 'read_committed: stops at the last stable offset, skips aborted records') : null,
      h('dt', {}, 'position'), h('dd', {}, positions),
      h('dt', {}, 'in flight'), h('dd', {}, `${c.in_flight} record(s)` + (c.pending_async_commits ? ` · ${c.pending_async_commits} async commit(s) pending` : '')),
      timer ? h('dt', {}, 'auto-commit') : null, timer ? h('dd', {}, timer) : null,
      waiting ? h('dt', {}, 'note') : null, waiting ? h('dd', {}, waiting) : null,
      c.state.error ? h('dt', {}, 'error') : null, c.state.error ? h('dd', {}, c.state.error) : null),
    strategy ? h('p', { class: 'hint' }, strategy.explanation) : null,
    h('div', { class: 'btns' },
      btn('Poll', line('poll'), running),
      btn('Process next', line('process'), running && c.in_flight > 0),
      btn('Process all', `process ${q(c.name)} count=all`, running && c.in_flight > 0),
      btn(c.sink === 'kafka-tx' ? 'Commit txn' : 'Commit', line('commit'), running),
      c.sink === 'kafka-tx' ? btn('Abort txn', line('abort'), running && txn && txn.state === 'Ongoing') : null,
      btn('Crash ✗', line('crash'), running, { class: 'btn small danger' }),
      btn('Restart', line('restart'), !running),
      btn('Close', line('close'), running)),
    h('div', { class: 'seek-row' }, seekSel, seekVal, h('button', { class: 'btn small', disabled: !running, onclick: doSeek }, 'Seek')));
}

// ───────────────────────────── the experiment ─────────────────────────────
// The seed's own story, one click each: the commit mode and the sink are two toggles, "crash
// mid-batch" and "rewind to earliest" one button each. A group's sink is fixed, so each
// (commit, sink) pair is a consumer of its own group; every press is ordinary scenario lines.

const EXP_TOPIC = 'orders';
const EXP_SINKS = ['append', 'upsert', 'transactional'];

/** The consumer the experiment drives for (strategy, sink): one of `orders` with that commit
 *  mode and sink if there is one (the seed's c1 for auto-timer + append), else a new name and
 *  group that nothing else uses. */
function expTarget(strategy, sink) {
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
function expConsumer() {
  if (!ui.state) return null;
  const cs = ui.state.consumers.filter((c) => c.topic === EXP_TOPIC);
  return cs.find((c) => c.group === ui.group) || cs.find((c) => c.name === 'c1') || null;
}

function renderExperiment() {
  if (!ui.meta || !ui.state) return;
  const c = expConsumer();
  const cur = c ? { strategy: c.strategy, sink: c.sink } : { strategy: 'auto-timer', sink: 'append' };
  const chip = (label, pressed, focus, onclick, title) =>
    h('button', { class: 'chip', type: 'button', 'aria-pressed': String(pressed), 'data-focus': focus, title, onclick }, label);
  $('#exp-commit').replaceChildren(...ui.meta.strategies.map((s) =>
    chip(s.name, s.name === cur.strategy, `exp-commit:${s.name}`, () => expSwitch(s.name, cur.sink), s.explanation)));
  $('#exp-sink').replaceChildren(...ui.meta.sinks.filter((k) => EXP_SINKS.includes(k.name)).map((k) =>
    chip(k.name, k.name === cur.sink, `exp-sink:${k.name}`, () => expSwitch(cur.strategy, k.name), k.explanation)));
  const who = c
    ? `${c.name} in group ${c.group} (${c.state.state})`
    : `no consumer of ${EXP_TOPIC} yet: pick a commit mode and a sink`;
  // A live region: written only when it says something new.
  if ($('#exp-who').textContent !== who) $('#exp-who').textContent = who;
}

/** Switches the experiment to (strategy, sink): the consumer on screen closes, the pair's own starts. */
async function expSwitch(strategy, sink) {
  const target = expTarget(strategy, sink);
  const lines = [];
  const cur = expConsumer();
  if (cur && cur.name !== target.consumer && cur.state.state === 'running') lines.push(`close ${q(cur.name)}`);
  if (!target.existing) {
    lines.push(`consumer ${q(target.consumer)} group=${q(target.group)} topic=${EXP_TOPIC} commit=${strategy} sink=${sink} max-poll=4 reset=earliest`);
  } else if (target.existing.state.state === 'crashed') {
    lines.push('tick 45s', `restart ${q(target.consumer)}`);
  } else if (target.existing.state.state !== 'running') {
    lines.push(`restart ${q(target.consumer)}`);
  }
  if (lines.length && !(await act(lines))) return;
  ui.group = target.group;
  ui.windowFrom = null;
  render();
}

/** The lines that make `c` a running member reading: a crashed one waits out its session (the
 *  group keeps a dead member until then), a closed one starts again. */
function expRunning(c) {
  const n = q(c.name);
  if (c.state.state === 'crashed') return ['tick 45s', `restart ${n}`];
  if (c.state.state !== 'running') return [`restart ${n}`];
  return [];
}

/** Whether `c` has read its partition to the log end. */
function expCaughtUp(c) {
  const t = ui.state.topics.find((x) => x.name === EXP_TOPIC);
  return c.assignment.length > 0 && c.assignment.every((a) => {
    const p = t && t.partitions.find((x) => x.partition === a.partition);
    return p && a.position >= p.log_end_offset;
  });
}

/** Runs one of the experiment's buttons, the panel busy (its buttons off) until it is done:
 *  a run is several requests, and a second press in between would interleave with them. */
async function expBusy(run) {
  const panel = $('.experiment');
  if (panel.getAttribute('aria-busy') === 'true') return;
  panel.setAttribute('aria-busy', 'true');
  for (const b of ['#exp-crash', '#exp-rewind']) $(b).disabled = true;
  try {
    await run();
  } finally {
    panel.removeAttribute('aria-busy');
    for (const b of ['#exp-crash', '#exp-rewind']) $(b).disabled = false;
  }
}

/** Poll a batch, process one record of it, crash (after the auto-commit timer fired, for
 *  auto-timer), wait out the session, restart and read the batch that comes back. The crash is
 *  a stepped story: a live clock is paused for it (its ticks would run ahead of wall time). */
async function expCrash() {
  const c = expConsumer();
  if (!c) { showAlert('Pick a commit mode and a sink first.'); return; }
  const n = q(c.name);
  let paused = false;
  if (ui.state.clock_mode === 'live') {
    const res = await request('POST', '/api/clock', { mode: 'paused' });
    if (!res.ok) { showAlert(`Refused: ${(res.data && res.data.error) || res.status}. Nothing changed.`); return; }
    setState(res.data);
    paused = true;
  }
  const lines = [...expRunning(c)];
  // Something to read: a caught-up consumer gets a batch's worth of new orders first.
  if (expCaughtUp(c)) lines.push(`produce ${EXP_TOPIC} count=${c.max_poll_records}`);
  lines.push(`poll ${n}`, `process ${n}`);
  if (c.strategy === 'auto-timer') lines.push(`tick ${fmtDur(c.auto_commit_interval_ms)}`);
  lines.push(`crash ${n}`, 'tick 45s', `restart ${n}`);
  if (!(await act(lines))) return;
  // What the restarted process reads back: the batch after the committed offset.
  await act([`poll ${n}`, `process ${n} count=all`], { silent: true });
  if (paused) showAlert('The clock was paused to step through the crash: press “go live” to follow wall time again.', true);
}

/** Seek to the first offset and read the whole log again, one poll and its processing at a
 *  time until the consumer is at the log end (at most 1,000 polls). */
async function expRewind() {
  const c = expConsumer();
  if (!c) { showAlert('Pick a commit mode and a sink first.'); return; }
  const n = q(c.name);
  if (!(await act([...expRunning(c), `seek ${n} to=earliest`]))) return;
  for (let i = 0; i < 1000; i++) {
    const now = ui.state.consumers.find((x) => x.name === c.name);
    if (!now || expCaughtUp(now)) return;
    if (!(await act([`poll ${n}`, `process ${n} count=all`], { silent: true }))) return;
  }
}

function renderConsumers() {
  const box = $('#consumers');
  const cs = ui.state.consumers;
  box.replaceChildren(...(cs.length ? cs.map(consumerCard) : [h('p', { class: 'muted' }, 'No consumer yet: add one below.')]));
}

function renderSelects() {
  const topics = ui.state.topics.map((t) => t.name);
  for (const id of ['produce-topic', 'consumer-topic', 'reset-topic', 'output-topic']) {
    const sel = $('#' + id);
    const cur = sel.value;
    sel.replaceChildren(...topics.map((t) => h('option', { value: t, selected: t === cur }, t)));
  }
  $('#group-list').replaceChildren(...Object.keys(ui.state.groups).map((g) => h('option', { value: g })));
  if (document.activeElement !== $('#sink-select')) syncGroupSink();
}

function renderPlan() {
  const box = $('#reset-plan');
  const plan = ui.lastPlan;
  if (!plan) { box.replaceChildren(); return; }
  const rows = plan.rows.map((r) => h('tr', {},
    h('td', {}, `${r.topic}-${r.partition}`), h('td', {}, dash(r.current)), h('td', {}, r.target + (r.clamped ? ' (clamped)' : '')),
    h('td', {}, r.replayed), h('td', {}, r.skipped), h('td', {}, r.predicted_duplicate_rows)));
  const replayed = plan.rows.reduce((s, r) => s + r.replayed, 0);
  const reapplied = plan.rows.reduce((s, r) => s + r.reapplied, 0);
  const skipped = plan.rows.reduce((s, r) => s + r.skipped, 0);
  const dups = plan.rows.reduce((s, r) => s + r.predicted_duplicate_rows, 0);
  const spans = plan.rows.filter((r) => r.span).map((r) => `${fmtT(r.span[0])}…${fmtT(r.span[1])}`);
  box.replaceChildren(h('div', { class: 'plan' },
    h('strong', {}, plan.executed ? `Executed for ${plan.group}` : `Dry run for ${plan.group} — nothing changed`),
    h('table', {}, h('thead', {}, h('tr', {}, ['partition', 'current', 'new', 'replayed', 'skipped', 'dup rows'].map((x) => h('th', {}, x)))), h('tbody', {}, rows)),
    h('p', { class: 'radius' }, `Blast radius: ${replayed} record(s) read again (${reapplied} of them already applied: those come back as replays), ${skipped} skipped for good, ${dups} duplicate row(s) expected in the sink` + (spans.length ? `; records from ${spans.join(', ')}` : '') + '.')));
}

// ───────────────────────────── forms ─────────────────────────────

function setupForms() {
  $('#produce-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    const key = String(f.get('key') || '').trim();
    act([`produce ${q(f.get('topic'))} count=${q(f.get('count'))}` + (key ? ` key=${q(key)}` : '')]);
  });
  $('#clock-mode').addEventListener('click', (e) => setClockMode(e.currentTarget.dataset.mode));
  $('#exp-crash').addEventListener('click', () => expBusy(expCrash));
  $('#exp-rewind').addEventListener('click', () => expBusy(expRewind));
  $$('[data-tick]').forEach((b) => b.addEventListener('click', () => act([`tick ${q(b.dataset.tick)}`])));
  $('#tick-form').addEventListener('submit', (e) => { e.preventDefault(); const d = new FormData(e.target).get('d'); if (d) act([`tick ${q(d)}`]); });
  $('#consumer-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    const opt = (k) => { const v = String(f.get(k) || '').trim(); return v ? ` ${k}=${q(v)}` : ''; };
    const revoke = (f.get('commit-on-revoke') === 'no' ? ' commit-on-revoke=no' : '')
      + (f.get('assignor') === 'cooperative-sticky' ? ' assignor=cooperative-sticky' : '');
    const tx = f.get('sink') === 'kafka-tx' ? ` output=${q(f.get('output'))}${opt('transaction-timeout')}` : '';
    const isolation = f.get('isolation') === 'read_committed' ? ' isolation=read_committed' : '';
    act([`consumer ${q(f.get('name'))} group=${q(f.get('group'))} topic=${q(f.get('topic'))} commit=${q(f.get('commit'))} interval=${q(f.get('interval'))} max-poll=${q(f.get('max-poll'))} sink=${q(f.get('sink'))} reset=${q(f.get('reset'))}${opt('max-poll-interval')}${opt('instance-id')}${revoke}${isolation}${tx}`]);
  });
  const resetLine = (execute) => {
    const f = new FormData($('#reset-form'));
    const spec = f.get('spec');
    const value = String(f.get('value') || '').trim();
    const needsValue = !['to-earliest', 'to-latest', 'to-current'].includes(spec);
    return `reset-offsets ${q(f.get('group'))} topic=${q(f.get('topic'))} ${needsValue ? `${spec}=${q(value)}` : spec}` + (execute ? ' execute' : '');
  };
  $('#reset-form').addEventListener('submit', (e) => { e.preventDefault(); act([resetLine(false)]); });
  $('#reset-execute').addEventListener('click', () => act([resetLine(true)]));
  $('#topic-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    const opt = (k) => { const v = String(f.get(k) || '').trim(); return v ? ` ${k}=${q(v)}` : ''; };
    act([`topic ${q(f.get('name'))} partitions=${f.get('partitions')}${opt('segment.records')}${opt('retention.ms')}${opt('retention.bytes')} cleanup.policy=${f.get('cleanup.policy')}${opt('delete.retention.ms')}`]);
  });
  $('#line-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = $('#line-input');
    const line = input.value.trim();
    // The answer can arrive after the next line was typed (the event stream may have drawn
    // this action's state already): only the line that was sent is cleared.
    if (line) act([line]).then((ok) => { if (ok && input.value.trim() === line) input.value = ''; });
  });
  $('#compact-offsets').addEventListener('click', () => act(['compact __consumer_offsets']));
  $('#compact-topic').addEventListener('click', () => { const log = currentLog(); if (log) act([`compact ${q(log.topic)}`]); });
  $('#restart-coordinator').addEventListener('click', () => act(['restart-coordinator']));
  $('#log-partition').addEventListener('change', (e) => { ui.tp = e.target.value; ui.windowFrom = null; renderLog(); renderCards(); });
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
  $('#consumer-form input[name=group]').addEventListener('input', syncGroupSink);
  $('#strategy-select').addEventListener('change', updateHints);
  $('#sink-select').addEventListener('change', updateHints);
  $('#reset-lab').addEventListener('click', async () => {
    if (!confirmReplace('Resetting')) return;
    ui.lesson = null;
    // The seed in the clock's mode: a live lab starts over at now and stays live.
    const res = await request('POST', '/api/reset');
    if (res.ok) { ui.windowFrom = null; setState(res.data); showAlert('Back to the seed lab.', true); }
  });
  $('#import-button').addEventListener('click', () => $('#import').click());
  $('#import').addEventListener('change', async (e) => {
    const file = e.target.files[0];
    if (!file) return;
    const text = await file.text();
    const res = await request('POST', '/api/scenario', text, true);
    e.target.value = '';
    if (res.ok) { ui.lesson = null; setState(res.data); showAlert(`Loaded ${file.name}.`, true); }
    else showAlert(`Could not load ${file.name}: line ${res.data.line}: ${res.data.error}. The lab is unchanged.`);
  });
}

function moveWindow(delta) {
  const log = currentLog();
  if (!log) return;
  const cur = ui.windowFrom ?? followFrom(log, partitionView());
  ui.windowFrom = Math.min(Math.max(log.log_start_offset, cur + delta), Math.max(log.log_start_offset, log.log_end_offset - 1));
  renderLog();
}

/** A group has one sink: when the form names an existing group, use that group's sink. */
function syncGroupSink() {
  const name = $('#consumer-form input[name=group]').value.trim();
  const g = ui.state && ui.state.groups[name];
  if (g) $('#sink-select').value = g.sink.kind;
  updateHints();
  if (g) $('#sink-hint').textContent = `Group ${name} already writes to its ${g.sink.kind} sink; every consumer of a group shares it. ` + $('#sink-hint').textContent;
}

function updateHints() {
  if (!ui.meta) return;
  const s = ui.meta.strategies.find((x) => x.name === $('#strategy-select').value);
  const k = ui.meta.sinks.find((x) => x.name === $('#sink-select').value);
  $('#strategy-hint').textContent = s ? s.explanation : '';
  $('#sink-hint').textContent = k ? k.explanation : '';
  const tx = $('#sink-select').value === 'kafka-tx';
  $('#txn-options').hidden = !tx;
  // The strategies a kafka-tx sink accepts are the server's (`fits_transactions`), not a list here.
  const fits = ui.meta.strategies.filter((x) => x.fits_transactions).map((x) => x.name);
  if (tx && fits.length && !fits.includes($('#strategy-select').value)) $('#strategy-select').value = fits[0];
  if (tx) $('#consumer-form select[name=isolation]').value = 'read_committed';
}

// ───────────────────────────── views ─────────────────────────────

function showView(name) {
  hideAlert();
  $$('.tabs [role=tab]').forEach((t) => t.setAttribute('aria-selected', String(t.dataset.view === name)));
  $$('.view').forEach((v) => { v.hidden = v.id !== `view-${name}`; });
  if (name === 'explorer') loadMatrix();
  if (location.hash !== `#${name}`) history.replaceState(null, '', `#${name}`);
}

function setupTabs() {
  const tabs = $$('.tabs [role=tab]');
  tabs.forEach((t, i) => {
    t.addEventListener('click', () => showView(t.dataset.view));
    t.addEventListener('keydown', (e) => {
      if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
      const next = tabs[(i + (e.key === 'ArrowRight' ? 1 : tabs.length - 1)) % tabs.length];
      next.focus(); showView(next.dataset.view);
    });
  });
}

// ───────────────────────────── explorer ─────────────────────────────

let matrixLoaded = false;
async function loadMatrix() {
  if (matrixLoaded) return;
  const res = await request('GET', '/api/explore');
  if (!res.ok) { $('#matrix').replaceChildren(h('p', {}, 'Could not compute the matrix.')); return; }
  matrixLoaded = true;
  const cells = res.data.cells;
  const sinks = [...new Set(cells.map((c) => c.sink))];
  const strategies = [...new Set(cells.map((c) => c.strategy))];
  const table = h('table', { class: 'matrix' },
    h('thead', {}, h('tr', {}, h('th', {}, 'strategy \\ sink'), sinks.map((s) => h('th', { scope: 'col' }, s)))),
    h('tbody', {}, strategies.map((st) => {
      const meta = ui.meta.strategies.find((x) => x.name === st);
      return h('tr', {}, h('th', { class: 'row', scope: 'row' }, st, h('small', {}, meta ? meta.explanation : '')),
        sinks.map((sk) => {
          const c = cells.find((x) => x.strategy === st && x.sink === sk);
          if (!c) return h('td', { class: 'na' }, h('span', { class: 'muted' }, 'n/a — Kafka transactions commit after processing'));
          const cls = c.max_lost > 0 ? 'lost' : (c.max_duplicate_rows > 0 || c.max_duplicates > 0) ? 'dup' : 'clean';
          const verdict = c.max_lost > 0 ? `loses up to ${c.max_lost}` : c.max_duplicate_rows > 0 ? `duplicates up to ${c.max_duplicate_rows} row${c.max_duplicate_rows === 1 ? '' : 's'}`
            : c.max_duplicates > 0 ? `redelivers ${c.max_duplicates}, rows converge` : 'no loss, no duplicate';
          return h('td', {}, h('button', { class: cls, 'data-cell': `${st}/${sk}`, onclick: () => replayCell(st, sk), 'aria-label': `${st} with ${sk} sink: ${verdict}. Load its worst crash into the lab.` },
            h('span', { class: 'verdict' }, verdict),
            h('span', {}, `lost ≤ ${c.max_lost} (total ${c.total_lost}) · duplicates ≤ ${c.max_duplicates} · dup rows ≤ ${c.max_duplicate_rows}`),
            h('br'), h('small', { class: 'muted' }, `${c.crash_points} crash points` + (cls === 'clean' ? '' : ` · worst: right after effect #${c.worst_crash_point}`))));
        }));
    })));
  $('#matrix').replaceChildren(table);
}

async function replayCell(strategy, sink) {
  if (!confirmReplace(`Loading ${strategy} × ${sink}`)) return;
  const res = await request('POST', '/api/explore/replay', { strategy, sink });
  if (!res.ok) { showAlert(`Could not replay: ${res.data.error}`); return; }
  ui.lesson = null; ui.windowFrom = null;
  setState(res.data);
  showView('lab');
  showAlert(`Loaded the worst crash of ${strategy} × ${sink}: c1 just died. Tick 45s for its session to expire, restart c1 and process to the end to see what was lost or duplicated.`, true);
}

// ───────────────────────────── lessons ─────────────────────────────

const KEY_LABELS = {
  lost: 'Silently lost', duplicates: 'Duplicates', 'duplicate-rows': 'duplicate rows', redeliveries: 'redeliveries',
  'crash-redeliveries': 'redeliveries after a crash', replays: 'deliberate replays', skipped: 'records skipped on purpose',
  deliveries: 'deliveries', 'sink-rows': 'Sink rows', 'distinct-keys': 'distinct orders written', committed: 'the committed offset',
  lag: 'the lag', 'log-end-offset': 'the log end offset', 'log-start-offset': 'the log start offset', state: 'the consumer state',
  'last-stable-offset': 'the last stable offset', 'aborted-read': 'records of aborted transactions applied',
  position: 'the consumer position', 'in-flight': 'records in flight', generation: 'the generation',
};

function parseExpect(line) {
  const scope = [], checks = [];
  for (const tok of line.split(/\s+/).slice(1)) {
    const [k, v] = tok.split('=');
    if (['group', 'topic', 'partition', 'consumer'].includes(k)) scope.push(`${k} ${v}`);
    else checks.push({ key: k, value: v });
  }
  return { scope, checks };
}

async function loadLessons() {
  const res = await request('GET', '/api/lessons');
  if (!res.ok) return;
  ui.lessons = res.data;
  const done = JSON.parse(localStorage.getItem('offsetlab.done') || '[]');
  $('#lesson-list').replaceChildren(...ui.lessons.map((l) => h('li', {},
    h('span', { class: `num${done.includes(l.number) ? ' done' : ''}` }, `Lesson ${l.number}`),
    h('strong', {}, l.title), h('p', {}, l.introduction),
    h('div', {}, h('button', { class: 'btn primary', 'aria-label': `Start lesson ${l.number}: ${l.title}`, onclick: () => startLesson(l.number) }, 'Start'), ' ', h('span', { class: 'muted' }, `${l.steps.length} steps`)))));
}

/** Loading another lab replaces this one in every open tab: ask first when there is work to lose. */
function confirmReplace(what) {
  const actions = ui.state ? ui.state.history_lines : 0;
  if (actions <= 4) return true; // the seed lab, untouched
  return window.confirm(`${what} replaces the current lab (${actions} actions) in every open tab. Use Export first to keep it. Continue?`);
}

/** Starts a lesson in an empty lab; `true` once it is on screen. */
async function startLesson(number, { pushed = false } = {}) {
  const lesson = ui.lessons.find((l) => l.number === number);
  if (!lesson || (!pushed && !confirmReplace(`Starting lesson ${number}`))) return false;
  const res = await request('POST', '/api/scenario', '', true);
  if (!res.ok) { showAlert(`The lesson could not start: ${(res.data && res.data.error) || `error ${res.status}`}.`); return false; }
  ui.lesson = { lesson, step: 0, answered: {}, note: null };
  focusStep();
  ui.windowFrom = null; ui.lastPlan = null;
  setState(res.data);
  showView('lab');
  hideAlert();
  $('#lesson-panel').scrollIntoView({ block: 'start' });
  return true;
}

function lessonObserve(lines) {
  const run = ui.lesson;
  if (!run) return;
  const step = run.lesson.steps[run.step];
  if (!step || step.command === 'expect') return;
  if (lines.includes(step.line)) { run.step += 1; run.answered = {}; run.note = null; focusStep(); }
  else run.note = `That was “${lines.join('; ')}”, not this step. It happened anyway; to keep the lesson’s figures exact, do this step next.`;
}

/** On a question step, show the group and partition the question is about. */
function focusStep() {
  const run = ui.lesson;
  const step = run && run.lesson.steps[run.step];
  if (!step || step.command !== 'expect') return;
  const scope = Object.fromEntries(step.line.split(/\s+/).slice(1).map((t) => t.split('=')).filter(([k]) => ['group', 'topic', 'partition'].includes(k)));
  if (scope.group) ui.group = scope.group;
  if (scope.topic || scope.partition !== undefined) {
    const topic = scope.topic || (ui.tp ? ui.tp.slice(0, ui.tp.lastIndexOf('-')) : 'orders');
    ui.tp = `${topic}-${scope.partition ?? 0}`;
    ui.windowFrom = null;
  }
}

function renderLessonPanel() {
  const panel = $('#lesson-panel');
  $$('.btn.hl').forEach((b) => b.classList.remove('hl'));
  reportProgress();
  const run = ui.lesson;
  if (!run) { panel.hidden = true; return; }
  panel.hidden = false;
  const { lesson } = run;
  const total = lesson.steps.length;
  const head = h('div', { class: 'row' }, h('h2', {}, `Lesson ${lesson.number}: ${lesson.title}`),
    h('button', { class: 'btn small', onclick: () => { ui.lesson = null; renderLessonPanel(); } }, 'Leave lesson'));
  const progress = h('div', { class: 'progress', role: 'progressbar', 'aria-label': 'Lesson progress', 'aria-valuemin': 0, 'aria-valuemax': total, 'aria-valuenow': run.step, 'aria-valuetext': `step ${run.step} of ${total}` }, h('span', { style: `width:${(100 * run.step) / total}%` }));
  if (run.step >= total) {
    const done = JSON.parse(localStorage.getItem('offsetlab.done') || '[]');
    if (!done.includes(lesson.number)) { done.push(lesson.number); localStorage.setItem('offsetlab.done', JSON.stringify(done)); }
    fill(panel, head, progress, h('p', { class: 'explain' }, '✔ Lesson complete. Every claim it made was checked against the lab.'),
      h('div', { class: 'row' }, h('button', { class: 'btn primary', onclick: () => { ui.lesson = null; showView('lessons'); loadLessons(); } }, 'Back to the lessons'),
        h('button', { class: 'btn', onclick: () => { ui.lesson = null; renderLessonPanel(); } }, 'Keep playing with this lab')));
    return;
  }
  const step = lesson.steps[run.step];
  const counter = h('p', { class: 'muted' }, `Step ${run.step + 1} of ${total}`);
  const explain = step.explanation ? h('p', { class: 'explain' }, step.explanation) : null;
  if (step.command === 'expect') {
    const { scope, checks } = parseExpect(step.line);
    const rows = checks.map((c) => {
      const input = h('input', { class: 'narrow', 'aria-label': KEY_LABELS[c.key] || c.key, value: run.answered[c.key] ?? '' });
      const feedback = h('span', { class: 'feedback' });
      const check = () => {
        // "–", "—", "none" and "-" all mean "nothing".
        const v = input.value.trim().replace(/^([–—−]|none)$/i, '-');
        run.answered[c.key] = v;
        if (v === c.value) { feedback.textContent = '✔ right'; feedback.className = 'feedback good'; }
        else { feedback.textContent = v ? `not quite — look again${c.key.match(/lost|dup|rows|keys|redeliv|replay/) ? ' at the cards' : ''}` : ''; feedback.className = 'feedback bad'; }
        maybeAdvance();
      };
      input.addEventListener('change', check);
      input.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); check(); } });
      if (run.answered[c.key] === c.value) { feedback.textContent = '✔ right'; feedback.className = 'feedback good'; }
      return h('div', { class: 'q' }, h('label', {}, `What does the lab show for ${KEY_LABELS[c.key] || c.key}?`, input), feedback);
    });
    const maybeAdvance = async () => {
      if (run.checking || !checks.every((c) => run.answered[c.key] === c.value)) return;
      // The lab itself checks the claim too: the expect line runs on the server.
      const at = run.step;
      run.checking = true;
      const ok = await act([step.line], { silent: true });
      run.checking = false;
      if (run.step !== at || ui.lesson !== run) return;
      if (ok) { run.step += 1; run.answered = {}; run.note = null; focusStep(); render(); }
      else { run.note = `The lab disagrees with “${step.line}”: did an extra action change it? Restart the lesson to replay it exactly.`; renderLessonPanel(); }
    };
    const reveal = h('button', { class: 'btn small', onclick: () => { for (const c of checks) run.answered[c.key] = c.value; maybeAdvance(); } }, 'Show me the answer');
    fill(panel, head, progress, counter, explain, h('p', {}, h('strong', {}, 'Check what you see'), scope.length ? ` (${scope.join(', ')}; the lab now shows it)` : '', ' — “–” for nothing'), ...rows,
      run.note ? h('p', { class: 'feedback bad' }, run.note) : null,
      h('div', { class: 'row' }, reveal));
    const first = rows[0] && rows[0].querySelector('input');
    if (first && document.activeElement === document.body) first.focus();
    return;
  }
  const target = $$('[data-line]').find((b) => b.dataset.line === step.line && !b.disabled);
  if (target) target.classList.add('hl');
  fill(panel, head, progress, counter, explain,
    h('p', {}, h('strong', {}, 'Do this: '), h('code', { class: 'line' }, step.line)),
    h('p', { class: 'muted' }, target ? 'Use the highlighted button in the lab, or run it from here.' : 'Run it from here, or type it in the “Scenario line” box.'),
    run.note ? h('p', { class: 'feedback bad' }, run.note) : null,
    h('div', { class: 'row' }, h('button', { class: 'btn primary', onclick: () => act([step.line]) }, 'Run this step')));
}

// ───────────────────────────── learn ─────────────────────────────

function renderLearn() {
  const C = window.OFFSETLAB_CONTENT;
  const box = $('#learn');
  const runLink = (r) => r ? h('button', { class: 'btn small', onclick: () => (r.lesson ? startLesson(r.lesson) : showView('explorer')) }, r.lesson ? `Run lesson ${r.lesson}` : 'Open the explorer') : null;
  const how = h('section', { class: 'learn-section', id: 'learn-how' }, h('h2', {}, 'How it works under the hood'), C.how.map((p) => h('p', {}, p)));
  const principles = h('section', { class: 'learn-section', id: 'learn-principles' }, h('h2', {}, 'Core principles'),
    h('ul', {}, C.principles.map((p) => h('li', {}, h('strong', {}, p.title + ' '), p.text, ' ', runLink(p.run)))));
  const quiz = h('section', { class: 'learn-section', id: 'learn-quiz' }, h('h2', {}, 'Misconceptions quiz'),
    h('p', { class: 'muted' }, 'Each statement is a belief people hold about Kafka. Pick an answer, then run the proof.'),
    C.quiz.map((q, i) => {
      const answer = h('div', { class: 'answer', hidden: true });
      const choose = (j) => {
        const right = j === q.correct;
        if (ui.workshop) request('POST', '/api/workshop/quiz', { question: i, choice: j });
        answer.hidden = false;
        answer.className = `answer ${right ? 'right' : 'wrong'}`;
        answer.replaceChildren(h('strong', {}, right ? '✔ Right. ' : '✗ Not quite. '), q.explanation, ' ', runLink(q.run));
      };
      return h('div', { class: 'quiz-q' }, h('fieldset', {}, h('legend', {}, `${i + 1}. ${q.question}`),
        q.options.map((o, j) => h('label', {}, h('input', { type: 'radio', name: `quiz-${i}`, onchange: () => choose(j) }), o))), answer);
    }));
  const I = C.interview;
  const interview = h('section', { class: 'learn-section', id: 'learn-interview' }, h('h2', {}, 'Interview prep'),
    h('p', {}, h('strong', {}, I.question)),
    h('div', { class: 'depths' }, I.depths.map((d) => h('article', {}, h('h3', {}, d.title), h('p', {}, d.answer), d.run ? runLink(d.run) : null))),
    h('h3', {}, 'Follow-up questions'), h('ul', {}, I.followups.map((f) => h('li', {}, h('strong', {}, f.q + ' '), f.a, ' ', runLink(f.run)))),
    h('h3', {}, 'Answers that cost a candidate the question'), I.redflags.map((r) => h('div', { class: 'redflag' }, h('strong', {}, `“${r.claim}” `), r.why, ' ', runLink(r.run))));
  box.replaceChildren(how, principles, quiz, interview);
}

// ───────────────────────────── start ─────────────────────────────

async function main() {
  setupTabs();
  setupForms();
  const meta = await request('GET', '/api/meta');
  ui.meta = meta.data;
  $('#strategy-select').replaceChildren(...ui.meta.strategies.map((s) => h('option', { value: s.name, selected: s.name === 'manual-batch' }, s.name)));
  $('#sink-select').replaceChildren(...ui.meta.sinks.map((s) => h('option', { value: s.name, selected: s.name === 'upsert' }, s.name)));
  updateHints();
  $('#free-play').addEventListener('click', () => { $('#reset-lab').click(); showView('lab'); });
  const me = await request('GET', '/api/workshop/me');
  if (me.ok && me.data && me.data.workshop) {
    ui.workshop = me.data;
    if (!ui.workshop.learner) await joinWorkshop();
    showLearnerBadge();
  }
  await refresh();
  listen();
  await loadLessons();
  applyPush();
  renderLearn();
  const view = location.hash.replace('#', '');
  if (['lab', 'lessons', 'explorer', 'learn'].includes(view)) showView(view);
}

main();
