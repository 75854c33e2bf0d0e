// `serve --bootstrap-server`: every action runs on a real cluster, and the figures are its.
import { $ } from '../dom.js';
import { ui } from '../store.js';

export function renderCluster() {
  const c = ui.state.cluster;
  const banner = $('#cluster-banner');
  banner.hidden = !c;
  if (!c) return;
  banner.classList.toggle('bad', Boolean(c.error));
  banner.textContent = c.error
    ? `On the cluster at ${c.bootstrap}: its figures could not be read (${c.error}); the cards show the model's.`
    : `On the cluster at ${c.bootstrap}: every action runs there first — real consumers, a crash is kill -9 — and the cards show the cluster's figures. Topics and groups are prefixed ${c.prefix} there.`;
}
