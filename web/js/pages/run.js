// run.js - the Run page: job metadata, status, its consensus check, ranks with their nodes and GPUs, each rank's
// manifest, its twin group.
import { h, link } from '../dom.js';
import { apiGet } from '../api.js';
import { badge, card, kv, table, emptyState, errorBox, replace } from '../components.js';
import { fmtTime, shortId } from '../format.js';
import { groupOf } from './runs.js';

export function title(params) { return 'Run ' + shortId(params[0]); }

// Manifest keys shown as columns of the ranks table (the rest is in each rank's manifest below).
const RANK_COLS = [['host', 'Host'], ['gpu_name', 'GPU'], ['gpu_uuid', 'GPU UUID'], ['gpu_pci_bus', 'PCI bus'],
  ['driver', 'Driver'], ['cuda', 'CUDA'], ['nccl', 'NCCL'], ['mpi', 'MPI']];

/* mount(el, [id]) - render one run; poll() re-renders when it changed (status, end, new manifests). */
export async function mount(el, params) {
  const id = params[0];
  const body = h('div');
  el.appendChild(body);
  let last = '';
  async function load() {
    let d;
    try {
      d = await apiGet('/runs/' + encodeURIComponent(id));
    } catch (e) {
      last = '';
      replace(body, e.notFound
        ? emptyState(`No run ${id}.`, 'It may have been mistyped or removed by retention. Find it in the runs list.',
                     h('a', { href: '#/runs' }, 'All runs'))
        : errorBox(e, 'The run could not be loaded'));
      return;
    }
    let twin = null;
    const g = groupOf(d.run || d);
    if (g) {
      try { twin = await apiGet('/twins/' + encodeURIComponent(g)); } catch (e) { twin = null; }
    }
    const key = JSON.stringify([d, twin && twin.status, twin && twin.first_divergence && twin.first_divergence.step]);
    if (key === last) return;
    last = key;
    render(body, d, twin);
  }
  await load();
  return { poll: load };
}

function render(body, d, twin) {
  const run = d.run || d;
  const mans = (d.manifests || run.manifests || []).map((m) => ({ rank: m.rank, m: m.manifest || m }))
    .sort((a, b) => a.rank - b.rank);
  const group = groupOf(run);
  const head = h('div', { class: 'page-head' },
    h('div', { class: 'crumbs' }, h('a', { href: '#/runs' }, 'Runs'), ' / ', h('span', null, 'Run')),
    h('h1', null, 'Run ', h('code', null, run.run_id || ''), ' ', badge(run.status)),
    group ? h('p', { class: 'sub', 'data-field': 'twin' }, 'Twin group ', link('/twins/' + encodeURIComponent(group), group), ' ',
              twin ? badge(twin.status) : null, twinSentence(twin)) : h('p', { class: 'sub' }, 'This run has no twin group, so nothing compares it.'),
    d.consensus ? h('p', { class: 'sub', 'data-field': 'consensus' }, 'Consensus ', badge(d.consensus.status),
                    ' ', consensusSentence(d.consensus)) : null);
  const meta = card('Job', kv(true, [
    ['Job', run.job_id !== undefined ? `${run.job_id}${run.step_id !== undefined && run.step_id !== null && run.step_id !== '' ? '.' + run.step_id : ''}` : undefined],
    ['User', run.user],
    ['Partition', run.partition],
    ['Mode', run.mode],
    ['Ranks', run.ranks !== undefined ? String(run.ranks) : undefined],
    ['Nodes', run.nodes],
    ['Partition', run.partition || undefined],
    ['Start step', run.start_step !== undefined ? String(run.start_step) : undefined],
    ['Started (UTC)', fmtTime(run.created_at || run.started_at)],
    ['Ended (UTC)', run.ended_at ? fmtTime(run.ended_at) : 'still running'],
    ['Command', h('code', { class: 'command' }, run.command || '—')],
  ]));
  const status = new Map((d.rank_status || []).map((x) => [x.rank, x]));
  const rankIds = [...new Set([...mans.map((x) => x.rank), ...status.keys()])].sort((a, b) => a - b);
  let ranks;
  if (!rankIds.length) {
    ranks = card('Ranks, nodes and GPUs', emptyState('No rank has reported yet.',
      'The agent sends a manifest per rank at start; check that the job ran with lockstep enabled and could reach lockstepd.'));
  } else {
    const byRank = new Map(mans.map((x) => [x.rank, x.m]));
    const rows = rankIds.map((r) => ({ rank: r, m: byRank.get(r) || {}, s: status.get(r) || {} }));
    const present = RANK_COLS.filter(([k]) => rows.some((x) => x.m[k] !== undefined && x.m[k] !== null));
    ranks = card('Ranks, nodes and GPUs', table([
      { key: 'rank', label: 'Rank', num: true },
      ...present.map(([k, label]) => ({ key: k, label, render: (r) => valText(r.m[k]) })),
      { key: 'steps', label: 'Steps', num: true, render: (r) => (r.s.min_step !== undefined && r.s.min_step !== null ? `${r.s.min_step}–${r.s.max_step}` : '—') },
      { key: 'records', label: 'Records', num: true, render: (r) => (r.s.records !== undefined && r.s.records !== null ? Number(r.s.records).toLocaleString('en-US') : '—') },
      { key: 'exit', label: 'Exit', num: true, render: (r) => (r.s.exit_code !== undefined && r.s.exit_code !== null ? String(r.s.exit_code) : r.s.ended ? 'ended' : 'running') },
    ], rows, { compact: true, rowAttrs: (r) => ({ 'data-rank': r.rank }) }));
  }
  const detail = mans.length ? card('Manifests', h('p', { class: 'sub' },
    'Everything each rank reported about its environment, versions and hardware.'),
    ...mans.map((x) => h('details', { class: 'manifest' }, h('summary', null, `Rank ${x.rank}`, x.m.host ? ` — ${x.m.host}` : ''),
      manifestTable(x.m)))) : null;
  replace(body, head, meta, ranks, detail);
}

/* consensusSentence(c) - the run checked against itself, with no twin (GET /api/v1/runs/{id}/consensus), as the
 * rest of the line `lockstep run` prints after "consensus:". */
export function consensusSentence(c) {
  const n = `${Number(c.checked || 0).toLocaleString('en-US')} window${c.checked === 1 ? '' : 's'} checked`;
  const f = c.first;
  if (!f) return c.status === 'none' ? `— nothing checked yet: ${c.why || 'no collective output has been compared across ranks'}.` : `— ${n}, every copy the same.`;
  const list = (a) => (a.length > 16 ? a.slice(0, 16).join(',') + ',…' : a.join(','));
  const ranks = f.comm_ranks && f.comm_ranks.length ? list(f.comm_ranks) : `${f.comm_size} ranks`;
  const odd = list(f.odd_ranks || []);
  const what = f.name ? `${f.name} #${f.occurrence}` : '(its records awaited)';
  const who = f.clear ? `${(f.odd_ranks || []).length > 1 ? 'ranks' : 'rank'} ${odd} ${(f.odd_ranks || []).length > 1 ? 'are' : 'is'} odd`
    : `one of ranks ${odd} differs (no majority)`;
  const hw = f.node ? ` (node ${f.node}${f.gpu ? ', gpu ' + f.gpu : ''})` : '';
  const site = f.site ? ` at site ${f.site.function || '?'} (${f.site.module || '?'}+0x${Number(f.site.offset || 0).toString(16)})` : '';
  return `— at step ${f.step}, ${what} on ranks {${ranks}}: ${who}${hw}${site}; ${n}.`;
}

function twinSentence(t) {
  if (!t) return ' — compare this run with its twins.';
  const n = (t.runs || []).length;
  if (t.first_divergence) return ` — ${n} runs; first divergence at step ${t.first_divergence.step}, rank ${t.first_divergence.rank}.`;
  return ` — ${n} run${n === 1 ? '' : 's'} compared.`;
}

/* manifestTable(m) - a manifest's keys as rows, nested objects flattened to dotted keys. */
export function manifestTable(m) {
  const rows = flatten(m).sort((a, b) => a.key.localeCompare(b.key));
  return table([{ key: 'key', label: 'Key', render: (r) => h('code', null, r.key) },
                { key: 'value', label: 'Value', class: 'wrap', render: (r) => valText(r.value) }], rows, { compact: true });
}

/* flatten(o) - [{key: 'env.NCCL_ALGO', value: 'Ring'}, ...]. */
export function flatten(o, prefix = '', out = []) {
  for (const [k, v] of Object.entries(o || {})) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) flatten(v, key, out);
    else out.push({ key, value: v });
  }
  return out;
}

export function valText(v) {
  if (v === null || v === undefined || v === '') return '—';
  if (Array.isArray(v)) return v.map((x) => (x !== null && typeof x === 'object' ? Object.values(x).join(' ') : String(x))).join(', ');
  return String(v);
}
