// node.js - the Node page: state and score, GPUs, its score and involvements over time, its defect history as a
// timeline, and admin actions.
import { h, link } from '../dom.js';
import { apiGet, apiPost } from '../api.js';
import { badge, card, kv, table, emptyState, errorBox, unavailable, replace, loading, adminToken, adminTokenForm } from '../components.js';
import { fmtTime, fmtAgo, fmtRate, shortId, toDate } from '../format.js';
import { scoreOf, fmtScore, invOf } from './fleet.js';
import { color, palette } from '../theme.js';
import { drawPlot } from '../plot.js';

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
  const over = h('div', { 'data-section': 'node-charts' });
  const hist = h('div');
  const actions = h('div');
  el.append(top, over, hist, actions);
  let lastTop = '', lastHist = '', lastOver = '', older = [], nextBefore = null, known = false;

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
        ['Involvement rate', typeof node.rate === 'number' ? h('span', { 'data-field': 'rate' }, fmtRate(node.rate)) : undefined],
        ['Fleet baseline', typeof node.baseline === 'number' ? h('span', { title: "the fleet's involvements over its twin-compared runs (docs/suspects.md)" },
          h('span', { 'data-field': 'fleet-baseline' }, fmtRate(node.baseline))) : undefined],
        ['The rest of the fleet', typeof node.reference_rate === 'number' ? h('span', { 'data-field': 'reference-rate',
          title: 'the fleet without this node: what its score compares its rate against' }, fmtRate(node.reference_rate)) : undefined],
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

  async function loadOver() {
    let d;
    try {
      d = await apiGet(npath + '/timeline');
    } catch (e) {
      lastOver = '';
      replace(over, e.missingEndpoint ? null : card('Score and involvements over time', errorBox(e, 'The charts could not be loaded')));
      return;
    }
    const k = JSON.stringify(d);
    if (k === lastOver) return;
    lastOver = k;
    replace(over, nodeCharts(d));
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
      await Promise.all([loadOver(), loadHistory()]);
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

/* nodeCharts(d) - the node's suspect score over time against the suspect threshold, and its involvements and runs over
 * time (GET /nodes/{name}/timeline: each score or state change, each repair, and now). */
function nodeCharts(d) {
  const pts = (d.points || []).filter((p) => toDate(p.at));
  if (pts.length < 2) {
    return card('Score and involvements over time', emptyState('Nothing to draw yet.',
      'The score and the involvements are drawn once a twin group this node ran in has been evaluated.'));
  }
  const xs = pts.map((p) => toDate(p.at).getTime() / 1000);
  const th = d.thresholds || {};
  const [c0, c1] = palette();
  const warn = color('warn');
  const thresholdLine = (value, label) => ({ hooks: { draw: [(u) => {
    if (typeof value !== 'number') return;
    const y = u.valToPos(value, 'y', true), ctx = u.ctx;
    if (!Number.isFinite(y)) return;
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
    ctx.fillText(label, u.bbox.left + 6 * devicePixelRatio, y - 4 * devicePixelRatio);
    ctx.restore();
  }] } });
  const num = (v) => (typeof v === 'number' ? v : null);
  // a value holds until the next change: step paths where the library has them
  const stepped = window.uPlot && window.uPlot.paths && window.uPlot.paths.stepped ? window.uPlot.paths.stepped({ align: 1 }) : undefined;
  const score = h('div', { class: 'chart', 'data-chart': 'node score' });
  drawPlot(score, {
    title: 'Suspect score', width: 560, height: 220, plugins: [thresholdLine(th.suspect, `suspect at ${th.suspect}`)],
    scales: { x: { time: true }, y: { range: [0, 1] } },
    axes: [{}, { size: 50 }],
    series: [{ label: 'time' }, { label: 'score', stroke: c0, width: 1.5, paths: stepped, spanGaps: true,
      value: (u, v) => (v === null || v === undefined ? '—' : Number(v).toFixed(3)) }],
  }, [xs, pts.map((p) => num(p.score))]);
  const inv = h('div', { class: 'chart', 'data-chart': 'node involvements' });
  drawPlot(inv, {
    title: 'Divergence involvements and runs', width: 560, height: 220,
    plugins: [thresholdLine(th.min_evidence, `suspect needs ${th.min_evidence} involvements`)],
    scales: { x: { time: true }, y: { range: (u, lo, hi) => [0, Math.max(1, hi || 0) * 1.1] } },
    axes: [{}, { size: 50 }],
    series: [{ label: 'time' },
      { label: 'involvements', stroke: c1, width: 1.5, paths: stepped, spanGaps: true, value: (u, v) => (v === null || v === undefined ? '—' : String(v)) },
      { label: 'runs', stroke: color('faint'), width: 1, dash: [4, 3], paths: stepped, spanGaps: true, value: (u, v) => (v === null || v === undefined ? '—' : String(v)) }],
  }, [xs, pts.map((p) => num(p.involvements)), pts.map((p) => num(p.runs))]);
  return card('Score and involvements over time', h('p', { class: 'sub' },
    'Each change of the score or the involvements, each repair (the evidence starts afresh) and now' +
    (d.truncated ? '; only the newest changes are drawn.' : '.')), h('div', { class: 'charts' }, score, inv));
}
