// theme.js - the colours of what CSS cannot reach (canvas drawings, uPlot charts), read from app.css's custom
// properties, so that the light and the dark scheme stay one palette in one file.

const DARK = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;

/* color(name) - the current value of app.css's --name (e.g. 'ink', 'card', 'cell-match'), '' when it has none. */
export function color(name) {
  return getComputedStyle(document.documentElement).getPropertyValue('--' + name).trim();
}

/* palette() - the chart lines' colours, one per run in order (app.css's --series). */
export function palette() {
  return color('series').split(/\s+/).filter(Boolean);
}

/* alpha(c, a) - colour c ('#rrggbb' or '#rgb') at opacity a, as rgba(); other notations come back unchanged. */
export function alpha(c, a) {
  const m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(c);
  if (!m) return c;
  let hex = m[1];
  if (hex.length === 3) hex = hex.replace(/./g, '$&$&');
  const n = parseInt(hex, 16);
  return `rgba(${n >> 16}, ${(n >> 8) & 255}, ${n & 255}, ${a})`;
}

/* onSchemeChange(fn) - call fn() when the browser switches between the light and the dark scheme. */
export function onSchemeChange(fn) {
  if (DARK && DARK.addEventListener) DARK.addEventListener('change', fn);
}
