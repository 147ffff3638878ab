// alerts.js - the Alerts page: first divergences and nodes turning suspect, their delivery (firing and resolution), how they ended, and acknowledging them (admin).
import { h, link } from '../dom.js';
import { apiGet, apiPost } from '../api.js';
import { badge, card, table, pager, emptyState, errorBox, unavailable, replace, loading, adminToken, adminTokenForm } from '../components.js';
import { fmtTime } from '../format.js';

const LIMIT = 100;

export function title() { return 'Alerts'; }

/* mount(el, params, query, navigate) - list alerts (query: kind, state, offset); Acknowledge posts with the admin token. */
export async function mount(el, _params, query, navigate) {
  const kind = query.get('kind') || '';
  const state = query.get('state') || '';
  const offset = Math.max(0, parseInt(query.get('offset') || '0', 10) || 0);
  el.appendChild(h('div', { class: 'page-head' }, h('h1', null, 'Alerts'),
    h('p', { class: 'sub' }, 'One alert per twin group\'s first divergence (a new one when a re-evaluation changes it), one per replay verdict of lockstep narrow, one per run ' +
      'whose copies disagree inside it (consensus), and one per node turning suspect. An alert ends when it is acknowledged, when a node it blames is repaired, or when a newer one supersedes it.')));
  const token = adminTokenForm('to acknowledge');
  const href = (q) => '#/alerts' + (new URLSearchParams(Object.entries({ kind, state, ...q }).filter(([, v]) => v)).toString().replace(/^(.)/, '?$1'));
  const kinds = h('div', { class: 'seg' }, [['', 'All'], ['divergence', 'Divergences'], ['suspect', 'Suspect nodes'], ['verdict', 'Replay verdicts'], ['consensus', 'Consensus']].map(([k, label]) =>
    h('a', { class: 'seg-item' + (k === kind ? ' active' : ''), href: href({ kind: k }) }, label)));
  const states = h('div', { class: 'seg', 'data-filter': 'state' }, [['', 'Any state'], ['open', 'Open'], ['acknowledged', 'Acknowledged'], ['resolved', 'Resolved']].map(([k, label]) =>
    h('a', { class: 'seg-item' + (k === state ? ' active' : ''), href: href({ state: k }) }, label)));
  el.appendChild(card(null, h('div', { class: 'alerts-bar' }, h('div', { class: 'alerts-segs' }, kinds, states), token.el)));
  const body = h('div', null, loading('Loading alerts…'));
  el.appendChild(body);
  let last = '';
  async function load(force) {
    let d;
    try {
      d = await apiGet('/alerts', { kind, state, limit: LIMIT, offset });
    } catch (e) {
      last = '';
      replace(body, card('Alerts', e.missingEndpoint ? unavailable('Alerts', 'GET /api/v1/alerts') : errorBox(e, 'The alerts could not be loaded')));
      return;
    }
    const key = JSON.stringify(d);
    if (key === last && !force) return;
    last = key;
    const alerts = d.items;
    replace(body, card('Alerts', alerts.length ? [table([
      { key: 'created_at', label: 'When (UTC)', class: 'when', render: (a) => fmtTime(a.created_at) },
      { key: 'kind', label: 'Kind', render: (a) => [String(a.kind || 'alert'), a.classification ? h('div', { class: 'rec-kind' }, a.classification) : null] },
      { key: 'subject', label: 'About', render: subject },
      { key: 'summary', label: 'What happened', class: 'wrap', render: (a) => h('span', { title: a.text || '' }, a.summary || a.text || '—') },
      { key: 'delivery', label: 'Delivery', render: deliveryText },
      { key: 'state', label: 'State', render: stateCell },
      { key: 'ack', label: '', render: ackCell },
    ], alerts, { rowAttrs: (a) => ({ 'data-alert': a.id }) }),
    pager({ offset, limit: LIMIT, total: d.total ?? undefined, count: alerts.length }, (o) => navigate('/alerts', { kind, state, offset: o || null }))]
      : emptyState(kind || state ? `No ${[state, kind].filter(Boolean).join(' ')} alerts.` : 'No alerts.', 'Alerts appear when a twin group first diverges, a node turns suspect or a replay gives its verdict; sinks are configured in lockstepd.conf.')));
  }
  /* ackCell - Acknowledge on an open alert only: an acknowledged one says by whom, a resolved one has ended already. */
  function ackCell(a) {
    if (a.state === 'open') return h('button', { type: 'button', class: 'btn', 'data-action': 'ack', onclick: (ev) => ack(a, ev.target) }, 'Acknowledge');
    return a.state === 'acknowledged' && a.acked_by ? h('span', { class: 'rec-kind' }, `by ${a.acked_by}`) : '';
  }
  async function ack(a, btn) {
    const t = adminToken();
    if (!t) { token.msg.textContent = 'Enter the admin token first (the file given to lockstepd --admin-token).'; token.focus(); return; }
    btn.disabled = true;
    try {
      await apiPost('/alerts/' + encodeURIComponent(a.id) + '/ack', { actor: 'dashboard' }, t);
      token.msg.textContent = 'Acknowledged.';
      await load(true);
    } catch (e) {
      btn.disabled = false;
      token.msg.textContent = `Not acknowledged: ${e.message}${e.hint ? ' — ' + e.hint : e.status === 401 || e.status === 403 ? ' — check the admin token.' : ''}`;
    }
  }
  await load();
  return { poll: () => load() };
}

/* stateCell - open, acknowledged or resolved, and how it ended (as lockstepd recorded it). */
function stateCell(a) {
  const why = a.resolved_reason === 'acknowledged' ? null
    : a.resolved_reason === 'repaired' ? `node ${a.resolved_by} repaired`
      : a.resolved_reason === 'superseded' ? ['superseded by ', link('/alerts', `alert ${a.superseded_by}`)] : null;
  return h('div', null, badge(a.state), why ? h('div', { class: 'rec-kind', 'data-field': 'resolution' }, why) : null,
    a.resolved_at ? h('div', { class: 'rec-kind' }, `ended ${fmtTime(a.resolved_at)}`) : null);
}

function deliveryText(a) {
  const ds = a.deliveries;
  if (!ds.length) return '—';
  return h('div', null, ds.map((x) => h('div', { class: 'rec-kind', title: x.last_error || '', 'data-delivery': `${x.sink}:${x.phase}` },
    `${x.sink}${x.phase === 'resolved' ? ' (resolution)' : ''}: ${x.state}${x.attempts > 1 ? ` (${x.attempts} tries)` : ''}`)));
}

function subject(a) {
  const parts = [];
  if (a.group) parts.push(link('/twins/' + encodeURIComponent(a.group), a.group));
  const run = a.details && a.details.run_id;
  if (!a.group && run) parts.push(link('/runs/' + encodeURIComponent(run), 'run ' + String(run).slice(0, 8)));
  if (a.node) parts.push(link('/nodes/' + encodeURIComponent(a.node), a.node));
  return parts.length ? parts.flatMap((p, i) => (i ? [', ', p] : [p])) : '—';
}
