// matchmap.js - the ranks x steps match map of a twin group, drawn on a canvas, with first divergences marked.
import { h } from '../dom.js';
import { color } from '../theme.js';

const ORDER = ['match', 'diverged', 'missing', 'pending'];

/* cellColors() - each cell status's colour in the current scheme (app.css's --cell-STATUS). */
export function cellColors() {
  return Object.fromEntries(ORDER.map((s) => [s, color('cell-' + s)]));
}

/* normalizeSteps(data) - GET /api/v1/twins/G/steps ({steps: [{step, ranks}]}, where ranks holds each rank's
 * status, null for a rank no run recorded, with ?compact=1, or {rank, status, runs} objects without it) as
 * {cells: [{step, rank, status}], from, to, ranks}. */
export function normalizeSteps(data) {
  let cells = [];
  for (const s of (data && data.steps) || []) {
    s.ranks.forEach((r, i) => {
      if (r === null) return;
      if (typeof r === 'object') cells.push({ step: s.step, rank: r.rank, status: r.status });
      else cells.push({ step: s.step, rank: i, status: r });
    });
  }
  cells = cells.filter((c) => Number.isFinite(Number(c.step)) && Number.isFinite(Number(c.rank)))
    .map((c) => ({ step: Number(c.step), rank: Number(c.rank), status: String(c.status || 'pending') }));
  let from = Infinity, to = -Infinity;
  let maxRank = -1;
  for (const c of cells) {
    if (c.step < from) from = c.step;
    if (c.step > to) to = c.step;
    if (c.rank > maxRank) maxRank = c.rank;
  }
  const nranks = Math.max(maxRank + 1, data && Number.isFinite(data.ranks) ? data.ranks : 0);
  return { cells, from: Number.isFinite(from) ? from : 0, to: Number.isFinite(to) ? to : -1, ranks: nranks };
}

/* matchMap(model, opts) - a canvas map; opts.marks: [{rank, step}] first divergences; opts.selected {step, rank};
 * opts.onPick(step, rank) on click. Returns the wrapper element (legend, counts, canvas). */
export function matchMap(model, opts = {}) {
  const { cells, from, to, ranks } = model;
  const nsteps = Math.max(0, to - from + 1);
  const counts = { match: 0, diverged: 0, missing: 0, pending: 0 };
  for (const c of cells) counts[c.status] = (counts[c.status] || 0) + 1;
  const width = Math.min(1100, Math.max(320, opts.width || 1100)) - 60;
  const cw = Math.max(1, Math.min(28, Math.floor(width / Math.max(1, nsteps))));
  const ch = Math.max(3, Math.min(22, Math.floor(360 / Math.max(1, ranks))));
  const left = 44, top = 4, bottom = 22;
  const W = left + cw * nsteps + 8, H = top + ch * ranks + bottom;
  const canvas = h('canvas', { class: 'matchmap', role: 'img', width: W, height: H,
    'aria-label': `Match map: ${ranks} ranks by steps ${from} to ${to}; ${counts.diverged} diverged, ${counts.missing} missing, ${counts.pending} pending`,
    'data-from': from, 'data-to': to, 'data-ranks': ranks, 'data-cell-w': cw, 'data-cell-h': ch,
    'data-left': left, 'data-top': top });
  canvas.style.width = W + 'px';
  canvas.style.height = H + 'px';
  const ctx = canvas.getContext('2d');
  const cellColor = cellColors();
  ctx.fillStyle = color('card');
  ctx.fillRect(0, 0, W, H);
  for (const c of cells) {
    ctx.fillStyle = cellColor[c.status] || cellColor.pending;
    const gap = cw > 3 ? 1 : 0;
    ctx.fillRect(left + (c.step - from) * cw, top + c.rank * ch, cw - gap, ch - (ch > 3 ? 1 : 0));
  }
  ctx.strokeStyle = color('ink');
  ctx.lineWidth = 2;
  for (const m of opts.marks || []) {
    if (m.step < from || m.step > to) continue;
    const x = left + (m.step - from) * cw, y = top + m.rank * ch;
    ctx.strokeRect(x + 1, y + 1, Math.max(cw - 2, 2), Math.max(ch - 2, 2));
  }
  if (opts.selected && Number.isFinite(opts.selected.step)) {
    const s = opts.selected;
    ctx.strokeStyle = color('accent');
    ctx.lineWidth = 2;
    ctx.strokeRect(left + (s.step - from) * cw - 1, top + s.rank * ch - 1, cw + 1, ch + 1);
  }
  ctx.fillStyle = color('muted');
  ctx.font = '11px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  const rankEvery = Math.ceil(12 / ch);
  for (let r = 0; r < ranks; r += rankEvery) ctx.fillText('r' + r, 4, top + r * ch + ch / 2);
  ctx.textBaseline = 'top';
  const stepEvery = niceEvery(nsteps, Math.floor((cw * nsteps) / 60));
  for (let s = from; s <= to; s += stepEvery) ctx.fillText(String(s), left + (s - from) * cw, top + ranks * ch + 6);
  canvas.addEventListener('click', (e) => {
    const rect = canvas.getBoundingClientRect();
    const x = e.clientX - rect.left, y = e.clientY - rect.top;
    const step = from + Math.floor((x - left) / cw), rank = Math.floor((y - top) / ch);
    if (step >= from && step <= to && rank >= 0 && rank < ranks && opts.onPick) opts.onPick(step, rank);
  });
  canvas.addEventListener('mousemove', (e) => {
    const rect = canvas.getBoundingClientRect();
    const step = from + Math.floor((e.clientX - rect.left - left) / cw), rank = Math.floor((e.clientY - rect.top - top) / ch);
    const c = cells.find((x) => x.step === step && x.rank === rank);
    canvas.title = c ? `step ${step}, rank ${rank}: ${c.status} — click for its records` : '';
    canvas.style.cursor = c ? 'pointer' : 'default';
  });
  const legend = h('div', { class: 'legend' }, ORDER.map((s) => h('span', { class: 'legend-item', 'data-count': s },
    h('span', { class: 'swatch', style: { background: cellColor[s] } }), `${s} ${counts[s].toLocaleString('en-US')}`)),
    h('span', { class: 'legend-item' }, h('span', { class: 'swatch swatch-mark' }), 'first divergence of a rank'));
  return h('div', { class: 'matchmap-wrap' }, legend, h('div', { class: 'matchmap-scroll' }, canvas));
}

function niceEvery(n, slots) {
  const raw = Math.max(1, Math.ceil(n / Math.max(1, slots)));
  for (const s of [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000]) if (s >= raw) return s;
  return raw;
}
