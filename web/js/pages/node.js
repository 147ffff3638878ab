// node.js - the Node page: its state and score, GPUs, and its defect history as a timeline.
import { h, link } from '../dom.js';
import { apiGet } from '../api.js';
import { badge, card, kv, table, emptyState, errorBox, unavailable, replace, loading } from '../components.js';
import { fmtTime, fmtAgo, shortId } from '../format.js';
import { listOf } from './shape.js';
import { nameOf, scoreOf, fmtScore } from './fleet.js';

export function title(params) { return 'Node ' + params[0]; }

/* mount(el, [name]) - node summary and history; poll() refreshes both. */
export async function mount(el, params) {
  const name = params[0];
  const npath = '/nodes/' + encodeURIComponent(name);
  el.appendChild(h('div', { class: 'page-head' },
    h('div', { class: 'crumbs' }, h('a', { href: '#/fleet' }, 'Fleet'), ' / Node'),
    h('h1', null, 'Node ', h('span', { class: 'group-name' }, name))));
  const top = h('div', null, loading('Loading node…'));
  const hist = h('div');
  el.append(top, hist);
  let lastTop = '', lastHist = '';
  async function load() {
    let n;
    try {
      n = await apiGet(npath);
    } catch (e) {
      lastTop = '';
      replace(top, card('Node', e.missingEndpoint ? unavailable('Node history', `GET /api/v1${npath}`)
        : e.notFound ? emptyState(`No node named "${name}".`, e.hint || 'Pick a node from the fleet list.', h('a', { href: '#/fleet' }, 'Fleet'))
          : errorBox(e, 'The node could not be loaded')));
      replace(hist);
      return;
    }
    const k1 = JSON.stringify(n);
    if (k1 !== lastTop) {
      lastTop = k1;
      const node = n.node || n;
      replace(top, h('div', { class: 'grid-2' },
        card('State', kv([
          ['Node', nameOf(node)], ['State', badge(node.state || 'ok')], ['Suspect score', fmtScore(scoreOf(node))],
          ['Divergence involvements', String(node.involvements ?? node.divergences ?? '—')],
          ['Runs', node.runs !== undefined ? String(node.runs) : undefined],
          ['Last seen', node.last_seen ? `${fmtTime(node.last_seen)} (${fmtAgo(node.last_seen)})` : '—']])),
        card('GPUs', (node.gpus || []).length ? table([
          { key: 'uuid', label: 'GPU', render: (g) => h('code', null, g.uuid || g.gpu_uuid || '—') },
          { key: 'name', label: 'Model', render: (g) => g.name || g.gpu_name || '—' },
          { key: 'state', label: 'State', render: (g) => badge(g.state || 'ok') },
          { key: 'score', label: 'Score', num: true, render: (g) => fmtScore(scoreOf(g)) },
        ], node.gpus, { compact: true }) : emptyState('No GPU reported for this node.', 'CPU-only runs report none.'))));
    }
    let d;
    try {
      d = await apiGet(npath + '/history');
    } catch (e) {
      lastHist = '';
      replace(hist, card('History', e.missingEndpoint ? unavailable('Node history', `GET /api/v1${npath}/history`) : errorBox(e, 'The history could not be loaded')));
      return;
    }
    const k2 = JSON.stringify(d);
    if (k2 === lastHist) return;
    lastHist = k2;
    const events = listOf(d, 'events').slice().sort((a, b) => String(b.at || b.time || b.created_at).localeCompare(String(a.at || a.time || a.created_at)));
    replace(hist, card('History', events.length ? h('ol', { class: 'timeline' }, events.map(eventItem))
      : emptyState('Nothing has happened on this node yet.', 'Divergences it is involved in, score changes and admin actions appear here.')));
  }
  await load();
  return { poll: load };
}

function eventItem(e) {
  const kind = e.kind || e.type || 'event';
  const when = e.at || e.time || e.created_at;
  const bits = [];
  if (e.group || e.twin_group) bits.push(h('span', null, 'group ', link('/twins/' + encodeURIComponent(e.group || e.twin_group), e.group || e.twin_group)));
  if (e.run_id) bits.push(h('span', null, 'run ', link('/runs/' + encodeURIComponent(e.run_id), h('code', null, shortId(e.run_id)))));
  if (e.step !== undefined && e.step !== null) bits.push(h('span', null, `step ${e.step}`));
  if (e.gpu || e.gpu_uuid) bits.push(h('span', null, 'GPU ', h('code', null, e.gpu || e.gpu_uuid)));
  if (e.score !== undefined && e.score !== null) bits.push(h('span', null, `score ${fmtScore(e.score)}`));
  if (e.actor || e.by) bits.push(h('span', null, `by ${e.actor || e.by}`));
  return h('li', { class: `tl-item tl-${String(kind).replace(/[^a-z_-]/gi, '')}`, 'data-kind': kind },
    h('div', { class: 'tl-when', title: fmtTime(when) }, fmtTime(when)),
    h('div', { class: 'tl-body' }, h('span', { class: 'tl-kind' }, kind.replace(/_/g, ' ')),
      e.detail || e.reason || e.text ? h('span', { class: 'tl-detail' }, ' — ' + (e.detail || e.reason || e.text)) : null,
      bits.length ? h('div', { class: 'tl-meta' }, bits.flatMap((b, i) => (i ? [' · ', b] : [b]))) : null));
}
