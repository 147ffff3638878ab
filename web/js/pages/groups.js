// groups.js - the front page: every twin group, newest first, with its status, first divergence and its cause,
// and the fleet's classification (GET /api/v1/twins), filters in the URL, live updates; the fleet's suspects
// beside it.
import { h, link } from '../dom.js';
import { apiGet } from '../api.js';
import { badge, card, table, emptyState, errorBox, unavailable, replace, loading } from '../components.js';
import { fmtAgo, fmtTime, fmtCount } from '../format.js';
import { verdictBadge } from './replay.js';

const LIMIT = 50;
const FILTERS = ['status', 'user', 'node', 'since'];
const STATUSES = ['', 'diverged', 'incomplete', 'pending', 'match'];   // the values GET /api/v1/twins?status= takes

export function title() { return 'Twin groups'; }

/* mount(el, params, query, navigate) - the twin-group index for the filters in query (status, user, node,
 * since) from position `cursor`; poll() refreshes it and the fleet summary. */
export async function mount(el, _params, query, navigate) {
  const f = {};
  for (const k of FILTERS) f[k] = query.get(k) || '';
  const cursor = query.get('cursor') || '';
  const go = (changes) => navigate('/twins', { ...f, cursor, ...changes });

  const form = h('form', { class: 'filters', 'aria-label': 'Filter twin groups', onsubmit: (e) => {
    e.preventDefault();
    const fd = new FormData(form);
    const ch = { cursor: '' };
    for (const k of FILTERS) ch[k] = String(fd.get(k) || '').trim();
    go(ch);
  } },
    field('Status', h('select', { name: 'status' }, STATUSES.map((s) =>
      h('option', { value: s, selected: s === f.status }, s || 'any')))),
    field('User', h('input', { name: 'user', value: f.user, placeholder: 'alice' })),
    field('Node', h('input', { name: 'node', value: f.node, placeholder: 'n3' })),
    field('Since', h('input', { name: 'since', type: 'date', value: f.since })),
    h('div', { class: 'filter-actions' },
      h('button', { type: 'submit', class: 'btn btn-primary' }, 'Apply'),
      FILTERS.some((k) => f[k]) ? h('button', { type: 'button', class: 'btn', 'data-action': 'clear',
        onclick: () => go({ status: '', user: '', node: '', since: '', cursor: '' }) }, 'Clear') : null));

  const body = h('div', { 'data-section': 'groups' }, loading('Loading twin groups…'));
  const fleet = h('div', { 'data-section': 'fleet-summary' }, loading('Loading the fleet…'));
  el.appendChild(h('div', { class: 'page-head' }, h('h1', null, 'Twin groups'),
    h('p', { class: 'sub' }, 'Runs that must be bit-identical, newest first: which diverged, where, and why.')));
  el.appendChild(h('div', { class: 'front' },
    h('section', { class: 'card front-main' }, form, body),
    h('aside', { class: 'front-side' }, fleet)));

  let last = '', lastFleet = '';
  async function loadGroups() {
    let d;
    try {
      d = await apiGet('/twins', { ...f, limit: LIMIT, cursor });
    } catch (e) {
      last = '';
      replace(body, e.missingEndpoint ? unavailable('The twin-group list', 'GET /api/v1/twins')
        : errorBox(e, 'The twin groups could not be loaded'));
      return;
    }
    const key = JSON.stringify(d);
    if (key === last) return;
    last = key;
    const groups = d.items;
    if (!groups.length) {
      const filtered = FILTERS.some((k) => f[k]);
      replace(body, cursor
        ? emptyState('No more twin groups match.', 'The list ends here.', h('a', { href: '#/twins' }, 'First page'))
        : filtered ? emptyState('No twin group matches these filters.', 'Loosen or clear the filters above.')
          : emptyState('No twin groups yet.', 'Runs join a twin group with srun --lockstep=det --lockstep-twin=NAME ' +
            '(or lockstep twin -n 2 -- sbatch …); the group appears here when its first run registers.'));
      return;
    }
    const cols = [
      { key: 'group', label: 'Twin group', render: (g) => link('/twins/' + encodeURIComponent(g.group), h('span', { class: 'group-name' }, g.group)) },
      { key: 'status', label: 'Status', render: (g) => h('span', { 'data-field': 'status', title: g.status_reason || '' }, badge(g.status)) },
      { key: 'run_count', label: 'Runs', num: true, render: (g) => fmtCount(g.run_count) },
      { key: 'users', label: 'Users', render: (g) => g.users.join(', ') || '—' },
      { key: 'first_divergence', label: 'First divergence', render: divergenceCell },
      { key: 'classification', label: 'Classification', class: 'wrap-words', render: classificationCell },
      { key: 'replay', label: 'Replay verdict', render: replayCell },
      { key: 'last_run_at', label: 'Newest run', render: (g) => h('span', { title: fmtTime(g.last_run_at) + ' UTC' }, fmtAgo(g.last_run_at)) },
    ];
    const info = d.total !== null && d.total !== undefined
      ? `${fmtCount(groups.length)} of ${fmtCount(d.total)} group${d.total === 1 ? '' : 's'}`
      : `${fmtCount(groups.length)} group${groups.length === 1 ? '' : 's'} on this page`;
    replace(body, table(cols, groups, { rowAttrs: (g) => ({ 'data-group': g.group, 'data-status': g.status }) }),
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

  await Promise.all([loadGroups(), loadFleet()]);
  return { poll: () => Promise.all([loadGroups(), loadFleet()]) };
}

function field(label, input) {
  return h('label', { class: 'field' }, h('span', null, label), input);
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

/* classificationCell - what the fleet concluded (hardware or software) and why, as lockstepd says it. */
function classificationCell(g) {
  const c = g.classification;
  if (!c || c.class === 'none') return '—';
  return h('div', null, h('span', { class: `classification classification-${c.class}`, 'data-field': 'class' }, c.class),
    h('div', { class: 'rec-kind', 'data-field': 'classification-reason' }, c.reason));
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
      h('dt', null, 'Open alerts'), h('dd', { 'data-count': 'open-alerts' }, link('/alerts?state=open', fmtCount(alerts.total)))),
    suspects.length
      ? h('ul', { class: 'suspects' }, suspects.map((n) => h('li', { 'data-node': n.name },
        link('/nodes/' + encodeURIComponent(n.name), n.name), ' ', badge(n.state),
        h('span', { class: 'rec-kind' }, ` score ${Number(n.score).toFixed(3)}, ${n.involvements.toFixed(1)} of ${n.runs} runs`))))
      : h('p', { class: 'sub' }, list.length ? 'No hardware suspect.' : 'No node seen yet.'),
    h('p', { class: 'page-links' }, link('/fleet', 'All nodes'), ' · ', link('/alerts', 'Alerts'), ' · ', link('/runs', 'All runs')));
}
