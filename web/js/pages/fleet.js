// fleet.js - the Fleet page: nodes and GPUs with suspect score, state, divergence involvements, last seen; a score chart;
// the runs whose consensus check disagreed.
import { h, link } from '../dom.js';
import { apiGet } from '../api.js';
import { badge, card, table, emptyState, errorBox, unavailable, replace, loading } from '../components.js';
import { fmtAgo, fmtRate, fmtTime, shortId } from '../format.js';
import { alpha, color } from '../theme.js';
import { drawPlot } from '../plot.js';

export function title() { return 'Fleet'; }

/* mount(el, params, query, navigate) - nodes sorted by query.sort/dir (default: score, descending). */
export async function mount(el, _params, query, navigate) {
  const sort = { key: query.get('sort') || 'score', dir: query.get('dir') || 'desc' };
  el.appendChild(h('div', { class: 'page-head' }, h('h1', null, 'Fleet'),
    h('p', { class: 'sub' }, 'Nodes and GPUs ranked by how often their runs diverge from their twins beyond the fleet baseline.')));
  const body = h('div', null, loading('Loading nodes…'));
  el.appendChild(body);
  let last = '';
  async function load() {
    let d;
    try {
      d = await apiGet('/nodes');
    } catch (e) {
      last = '';
      replace(body, card('Nodes', e.missingEndpoint ? unavailable('The fleet view', 'GET /api/v1/nodes') : errorBox(e, 'The nodes could not be loaded')));
      return;
    }
    let cons = null; // a server without the consensus check: no card
    try { cons = await apiGet('/consensus'); } catch (e) { cons = null; }
    const key = JSON.stringify([d, cons]);
    if (key === last) return;
    last = key;
    const nodes = d.items.slice();
    if (!nodes.length) {
      replace(body, card('Nodes', emptyState('No node has been seen yet.', 'Nodes appear once runs with manifests arrive; each manifest names its host.')),
        consensusCard(cons));
      return;
    }
    const dir = sort.dir === 'asc' ? 1 : -1;
    const val = (n) => (sort.key === 'score' ? scoreOf(n) : sort.key === 'involvements' ? invOf(n) : n[sort.key]);
    nodes.sort((a, b) => cmp(val(a), val(b)) * dir || cmp(nameOf(a), nameOf(b)));
    const onSort = (k) => navigate('/fleet', { sort: k, dir: sort.key === k && sort.dir === 'desc' ? 'asc' : 'desc' });
    const gpus = nodes.flatMap((n) => (n.gpus || []).map((g) => ({ ...g, node: nameOf(n) })));
    const th = d.thresholds || {};
    const suspects = nodes.filter((n) => n.state === 'suspect').length;
    replace(body,
      card('Suspect scores', h('p', { class: 'sub' }, `${nodes.length} nodes, ${suspects} suspect.` +
        (typeof d.baseline === 'number' ? ' Fleet baseline: ' : ''),
        typeof d.baseline === 'number' ? h('span', { 'data-field': 'fleet-baseline' }, fmtRate(d.baseline)) : null,
        typeof d.baseline === 'number' ? ' of twin-compared runs involved in a divergence.' : '',
        th.suspect !== undefined ? ` A node turns suspect at score ≥ ${th.suspect} with at least ${th.min_evidence} involvements.` : ''),
        scoreChart(nodes, th.suspect)),
      card('Nodes', table([
        { key: 'name', label: 'Node', sortable: true, render: (n) => link('/nodes/' + encodeURIComponent(nameOf(n)), nameOf(n)) },
        { key: 'state', label: 'State', sortable: true, render: (n) => badge(n.state || 'ok') },
        { key: 'score', label: 'Suspect score', num: true, sortable: true, render: (n) => fmtScore(scoreOf(n)) },
        { key: 'involvements', label: 'Divergence involvements', num: true, sortable: true, render: (n) => String(invOf(n) ?? '—') },
        { key: 'runs', label: 'Runs', num: true, sortable: true, render: (n) => String(n.runs) },
        { key: 'rate', label: 'Rate', num: true, sortable: true, render: (n) => fmtRate(n.rate) },
        { key: 'gpus', label: 'GPUs', num: true, render: (n) => String(n.gpus.length || '—') },
        { key: 'last_seen', label: 'Last seen', sortable: true, render: (n) => h('span', { title: fmtTime(n.last_seen) }, fmtAgo(n.last_seen)) },
      ], nodes, { sort, onSort, rowAttrs: (n) => ({ 'data-node': nameOf(n) }) })),
      gpus.length ? card('GPUs', table([
        { key: 'node', label: 'Node', render: (g) => link('/nodes/' + encodeURIComponent(g.node), g.node) },
        { key: 'uuid', label: 'GPU', render: (g) => h('code', null, g.uuid || g.gpu_uuid || g.index || '—') },
        { key: 'name', label: 'Model', render: (g) => g.name || g.gpu_name || '—' },
        { key: 'state', label: 'State', render: (g) => badge(g.state || 'ok') },
        { key: 'score', label: 'Suspect score', num: true, render: (g) => fmtScore(scoreOf(g)) },
        { key: 'involvements', label: 'Involvements', num: true, render: (g) => String(invOf(g) ?? '—') },
      ], gpus.sort((a, b) => cmp(scoreOf(b), scoreOf(a))), { compact: true })) : null,
      consensusCard(cons));
  }
  await load();
  return { poll: load };
}

/* consensusCard(c) - the runs whose consensus check disagreed (GET /api/v1/consensus), newest first; null when the
 * server has no such check. */
function consensusCard(c) {
  if (!c || !Array.isArray(c.items)) return null;
  const head = 'Consensus disagreements';
  if (!c.items.length) {
    return card(head, emptyState('No run\'s consensus has disagreed.',
      'Every run checks copies that must be bit-identical across its ranks (collective outputs, replicas); a rank whose copy differs is listed here.'));
  }
  const ranks = (a) => (a || []).join(', ');
  return card(head, h('p', { class: 'sub' }, 'Runs whose ranks held different copies of what must be the same: the first place, the odd ranks by majority, and the attested node of a single odd rank.'),
    table([
      { key: 'run', label: 'Run', render: (x) => link('/runs/' + encodeURIComponent(x.run_id), shortId(x.run_id)) },
      { key: 'job', label: 'Job', render: (x) => x.job_id },
      { key: 'user', label: 'User', render: (x) => x.user || '—' },
      { key: 'step', label: 'Step', num: true, render: (x) => String(x.step) },
      { key: 'record', label: 'Record', render: (x) => (x.name ? `${x.name} #${x.occurrence}` : 'records awaited') },
      { key: 'odd', label: 'Odd ranks', render: (x) => `${ranks(x.odd_ranks)}${x.clear ? '' : ' (one of these)'}` },
      { key: 'node', label: 'Node', render: (x) => (x.node ? link('/nodes/' + encodeURIComponent(x.node), x.node) : '—') },
      { key: 'gpu', label: 'GPU', render: (x) => x.gpu || '—' },
      { key: 'at', label: 'Detected', render: (x) => h('span', { title: fmtTime(x.detected_at) }, fmtAgo(x.detected_at)) },
    ], c.items, { compact: true, rowAttrs: (x) => ({ 'data-cons-run': x.run_id }) }));
}

function scoreChart(nodes, threshold) {
  const wrap = h('div', { class: 'chart', 'data-chart': 'scores' });
  if (typeof window.uPlot !== 'function') return wrap;
  const bad = color('divergence'), warn = color('warn');
  const top = nodes.slice().sort((a, b) => cmp(scoreOf(b), scoreOf(a))).slice(0, 40);
  const xs = top.map((_, i) => i);
  const ys = top.map((n) => scoreOf(n) ?? 0);
  const bars = window.uPlot.paths && window.uPlot.paths.bars ? window.uPlot.paths.bars({ size: [0.7, 40] }) : undefined;
  const opts = {
    width: 900, height: 220,
    scales: { x: { time: false, range: [-0.5, Math.max(0.5, top.length - 0.5)] }, y: { range: [0, Math.max(1, ...ys)] } },
    legend: { show: false },
    axes: [{ values: (u, vals) => vals.map((v) => (Number.isInteger(v) && top[v] ? nameOf(top[v]) : '')), splits: () => xs, gap: 4 },
      { label: 'suspect score', size: 60 }],
    series: [{}, { label: 'score', paths: bars, fill: alpha(bad, 0.6), stroke: bad, points: { show: false } }],
    hooks: { draw: [(u) => {
      if (typeof threshold !== 'number') return;
      const y = u.valToPos(threshold, 'y', true), ctx = u.ctx;
      ctx.save();
      ctx.strokeStyle = warn;
      ctx.setLineDash([5, 4]);
      ctx.lineWidth = devicePixelRatio;
      ctx.beginPath();
      ctx.moveTo(u.bbox.left, y);
      ctx.lineTo(u.bbox.left + u.bbox.width, y);
      ctx.stroke();
      ctx.fillStyle = warn;
      ctx.font = `${11 * devicePixelRatio}px system-ui, sans-serif`;
      ctx.textAlign = 'left';
      ctx.textBaseline = 'alphabetic';
      ctx.fillText(`suspect threshold ${threshold}`, u.bbox.left + 6 * devicePixelRatio, y - 4 * devicePixelRatio);
      ctx.restore();
    }] },
  };
  drawPlot(wrap, opts, [xs, ys]);
  return wrap;
}

export function nameOf(n) { return n.name; }
export function scoreOf(n) { return typeof n.score === 'number' ? n.score : null; }
export function invOf(n) { return n.involvements ?? null; }
export function fmtScore(s) { return s === null || s === undefined ? '—' : Number(s).toFixed(3); }
function cmp(a, b) {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  return typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b));
}
