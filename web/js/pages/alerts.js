// alerts.js - the Alerts page: recent alerts (first divergences, nodes turning suspect) and acknowledging them (admin).
import { h, link } from '../dom.js';
import { apiGet, apiPost } from '../api.js';
import { badge, card, table, emptyState, errorBox, unavailable, replace, loading } from '../components.js';
import { fmtTime } from '../format.js';
import { listOf } from './shape.js';

const TOKEN_KEY = 'lockstep.adminToken';

export function title() { return 'Alerts'; }

/* mount(el) - list alerts; an Acknowledge button per open alert posts with the admin token kept in this browser. */
export async function mount(el) {
  el.appendChild(h('div', { class: 'page-head' }, h('h1', null, 'Alerts'),
    h('p', { class: 'sub' }, 'One alert per twin group\'s first divergence and per node turning suspect.')));
  const tokenInput = h('input', { type: 'password', name: 'token', placeholder: 'admin token', autocomplete: 'off',
    value: sessionStorage.getItem(TOKEN_KEY) || '' });
  const msg = h('div', { class: 'form-msg', role: 'status' });
  el.appendChild(card(null, h('form', { class: 'token-form', onsubmit: (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, tokenInput.value.trim());
    msg.textContent = tokenInput.value.trim() ? 'Admin token kept for this browser tab.' : 'Admin token cleared.';
  } }, h('label', { class: 'field' }, h('span', null, 'Admin token (to acknowledge)'), tokenInput),
  h('button', { type: 'submit', class: 'btn' }, 'Use token'), msg)));
  const body = h('div', null, loading('Loading alerts…'));
  el.appendChild(body);
  let last = '';
  async function load(force) {
    let d;
    try {
      d = await apiGet('/alerts');
    } catch (e) {
      last = '';
      replace(body, card('Alerts', e.missingEndpoint ? unavailable('Alerts', 'GET /api/v1/alerts') : errorBox(e, 'The alerts could not be loaded')));
      return;
    }
    const key = JSON.stringify(d);
    if (key === last && !force) return;
    last = key;
    const alerts = listOf(d, 'alerts');
    replace(body, card('Alerts', alerts.length ? table([
      { key: 'created_at', label: 'When (UTC)', render: (a) => fmtTime(a.created_at || a.at) },
      { key: 'kind', label: 'Kind', render: (a) => String(a.kind || a.type || 'alert').replace(/_/g, ' ') },
      { key: 'subject', label: 'About', render: subject },
      { key: 'text', label: 'Message', class: 'wrap', render: (a) => a.summary || a.text || a.message || '—' },
      { key: 'state', label: 'State', render: (a) => badge(isAcked(a) ? 'acknowledged' : (a.state || 'open')) },
      { key: 'ack', label: '', render: (a) => (isAcked(a) ? (a.acked_by ? `by ${a.acked_by}` : '') : h('button', {
        type: 'button', class: 'btn', 'data-action': 'ack', onclick: (ev) => ack(a, ev.target) }, 'Acknowledge')) },
    ], alerts, { rowAttrs: (a) => ({ 'data-alert': a.id }) }) : emptyState('No alerts.', 'Alerts appear when a twin group first diverges or a node turns suspect.')));
  }
  async function ack(a, btn) {
    const token = sessionStorage.getItem(TOKEN_KEY) || '';
    if (!token) { msg.textContent = 'Enter the admin token above first (lockstepd --admin-token FILE).'; tokenInput.focus(); return; }
    btn.disabled = true;
    try {
      await apiPost('/alerts/' + encodeURIComponent(a.id) + '/ack', {}, token);
      msg.textContent = 'Acknowledged.';
      await load(true);
    } catch (e) {
      btn.disabled = false;
      msg.textContent = `Not acknowledged: ${e.message}${e.hint ? ' — ' + e.hint : e.status === 401 || e.status === 403 ? ' — check the admin token.' : ''}`;
    }
  }
  await load();
  return { poll: () => load() };
}

function isAcked(a) { return !!(a.acknowledged || a.acked || a.acked_at || a.state === 'acknowledged'); }

function subject(a) {
  const parts = [];
  if (a.group || a.twin_group) parts.push(link('/twins/' + encodeURIComponent(a.group || a.twin_group), a.group || a.twin_group));
  if (a.node) parts.push(link('/nodes/' + encodeURIComponent(a.node), a.node));
  return parts.length ? parts.flatMap((p, i) => (i ? [', ', p] : [p])) : '—';
}
