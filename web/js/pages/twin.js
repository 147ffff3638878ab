// twin.js - the Twin group page: status, first divergence, match map, records at a step and rank, curves, runs, manifest diff.
import { h, link } from '../dom.js';
import { apiGet } from '../api.js';
import { badge, card, table, emptyState, errorBox, replace, loading } from '../components.js';
import { fmtTime, shortId, fmtFp, fmtValue, fmtCount } from '../format.js';
import { normalizeSteps, matchMap } from './matchmap.js';
import { curvesSection } from './curves.js';
import { deltasSection } from './deltas.js';
import { kindTag, suspectedItems } from './glance.js';
import { valText } from './run.js';
import { recordsSection } from './records.js';
import { compareSection } from './compare.js';
import { replaySection } from './replay.js';

const WINDOW = 500;   // steps shown in the match map at once

export function title(params) { return 'Twin group ' + params[0]; }

/* mount(el, [group], query, navigate) - the whole group page; query: step and rank (the records view),
 * from (the first step of the match map's window). Every view is reachable by its URL. */
export async function mount(el, params, query, navigate) {
  const group = params[0];
  const gpath = '/twins/' + encodeURIComponent(group);
  const sel = { step: intOr(query.get('step')), rank: intOr(query.get('rank')) };
  const from = intOr(query.get('from'));
  const go = (q) => navigate(gpath, { from, step: sel.step, rank: sel.rank, ...q });
  const recordsHref = (step, rank) => '#' + gpath + '?' + new URLSearchParams({ step, rank });

  const head = h('div', { class: 'page-head' }, loading('Loading twin group…'));
  const divergence = h('div');
  const restoresBox = h('div', { 'data-section': 'restores' });
  const replayBox = h('div', { 'data-section': 'replay-box' });
  const replay = replaySection(replayBox);
  const mapBox = h('div', null, loading('Loading the match map…'));
  const recBox = h('div', { id: 'records', 'data-section': 'records' });
  const curvesBox = h('div', { 'data-section': 'curves' });
  const deltasBox = h('div', { 'data-section': 'deltas' });
  const runsBox = h('div', { 'data-section': 'runs' });
  const manifestBox = h('div', { id: 'manifest-diff', 'data-section': 'manifest-diff' }, loading('Loading the manifest diff…'));
  const compareBox = h('div', { 'data-section': 'compare' });
  el.append(head, divergence, restoresBox, replayBox,
    card('Match map', h('p', { class: 'sub' }, 'One cell per rank and step, comparing every run of the group. Click a cell to see its records.'), mapBox),
    recBox, curvesBox, deltasBox, runsBox, manifestBox, compareBox);

  let summary = null, lastSummary = '', lastSteps = '', lastManifest = '', gone = false;
  let records = null;

  async function loadSummary() {
    let d;
    try {
      d = await apiGet(gpath);
    } catch (e) {
      lastSummary = '';
      replace(head, h('div', { class: 'crumbs' }, h('a', { href: '#/twins' }, 'Twin groups'), ' / Twin group'),
        h('h1', null, 'Twin group ', h('span', { class: 'group-name' }, group)),
        e.status === 404 && !e.missingEndpoint ? emptyState(`No twin group named "${group}".`,
          'Runs join a group with srun --lockstep-twin=NAME (or LOCKSTEP_TWIN_GROUP). Check the name in the twin-group list.',
          h('a', { href: '#/twins' }, 'All twin groups')) : errorBox(e, 'The twin group could not be loaded'));
      return false;
    }
    const key = JSON.stringify(d);
    if (key === lastSummary) return true;
    lastSummary = key;
    summary = d;
    renderHead(d);
    renderDivergence(d);
    renderRestores(d);
    renderRuns(d);
    await replay.show(d);
    return true;
  }

  function renderHead(d) {
    const runs = d.runs || [];
    replace(head, h('div', { class: 'crumbs' }, h('a', { href: '#/twins' }, 'Twin groups'), ' / Twin group'),
      h('h1', null, 'Twin group ', h('span', { class: 'group-name' }, d.group), ' ', badge(d.status), kindTag(d.kind)),
      h('p', { class: 'sub', 'data-field': 'status-reason' }, statusSentence(d, runs.length)),
      classificationLine(d.classification),
      absorbedLine(d.absorbed),
      suspectedLine(d.suspected));
  }

  function renderDivergence(d) {
    const fd = d.first_divergence;
    if (!fd) { replace(divergence); return; }
    const rows = fd.runs || []; // each with its ULP distance from the reference run, computed by lockstepd
    const restore = fd.kind === 'restore', logical = !!fd.logical;
    const line = restore
      ? h('p', { class: 'divergence-line' }, 'Restore difference at step ', h('strong', { 'data-field': 'step' }, String(fd.step)),
        ', rank ', h('strong', { 'data-field': 'rank' }, String(fd.rank)), ': state entry ',
        h('code', { 'data-field': 'name' }, fd.name || '?'), ' of the resumed run is not what its twin saved in the checkpoint of that step; every later step is suspect.')
      : h('p', { class: 'divergence-line' }, 'Step ', h('strong', { 'data-field': 'step' }, String(fd.step)),
        logical ? ', logical tensor ' : ', rank ', logical ? null : h('strong', { 'data-field': 'rank' }, String(fd.rank)),
        logical ? null : ', record ', h('code', { 'data-field': 'name' }, fd.name || '?'), fd.occurrence ? ` (occurrence ${fd.occurrence})` : '',
        fd.seq !== undefined && !logical ? `, seq ${fd.seq}` : '',
        logical ? ' — its shards combined across the ranks of runs with different rank counts' : '',
        fd.kind === 'missing' ? ' — missing in a run.' : '.');
    replace(divergence, h('section', { class: 'card card-alert', 'data-section': 'first-divergence' },
      h('h2', null, restore ? 'First divergence: a restore' : 'First divergence'),
      line,
      fd.cause ? h('p', { class: 'divergence-cause' }, 'Cause: ', h('strong', { 'data-field': 'cause' }, fd.cause),
        fd.origin_ranks && fd.origin_ranks.length ? [' on rank', fd.origin_ranks.length > 1 ? 's ' : ' ',
          h('strong', { 'data-field': 'origin' }, fd.origin_ranks.join(', '))] : null,
        ' — ', fd.cause_detail || '', fd.thin_evidence ? ' (the records cannot tell more)' : '') : null,
      fd.site && fd.site.text ? h('p', null, 'Call site: ', h('code', { 'data-field': 'site' }, fd.site.text)) : null,
      fd.suggest_ignore ? h('p', { class: 'sub', 'data-field': 'suggest-ignore' }, (fd.suggest_why || 'If these are run-specific values (timings, process ids), leave them out') + ': ',
        h('code', null, `--lockstep-ignore='${fd.suggest_ignore}'`), ' (LOCKSTEP_IGNORE outside Slurm).') : null,
      fd.configuration ? h('p', { class: 'sub', 'data-field': 'configuration' }, 'Configuration: ', fd.configuration) : null,
      fd.detection_ms !== undefined ? h('p', { class: 'sub' }, `Detected ${fmtTime(fd.detected_at)} UTC, ${Math.round(fd.detection_ms)} ms after the batch that showed it was committed.`) : null,
      table([
        { key: 'run_id', label: 'Run', render: (r) => [link('/runs/' + encodeURIComponent(r.run_id), h('code', null, shortId(r.run_id))),
          r.run_id === fd.odd_run_id ? h('span', { class: 'tag tag-bad' }, restore ? 'resumed' : 'odd one out') : null] },
        { key: 'fp', label: 'Fingerprint', render: (r) => (r.present === false ? h('em', null, 'missing') : h('code', null, fmtFp(r.fp))) },
        { key: 'value', label: 'Value', num: true, render: (r) => h('code', null, fmtValue(r.value)) },
        { key: 'ulp', label: 'ULP distance', num: true, render: (r) => (r.ulp === null || r.ulp === undefined ? '—' : fmtCount(r.ulp)) },
        ...(restore ? [{ key: 'role', label: 'State', render: (r) => r.role || '—' }] : []),
        ...(logical ? [{ key: 'chunk_holders', label: 'Differing MiB on ranks', render: (r) => (r.chunk_holders ? `MiB ${r.first_chunk}: ${r.chunk_holders.join(', ')}` : '—') }] : []),
      ], rows, { compact: true, rowAttrs: (r) => ({ 'data-run': r.run_id }) }),
      restore || logical ? null : h('p', null, h('a', { class: 'btn btn-primary', 'data-action': 'show-divergence', href: recordsHref(fd.step, fd.rank) },
        `Show every record at step ${fd.step}, rank ${fd.rank}`)),
      perRankTable(d.per_rank || [])));
  }

  function renderRestores(d) {
    const rs = d.restores || [];
    if (!rs.length) { replace(restoresBox); return; }
    replace(restoresBox, card('Restored checkpoints', h('p', { class: 'sub' }, 'Each resumed run\'s restored state, compared with what its twin saved at that step (or, when the twin saved nothing there, its records of that step).'),
      table([
        { key: 'run_id', label: 'Resumed run', render: (r) => h('code', null, shortId(r.run_id)) },
        { key: 'rank', label: 'Rank', num: true },
        { key: 'step', label: 'Step', num: true },
        { key: 'reference_run_id', label: 'Against', render: (r) => [h('code', null, shortId(r.reference_run_id)), ` (${r.reference})`] },
        { key: 'status', label: 'Status', render: (r) => badge(r.status === 'same' ? 'match' : r.status === 'unverified' ? 'pending' : 'diverged') },
        { key: 'entry', label: 'Entry', render: (r) => (r.entry ? [h('code', null, r.entry), ` ${r.status === 'differs' ? (r.diff || '') + ' differs' : r.status}`] : `${r.compared} compared`) },
      ], rs, { compact: true, rowAttrs: (r) => ({ 'data-restore': r.status }) })));
  }

  function perRankTable(per) {
    if (per.length < 2) return null;
    return h('details', { class: 'per-rank', open: per.length <= 8 },
      h('summary', null, `First divergence on each rank (${per.length} ranks)`),
      table([
        { key: 'rank', label: 'Rank', num: true },
        { key: 'step', label: 'Step', num: true },
        { key: 'seq', label: 'Seq', num: true },
        { key: 'name', label: 'Record', render: (r) => h('code', null, r.name || '—') },
        { key: 'occurrence', label: 'Occ.', num: true },
        { key: 'kind', label: 'Kind', render: (r) => badge(r.kind === 'missing' ? 'missing' : 'diverged') },
        { key: 'site', label: 'Call site', render: (r) => (r.site && r.site.text ? h('code', null, r.site.text) : '—') },
        ...(per.some((r) => r.odd_run_id) ? [{ key: 'odd', label: 'Odd one out', render: (r) => (r.odd_run_id ? h('code', null, shortId(r.odd_run_id)) : '—') }] : []),
        { key: 'go', label: '', render: (r) => h('a', { href: recordsHref(r.step, r.rank) }, 'records →') },
      ], per, { compact: true, rowAttrs: (r) => ({ 'data-rank': r.rank }) }));
  }

  function renderRuns(d) {
    const runs = d.runs || [];
    replace(runsBox, card('Runs in this group', table([
      { key: 'run_id', label: 'Run', render: (r) => [link('/runs/' + encodeURIComponent(r.run_id), h('code', null, shortId(r.run_id))),
        d.first_divergence && d.first_divergence.odd_run_id === r.run_id ? h('span', { class: 'tag tag-bad' }, 'odd one out') : null] },
      { key: 'job_id', label: 'Job' },
      { key: 'user', label: 'User' },
      { key: 'nodes', label: 'Nodes', render: (r) => valText(r.nodes) },
      { key: 'ranks', label: 'Ranks', num: true },
      { key: 'start_step', label: 'Start step', num: true },
      { key: 'mode', label: 'Mode' },
      { key: 'status', label: 'Status', render: (r) => badge(r.status) },
      { key: 'outcome', label: 'In the group', render: (r) => (r.outcome ? h('span', { 'data-field': 'outcome' }, badge(r.outcome, r.outcome_why)) : '—') },
      { key: 'exit_code', label: 'Exit', num: true, render: (r) => (r.exit_code === null || r.exit_code === undefined ? '—'
        : r.aborted_rank !== null && r.aborted_rank !== undefined ? h('span', { title: r.exit_detail || '' }, `${r.exit_code} (rank ${r.aborted_rank} aborted, others killed)`)
        : String(r.exit_code) + (r.failed_ranks && r.failed_ranks.length ? ` (rank ${r.failed_ranks.join(', ')})` : '')) },
      { key: 'created_at', label: 'Started (UTC)', class: 'when', render: (r) => fmtTime(r.created_at) },
    ], runs, { compact: true, rowAttrs: (r) => ({ 'data-run': r.run_id }) })));
  }

  async function loadSteps() {
    const fd = summary && summary.first_divergence;
    const center = sel.step !== null ? sel.step : fd ? fd.step : null;
    let range = {};
    if (from !== null) range = { from, to: from + WINDOW - 1 };
    else if (center !== null) {
      const f = Math.max(0, center - WINDOW / 2);
      range = { from: f, to: f + WINDOW - 1 };
    } else range = { from: 0, to: WINDOW - 1 };
    let d;
    try {
      d = await apiGet(gpath + '/steps', { ...range, compact: 1 }); // one status per rank, by index
    } catch (e) {
      lastSteps = '';
      replace(mapBox, errorBox(e, 'The match map could not be loaded'));
      return;
    }
    const perKey = summary ? JSON.stringify(summary.per_rank) : '';
    const key = JSON.stringify(d) + JSON.stringify(sel) + perKey;
    if (key === lastSteps) return;
    lastSteps = key;
    const model = normalizeSteps(d);
    const winFrom = typeof d.from === 'number' ? d.from : params.from;
    const winTo = typeof d.to === 'number' ? d.to : params.to;
    const nav = h('div', { class: 'map-nav' },
      h('button', { class: 'btn', type: 'button', 'data-action': 'earlier', disabled: winFrom <= 0,
        onclick: () => go({ from: Math.max(0, winFrom - WINDOW) }) }, '← Earlier steps'),
      h('span', { class: 'map-range' }, model.cells.length
        ? `${model.ranks} ranks, steps ${model.from}–${model.to} (window ${winFrom}–${winTo})`
        : `Window ${winFrom}–${winTo}`),
      h('button', { class: 'btn', type: 'button', 'data-action': 'later', disabled: !model.cells.length || model.to < winTo,
        onclick: () => go({ from: winTo + 1 }) }, 'Later steps →'));
    if (!model.cells.length) {
      replace(mapBox, nav, emptyState('No steps compared in this window yet.', winFrom > 0
        ? 'The runs have not reached these steps; go to earlier steps.'
        : 'The map fills in as the twins send records for the same steps; it updates by itself.'));
      return;
    }
    const marks = (summary && summary.per_rank || []).map((p) => ({ step: p.step, rank: p.rank }));
    replace(mapBox, nav, matchMap(model, { marks, selected: sel, width: el.clientWidth - 40,
      onPick: (step, rank) => go({ step, rank }) }));
  }

  async function loadRecords() {
    if (!records) records = recordsSection(recBox);
    await records.show(summary, sel);
  }

  async function loadManifest() {
    let d;
    try {
      d = await apiGet(gpath + '/manifest-diff');
    } catch (e) {
      lastManifest = '';
      replace(manifestBox, card('Manifest diff', errorBox(e, 'The manifest diff could not be loaded')));
      return;
    }
    const key = JSON.stringify(d);
    if (key === lastManifest) return;
    lastManifest = key;
    const diffs = groupRanks(d.diffs.map((x) => ({ ...x, byRun: byRun(x.values) })));
    const runIds = (d.runs && d.runs.length ? d.runs : (summary && summary.runs || []).map((r) => r.run_id)).slice();
    const ids = [...new Set((d.identities || []).map((x) => x.key))].sort();
    const identities = ids.length ? h('details', { class: 'identities', 'data-section': 'identities' },
      h('summary', null, `Identities (${ids.length}): they differ between runs by nature and explain nothing`),
      h('p', null, ids.map((k) => h('code', { 'data-key': k }, k + ' ')))) : null;
    replace(manifestBox, card('Manifest diff', diffs.length
      ? [h('p', { class: 'sub', 'data-field': 'summary' }, d.summary || 'Environment, versions, libraries and command lines that differ between the twins.'),
        table([
          { key: 'key', label: 'Key', render: (r) => [h('code', null, r.key), r.change ? h('span', { class: 'tag' }, r.change) : null] },
          { key: 'ranks', label: 'Ranks', render: (r) => r.rankText },
          { key: 'class', label: 'Can change results', render: (r) => (r.class === 'configuration' ? 'yes' : r.class ? 'no' : '—') },
          ...runIds.map((id) => ({ key: id, label: 'Run ' + shortId(id), class: 'wrap', render: (r) => (id in r.byRun ? valText(r.byRun[id]) : h('em', null, 'absent')) })),
        ], diffs, { compact: true, rowAttrs: (r) => ({ 'data-key': r.key }) }), identities]
      : [emptyState('Nothing that can change results differs between the twins\' configurations.', 'Environment, versions, libraries and command lines do not explain a divergence here; look at the records.'), identities]));
  }

  const ok = await loadSummary();
  if (!ok) {
    replace(mapBox, emptyState('Nothing to map.', 'Open a group that exists.'));
    replace(manifestBox);
    return { poll: async () => { if (!gone && await loadSummary()) navigate(gpath, { from, step: sel.step, rank: sel.rank }, true); }, destroy: () => { gone = true; } };
  }
  await Promise.all([loadSteps(), loadRecords(), loadManifest()]);
  curvesSection(curvesBox, summary);
  deltasSection(deltasBox, summary);
  compareSection(compareBox, group);
  if (sel.step !== null) requestAnimationFrame(() => { if (!gone) recBox.scrollIntoView({ block: 'start' }); });
  let polls = 0;
  return {
    // While a run is still running, everything can change; once all have ended only the summary is
    // re-read (a big group's map is not fetched again and again for nothing).
    poll: async () => {
      if (gone) return;
      const before = lastSummary;
      await loadSummary();
      const running = summary && (summary.runs || []).some((r) => r.status === 'running');
      if (!running && before === lastSummary && lastSteps) return;
      await Promise.all([loadSteps(), loadRecords(), loadManifest()]);
      if (running ? ++polls % 5 === 0 : before !== lastSummary) {
        curvesSection(curvesBox, summary, true);
        deltasSection(deltasBox, summary, true);
      }
    },
    destroy: () => { gone = true; },
  };
}

/* groupRanks(diffs) - one row per key and set of values, naming the ranks where they differ that way. */
function groupRanks(diffs) {
  const rows = new Map();
  for (const x of diffs) {
    const k = x.key + '\u0000' + JSON.stringify(x.byRun);
    const row = rows.get(k) || { key: x.key, byRun: x.byRun, ranks: [], class: x.class, change: x.change };
    if (Array.isArray(x.ranks)) row.ranks.push(...x.ranks); else if (x.rank !== null && x.rank !== undefined) row.ranks.push(x.rank);
    rows.set(k, row);
  }
  for (const row of rows.values()) row.rankText = row.ranks.length ? rangeText(row.ranks.sort((a, b) => a - b)) : 'run';
  return [...rows.values()].sort((a, b) => a.key.localeCompare(b.key) || (a.ranks[0] || 0) - (b.ranks[0] || 0));
}

/* rangeText([0,1,2,5]) - "0–2, 5". */
function rangeText(ns) {
  const out = [];
  for (let i = 0; i < ns.length; i++) {
    let j = i;
    while (j + 1 < ns.length && ns[j + 1] === ns[j] + 1) j++;
    out.push(j > i ? `${ns[i]}–${ns[j]}` : String(ns[i]));
    i = j;
  }
  return out.join(', ');
}

/* byRun(values) - manifest-diff values [{run_id, value}] as {run_id: value}. */
function byRun(values) {
  return Object.fromEntries(values.map((v) => [v.run_id, v.value]));
}

function intOr(v) {
  if (v === null || v === undefined || v === '') return null;
  const n = parseInt(v, 10);
  return Number.isFinite(n) ? n : null;
}

/* classificationLine(c) - what the fleet concluded (hardware or software) in a dozen words, and why, as lockstepd says
 * it (GET /twins/G's "classification"; null until the group is evaluated, class "none" when it matched). */
function classificationLine(c) {
  if (!c || c.class === 'none') return null;
  return h('p', { class: 'classification-line', 'data-section': 'classification' },
    h('span', { class: `classification classification-${c.class}`, 'data-field': 'class', 'data-class': c.class },
      c.summary || c.class),
    ' — ', h('span', { 'data-field': 'classification-reason' }, c.reason));
}

/* absorbedLine(a) - collectives whose inputs differed on some ranks while their outputs matched (GET /twins/G's
 * "absorbed": count and the first one), null when none. No evidence, but worth a look. */
function absorbedLine(a) {
  if (!a || !a.count) return null;
  const f = a.first || {};
  return h('p', { class: 'sub', 'data-section': 'absorbed' }, 'Absorbed: ',
    h('strong', { 'data-field': 'absorbed-count' }, String(a.count)),
    a.count === 1 ? " collective's inputs differed on some ranks while its outputs matched; first at step "
      : " collectives' inputs differed on some ranks while their outputs matched; first at step ",
    h('strong', null, String(f.step)), ', rank ', h('strong', { 'data-field': 'absorbed-rank' }, String(f.rank)),
    f.name ? [': ', h('code', null, f.name), ` (occurrence ${f.occurrence})`] : null,
    f.site ? [' at ', h('code', { 'data-field': 'absorbed-site' }, f.site)] : null,
    '. No hardware evidence: a fault and a value read from outside look alike there (lockstep narrow tells them apart).');
}

/* suspectedLine(list) - the hardware the group's evidence holds involved (GET /twins/G's "suspected"). */
function suspectedLine(list) {
  if (!list || !list.length) return null;
  return h('p', { class: 'sub', 'data-section': 'suspected' }, 'Suspected hardware: ', suspectedItems(list));
}


/* statusSentence(d, n) - the group's runs and why it has its status, in lockstepd's words (status_reason). */
function statusSentence(d, n) {
  return `${n} run${n === 1 ? '' : 's'}` + (d.status_reason ? `: ${d.status_reason}.` : '.');
}
