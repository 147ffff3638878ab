// plot.js - draw a uPlot chart in the dashboard's colours and keep it as wide as its box allows (never wider than
// the screen); every chart of every page goes through here.
import { color } from './theme.js';

/* drawPlot(wrap, opts, data) - create the uPlot chart of `opts` (its width is the widest wanted) and `data` in `wrap`
 * once wrap is in the document: axes, grid and point fills take app.css's colours, the width shrinks to the box
 * wrap sits in and follows it as it resizes. The chart is kept on wrap.__plot. Returns nothing; a missing uPlot
 * (not vendored) leaves a note in wrap instead. */
export function drawPlot(wrap, opts, data) {
  if (typeof window.uPlot !== 'function') {
    wrap.appendChild(Object.assign(document.createElement('div'), { className: 'empty-hint',
      textContent: 'The chart library did not load (vendor/uPlot.iife.min.js); run make to vendor it.' }));
    return;
  }
  const widest = opts.width;
  const ink = color('muted') || '#5d6773', grid = color('grid'), card = color('card');
  const o = {
    ...opts,
    axes: (opts.axes || [{}, {}]).map((a) => ({ stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, ...a })),
    series: opts.series.map((s, i) => (i === 0 ? s : { ...s, points: { fill: card, ...(s.points || {}) } })),
  };
  // uPlot measures the element, so it is made once wrap is in the document.
  requestAnimationFrame(() => {
    if (!wrap.isConnected) return;
    o.width = fit(wrap, widest);
    const u = new window.uPlot(o, data, wrap);
    wrap.__plot = u;
    if (typeof ResizeObserver !== 'function' || !wrap.parentElement) return;
    const box = wrap.parentElement;
    const ro = new ResizeObserver(() => {
      if (!wrap.isConnected) { ro.disconnect(); return; }   // the page moved on
      const w = fit(wrap, widest);
      if (w !== u.width) u.setSize({ width: w, height: u.height });
    });
    ro.observe(box);
  });
}

/* fit(wrap, widest) - the width a chart in wrap may take: the content width of the box around it, at most widest. */
function fit(wrap, widest) {
  const box = wrap.parentElement;
  if (!box) return widest;
  const st = getComputedStyle(box);
  const room = box.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight);
  return Math.max(200, Math.min(widest, Math.floor(room)));
}

/* markStep(step, label) - a uPlot plugin that draws a dashed vertical line at x = step in the divergence colour, with
 * `label` beside it (kept inside the plot) when one is given; nothing when step is null. */
export function markStep(step, label) {
  const markColor = color('divergence');
  return {
    hooks: {
      draw: [(u) => {
        if (step === undefined || step === null) return;
        const x = u.valToPos(step, 'x', true);
        if (!Number.isFinite(x) || x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
        const ctx = u.ctx;
        ctx.save();
        ctx.strokeStyle = markColor;
        ctx.setLineDash([6, 4]);
        ctx.lineWidth = 2 * devicePixelRatio;
        ctx.beginPath();
        ctx.moveTo(x, u.bbox.top);
        ctx.lineTo(x, u.bbox.top + u.bbox.height);
        ctx.stroke();
        if (label) {
          ctx.fillStyle = markColor;
          ctx.font = `${11 * devicePixelRatio}px system-ui, sans-serif`;
          const right = x > u.bbox.left + u.bbox.width * 0.6;   // keep the label inside the plot
          ctx.textAlign = right ? 'right' : 'left';
          ctx.textBaseline = 'alphabetic';
          ctx.fillText(label, x + (right ? -4 : 4) * devicePixelRatio, u.bbox.top + 12 * devicePixelRatio);
        }
        ctx.restore();
      }],
    },
  };
}

/* STEP_INCRS - the step axis's tick spacings (whole steps). */
export const STEP_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000];

/* logAxis() - a log-scale y axis labelled at powers of ten only ("1e-7", "0.01", "100"). */
export function logAxis(label) {
  return {
    label, size: 70, space: 20,
    filter: (u, splits) => splits.map((v) => (isPow10(v) ? v : null)),
    values: (u, vals) => vals.map((v) => (v === null ? '' : v >= 1e-3 && v < 1e4 ? String(v) : '1e' + Math.round(Math.log10(v)))),
  };
}

/* logRange(u, lo, hi) - a log scale's range from the powers of ten around the data (lo and hi may be null). */
export function logRange(u, lo, hi) {
  const a = lo > 0 ? 10 ** Math.floor(Math.log10(lo)) : 1;
  let b = hi > 0 ? 10 ** Math.ceil(Math.log10(hi)) : 10;
  if (b <= a) b = a * 10;
  return [a, b];
}

/* isPow10(v) - v is a power of ten (the ticks a log axis labels and grids). */
export function isPow10(v) {
  if (!(v > 0)) return false;
  const e = Math.round(Math.log10(v));
  return Math.abs(v / 10 ** e - 1) < 1e-9;
}
