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
