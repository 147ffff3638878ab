// strip.js - the front page's chart strip: incidents per day by the fleet's classification, and the nodes that are open
// suspects (suspect or drained) per day, over the last two weeks (GET /api/v1/fleet/timeline: lockstepd counts, the page
// draws).
import { h } from '../dom.js';
import { apiGet } from '../api.js';
import { card, errorBox, replace } from '../components.js';
import { fmtCount } from '../format.js';
import { alpha, color } from '../theme.js';
import { drawPlot } from '../plot.js';

const DAYS = 14;

/* The stacks, bottom first: the bucket field, its label, its colour (app.css). */
const INCIDENTS = [['hardware', 'hardware', 'bad'], ['software', 'software', 'warn'], ['unclassified', 'not classified yet', 'faint']];
const SUSPECTS = [['suspect', 'suspect', 'bad'], ['drained', 'drained', 'warn']];

/* chartStrip(box) - {load()}: (re)draw the strip in `box` from lockstepd's timeline when it changed. */
export function chartStrip(box) {
  let last = '';
  return {
    async load() {
      let d;
      try {
        d = await apiGet('/fleet/timeline', { days: DAYS });
      } catch (e) {
        last = '';
        replace(box, e.missingEndpoint ? null : card('At a glance', errorBox(e, 'The charts could not be loaded')));
        return;
      }
      const key = JSON.stringify(d);
      if (key === last) return;
      last = key;
      const b = d.buckets || [];
      replace(box, h('section', { class: 'card strip' },
        h('h2', null, `At a glance · the last ${b.length} days`),
        h('div', { class: 'charts' },
          stackChart('incidents', 'Incidents per day, by classification', b, INCIDENTS),
          stackChart('suspects', 'Open suspects (nodes) at each day\'s end', b, SUSPECTS)),
        d.other_kinds ? h('p', { class: 'sub', 'data-field': 'other-kinds' },
          `Not counted: ${fmtCount(d.other_kinds)} replay, noise or experiment group${d.other_kinds === 1 ? '' : 's'} that diverged.`) : null));
    },
  };
}

/* stackChart(name, title, buckets, stacks) - stacked bars of the buckets' `stacks` fields by day, and a legend with
 * each field's total over the window (or, for the suspects, its count today). */
function stackChart(name, title, buckets, stacks) {
  const xs = buckets.map((_, i) => i);
  const cols = stacks.map(([k]) => buckets.map((x) => Number(x[k]) || 0));
  // uPlot draws series in order: the tallest stack (every field summed) first, each lower part over it.
  const sums = stacks.map((_stack, i) => xs.map((_x, d) => cols.slice(0, i + 1).reduce((n, c) => n + c[d], 0)));
  const top = Math.max(1, ...sums[sums.length - 1]);
  const wrap = h('div', { class: 'chart', 'data-chart': name });
  const today = name === 'suspects';
  const legend = h('div', { class: 'legend', 'data-legend': name }, stacks.map(([k, label, c], i) => h('span', { class: 'legend-item' },
    h('span', { class: 'swatch', style: { background: color(c) } }), `${label} `,
    h('strong', { 'data-count': k }, fmtCount(today ? cols[i][cols[i].length - 1] || 0 : cols[i].reduce((n, v) => n + v, 0))))));
  const box = h('div', { class: 'strip-chart' }, h('div', { class: 'strip-title' }, title), wrap, legend);
  if (typeof window.uPlot !== 'function') {
    drawPlot(wrap, {}, []);   // the note that the chart library is missing
    return box;
  }
  const bars = window.uPlot.paths && window.uPlot.paths.bars ? window.uPlot.paths.bars({ size: [0.7, 28] }) : undefined;
  const series = [{}];
  for (let i = stacks.length - 1; i >= 0; i--) {
    const c = color(stacks[i][2]);
    series.push({ label: stacks[i][1], paths: bars, fill: alpha(c, 0.75), stroke: c, points: { show: false },
      value: (u, v, si, di) => (di === null || di === undefined ? '—' : String(cols[i][di])) });
  }
  const opts = {
    width: 460, height: 170, legend: { show: false },
    scales: { x: { time: false, range: [-0.5, Math.max(0.5, xs.length - 0.5)] }, y: { range: [0, top + 0.5] } },
    axes: [{ values: (u, vals) => {
      // every day has a tick; on a narrow chart only every few days (today always) are named
      const every = Math.max(1, Math.ceil(xs.length * 44 * devicePixelRatio / Math.max(1, u.bbox.width)));
      return vals.map((v) => (Number.isInteger(v) && buckets[v] && (xs.length - 1 - v) % every === 0 ? buckets[v].day.slice(5) : ''));
    }, splits: () => xs, gap: 4 },
      { size: 36, values: (u, vals) => vals.map((v) => (Number.isInteger(v) ? String(v) : '')) }],
    series,
  };
  drawPlot(wrap, opts, [xs, ...stacks.map((_, i) => sums[i]).reverse()]);
  return box;
}
