// The page's one notice: what was refused (and that nothing changed), or what just happened.
// It sits at the bottom of the viewport, so it is seen wherever the learner pressed.
import { $, h } from './dom.js';

let timer = null;

export function showAlert(text, ok = false) {
  const a = $('#alert');
  a.replaceChildren(h('span', { id: 'alert-text' }, text),
    h('button', { type: 'button', class: 'alert-close', 'aria-label': 'Close the notice', onclick: hideAlert }, '×'));
  a.classList.toggle('ok', ok);
  a.hidden = false;
  clearTimeout(timer);
  // A good notice leaves on its own after a while; a refusal stays until it is read and closed.
  if (ok) timer = setTimeout(() => { a.hidden = true; }, 8000);
}

export function hideAlert() {
  clearTimeout(timer);
  $('#alert').hidden = true;
}
