// node.js - the Node page: state and score, GPUs, its defect history as a timeline, and admin actions.
import { h, link } from '../dom.js';
import { apiGet, apiPost } from '../api.js';
import { badge, card, kv, table, emptyState, errorBox, unavailable, replace, loading, adminToken, adminTokenForm } from '../components.js';
import { fmtTime, fmtAgo, shortId } from '../format.js';
import { nameOf, scoreOf, fmtScore, invOf } from './fleet.js';

export function title(params) { return 'Node ' + params[0]; }

/* mount(el, [name]) - node summary, history (newest first, "older" pages by ?before=) and actions; poll() refreshes. */
export async function mount(el, params) {
  const name = params[0];
  const npath = '/nodes/' + encodeURIComponent(name);
  el.appendChild(h('div', { class: 'page-head' },
    h('div', { class: 'crumbs' }, h('a', { href: '#/fleet' }, 'Fleet'), ' / Node'),
    h('h1', null, 'Node ', h('span', { class: 'group-name' }, name)),
    h('p', { class: 'sub' }, h('a', { href: '#/runs?node=' + encodeURIComponent(name) }, `Runs that ran on ${name} →`))));
  const top = h('div', null, loading('Loading node…'));
  const hist = h('div');
  const actions = h('div');
  el.append(top, hist, actions);
  let lastTop = '', lastHist = '', older = [], nextBefore = null, known = false;

  async function loadNode() {
    let n;
    try {
      n = await apiGet(npath);
    } catch (e) {
      lastTop = '';
      known = false;
      replace(top, card('Node', e.missingEndpoint ? unavailable('Node history', `GET /api/v1${npath}`)
        : e.notFound ? emptyState(`No node named "${name}" has been seen.`, 'Nodes appear once a run on them sends its manifest. Pick one from the fleet list.', h('a', { href: '#/fleet' }, 'Fleet'))
          : errorBox(e, 'The node could not be loaded')));
      replace(hist);
      replace(actions);
      return false;
    }
    known = true;
    const k = JSON.stringify(n);
    if (k === lastTop) return true;
    lastTop = k;
    const node = n.node;
    replace(top, h('div', { class: 'grid-2' },
      card('State', kv([
        ['State', badge(node.state || 'ok')],
        ['Since', node.state_since ? fmtTime(node.state_since) : undefined],
        ['Suspect score', fmtScore(scoreOf(node))],
        ['Divergence involvements', String(invOf(node) ?? '—')],
        ['Twin-compared runs', node.runs !== undefined ? String(node.runs) : undefined],
        ['Involvement rate', typeof node.rate === 'number' ? `${(node.rate * 100).toFixed(1)}%` + (typeof node.baseline === 'number' ? ` (fleet ${(node.baseline * 100).toFixed(1)}%)` : '') : undefined],
        ['First seen', node.first_seen ? fmtTime(node.first_seen) : undefined],
        ['Last seen', node.last_seen ? `${fmtTime(node.last_seen)} (${fmtAgo(node.last_seen)})` : '—']])),
      card('GPUs', (node.gpus || []).length ? table([
        { key: 'uuid', label: 'GPU', render: (g) => h('code', null, g.uuid || '—') },
        { key: 'name', label: 'Model', render: (g) => g.name || '—' },
        { key: 'state', label: 'State', render: (g) => badge(g.state || 'ok') },
        { key: 'score', label: 'Score', num: true, render: (g) => fmtScore(scoreOf(g)) },
        { key: 'involvements', label: 'Involvements', num: true, render: (g) => String(invOf(g) ?? '—') },
      ], node.gpus, { compact: true }) : emptyState('No GPU reported for this node.', 'CPU-only runs report none.'))));
    return true;
  }

  async function loadHistory() {
    let d;
    try {
      d = await apiGet(npath + '/history', { limit: 200 });
    } catch (e) {
      lastHist = '';
      replace(hist, card('History', e.missingEndpoint ? unavailable('Node history', `GET /api/v1${npath}/history`) : errorBox(e, 'The history could not be loaded')));
      return;
    }
    const k = JSON.stringify(d);
    if (k === lastHist) return;
    lastHist = k;
    if (!older.length) nextBefore = d.next_cursor ?? null;
    renderHistory(d.items);
  }

  function renderHistory(first) {
    const events = [...first, ...older.filter((o) => !first.some((f) => f.id === o.id))];
    replace(hist, card('History', events.length
      ? [h('ol', { class: 'timeline' }, events.map(eventItem)),
        nextBefore !== null ? h('button', { type: 'button', class: 'btn', 'data-action': 'older', onclick: async (ev) => {
          ev.target.disabled = true;
          try {
            const d = await apiGet(npath + '/history', { limit: 200, cursor: nextBefore });
            older = older.concat(d.items);
            nextBefore = d.next_cursor ?? null;
            renderHistory(first);
          } catch (e) { ev.target.disabled = false; hist.appendChild(errorBox(e, 'Older events could not be loaded')); }
        } }, 'Older events') : null]
      : emptyState('Nothing has happened on this node yet.', 'Divergences it is blamed for, score and state changes and admin actions appear here.')));
  }

  function renderActions() {
    const token = adminTokenForm('for actions');
    const reason = h('input', { name: 'reason', placeholder: 'why (kept in the history)' });
    const doAction = async (action) => {
      const t = adminToken();
      if (!t) { token.msg.textContent = 'Enter the admin token first (the file given to lockstepd --admin-token).'; token.focus(); return; }
      try {
        await apiPost(npath + '/actions', { action, reason: reason.value.trim(), actor: 'dashboard' }, t);
        token.msg.textContent = `${action}: done.`;
        reason.value = '';
        lastTop = lastHist = '';
        await loadNode();
        await loadHistory();
      } catch (e) {
        token.msg.textContent = `${action} failed: ${e.message}${e.hint ? ' — ' + e.hint : ''}`;
      }
    };
    replace(actions, card('Admin actions', h('p', { class: 'sub' },
      'Drain takes the node out of service (and out of Slurm when lockstepd is configured to); repair starts its evidence afresh; a note only adds a line to the history.'),
      token.el,
      h('div', { class: 'actions-form' }, h('label', { class: 'field' }, h('span', null, 'Reason'), reason),
        ['drain', 'repair', 'note'].map((a) => h('button', { type: 'button', class: 'btn', 'data-action': a, onclick: () => doAction(a) },
          a[0].toUpperCase() + a.slice(1))))));
  }

  async function load() {
    const had = known;
    if (await loadNode()) {
      if (!had) renderActions();
      await loadHistory();
    }
  }
  await load();
  return { poll: load };
}

function eventItem(e) {
  const kind = e.kind || 'event';
  const bits = [];
  if (e.group) bits.push(h('span', null, 'group ', link('/twins/' + encodeURIComponent(e.group) +
    (e.step !== undefined && e.step !== null && e.rank !== undefined && e.rank !== null ? `?step=${e.step}&rank=${e.rank}` : ''), e.group)));
  if (e.run_id) bits.push(h('span', null, 'run ', link('/runs/' + encodeURIComponent(e.run_id), h('code', null, shortId(e.run_id)))));
  if (e.step !== undefined && e.step !== null) bits.push(h('span', null, `step ${e.step}` + (e.rank !== undefined && e.rank !== null ? `, rank ${e.rank}` : '')));
  if (e.gpu) bits.push(h('span', null, 'GPU ', h('code', null, e.gpu)));
  if (e.weight !== undefined && e.weight !== null) bits.push(h('span', null, `weight ${e.weight}`));
  if (e.score !== undefined && e.score !== null) bits.push(h('span', null, `score ${fmtScore(e.score)}`));
  if (e.state) bits.push(badge(e.state));
  if (e.actor) bits.push(h('span', null, `by ${e.actor}`));
  return h('li', { class: 'tl-item', 'data-kind': kind, 'data-id': e.id },
    h('div', { class: 'tl-when' }, fmtTime(e.at)),
    h('div', { class: 'tl-body' }, h('span', { class: 'tl-kind' }, kind.replace(/_/g, ' ')),
      e.detail ? h('span', { class: 'tl-detail' }, ' — ' + e.detail) : null,
      bits.length ? h('div', { class: 'tl-meta' }, bits.flatMap((b, i) => (i ? [' · ', b] : [b]))) : null));
}
