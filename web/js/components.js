// components.js - the dashboard's building blocks: badges, tables, pagers, empty and error states.
import { h, clear } from './dom.js';

const STATUS_CLASS = {
  match: 'ok', ok: 'ok', ended: 'neutral', done: 'neutral', finished: 'neutral', repaired: 'ok',
  diverged: 'bad', failed: 'bad', suspect: 'bad', drained: 'warn', firing: 'bad',
  pending: 'warn', incomplete: 'warn', running: 'info', missing: 'warn', acknowledged: 'neutral', open: 'bad',
  resolved: 'ok', matched: 'ok', majority: 'ok', 'odd-one-out': 'bad', 'outside-majority': 'bad',
  agree: 'ok', disagree: 'bad',
};

/* badge(status) - a coloured status pill; unknown statuses are grey. */
export function badge(status, title) {
  const s = status === null || status === undefined || status === '' ? 'unknown' : String(status);
  return h('span', { class: `badge badge-${STATUS_CLASS[s.toLowerCase()] || 'neutral'}`, title: title || null,
                     'data-status': s }, s);
}

/* card(title, ...children) - a titled section. */
export function card(title, ...children) {
  return h('section', { class: 'card' }, title ? h('h2', null, title) : null, ...children);
}

/* emptyState(title, hint) - what to show when there is nothing, and what to do about it. */
export function emptyState(title, hint, ...extra) {
  return h('div', { class: 'empty' }, h('div', { class: 'empty-title' }, title),
           hint ? h('div', { class: 'empty-hint' }, hint) : null, ...extra);
}

/* errorBox(err) - an ApiError (or any Error) as fact, detail and hint. */
export function errorBox(err, what) {
  const status = err && err.status ? ` (HTTP ${err.status})` : '';
  return h('div', { class: 'error', role: 'alert' },
           h('div', { class: 'error-title' }, (what ? what + ': ' : '') + (err && err.message || String(err)) + status),
           err && err.detail ? h('div', { class: 'error-detail' }, err.detail) : null,
           h('div', { class: 'error-hint' }, err && err.hint ? err.hint : 'Check the lockstepd log, then reload the page.'));
}

/* unavailable(feature, endpoint) - the state for a server that does not have an endpoint yet. */
export function unavailable(feature, endpoint) {
  return h('div', { class: 'empty unavailable', 'data-unavailable': endpoint },
           h('div', { class: 'empty-title' }, `${feature} is not available on this server yet`),
           h('div', { class: 'empty-hint' },
             `This lockstepd does not serve ${endpoint}. Upgrade lockstepd to a version with hardware suspects ` +
             'and alerts; the page fills in by itself once the endpoint answers.'));
}

export function loading(text) {
  return h('div', { class: 'loading' }, text || 'Loading…');
}

/* kv([wide,] pairs) - a definition grid (wide: two label/value columns) from [[label, value-node-or-text], ...]; rows with undefined values are skipped. */
export function kv(wide, pairs) {
  if (pairs === undefined) { pairs = wide; wide = false; }
  const dl = h('dl', { class: wide ? 'kv kv-wide' : 'kv' });
  for (const [k, v] of pairs) {
    if (v === undefined) continue;
    dl.appendChild(h('dt', null, k));
    dl.appendChild(h('dd', null, v === null || v === '' ? '—' : v));
  }
  return dl;
}

/* table(columns, rows, opts) - columns: [{key, label, render(row), sortable, num, class}];
 * opts.sort = {key, dir}, opts.onSort(key) makes sortable headers clickable; opts.rowAttrs(row). */
export function table(columns, rows, opts = {}) {
  const sort = opts.sort || {};
  const thead = h('thead', null, h('tr', null, columns.map((c) => {
    const active = sort.key === c.key;
    const th = h('th', { class: [c.num ? 'num' : '', c.sortable ? 'sortable' : '', active ? 'sorted' : ''].join(' ').trim() || null,
                         'data-key': c.key, 'aria-sort': active ? (sort.dir === 'asc' ? 'ascending' : 'descending') : null },
                 c.label, active ? h('span', { class: 'sort-arrow' }, sort.dir === 'asc' ? ' ▲' : ' ▼') : null);
    if (c.sortable && opts.onSort) {
      th.tabIndex = 0;
      th.addEventListener('click', () => opts.onSort(c.key));
      th.addEventListener('keydown', (e) => { if (e.key === 'Enter') opts.onSort(c.key); });
    }
    return th;
  })));
  const tbody = h('tbody', null, rows.map((r) => h('tr', opts.rowAttrs ? opts.rowAttrs(r) : null,
    columns.map((c) => h('td', { class: [c.num ? 'num' : '', c.class || ''].join(' ').trim() || null },
                          c.render ? c.render(r) : fmtCell(r[c.key]))))));
  return h('div', { class: 'table-wrap' }, h('table', { class: 'data' + (opts.compact ? ' compact' : '') + (opts.cls ? ' ' + opts.cls : '') }, thead, tbody));
}

function fmtCell(v) {
  if (v === null || v === undefined || v === '') return '—';
  if (typeof v === 'object') return Array.isArray(v) ? v.join(', ') : objText(v);
  return String(v);
}

/* objText(o) - a small object as "k: v, k: v" text (never raw JSON). */
export function objText(o) {
  return Object.entries(o).map(([k, v]) => `${k}: ${v !== null && typeof v === 'object' ? objText(v) : v}`).join(', ');
}

/* pager({offset, limit, total, count}, go(offset)) - previous / next with "1–50 of 1,234". */
export function pager(p, go) {
  const from = p.count ? p.offset + 1 : 0;
  const to = p.offset + p.count;
  const of = p.total !== undefined && p.total !== null ? ` of ${Number(p.total).toLocaleString('en-US')}` : '';
  const hasNext = p.total !== undefined && p.total !== null ? to < p.total : p.count >= p.limit;
  return h('div', { class: 'pager' },
           h('button', { type: 'button', class: 'btn', disabled: p.offset <= 0, 'data-action': 'prev',
                         onclick: () => go(Math.max(0, p.offset - p.limit)) }, '← Previous'),
           h('span', { class: 'pager-info' }, `${from.toLocaleString('en-US')}–${to.toLocaleString('en-US')}${of}`),
           h('button', { type: 'button', class: 'btn', disabled: !hasNext, 'data-action': 'next',
                         onclick: () => go(p.offset + p.limit) }, 'Next →'));
}

/* replace(el, ...nodes) - swap el's content. */
export function replace(el, ...nodes) {
  clear(el);
  for (const n of nodes) if (n) el.appendChild(n);
  return el;
}

const TOKEN_KEY = 'lockstep.adminToken';

/* adminToken() - the admin token this browser tab holds ('' when none). */
export function adminToken() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

/* adminTokenForm(purpose) - a small form that keeps the admin token for this tab (sessionStorage, never
 * sent anywhere but this server's admin endpoints). Returns {el, msg}: msg is a status line to write to. */
export function adminTokenForm(purpose) {
  const input = h('input', { type: 'password', name: 'token', placeholder: 'admin token', autocomplete: 'off', value: adminToken() });
  const msg = h('div', { class: 'form-msg', role: 'status' });
  const el = h('form', { class: 'token-form', onsubmit: (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    msg.textContent = input.value.trim() ? 'Admin token kept for this browser tab.' : 'Admin token cleared.';
  } }, h('label', { class: 'field' }, h('span', null, `Admin token (${purpose})`), input),
  h('button', { type: 'submit', class: 'btn' }, 'Use token'), msg);
  return { el, msg, focus: () => input.focus() };
}
