// Small DOM helpers: every element is built with `h`, whose children are nodes or text — never
// parsed as HTML, so a name or a record a client wrote is always shown as text.

export const $ = (sel, el = document) => el.querySelector(sel);
export const $$ = (sel, el = document) => Array.from(el.querySelectorAll(sel));

/** Builds an element; `on…` attributes are listeners, `dataset` sets data-*, children are appended. */
export function h(tag, attrs = {}, ...children) {
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

/** Replaces an element's children, skipping empty ones. */
export function fill(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

/**
 * Runs `build` only when `key` differs from the key `el` was last built with: a panel whose
 * inputs did not change is left alone (its focus, scroll and selection too).
 */
export function keyed(el, key, build) {
  if (!el || el.__builtFor === key) return false;
  el.__builtFor = key;
  build();
  return true;
}

/** Sets a text only when it changed (a live region announces every write). */
export function setText(el, text) {
  if (el && el.textContent !== text) el.textContent = text;
}

/** Replays the flash animation on the element with `id`. */
export function flash(id) {
  const el = document.getElementById(id);
  if (!el) return;
  el.classList.remove('flash');
  void el.offsetWidth;
  el.classList.add('flash');
}

/**
 * A value as a scenario line carries it: bare when it is a plain word, else a quoted string
 * (JSON's escapes, which the line reader decodes), so what was typed reads back as itself.
 */
export const q = (v) => { const s = String(v); return /^[A-Za-z0-9._:\/@+,-]+$/.test(s) ? s : JSON.stringify(s); };
