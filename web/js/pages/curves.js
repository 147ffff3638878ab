// curves.js - loss / grad-norm curves of every run of a twin group overlaid (uPlot), the divergence step marked.
import { h } from '../dom.js';
import { apiGet } from '../api.js';
import { card, emptyState, errorBox, replace, loading } from '../components.js';
import { shortId } from '../format.js';
import { palette } from '../theme.js';
import { drawPlot, markStep, STEP_INCRS } from '../plot.js';

/* curveChart(title, series, opts) - series: [{label, steps: [], values: []}]; opts.markStep draws a
 * vertical line there; opts.width: the widest it gets, in pixels. Returns an element (a chart, or a note when
 * uPlot is missing). */
export function curveChart(title, series, opts = {}) {
  const wrap = h('div', { class: 'chart', 'data-chart': title });
  const lines = palette();
  const xs = [...new Set(series.flatMap((s) => s.steps))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const data = [xs];
  for (const s of series) {
    const ys = new Array(xs.length).fill(null);
    s.steps.forEach((st, i) => { ys[index.get(st)] = s.values[i]; });
    data.push(ys);
  }
  const uopts = {
    title,
    width: opts.width || 520,
    height: opts.height || 240,
    plugins: [markStep(opts.markStep, opts.markStep === undefined || opts.markStep === null ? '' : `first divergence (step ${opts.markStep})`)],
    scales: { x: { time: false } },
    axes: [{ label: 'step', incrs: STEP_INCRS }, { size: 70 }],
    series: [{ label: 'step' }, ...series.map((s, i) => ({
      label: s.label, stroke: lines[i % lines.length], width: 1.5, spanGaps: true,
      dash: i > 0 ? [8, 3 + i] : undefined,
      value: (u, v) => (v === null || v === undefined ? '—' : String(v)),
    }))],
  };
  drawPlot(wrap, uopts, data);
  return wrap;
}

const CURVE_NAMES = ['loss', 'grad_norm'];
const CURVE_LIMIT = 100000;  // points of rank 0 fetched per run (all curves together)

/* curvesSection(box, summary, quiet) - fetch rank 0's loss and grad_norm of every run of the group (GET
 * /api/v1/runs/{id}/series?rank=0&name=loss,grad_norm: compact step and value arrays) and draw them overlaid
 * in `box`; quiet: keep the current charts on screen until the new ones are ready (a live refresh). */
export async function curvesSection(box, summary, quiet) {
  if (!quiet) replace(box, card('Loss and gradient norm', loading('Loading curves…')));
  const runs = summary.runs || [];
  const fd = summary.first_divergence;
  let answers;
  try {
    answers = await Promise.all(runs.map((r) => apiGet('/runs/' + encodeURIComponent(r.run_id) + '/series',
      { rank: 0, name: CURVE_NAMES.join(','), limit: CURVE_LIMIT })));
  } catch (e) {
    replace(box, card('Loss and gradient norm', errorBox(e, 'The curves could not be loaded')));
    return;
  }
  const charts = [];
  let truncated = false;
  for (const name of CURVE_NAMES) {
    const series = [];
    answers.forEach((a, i) => {
      const all = a.series || [];
      if (all.reduce((n, s) => n + (s.steps || []).length, 0) >= CURVE_LIMIT) truncated = true;
      const s = all.find((x) => x.name === name);
      if (!s) return;
      const steps = [], values = [];
      s.steps.forEach((st, k) => {
        if (typeof s.values[k] === 'number') { steps.push(st); values.push(s.values[k]); }
      });
      if (steps.length) series.push({ label: 'run ' + shortId(runs[i].run_id), steps, values });
    });
    if (series.length) charts.push(curveChart(name, series, { markStep: fd ? fd.step : null, width: 560 }));
  }
  replace(box, card('Loss and gradient norm', charts.length
    ? [h('p', { class: 'sub' }, 'Rank 0 of every run, overlaid' + (fd ? '; the dashed red line is the first divergence.' : '.') +
        (truncated ? ` Only the first ${CURVE_LIMIT.toLocaleString('en-US')} points of each run are read.` : '')),
      h('div', { class: 'charts' }, charts)]
    : emptyState('No loss or grad_norm records on rank 0 yet.',
      'Record them with ls_metric("loss", x) and ls_metric("grad_norm", x) each step; the curves show up here.')));
}
