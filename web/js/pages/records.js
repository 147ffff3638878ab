// records.js - the records of every run of a twin group at one step and rank, fingerprints and values side by side.
import { h } from '../dom.js';
import { apiGet } from '../api.js';
import { badge, card, table, emptyState, errorBox, replace } from '../components.js';
import { shortId, fmtFp, fmtValue, fmtCount } from '../format.js';

/* recordsSection(box, load) - owns `box`; show(summary, sel) fetches GET /api/v1/twins/{group}/records?rank=&step=
 * (or whatever load(sel) answers in that shape: the compare page's GET /api/v1/compare/records), where lockstepd
 * has lined the runs' records up one row per (name, occurrence) and judged each row with the one rule every
 * program uses (status, kind of difference, ULP distance, inputs, first differing chunk), and renders it,
 * re-rendering only on change. */
export function recordsSection(box, load) {
  let last = '';
  async function show(summary, sel) {
    if (sel.step === null || sel.rank === null) {
      if (last !== 'none') replace(box, card('Records', emptyState('No step and rank chosen.',
        'Click a cell of the match map, or "Show every record" under the first divergence, to compare the records of every run there.')));
      last = 'none';
      return;
    }
    const group = summary && summary.group;
    let answer;
    try {
      answer = load ? await load(sel)
        : await apiGet('/twins/' + encodeURIComponent(group) + '/records', { rank: sel.rank, step: sel.step, limit: 10000 });
    } catch (e) {
      last = '';
      replace(box, card(`Records at step ${sel.step}, rank ${sel.rank}`, errorBox(e, 'The records could not be loaded')));
      return;
    }
    const key = JSON.stringify(answer) + JSON.stringify(sel);
    if (key === last) return;
    last = key;
    render(box, sel, answer);
  }
  return { show };
}

function render(box, sel, answer) {
  const title = `Records at step ${sel.step}, rank ${sel.rank}`;
  const ids = answer.runs || [];
  const rows = answer.items || [];
  if (!rows.length) {
    replace(box, card(title, emptyState('No run has records at this step and rank.',
      'The runs have not reached this step yet, or nothing is traced here (LOCKSTEP_TRACE). Pick another cell of the match map.')));
    return;
  }
  const cols = [
    { key: 'seq', label: 'Seq', num: true },
    { key: 'name', label: 'Record', render: (r) => [h('code', null, r.name), r.occurrence ? h('span', { class: 'occ', title: 'occurrence within the step' }, ` #${r.occurrence}`) : null,
      h('div', { class: 'rec-kind' }, `${r.level || ''} · ${r.dtype || ''}${r.shape && r.shape.length ? ` [${r.shape.join('×')}]` : ''}`),
      evidence(r)] },
    { key: 'status', label: 'Status', render: (r) => badge(r.status) },
  ];
  ids.forEach((id) => {
    cols.push({ key: 'fp:' + id, label: `Fingerprint ${shortId(id)}`, render: (r) => fpCell(r, id) });
  });
  const scalar = rows.some((r) => ids.some((id) => r.cells[id] && r.cells[id].value_bits !== undefined));
  if (scalar) {
    ids.forEach((id) => cols.push({ key: 'v:' + id, label: `Value ${shortId(id)}`, num: true,
      render: (r) => (r.cells[id] && r.cells[id].value_bits !== undefined ? h('code', null, fmtValue(r.cells[id].value)) : '—') }));
    cols.push({ key: 'ulp', label: 'ULP distance', num: true, render: (r) => (r.ulp === null || r.ulp === undefined ? '—' : fmtCount(r.ulp)) });
  }
  const counts = rows.reduce((a, r) => ((a[r.status] = (a[r.status] || 0) + 1), a), {});
  const refs = new Set(rows.map((r) => r.reference));
  replace(box, card(title,
    h('p', { class: 'sub' }, `${answer.total ?? rows.length} records in sequence order: ${Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(', ')}.` +
      (ids.length > 2 && refs.size === 1 ? ` Differences are shown against run ${shortId([...refs][0])}.` : ids.length > 2 ? ' Differences are shown against the run most others agree with.' : '')),
    table(cols, rows, { compact: true, cls: 'records', rowAttrs: (r) => ({ 'data-record': r.name, 'data-occ': r.occurrence, 'data-status': r.status,
      class: r.status === 'diverged' ? 'row-bad' : r.status === 'missing' ? 'row-warn' : null }) })));
}

/* evidence(row) - what lockstepd found in the row's input fingerprints and 1 MiB chunk partials: a record that
 * differs while its inputs matched is where the divergence arose; the first differing chunk locates it. */
function evidence(r) {
  const notes = [];
  if (r.inputs) {
    const same = r.inputs === 'matched';
    notes.push(h('span', { class: 'ev ' + (same ? (r.status === 'diverged' ? 'ev-origin' : 'ev-ok') : 'ev-bad'), 'data-ev': 'inputs' },
      same ? (r.status === 'diverged' ? 'inputs matched: it diverged here' : 'inputs match') : 'inputs differ'));
  }
  if (r.status === 'diverged' && r.first_chunk !== null && r.first_chunk !== undefined) {
    const ref = r.cells[r.reference];
    const n = ref && Array.isArray(ref.chunks) ? ref.chunks.length : null;
    notes.push(h('span', { class: 'ev ev-bad', 'data-ev': 'chunk' }, `first difference in MiB ${r.first_chunk}${n ? ` of ${n}` : ''}`));
  }
  return notes.length ? h('div', { class: 'ev-line' }, notes) : null;
}

function fpCell(r, id) {
  const c = r.cells[id];
  if (!c) return h('em', { class: 'missing' }, 'missing');
  return h('code', { class: c.same === false ? 'fp-diff' : null, title: c.fp }, fmtFp(c.fp));
}
