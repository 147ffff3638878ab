// groups.js - the front page, read at a glance: a chart strip (incidents per day by class, open suspects), then every
// twin group, newest first, with its status, the hardware suspected and the odd run, its first divergence and its
// cause, and the fleet's classification in a dozen words (GET /api/v1/twins); incidents first, the other kinds of
// group behind a filter; filters in the URL, live updates; the fleet's suspects beside it.
import { h, link } from '../dom.js';
import { apiGet } from '../api.js';
import { badge, card, table, emptyState, errorBox, unavailable, replace, loading } from '../components.js';
import { fmtAgo, fmtTime, fmtCount, fmtRate, shortId } from '../format.js';
import { verdictBadge } from './replay.js';
import { kindTag, suspectedItems } from './glance.js';
import { chartStrip } from './strip.js';

const LIMIT = 50;
const FILTERS = ['kind', 'status', 'user', 'node', 'since'];
// The kind filter: its URL value, its label, and the ?kind= it asks lockstepd for (group_kind_of,
// server/rules/group_rule.h). Incident twins unless the URL says otherwise.
const KINDS = [
  ['', 'Incident twins', 'twins'],
  ['replay', 'Replay groups', 'replay'],
  ['noise', 'Noise replicas', 'noise'],
  ['experiment', 'Experiments', 'experiment'],
  ['others', 'All but incidents', 'replay,noise,experiment'],
  ['all', 'All kinds', ''],
];

export function title() { return 'Twin groups'; }

/* mount(el, params, query, navigate) - the twin-group index for the filters in query (status, user, node,
 * since) from position `cursor`; poll() refreshes it and the fleet summary. */
export async function mount(el, _params, query, navigate) {
  const f = {};
  for (const k of FILTERS) f[k] = query.get(k) || '';
  const cursor = query.get('cursor') || '';
  const go = (changes) => navigate('/twins', { ...f, cursor, ...changes });

  const kind = KINDS.find((k) => k[0] === f.kind) || KINDS[0];
  // The statuses ?status= takes come with the list (lockstepd's "statuses"); until then, the one in the URL.
  const statusSelect = h('select', { name: 'status' }, statusOptions(f.status ? [f.status] : [], f.status));
  const form = h('form', { class: 'filters', 'aria-label': 'Filter twin groups', onsubmit: (e) => {
    e.preventDefault();
    const fd = new FormData(form);
    const ch = { cursor: '' };
    for (const k of FILTERS) ch[k] = String(fd.get(k) || '').trim();
    go(ch);
  } },
    field('Kind', h('select', { name: 'kind' }, KINDS.map(([v, label]) =>
      h('option', { value: v, selected: v === kind[0] }, label)))),
    field('Status', statusSelect),
    field('User', h('input', { name: 'user', value: f.user, placeholder: 'alice' })),
    field('Node', h('input', { name: 'node', value: f.node, placeholder: 'n3' })),
    field('Since', h('input', { name: 'since', type: 'date', value: f.since })),
    h('div', { class: 'filter-actions' },
      h('button', { type: 'submit', class: 'btn btn-primary' }, 'Apply'),
      FILTERS.some((k) => f[k]) ? h('button', { type: 'button', class: 'btn', 'data-action': 'clear',
        onclick: () => go({ kind: '', status: '', user: '', node: '', since: '', cursor: '' }) }, 'Clear') : null));

  const body = h('div', { 'data-section': 'groups' }, loading('Loading twin groups…'));
  const fleet = h('div', { 'data-section': 'fleet-summary' }, loading('Loading the fleet…'));
  const strip = h('div', { 'data-section': 'chart-strip' });
  el.appendChild(h('div', { class: 'page-head' }, h('h1', null, 'Twin groups'),
    h('p', { class: 'sub' }, 'Runs that must be bit-identical, newest first: which diverged, where, whose fault, and why.')));
  el.appendChild(strip);
  el.appendChild(h('div', { class: 'front' },
    h('section', { class: 'card front-main' }, form, body),
    h('aside', { class: 'front-side' }, fleet)));

  let last = '', lastFleet = '';
  async function loadGroups() {
    let d;
    try {
      d = await apiGet('/twins', { ...f, kind: kind[2], limit: LIMIT, cursor });
    } catch (e) {
      last = '';
      replace(body, e.missingEndpoint ? unavailable('The twin-group list', 'GET /api/v1/twins')
        : errorBox(e, 'The twin groups could not be loaded'));
      return;
    }
    const key = JSON.stringify(d);
    if (key === last) return;
    last = key;
    if (d.statuses && statusSelect.options.length !== d.statuses.length + 1) replace(statusSelect, ...statusOptions(d.statuses, f.status));
    const groups = d.items;
    if (!groups.length) {
      const filtered = FILTERS.some((k) => f[k]);
      replace(body, kindNote(kind, go), cursor
        ? emptyState('No more twin groups match.', 'The list ends here.', h('a', { href: '#/twins' }, 'First page'))
        : filtered ? emptyState('No twin group matches these filters.', 'Loosen or clear the filters above.')
          : emptyState('No twin groups yet.', 'Runs join a twin group with srun --lockstep=det --lockstep-twin=NAME ' +
            '(or lockstep twin -n 2 -- sbatch …); the group appears here when its first run registers.'));
      return;
    }
    const cols = [
      { key: 'group', label: 'Twin group', render: (g) => [link('/twins/' + encodeURIComponent(g.group), h('span', { class: 'group-name' }, g.group)), kindTag(g.kind)] },
      { key: 'status', label: 'Status', render: (g) => h('span', { 'data-field': 'status', title: g.status_reason || '' }, badge(g.status)) },
      { key: 'suspected', label: 'Suspected node / GPU', render: suspectedCell },
      { key: 'odd_runs', label: 'Odd run', render: oddRunCell },
      { key: 'classification', label: 'Classification', class: 'wrap-words', render: classificationCell },
      { key: 'first_divergence', label: 'First divergence', render: divergenceCell },
      { key: 'run_count', label: 'Runs', num: true, render: (g) => fmtCount(g.run_count) },
      { key: 'users', label: 'Users', render: (g) => g.users.join(', ') || '—' },
      { key: 'replay', label: 'Replay verdict', render: replayCell },
      { key: 'last_run_at', label: 'Newest run', render: (g) => h('span', { title: fmtTime(g.last_run_at) + ' UTC' }, fmtAgo(g.last_run_at)) },
    ];
    const info = d.total !== null && d.total !== undefined
      ? `${fmtCount(groups.length)} of ${fmtCount(d.total)} group${d.total === 1 ? '' : 's'}`
      : `${fmtCount(groups.length)} group${groups.length === 1 ? '' : 's'} on this page`;
    replace(body, kindNote(kind, go), table(cols, groups, { rowAttrs: (g) => ({ 'data-group': g.group, 'data-status': g.status, 'data-kind': g.kind }) }),
      h('div', { class: 'pager' },
        h('button', { type: 'button', class: 'btn', disabled: !cursor, 'data-action': 'first', onclick: () => go({ cursor: '' }) }, '⇤ First page'),
        h('span', { class: 'pager-info' }, info),
        h('button', { type: 'button', class: 'btn', disabled: !d.next_cursor, 'data-action': 'next',
          onclick: () => go({ cursor: d.next_cursor }) }, 'Next →')));
  }

  async function loadFleet() {
    let nodes, alerts;
    try {
      [nodes, alerts] = await Promise.all([apiGet('/nodes'), apiGet('/alerts', { state: 'open', limit: 1 })]);
    } catch (e) {
      lastFleet = '';
      replace(fleet, card('Fleet', e.missingEndpoint ? unavailable('The fleet summary', 'GET /api/v1/nodes')
        : errorBox(e, 'The fleet could not be loaded')));
      return;
    }
    const key = JSON.stringify([nodes, alerts]);
    if (key === lastFleet) return;
    lastFleet = key;
    replace(fleet, fleetSummary(nodes, alerts));
  }

  const charts = chartStrip(strip);
  await Promise.all([loadGroups(), loadFleet(), charts.load()]);
  return { poll: () => Promise.all([loadGroups(), loadFleet(), charts.load()]) };
}

function field(label, input) {
  return h('label', { class: 'field' }, h('span', null, label), input);
}

/* statusOptions(statuses, current) - 'any' and each status lockstepd gives, the current one selected. */
function statusOptions(statuses, current) {
  return ['', ...statuses].map((s) => h('option', { value: s, selected: s === current }, s || 'any'));
}

/* divergenceCell - where the runs parted (step, rank, record) and the cause lockstepd gives it. */
function divergenceCell(g) {
  const fd = g.first_divergence;
  if (!fd) return '—';
  return h('div', { 'data-field': 'first-divergence' },
    h('span', { 'data-field': 'where' }, `step ${fd.step}, rank ${fd.rank}, `, h('code', null, fd.name),
      fd.kind === 'missing' ? ' (missing)' : ''),
    fd.cause ? h('div', { class: 'rec-kind' }, 'cause: ', h('span', { 'data-field': 'cause' }, fd.cause),
      fd.site && fd.site.text ? [' at ', h('code', { 'data-field': 'site' }, fd.site.text)] : null) : null);
}

/* kindNote(kind, go) - which kinds of group the list shows, and the way to the others. */
function kindNote(kind, go) {
  if (kind[0]) return h('p', { class: 'sub kind-note', 'data-field': 'kind-note' }, `Showing: ${kind[1].toLowerCase()}. `,
    h('a', { href: '#/twins', onclick: (e) => { e.preventDefault(); go({ kind: '', cursor: '' }); } }, 'Incident twins only'));
  return h('p', { class: 'sub kind-note', 'data-field': 'kind-note' }, 'Incident twins only; replay groups (lockstep narrow), ' +
    'noise replicas and experiments (lockstep twin --noise / --change) are under Kind. ',
  h('a', { href: '#/twins?kind=others', 'data-action': 'other-kinds', onclick: (e) => { e.preventDefault(); go({ kind: 'others', cursor: '' }); } }, 'Show them'));
}

/* classificationCell - what the fleet concluded (hardware or software) in a dozen words, as lockstepd says it; the
 * reason in full on expand. */
function classificationCell(g) {
  const c = g.classification;
  if (!c || c.class === 'none') return '—';
  return h('div', null, h('span', { class: `classification classification-${c.class}`, 'data-field': 'class', 'data-class': c.class },
    c.summary || c.class),
  h('details', { class: 'why' }, h('summary', null, 'why'),
    h('div', { class: 'rec-kind', 'data-field': 'classification-reason' }, c.reason)));
}

/* suspectedCell - the hardware the group's evidence holds involved (lockstepd's "suspected"), whose fault at a glance. */
function suspectedCell(g) {
  const list = g.suspected || [];
  return list.length ? h('div', { 'data-field': 'suspected' }, suspectedItems(list)) : '—';
}

/* oddRunCell - the odd run(s) out (lockstepd's "odd_runs"): the job and where it ran. */
function oddRunCell(g) {
  const ids = g.odd_runs || [];
  if (!ids.length) return '—';
  const byId = Object.fromEntries((g.runs || []).map((r) => [r.run_id, r]));
  return h('div', { 'data-field': 'odd-run' }, ids.map((id, i) => {
    const r = byId[id];
    return h('div', { 'data-run': id }, link('/runs/' + encodeURIComponent(id), r ? `job ${r.job_id}` : shortId(id)),
      r && r.nodes ? h('span', { class: 'rec-kind' }, ` on ${r.nodes}`) : null, i < ids.length - 1 ? ',' : null);
  }));
}

/* replayCell - the newest replay verdict of lockstep narrow (its node for a hardware one), as lockstepd gives it. */
function replayCell(g) {
  const r = g.replay;
  if (!r) return '—';
  return h('span', { 'data-field': 'replay' }, verdictBadge(r.verdict), r.node ? [' ', h('code', null, r.node)] : null);
}

/* fleetSummary(nodes, alerts) - suspects now, nodes by state, open alerts; links to the fleet pages. */
function fleetSummary(nodes, alerts) {
  const list = nodes.items;
  const by = {};
  for (const n of list) by[n.state] = (by[n.state] || 0) + 1;
  const suspects = list.filter((n) => n.state === 'suspect');
  return card('Fleet',
    h('dl', { class: 'kv', 'data-field': 'fleet-counts' },
      h('dt', null, 'Nodes'), h('dd', { 'data-count': 'nodes' }, fmtCount(list.length)),
      h('dt', null, 'Suspect'), h('dd', { 'data-count': 'suspect' }, fmtCount(by.suspect || 0)),
      h('dt', null, 'Drained'), h('dd', { 'data-count': 'drained' }, fmtCount(by.drained || 0)),
      h('dt', { title: "the fleet's involvements over its twin-compared runs" }, 'Fleet baseline'),
      h('dd', { 'data-field': 'fleet-baseline' }, fmtRate(nodes.baseline)),
      h('dt', null, 'Open alerts'), h('dd', { 'data-count': 'open-alerts' }, link('/alerts?state=open', fmtCount(alerts.total)))),
    suspects.length
      ? h('ul', { class: 'suspects' }, suspects.map((n) => h('li', { 'data-node': n.name },
        link('/nodes/' + encodeURIComponent(n.name), n.name), ' ', badge(n.state),
        h('span', { class: 'rec-kind' }, ` score ${Number(n.score).toFixed(3)}, ${n.involvements.toFixed(1)} of ${n.runs} runs`))))
      : h('p', { class: 'sub' }, list.length ? 'No hardware suspect.' : 'No node seen yet.'),
    h('p', { class: 'page-links' }, link('/fleet', 'All nodes'), ' · ', link('/alerts', 'Alerts'), ' · ', link('/runs', 'All runs')));
}
