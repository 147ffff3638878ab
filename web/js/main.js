// main.js - the dashboard shell: hash routes with deep links, the page life cycle, live polling, the top bar (its
// menu on a phone, the server's state).
import { h, clear } from './dom.js';
import { apiGet, onCall } from './api.js';
import { errorBox } from './components.js';
import { onSchemeChange } from './theme.js';
import * as groupsPage from './pages/groups.js';
import * as runsPage from './pages/runs.js';
import * as runPage from './pages/run.js';
import * as twinPage from './pages/twin.js';
import * as fleetPage from './pages/fleet.js';
import * as nodePage from './pages/node.js';
import * as alertsPage from './pages/alerts.js';
import * as comparePage from './pages/compare.js';

const POLL_MS = 3000;

// [pattern, page module, nav key]; each page exports title(params) and mount(el, params, query, nav).
const ROUTES = [
  [/^\/twins\/?$/, groupsPage, 'twins'],
  [/^\/runs\/?$/, runsPage, 'runs'],
  [/^\/runs\/([^/]+)$/, runPage, 'runs'],
  [/^\/twins\/([^/]+)$/, twinPage, 'twins'],
  [/^\/fleet\/?$/, fleetPage, 'fleet'],
  [/^\/nodes\/([^/]+)$/, nodePage, 'fleet'],
  [/^\/alerts\/?$/, alertsPage, 'alerts'],
  [/^\/compare\/?$/, comparePage, 'runs'],
];

let current = null;      // { page, instance }
let pollTimer = null;
let polling = false;
// What the top bar says about the server: /health's answer, and the newest failed call until a call answers again.
const server = { health: null, failure: null, failures: 0 };

const HOME = '/twins';   // the front page: the twin-group index

/* parseHash() - '#/twins/g1?step=3' -> { path: '/twins/g1', query: URLSearchParams }; no route is the front page. */
function parseHash() {
  const raw = location.hash.replace(/^#/, '') || HOME;
  const i = raw.indexOf('?');
  const path = i < 0 ? raw : raw.slice(0, i);
  const query = new URLSearchParams(i < 0 ? '' : raw.slice(i + 1));
  return { path: path && path !== '/' ? path : HOME, query };
}

/* navigate(path, query, replace) - change the route (the hash), which re-renders the page. */
export function navigate(path, query, replaceState) {
  const q = query ? new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined && v !== null && v !== '')).toString() : '';
  const hash = '#' + path + (q ? '?' + q : '');
  if (replaceState) {
    history.replaceState(null, '', hash);
    route();
  } else if (location.hash !== hash) {
    location.hash = hash;
  } else {
    route();
  }
}

async function route() {
  const { path, query } = parseHash();
  const main = document.getElementById('main');
  menu(false);
  const failures = server.failures;
  if (current && current.instance && current.instance.destroy) current.instance.destroy();
  current = null;
  clear(main);
  let match = null;
  for (const [re, page, nav] of ROUTES) {
    const m = path.match(re);
    if (m) { match = { page, nav, params: m.slice(1).map(decodeURIComponent) }; break; }
  }
  for (const a of document.querySelectorAll('nav.top a')) a.classList.toggle('active', match && a.dataset.nav === match.nav);
  if (!match) {
    document.title = 'Not found · Lockstep';
    main.appendChild(h('div', { class: 'empty' }, h('div', { class: 'empty-title' }, `No page at ${path}`),
      h('div', { class: 'empty-hint' }, 'The link may be old. Start from the ', h('a', { href: '#/twins' }, 'twin groups'), ' or the ',
        h('a', { href: '#/runs' }, 'runs list'), '.')));
    document.body.dataset.rendered = location.hash;
    return;
  }
  document.title = `${match.page.title(match.params, query)} · Lockstep`;
  const mine = { page: match.page, instance: null };
  current = mine;
  try {
    const inst = await match.page.mount(main, match.params, query, navigate);
    if (current === mine) mine.instance = inst;
    else if (inst && inst.destroy) inst.destroy();
  } catch (e) {
    if (current === mine) main.appendChild(errorBox(e, 'This page could not be shown'));
    console.warn(e);
  }
  if (current === mine) document.body.dataset.rendered = location.hash;
  if (server.failures === failures) stamp();
}

function stamp() {
  const el = document.getElementById('updated');
  if (el) el.textContent = 'Updated ' + new Date().toLocaleTimeString('en-GB');
}

/* tick() - the live refresh: the page's poll(), and while a call is failing /health too, so that the top bar
 * follows the server back even on a page that has nothing to refresh. "Updated" moves only when nothing failed. */
async function tick() {
  if (polling || document.hidden) return;
  polling = true;
  const failures = server.failures;
  try {
    if (server.failure) await health();
    if (current && current.instance && current.instance.poll) {
      await current.instance.poll();
      if (server.failures === failures) stamp();
    }
  } catch (e) {
    console.warn('live update failed', e);
  } finally {
    polling = false;
  }
}

/* health() - ask /health what lockstepd says of itself (ok, or what is wrong); a failure of the call itself
 * reaches the top bar through callDone like any other. */
async function health() {
  try {
    const d = await apiGet('/health');
    const ok = !d || d.status === undefined || d.status === 'ok';
    server.health = { ok, text: ok ? 'Server OK' : `Server: ${d.status}`, title: d && d.version ? `lockstepd ${d.version}` : '' };
    showServer();
  } catch (e) {
    // shown by callDone
  }
}

/* callDone(err, path) - every API call's outcome (api.js onCall): a failure shows at once; an answered call
 * clears it. /health answering proves the server is reachable again, not that the failing endpoint works, so it
 * clears only "unreachable". */
function callDone(err, path) {
  if (err) {
    server.failure = err;
    server.failures++;
  } else if (server.failure && (!/^\/health\b/.test(path) || server.failure.status === 0)) {
    server.failure = null;
  } else {
    return;
  }
  showServer();
}

/* showServer() - the top bar's server state: the failing call while there is one, else /health's answer. */
function showServer() {
  const el = document.getElementById('health');
  if (!el) return;
  const f = server.failure;
  const s = f ? { ok: false, text: f.status === 0 ? 'Server unreachable' : f.status >= 500 ? `Server error (HTTP ${f.status})` : 'Server error',
    title: `${f.message}${f.detail ? ': ' + f.detail : ''} (${f.path})` } : server.health;
  if (!s) return;
  el.className = 'health ' + (s.ok ? 'health-ok' : 'health-bad');
  el.textContent = s.text;
  el.title = s.title;
}

/* menu(open) - on a phone the nav and the group search fold behind the menu button; open or close them. */
function menu(open) {
  const bar = document.querySelector('.topbar');
  const btn = document.querySelector('.nav-toggle');
  if (!bar || !btn) return;
  bar.classList.toggle('menu-open', open);
  btn.setAttribute('aria-expanded', String(open));
}

function goGroup(ev) {
  ev.preventDefault();
  const v = ev.target.elements.jump.value.trim();
  if (v) navigate('/twins/' + encodeURIComponent(v));
}

function shell() {
  document.body.appendChild(h('header', { class: 'topbar' },
    h('a', { class: 'brand', href: '#/twins' }, h('span', { class: 'logo', 'aria-hidden': 'true' }), 'Lockstep'),
    h('button', { type: 'button', class: 'nav-toggle', 'data-action': 'menu', 'aria-expanded': 'false', 'aria-controls': 'nav-top',
      onclick: () => menu(!document.querySelector('.topbar').classList.contains('menu-open')) }, '☰ Menu'),
    h('nav', { class: 'top', id: 'nav-top' },
      h('a', { href: '#/twins', 'data-nav': 'twins' }, 'Twin groups'),
      h('a', { href: '#/runs', 'data-nav': 'runs' }, 'Runs'),
      h('a', { href: '#/fleet', 'data-nav': 'fleet' }, 'Fleet'),
      h('a', { href: '#/alerts', 'data-nav': 'alerts' }, 'Alerts')),
    h('form', { class: 'jump', onsubmit: goGroup },
      h('input', { name: 'jump', type: 'search', placeholder: 'Open twin group…', 'aria-label': 'Twin group name' })),
    h('div', { class: 'status-area' },
      h('span', { id: 'updated', class: 'updated' }),
      h('span', { id: 'health', class: 'health' }, '…'))));
  document.body.appendChild(h('main', { id: 'main' }));
}

shell();
onCall(callDone);
window.addEventListener('hashchange', route);
window.addEventListener('keydown', (e) => { if (e.key === 'Escape') menu(false); });
onSchemeChange(() => route());   // canvases and charts take their colours when drawn: draw them again
route();
health();
pollTimer = setInterval(() => { tick(); }, POLL_MS);
setInterval(health, 15000);
window.lockstepDashboard = { navigate, pollNow: tick, get pollTimer() { return pollTimer; } };
