// compare.js - the Compare page: a change (CHANGED) against its baseline (BASE) over the run-to-run noise band of
// replicas (NOISE): verdicts, the first effect and its records, per metric the curves over the shaded band. Every
// number, band and verdict comes from GET /api/v1/compare (lockstepd's rule, docs/compare.md); nothing is judged here.
import { h, link } from '../dom.js';
import { apiGet } from '../api.js';
import { card, table, emptyState, errorBox, replace } from '../components.js';
import { shortId, fmtFp, fmtValue, fmtCount } from '../format.js';
import { recordsSection } from './records.js';
import { alpha, color, palette } from '../theme.js';
import { drawPlot, logAxis, markStep, STEP_INCRS } from '../plot.js';

const VERDICT_CLASS = { 'beyond-noise': 'bad', differs: 'warn', undetermined: 'warn', 'within-noise': 'ok', identical: 'ok' };

export function title() { return 'Compare'; }

/* verdictBadge(v) - a pill coloured by what the verdict means for the change. */
export function verdictBadge(v) {
  return h('span', { class: `badge badge-${VERDICT_CLASS[v] || 'neutral'}`, 'data-verdict': v || '' }, v || 'unknown');
}

/* mount(el, [], query, navigate) - query: base, changed, noise (twin groups or run ids, comma-separated), rank,
 * from, to, alpha; step and rrank open the records of the first effect's runs at that step and rank. */
export async function mount(el, params, query, navigate) {
  const q = Object.fromEntries(['base', 'changed', 'noise', 'rank', 'from', 'to', 'alpha'].map((k) => [k, query.get(k) || '']));
  const sel = { step: intOr(query.get('step')), rank: intOr(query.get('rrank')) };
  const go = (extra) => navigate('/compare', { ...q, ...extra });

  const head = h('div', { class: 'page-head' });
  const verdictBox = h('div', { 'data-section': 'verdict' });
  const firstBox = h('div', { 'data-section': 'first-effect' });
  const recBox = h('div', { id: 'records', 'data-section': 'records' });
  const metricsBox = h('div', { 'data-section': 'metrics' });
  const chartsBox = h('div', { 'data-section': 'curves' });
  el.append(head, form(q, go), verdictBox, firstBox, recBox, metricsBox, chartsBox);
  replace(head, h('div', { class: 'crumbs' }, h('a', { href: '#/runs' }, 'Runs'), ' / Compare'), h('h1', null, 'Compare'));

  if (!q.base || !q.changed) {
    replace(verdictBox, card('Compare a change against run-to-run noise', emptyState('Name a baseline and a change.',
      'BASE is a deterministic twin group (or run id), CHANGED the run(s) with the change, NOISE replicas of the baseline with ' +
      'nondeterminism on. lockstep twin -n 2 --change ARG --noise 4 --noise-arg --nondeterministic -- sbatch … launches all three; ' +
      'a twin group page links here.')));
    return {};
  }

  let last = '', data = null, gone = false, records = null;
  async function load() {
    let d;
    try {
      d = await apiGet('/compare', { base: q.base, changed: q.changed, noise: q.noise, rank: q.rank, from: q.from, to: q.to, alpha: q.alpha });
    } catch (e) {
      last = '';
      replace(verdictBox, card('Verdict', errorBox(e, 'The comparison could not be made')));
      replace(firstBox); replace(metricsBox); replace(chartsBox); replace(recBox);
      return;
    }
    const key = JSON.stringify(d);
    if (key === last) return;
    last = key;
    data = d;
    renderHead(d);
    renderVerdict(d);
    renderFirst(d);
    renderMetrics(d);
    renderCharts(d);
    await loadRecords();
  }

  function renderHead(d) {
    const setLink = (s) => (s.runs.length === 1 && s.ref === s.runs[0] ? link('/runs/' + encodeURIComponent(s.ref), h('code', null, shortId(s.ref)))
      : s.ref.split(',').map((g, i) => [i ? ', ' : '', link('/twins/' + encodeURIComponent(g), h('span', { class: 'group-name' }, g))]));
    const n = (s) => `${s.runs.length} run${s.runs.length === 1 ? '' : 's'}`;
    replace(head, h('div', { class: 'crumbs' }, h('a', { href: '#/runs' }, 'Runs'), ' / Compare'),
      h('h1', null, 'Compare ', verdictBadge(d.verdict)),
      h('p', { class: 'sub' }, 'BASE ', setLink(d.base), ` (${n(d.base)}${d.base.identical === true ? ', bit-identical' : d.base.identical === false ? ', not bit-identical' : d.base.status ? ', ' + d.base.status : ''}) · CHANGED `,
        setLink(d.changed), ` (${n(d.changed)}) · NOISE `, d.noise ? [setLink(d.noise), ` (${d.noise.runs.length} replicas)`] : 'none',
        ` — rank ${d.rank}, steps ${d.from ?? '?'}–${d.to ?? '?'}.`));
  }

  function renderVerdict(d) {
    const rule = d.rule || {};
    replace(verdictBox, h('section', { class: 'card ' + (d.verdict === 'beyond-noise' ? 'card-alert' : '') },
      h('h2', null, 'Verdict'),
      h('p', { class: 'verdict-line' }, verdictBadge(d.verdict), ' ', h('span', { 'data-field': 'verdict-text' }, verdictSentence(d))),
      d.noise ? h('p', { class: 'sub' }, `Each metric is judged at ${fmtNum(rule.alpha_per_judgement)} (alpha ${rule.alpha} over ${rule.judgements} judgements): ` +
        'a score is the root mean square over the steps of a run\'s deviation from BASE in units of the noise; the threshold is the upper ' +
        'prediction bound for the score of one more noise replica (docs/compare.md).') : null,
      (d.notes || []).length ? h('ul', { class: 'notes' }, d.notes.map((n) => h('li', null, n))) : null,
      // One comparison reads a bounded number of points: the rest of the steps is the next request.
      d.next_from !== null && d.next_from !== undefined ? h('p', null, h('a', { class: 'btn', 'data-action': 'next-steps',
        href: '#/compare?' + new URLSearchParams({ ...clean(q), from: d.next_from }) }, `Compare the steps from ${d.next_from}`)) : null));
  }

  function renderFirst(d) {
    const fe = d.first_effect;
    if (!fe) {
      replace(firstBox, card('First effect', emptyState('No record of CHANGED differs from BASE.',
        'Every record of every rank has the same bits over the steps compared.')));
      return;
    }
    const kinds = { content: 'contents differ', dtype: 'element types differ', shape: 'shapes differ', missing: 'CHANGED lacks it', extra: 'BASE lacks it' };
    const rows = [['BASE', fe.base], ['CHANGED', fe.changed]].map(([who, c]) => ({ who, c }));
    const href = '#/compare?' + new URLSearchParams({ ...clean(q), step: fe.step, rrank: fe.rank });
    replace(firstBox, h('section', { class: 'card card-alert' },
      h('h2', null, 'First effect'),
      h('p', { class: 'divergence-line' }, 'Step ', h('strong', { 'data-field': 'step' }, String(fe.step)),
        ', rank ', h('strong', { 'data-field': 'rank' }, String(fe.rank)),
        ', record ', h('code', { 'data-field': 'name' }, fe.name), fe.occurrence ? ` (occurrence ${fe.occurrence})` : '',
        `, seq ${fe.seq}: ${kinds[fe.kind] || fe.kind}.`),
      fe.cause ? h('p', { class: 'divergence-cause' }, 'Cause: ', h('strong', { 'data-field': 'cause' }, fe.cause),
        fe.origin_ranks && fe.origin_ranks.length ? [' on rank', fe.origin_ranks.length > 1 ? 's ' : ' ',
          h('strong', { 'data-field': 'origin' }, fe.origin_ranks.join(', '))] : null,
        ' — ', fe.cause_detail || '', fe.thin_evidence ? ' (the records cannot tell more)' : '') : null,
      fe.configuration ? h('p', { class: 'sub', 'data-field': 'configuration' }, 'Configuration: ', fe.configuration) : null,
      h('p', { class: 'sub' }, 'Call site: ', fe.site && fe.site.text ? h('code', { 'data-field': 'call-site' }, fe.site.text)
        : h('span', { 'data-field': 'call-site' }, 'not recorded by this program'),
        (fe.ranks || []).length > 1 ? `. Ranks that depart at this step: ${fe.ranks.join(', ')}.` : '.'),
      table([
        { key: 'who', label: '' },
        { key: 'run', label: 'Run', render: (r) => (r.c ? link('/runs/' + encodeURIComponent(r.c.run_id), h('code', null, shortId(r.c.run_id))) : '—') },
        { key: 'fp', label: 'Fingerprint', render: (r) => (r.c ? h('code', null, fmtFp(r.c.fp)) : h('em', { class: 'missing' }, 'missing')) },
        { key: 'value', label: 'Value', num: true, render: (r) => (r.c && r.c.value_bits !== undefined ? h('code', null, fmtValue(r.c.value)) : '—') },
        { key: 'ulp', label: 'ULP distance', num: true, render: (r) => (r.who === 'CHANGED' && fe.ulp !== null && fe.ulp !== undefined ? fmtCount(fe.ulp) : '—') },
      ], rows, { compact: true, rowAttrs: (r) => ({ 'data-who': r.who }) }),
      h('p', null, h('a', { class: 'btn btn-primary', 'data-action': 'show-first-effect', href }, `Show every record at step ${fe.step}, rank ${fe.rank}`))));
  }

  async function loadRecords() {
    const fe = data && data.first_effect;
    if (sel.step === null || !fe || !fe.base || !fe.changed) {
      replace(recBox);
      return;
    }
    if (!records) {
      records = recordsSection(recBox, (s) => apiGet('/compare/records', {
        base: fe.base.run_id, changed: fe.changed.run_id, rank: s.rank === null ? fe.rank : s.rank, step: s.step, limit: 10000 }));
    }
    await records.show(null, { step: sel.step, rank: sel.rank === null ? fe.rank : sel.rank });
  }

  function renderMetrics(d) {
    const noise = !!d.noise;
    const cols = [
      { key: 'name', label: 'Metric', render: (m) => h('code', null, m.name) },
      { key: 'verdict', label: 'Verdict', render: (m) => verdictBadge(m.verdict) },
    ];
    if (noise) {
      cols.push({ key: 'score', label: 'Score', num: true, render: (m) => fmtNum(m.score) },
        { key: 'threshold', label: 'Threshold', num: true, render: (m) => fmtNum(m.threshold) },
        { key: 'ratio', label: 'Score / threshold', num: true, render: (m) => fmtNum(m.ratio) });
    }
    cols.push({ key: 'first_step_differs', label: 'First difference', num: true, render: (m) => m.first_step_differs ?? '—' });
    if (noise) cols.push({ key: 'first_step_beyond', label: 'Leaves the band at', num: true, render: (m) => m.first_step_beyond ?? '—' });
    cols.push({ key: 'max_abs_deviation', label: 'Max |deviation|', num: true, render: (m) => fmtNum(m.max_abs_deviation) },
      { key: 'max_rel_deviation', label: 'Max relative', num: true, render: (m) => fmtNum(m.max_rel_deviation) });
    replace(metricsBox, card('Metrics', h('p', { class: 'sub' },
      `Every scalar metric the runs share, on rank ${d.rank}${d.changed.runs.length > 1 ? '; the row shows the changed run furthest from BASE' : ''}.`),
    table(cols, d.metrics || [], { compact: true, rowAttrs: (m) => ({ 'data-metric': m.name, 'data-verdict': m.verdict }) })));
  }

  function renderCharts(d) {
    const cards = (d.metrics || []).filter((m) => m.series).map((m) => {
      const s = m.series;
      const fe = d.first_effect;
      return h('section', { class: 'card', 'data-curves': m.name },
        h('h2', null, m.name, ' ', verdictBadge(m.verdict)),
        h('div', { class: 'charts' },
          valuesChart(m.name, s, d, fe ? m.first_step_differs : null),
          deviationChart(m.name, s)));
    });
    replace(chartsBox, ...(cards.length ? cards : [card('Curves', emptyState('No curves.', 'The comparison holds no metric series.'))]));
  }

  await load();
  if (sel.step !== null) requestAnimationFrame(() => { if (!gone) recBox.scrollIntoView({ block: 'start' }); });
  return {
    // Runs still running change the answer; once every run has ended it stays as it is.
    poll: async () => { if (!gone && (!data || data.running)) await load(); },
    destroy: () => { gone = true; },
  };
}

/* form(q, go) - the three sets and the rank, editable. */
function form(q, go) {
  const field = (name, label, width) => h('label', { class: 'field' }, h('span', null, label),
    h('input', { name, value: q[name], style: width ? { width } : null, placeholder: name === 'noise' ? 'optional' : name === 'rank' ? '0' : 'group or run id' }));
  return h('form', { class: 'filters compare-form', onsubmit: (e) => {
    e.preventDefault();
    const f = e.target.elements;
    go({ base: f.base.value.trim(), changed: f.changed.value.trim(), noise: f.noise.value.trim(), rank: f.rank.value.trim(), step: null, rrank: null });
  } }, field('base', 'BASE', '200px'), field('changed', 'CHANGED', '200px'), field('noise', 'NOISE', '200px'), field('rank', 'Rank', '70px'),
  h('div', { class: 'filter-actions' }, h('button', { type: 'submit', class: 'btn btn-primary' }, 'Compare')));
}

/* valuesChart - BASE and each changed run, with the band (BASE ± threshold × scale, from lockstepd) shaded and
 * the noise replicas' range dotted. */
function valuesChart(name, s, d, mark) {
  const band = s.band;
  const base = s.base;
  const data = [s.steps, base];
  const [baseColor, ...changed] = palette();
  const series = [{ label: 'step' }, { label: 'BASE', stroke: baseColor, width: 1.5 }];
  const bands = [];
  if (band) {
    data.push(base.map((b, i) => (b === null || band[i] === null ? null : b + band[i])),
      base.map((b, i) => (b === null || band[i] === null ? null : b - band[i])), s.noise_max, s.noise_min);
    series.push({ label: 'band top', stroke: alpha(baseColor, 0.25), width: 1 }, { label: 'band bottom', stroke: alpha(baseColor, 0.25), width: 1 },
      { label: 'noise max', stroke: color('faint'), width: 1, dash: [2, 3] }, { label: 'noise min', stroke: color('faint'), width: 1, dash: [2, 3] });
    bands.push({ series: [2, 3], fill: alpha(baseColor, 0.15) });
  }
  s.changed.forEach((c, i) => {
    data.push(c.values);
    series.push({ label: 'CHANGED ' + shortId(c.run_id), stroke: changed[i % changed.length], width: 1.5, dash: [6, 3] });
  });
  return plot(`${name}: BASE and CHANGED${band ? ' over the noise band' : ''}`, data, series, { bands, mark, kind: 'values' });
}

/* deviationChart - |CHANGED − BASE| per step against the band's half-width, on a log scale (zero: no point). */
function deviationChart(name, s) {
  const data = [s.steps];
  const series = [{ label: 'step' }];
  const [baseColor, ...changed] = palette();
  if (s.band) {
    data.push(s.band.map((x) => (x > 0 ? x : null)));
    series.push({ label: 'noise band', stroke: alpha(baseColor, 0.6), width: 1, fill: alpha(baseColor, 0.12) });
  }
  s.changed.forEach((c, i) => {
    data.push(c.deviation.map((x) => (x === null || x === 0 ? null : Math.abs(x))));
    series.push({ label: '|CHANGED − BASE| ' + shortId(c.run_id), stroke: changed[i % changed.length], width: 1.5 });
  });
  const any = data.slice(1).some((a) => a.some((x) => x !== null));
  if (!any) return h('div', { class: 'chart empty-hint', 'data-chart': name + ' deviation' }, 'CHANGED equals BASE at every step: no deviation to draw.');
  return plot(`${name}: |CHANGED − BASE| against the band (log scale)`, data, series, { log: true, kind: 'deviation' });
}

function plot(heading, data, series, opts) {
  const wrap = h('div', { class: 'chart', 'data-chart': heading, 'data-kind': opts.kind });
  const uopts = {
    title: heading, width: 540, height: 250, plugins: [markStep(opts.mark)], bands: opts.bands || [],
    scales: { x: { time: false }, y: opts.log ? { distr: 3 } : {} },
    axes: [{ label: 'step', incrs: STEP_INCRS }, opts.log ? { ...logAxis(), size: 80 }
      : { size: 80, values: (u, vals) => vals.map((v) => fmtNum(v)) }],
    series: series.map((s, i) => (i === 0 ? s : { spanGaps: !opts.log, ...s, value: (u, v) => (v === null || v === undefined ? '—' : String(v)) })),
  };
  drawPlot(wrap, uopts, data);
  return wrap;
}

function verdictSentence(d) {
  const k = d.noise ? d.noise.runs.length : 0;
  switch (d.verdict) {
  case 'identical': return 'CHANGED is bit-identical to BASE: the change has no numerical effect on the steps compared.';
  case 'within-noise': return `CHANGED differs from BASE, but by no more than the run-to-run noise of ${k} replicas.`;
  case 'beyond-noise': return `CHANGED moves ${(d.metrics || []).filter((m) => m.verdict === 'beyond-noise').map((m) => m.name).join(', ')} beyond the run-to-run noise of ${k} replicas.`;
  case 'differs': return 'CHANGED is not bit-identical to BASE; without noise replicas, whether that is more than run-to-run noise cannot be said.';
  default: return 'No step has a finite baseline and finite replicas to judge the difference against.';
  }
}

/* fmtNum(x) - a short number for tables and axes: 4 significant digits, exponents for the very small or large. */
export function fmtNum(x) {
  if (x === null || x === undefined) return '—';
  if (typeof x !== 'number') return String(x);
  if (x === 0) return '0';
  const a = Math.abs(x);
  return a >= 1e-3 && a < 1e6 ? String(Number(x.toPrecision(4))) : x.toExponential(2);
}

function clean(q) {
  return Object.fromEntries(Object.entries(q).filter(([, v]) => v !== ''));
}

function intOr(v) {
  if (v === null || v === undefined || v === '') return null;
  const n = parseInt(v, 10);
  return Number.isFinite(n) ? n : null;
}

/* compareSection(box, group) - on a twin group page: compare this group (as BASE) with a change, over noise
 * replicas; when `lockstep twin --noise` made GROUP.change and GROUP.noise, a direct link to that comparison. */
export async function compareSection(box, group) {
  const exists = async (g) => {
    try {
      const r = await apiGet('/runs', { group: g, limit: 1 });
      return (r.items || []).length > 0;
    } catch (e) {
      return false;
    }
  };
  const [hasChange, hasNoise] = await Promise.all([exists(group + '.change'), exists(group + '.noise')]);
  const href = (changed, noise) => '#/compare?' + new URLSearchParams(clean({ base: group, changed, noise }));
  const input = (name, value) => h('input', { name, value, placeholder: name === 'noise' ? 'optional' : 'twin group or run id', style: { width: '200px' } });
  replace(box, card('Compare a change with this group',
    h('p', { class: 'sub' }, 'Take this group as the deterministic baseline (BASE) and judge a change (CHANGED) against the run-to-run noise of replicas (NOISE).'),
    hasChange ? h('p', null, h('a', { class: 'btn btn-primary', 'data-action': 'compare-experiment', href: href(group + '.change', hasNoise ? group + '.noise' : '') },
      `Compare ${group}.change with ${group}${hasNoise ? ` over the noise of ${group}.noise` : ''}`)) : null,
    h('form', { class: 'filters', 'data-action': 'compare-form', onsubmit: (e) => {
      e.preventDefault();
      const f = e.target.elements;
      location.hash = href(f.changed.value.trim(), f.noise.value.trim());
    } }, h('label', { class: 'field' }, h('span', null, 'CHANGED'), input('changed', hasChange ? group + '.change' : '')),
    h('label', { class: 'field' }, h('span', null, 'NOISE'), input('noise', hasNoise ? group + '.noise' : '')),
    h('div', { class: 'filter-actions' }, h('button', { type: 'submit', class: 'btn' }, 'Compare')))));
}

