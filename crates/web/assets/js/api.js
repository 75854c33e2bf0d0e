// Talking to the lab: JSON over fetch. In the instructor's read-only view of a learner's lab
// (`/?learner=N`, the instructor's token in this tab's sessionStorage), every request carries
// the token and the learner's number, and nothing that changes the lab is sent.

const params = new URLSearchParams(location.search);
const token = sessionStorage.getItem('offsetlab.instructor-token');
/** `{ learner, token }` when the instructor views a learner's lab, else null. */
export const readOnly = params.get('learner') && token ? { learner: params.get('learner'), token } : null;

let rejoining = false;

export async function request(method, path, body, raw = false) {
  const opts = { method, headers: {} };
  if (readOnly) {
    opts.headers.Authorization = `Bearer ${readOnly.token}`;
    opts.headers['X-Offsetlab-Learner'] = readOnly.learner;
  }
  if (body !== undefined) {
    if (raw) { opts.body = body; opts.headers['Content-Type'] = 'text/plain'; }
    else { opts.body = JSON.stringify(body); opts.headers['Content-Type'] = 'application/json'; }
  }
  let res;
  try {
    res = await fetch(path, opts);
  } catch (e) {
    return { ok: false, status: 0, data: { error: `the lab did not answer (${e.message})` } };
  }
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  // In a workshop, a lab this browser no longer has (a new server, an expired cookie, a seat
  // the instructor freed): join again.
  if (res.status === 401 && data && data.join && !readOnly && !rejoining) {
    rejoining = true;
    location.reload();
  }
  return { ok: res.ok, status: res.status, data };
}
