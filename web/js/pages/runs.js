// runs.js - the Runs page: filterable, sortable, paged list of runs; the filters live in the URL.
import { h, link } from '../dom.js';
import { apiGet } from '../api.js';
import { badge, table, pager, emptyState, errorBox, replace, loading } from '../components.js';
import { fmtTime, shortId, toDate } from '../format.js';

const LIMIT = 50;
const SERVER_FILTERS = ['user', 'job', 'group', 'status'];   // GET /api/v1/runs filters these
const LOCAL_FILTERS = ['node', 'since', 'until'];           // applied here, over the newest SCAN runs
const FILTERS = [...SERVER_FILTERS, ...LOCAL_FILTERS];
const SCAN = 5000;
const STATUSES = ['', 'running', 'ended', 'failed'];

export function title() { return 'Runs'; }

/* mount(el, params, query, navigate) - render the runs list for the filters in query; poll() refreshes it. */
export async function mount(el, _params, query, navigate) {
  const f = {};
  for (const k of FILTERS) f[k] = query.get(k) || '';
  const sort = query.get('sort') ? { key: query.get('sort'), dir: query.get('dir') === 'asc' ? 'asc' : 'desc' } : { key: null, dir: 'desc' };
  const offset = Math.max(0, parseInt(query.get('offset') || '0', 10) || 0);
  const local = LOCAL_FILTERS.some((k) => f[k]);

  const go = (changes) => {
    const q = { ...f, sort: sort.key, dir: sort.key ? sort.dir : null, offset, ...changes };
    if (!q.offset) delete q.offset;
    navigate('/runs', q);
  };

  const form = h('form', { class: 'filters', 'aria-label': 'Filter runs', onsubmit: (e) => {
    e.preventDefault();
    const fd = new FormData(form);
    const ch = { offset: 0 };
    for (const k of FILTERS) ch[k] = String(fd.get(k) || '').trim();
    go(ch);
  } },
    field('User', h('input', { name: 'user', value: f.user, placeholder: 'alice' })),
    field('Job', h('input', { name: 'job', value: f.job, placeholder: '12345', inputmode: 'numeric' })),
    field('Twin group', h('input', { name: 'group', value: f.group, placeholder: 'g1' })),
    field('Status', h('select', { name: 'status' }, STATUSES.map((s) =>
      h('option', { value: s, selected: s === f.status }, s || 'any')))),
    field('Node', h('input', { name: 'node', value: f.node, placeholder: 'n3' })),
    field('From', h('input', { name: 'since', type: 'date', value: f.since })),
    field('To', h('input', { name: 'until', type: 'date', value: f.until })),
    h('div', { class: 'filter-actions' },
      h('button', { type: 'submit', class: 'btn btn-primary' }, 'Apply'),
      FILTERS.some((k) => f[k]) ? h('button', { type: 'button', class: 'btn', 'data-action': 'clear',
        onclick: () => go(Object.fromEntries(FILTERS.map((k) => [k, '']))) }, 'Clear') : null));

  const body = h('div', { class: 'runs-body' }, loading('Loading runs…'));
  el.appendChild(h('div', { class: 'page-head' }, h('h1', null, 'Runs'),
    h('p', { class: 'sub' }, 'Every run lockstep has seen, newest first. Open a twin group to compare its runs.')));
  el.appendChild(h('section', { class: 'card' }, form, body));

  let last = '';
  async function load() {
    const base = {};
    for (const k of SERVER_FILTERS) if (f[k]) base[k] = f[k];
    let runs, total, scanned = 0, capped = false;
    try {
      if (!local) {
        const data = await apiGet('/runs', { ...base, limit: LIMIT, cursor: offset });
        runs = data.items;
        total = data.total ?? undefined;
      } else {
        // The server filters by user, job, group and status; node and dates are matched here.
        const all = [];
        for (let off = 0; off < SCAN; off += 1000) {
          const data = await apiGet('/runs', { ...base, limit: 1000, cursor: off });
          const page = data.items;
          scanned += page.length;
          all.push(...page.filter((r) => localMatch(r, f)));
          if (page.length < 1000) break;
          if (off + 1000 >= SCAN) capped = true;
        }
        total = all.length;
        runs = all.slice(offset, offset + LIMIT);
      }
    } catch (e) {
      replace(body, errorBox(e, 'The runs could not be loaded'));
      last = '';
      return;
    }
    const key = JSON.stringify([runs, total]);
    if (key === last) return;
    last = key;
    if (!runs.length) {
      const filtered = FILTERS.some((k) => f[k]);
      replace(body, offset > 0
        ? emptyState('No runs on this page.', 'There are fewer runs than this page needs.', h('a', { href: '#/runs' }, 'First page'))
        : filtered
          ? emptyState('No run matches these filters.', 'Loosen or clear the filters above.')
          : emptyState('No runs yet.', 'Submit a job with srun --lockstep=det --lockstep-twin=NAME (or run lockstep-train with LOCKSTEP_SERVER set); runs appear here as they register.'));
      return;
    }
    if (sort.key) {
      const dir = sort.dir === 'asc' ? 1 : -1;
      runs = runs.slice().sort((a, b) => cmp(sortVal(a, sort.key), sortVal(b, sort.key)) * dir);
    }
    const cols = [
      { key: 'run_id', label: 'Run', render: (r) => link('/runs/' + encodeURIComponent(r.run_id), h('code', null, shortId(r.run_id))) },
      { key: 'job_id', label: 'Job', sortable: true, render: (r) => jobText(r) },
      { key: 'user', label: 'User', sortable: true },
      { key: 'twin_group', label: 'Twin group', sortable: true, render: (r) => (groupOf(r)
        ? link('/twins/' + encodeURIComponent(groupOf(r)), groupOf(r)) : '—') },
      // The run's own outcome in its group (lockstepd's twin_outcome), not the group's status: the healthy runs of a
      // group with an odd run are in its majority; the group's status is on hover.
      { key: 'twin_outcome', label: 'In its group', sortable: true, render: (r) => (r.twin_outcome
        ? h('span', { 'data-field': 'twin-outcome', 'data-group-status': r.group_status || '' },
          badge(r.twin_outcome, `${r.twin_outcome_why || r.twin_outcome}; the group is ${r.group_status}`)) : '—') },
      { key: 'status', label: 'Run', sortable: true, render: (r) => h('span', { 'data-field': 'run-status' }, badge(r.status)) },
      { key: 'ranks', label: 'Ranks', num: true, sortable: true },
      { key: 'nodes', label: 'Nodes', sortable: true, render: (r) => r.nodes || '—' },
      { key: 'created_at', label: 'Started (UTC)', sortable: true, class: 'when', render: (r) => fmtTime(r.created_at) },
      { key: 'command', label: 'Command', class: 'cmd', render: (r) => h('code', { title: r.command || '' }, r.command || '—') },
    ];
    const notes = [];
    if (sort.key) notes.push('Sorted within this page; pages follow the newest-first order.');
    if (local) notes.push(`Node and date filters are applied in the browser over ${capped ? `the newest ${SCAN.toLocaleString('en-US')}` : `all ${scanned.toLocaleString('en-US')}`} runs the other filters match.`);
    replace(body, table(cols, runs, {
      sort, onSort: (k) => go({ sort: k, dir: sort.key === k && sort.dir === 'desc' ? 'asc' : 'desc' }),
      rowAttrs: (r) => ({ 'data-run': r.run_id }),
    }), h('div', { class: 'table-foot' }, h('span', { class: 'note' }, notes.join(' ')),
      pager({ offset, limit: LIMIT, total, count: runs.length }, (o) => go({ offset: o }))));
  }
  await load();
  // A browser-side filter reads up to 5,000 runs: refresh it every 5th tick (15 s), not every 3 s.
  let ticks = 0;
  return { poll: () => (local && ++ticks % 5 ? null : load()) };
}

function field(label, input) {
  return h('label', { class: 'field' }, h('span', null, label), input);
}

/* localMatch(run, f) - the node and date filters: the node among the run's node names (lockstepd expands its
 * Slurm node list: node_names), the start date within since..until (inclusive days, UTC). */
function localMatch(r, f) {
  if (f.node && !(r.node_names || []).includes(f.node)) return false;
  const d = toDate(r.created_at);
  if (f.since && (!d || d.toISOString().slice(0, 10) < f.since)) return false;
  if (f.until && (!d || d.toISOString().slice(0, 10) > f.until)) return false;
  return true;
}

export function groupOf(r) {
  return r.twin_group || '';
}

function sortVal(r, k) {
  if (k === 'job_id') return Number(r.job_id) || r.job_id;
  if (k === 'twin_group') return groupOf(r);
  return r[k];
}

function cmp(a, b) {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  return typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b), 'en', { numeric: true });
}

function jobText(r) {
  if (!r.job_id) return '—';
  return r.step_id !== undefined && r.step_id !== null && r.step_id !== '' ? `${r.job_id}.${r.step_id}` : String(r.job_id);
}
