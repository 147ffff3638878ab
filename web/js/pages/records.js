// records.js - the records of every run of a twin group at one step and rank, fingerprints and values side by side.
import { h } from '../dom.js';
import { apiGet } from '../api.js';
import { badge, card, table, emptyState, errorBox, replace } from '../components.js';
import { shortId, fmtFp, fmtValue, ulpOf } from '../format.js';

/* recordsSection(box) - owns `box`; show(summary, sel) fetches GET /api/v1/runs/{id}/records?rank=&step=
 * for each run of the group and renders one row per (name, occurrence), re-rendering only on change. */
export function recordsSection(box) {
  let last = '';
  async function show(summary, sel) {
    if (sel.step === null || sel.rank === null) {
      if (last !== 'none') replace(box, card('Records', emptyState('No step and rank chosen.',
        'Click a cell of the match map, or "Show every record" under the first divergence, to compare the records of every run there.')));
      last = 'none';
      return;
    }
    const runs = (summary && summary.runs || []).filter((r) => sel.rank < (r.ranks || Infinity));
    let answers;
    try {
      answers = await Promise.all(runs.map((r) => apiGet('/runs/' + encodeURIComponent(r.run_id) + '/records',
        { rank: sel.rank, step: sel.step, limit: 10000 })));
    } catch (e) {
      last = '';
      replace(box, card(`Records at step ${sel.step}, rank ${sel.rank}`, errorBox(e, 'The records could not be loaded')));
      return;
    }
    const key = JSON.stringify(answers) + JSON.stringify(sel);
    if (key === last) return;
    last = key;
    render(box, sel, runs, answers, summary.first_divergence);
  }
  return { show };
}

function render(box, sel, runs, answers, fd) {
  const title = `Records at step ${sel.step}, rank ${sel.rank}`;
  const ids = runs.map((r) => r.run_id);
  const rows = merge(ids, answers.map((a) => a.records || []));
  if (!rows.length) {
    replace(box, card(title, emptyState('No run has records at this step and rank.',
      'The runs have not reached this step yet, or nothing is traced here (LOCKSTEP_TRACE). Pick another cell of the match map.')));
    return;
  }
  const odd = fd && fd.odd_run_id;
  const ref = ids.find((id) => id !== odd) || ids[0];
  const cols = [
    { key: 'seq', label: 'Seq', num: true },
    { key: 'name', label: 'Record', render: (r) => [h('code', null, r.name), r.occ ? h('span', { class: 'occ', title: 'occurrence within the step' }, ` #${r.occ}`) : null,
      h('div', { class: 'rec-kind' }, `${r.level || ''} · ${r.dtype || ''}${r.shape && r.shape.length ? ` [${r.shape.join('×')}]` : ''}`),
      evidence(r, ids)] },
    { key: 'status', label: 'Status', render: (r) => badge(r.status) },
  ];
  ids.forEach((id) => {
    cols.push({ key: 'fp:' + id, label: `Fingerprint ${shortId(id)}`, render: (r) => fpCell(r, id, ref) });
  });
  const scalar = rows.some((r) => ids.some((id) => r.cells[id] && r.cells[id].value !== undefined));
  if (scalar) {
    ids.forEach((id) => cols.push({ key: 'v:' + id, label: `Value ${shortId(id)}`, num: true,
      render: (r) => (r.cells[id] && r.cells[id].value !== undefined ? h('code', null, fmtValue(r.cells[id].value)) : '—') }));
    cols.push({ key: 'ulp', label: 'ULP distance', num: true, render: (r) => ulpText(r, ids, ref) });
  }
  const counts = rows.reduce((a, r) => ((a[r.status] = (a[r.status] || 0) + 1), a), {});
  replace(box, card(title,
    h('p', { class: 'sub' }, `${rows.length} records in sequence order: ${Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(', ')}.` +
      (ids.length > 2 ? ` Differences are shown against run ${shortId(ref)}.` : '')),
    table(cols, rows, { compact: true, cls: 'records', rowAttrs: (r) => ({ 'data-record': r.name, 'data-occ': r.occ, 'data-status': r.status,
      class: r.status === 'diverged' ? 'row-bad' : r.status === 'missing' ? 'row-warn' : null }) })));
}

/* merge(ids, lists) - one row per (name, occ) across runs: {seq, name, occ, level, dtype, shape, status, cells: {run_id: record}}. */
export function merge(ids, lists) {
  const rows = new Map();
  lists.forEach((recs, i) => {
    for (const r of recs) {
      const k = r.name + '\u0000' + r.occ;
      let row = rows.get(k);
      if (!row) {
        row = { seq: r.seq, name: r.name, occ: r.occ, level: r.level, dtype: r.dtype, shape: r.shape, cells: {} };
        rows.set(k, row);
      }
      row.seq = Math.min(row.seq, r.seq);
      row.cells[ids[i]] = r;
    }
  });
  for (const row of rows.values()) {
    const present = ids.filter((id) => row.cells[id]);
    const fps = new Set(present.map((id) => row.cells[id].fp));
    row.status = present.length < ids.length ? 'missing' : fps.size > 1 ? 'diverged' : 'match';
  }
  return [...rows.values()].sort((a, b) => a.seq - b.seq || a.name.localeCompare(b.name) || a.occ - b.occ);
}

/* evidence(row, ids) - what the record's input fingerprints and 1 MiB chunk partials say: a record that
 * differs while its inputs matched is where the divergence arose; the first differing chunk locates it. */
function evidence(r, ids) {
  const cells = ids.map((id) => r.cells[id]).filter(Boolean);
  const notes = [];
  if (cells.length >= 2 && cells.every((c) => Array.isArray(c.inputs) && c.inputs.length)) {
    const same = cells.every((c) => JSON.stringify(c.inputs) === JSON.stringify(cells[0].inputs));
    notes.push(h('span', { class: 'ev ' + (same ? (r.status === 'diverged' ? 'ev-origin' : 'ev-ok') : 'ev-bad'), 'data-ev': 'inputs' },
      same ? (r.status === 'diverged' ? 'inputs matched: it diverged here' : 'inputs match') : 'inputs differ'));
  }
  if (r.status === 'diverged' && cells.length >= 2 && cells.every((c) => Array.isArray(c.chunks) && c.chunks.length)) {
    const n = Math.max(...cells.map((c) => c.chunks.length));
    let first = -1;
    for (let k = 0; k < n && first < 0; k++) if (cells.some((c) => c.chunks[k] !== cells[0].chunks[k])) first = k;
    if (first >= 0) notes.push(h('span', { class: 'ev ev-bad', 'data-ev': 'chunk' }, `first difference in MiB ${first} of ${n}`));
  }
  return notes.length ? h('div', { class: 'ev-line' }, notes) : null;
}

function fpCell(r, id, ref) {
  const c = r.cells[id];
  if (!c) return h('em', { class: 'missing' }, 'missing');
  const base = r.cells[ref];
  return h('code', { class: base && base.fp !== c.fp ? 'fp-diff' : null, title: c.fp }, fmtFp(c.fp));
}

function ulpText(r, ids, ref) {
  const base = r.cells[ref];
  if (!base || base.value === undefined) return '—';
  let max = null;
  for (const id of ids) {
    if (id === ref || !r.cells[id]) continue;
    const u = ulpOf(base, r.cells[id], r.dtype);
    if (u !== null && (max === null || u > max)) max = u;
  }
  return max === null ? '—' : max.toLocaleString('en-US');
}
