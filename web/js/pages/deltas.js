// deltas.js - on the twin group page, each run's per-step distance from the majority of the runs (ULP or relative, log
// scale, the first divergence marked): a bit flip that overlaid curves cannot show. Every number is lockstepd's
// (GET /api/v1/twins/{group}/deltas, server/rules/delta.h); nothing is compared here.
import { h } from '../dom.js';
import { apiGet } from '../api.js';
import { card, emptyState, errorBox, replace, loading } from '../components.js';
import { shortId } from '../format.js';
import { palette } from '../theme.js';
import { drawPlot, logAxis, logRange, markStep, STEP_INCRS } from '../plot.js';

const NAMES = ['loss', 'grad_norm'];
const MEASURES = {
  ulp: { label: 'ULP', axis: 'ULP from the majority', what: 'units in the last place' },
  rel: { label: 'Relative', axis: '|x − majority| / |majority|', what: 'relative difference' },
};

/* deltasSection(box, summary, quiet) - fetch rank 0's loss and grad_norm deltas of every run of the group and draw one
 * chart per metric in `box`, ULP by default, relative on the toggle; quiet: keep the current charts until the new ones
 * are ready (a live refresh). */
export async function deltasSection(box, summary, quiet) {
  const title = 'Difference from the majority, per step';
  if (!quiet) replace(box, card(title, loading('Loading the differences…')));
  let d;
  try {
    d = await apiGet('/twins/' + encodeURIComponent(summary.group) + '/deltas', { rank: 0, name: NAMES.join(',') });
  } catch (e) {
    replace(box, card(title, e.missingEndpoint ? emptyState('This lockstepd does not compute per-step differences.',
      'Upgrade lockstepd; the plot fills in by itself.') : errorBox(e, 'The differences could not be loaded')));
    return;
  }
  const series = (d.series || []).filter((s) => s.steps.length);
  if (!series.length) {
    replace(box, card(title, emptyState('No loss or grad_norm records on rank 0 yet.',
      'Record them with ls_metric("loss", x) and ls_metric("grad_norm", x) each step; the differences show up here.')));
    return;
  }
  const fd = summary.first_divergence;
  const outcome = Object.fromEntries((summary.runs || []).map((r) => [r.run_id, r.outcome]));
  let measure = box.dataset.measure || 'ulp';
  const charts = h('div', { class: 'charts' });
  const toggle = h('div', { class: 'seg', role: 'group', 'aria-label': 'Difference measured as' });
  const draw = () => {
    box.dataset.measure = measure;
    for (const b of toggle.children) b.classList.toggle('active', b.dataset.measure === measure);
    replace(charts, ...series.map((s) => deltaChart(s, measure, fd ? fd.step : null, outcome)));
  };
  for (const [k, m] of Object.entries(MEASURES)) {
    toggle.appendChild(h('button', { type: 'button', class: 'seg-item btn-seg', 'data-measure': k,
      onclick: () => { measure = k; draw(); } }, m.label));
  }
  replace(box, card(title,
    h('p', { class: 'sub' }, 'Rank 0: how far each run is from the value most runs hold at each step (of two runs that disagree, ' +
      'from the first), on a log scale — steps where a run agrees have no point. A flipped low bit is 1 ULP here; ' +
      'in the curves above it is invisible.' + (d.truncated ? ` Only the first ${Number(d.limit).toLocaleString('en-US')} points of each run are read.` : '')),
    h('div', { class: 'delta-bar' }, toggle, h('span', { class: 'sub', 'data-field': 'delta-first' }, firstText(series))),
    charts));
  draw();
}

/* firstText(series) - where each metric first differs, as lockstepd says it. */
function firstText(series) {
  return series.map((s) => (s.first_step === null ? `${s.name}: the same bits at every step` : `${s.name} first differs at step ${s.first_step}`)).join('; ') + '.';
}

/* deltaChart(s, measure, mark, outcome) - one metric's differences: a line per run that differs somewhere (zero: no
 * point on a log scale), isolated points drawn as dots so that a one-step flip shows. */
function deltaChart(s, measure, mark, outcome) {
  const lines = palette();
  const name = `${s.name} delta`;
  const ys = s.runs.map((r) => r[measure].map((v) => (typeof v === 'number' && v > 0 ? v : null)));
  const shown = s.runs.map((r, i) => ({ r, i, ys: ys[i] })).filter((x) => x.ys.some((v) => v !== null));
  if (!shown.length) {
    return h('div', { class: 'chart empty-hint', 'data-chart': name, 'data-kind': 'delta', 'data-measure': measure },
      `${s.name}: every run holds the majority's bits at every step — nothing to draw.`);
  }
  const wrap = h('div', { class: 'chart', 'data-chart': name, 'data-kind': 'delta', 'data-measure': measure,
    'data-first-step': s.first_step === null ? '' : String(s.first_step) });
  const isolated = (u, si) => {
    const col = u.data[si], out = [];
    for (let k = 0; k < col.length; k++) if (col[k] !== null && (k === 0 || col[k - 1] === null || k === col.length - 1 || col[k + 1] === null)) out.push(k);
    return out;
  };
  const opts = {
    title: `${s.name}: ${MEASURES[measure].what} from the majority (log scale)`,
    width: 560, height: 240,
    plugins: [markStep(mark, mark === null ? '' : `first divergence (step ${mark})`)],
    scales: { x: { time: false }, y: { distr: 3, range: logRange } },
    axes: [{ label: 'step', incrs: STEP_INCRS }, logAxis(MEASURES[measure].axis)],
    series: [{ label: 'step' }, ...shown.map(({ r, i }) => ({
      label: 'run ' + shortId(r.run_id) + (outcome[r.run_id] === 'odd-one-out' ? ' (odd one out)' : ''),
      stroke: lines[i % lines.length], width: 1.5, spanGaps: false,
      points: { show: true, size: 6, filter: isolated },
      value: (u, v) => (v === null || v === undefined ? '—' : String(v)),
    }))],
  };
  drawPlot(wrap, opts, [s.steps, ...shown.map((x) => x.ys)]);
  wrap.dataset.runs = shown.map((x) => x.r.run_id).join(',');
  return wrap;
}
