// lib.mjs - shared helpers of the browser tests: the server under test, the ingest API, a headless Chromium.
import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

const here = dirname(fileURLToPath(import.meta.url));
// playwright-core is installed in web/node_modules (web/package.json), not beside the tests.
const require = createRequire(resolve(here, '../../web/package.json'));
const { chromium } = require('playwright-core');

export const BASE = process.env.LOCKSTEP_URL || 'http://127.0.0.1:8080';
export const BUILD = process.env.LOCKSTEP_BUILD || 'build';
export const SHOTS = resolve(process.env.LOCKSTEP_SHOTS || join(BUILD, 'screenshots'));
// The ids setup.mjs wrote (absent while setup.mjs itself runs).
export const FIX = process.env.LOCKSTEP_FIXTURES && existsSync(process.env.LOCKSTEP_FIXTURES)
  ? JSON.parse(readFileSync(process.env.LOCKSTEP_FIXTURES, 'utf8')) : null;

/* api(method, path, body) - call lockstepd; resolves to {status, json}. */
export async function api(method, path, body) {
  const res = await fetch(BASE + '/api/v1' + path, {
    method, headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  return { status: res.status, json, text };
}

/* must(method, path, body, want) - api() that fails the test unless the status is `want` (default 2xx). */
export async function must(method, path, body, want) {
  const r = await api(method, path, body);
  if (want ? r.status !== want : r.status < 200 || r.status > 299) {
    throw new Error(`${method} ${path} -> ${r.status}: ${r.text.slice(0, 300)}`);
  }
  return r.json;
}

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-default-apps', '--disable-dev-shm-usage', '--disable-extensions', '--no-default-browser-check'];

/* openBrowser(opts) - a fresh headless Chromium profile with one page; every console error, page error and
 * failed request is collected in `problems`. opts: viewport ({width, height}; 1366 x 900 by default), mobile
 * (a phone: touch, the page's viewport meta tag honoured), colorScheme ('light' or 'dark': what the page's
 * prefers-color-scheme media query sees, emulated by Chromium). close() removes the profile. */
export async function openBrowser(opts = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'lockstep-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ARGS,
    viewport: opts.viewport || { width: 1366, height: 900 },
    isMobile: !!opts.mobile,
    hasTouch: !!opts.mobile,
    colorScheme: opts.colorScheme || 'light',
    timezoneId: 'UTC',
  });
  const page = context.pages()[0] || await context.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  page.on('pageerror', (e) => problems.push('pageerror: ' + e.message));
  page.on('requestfailed', (r) => {
    const why = r.failure() && r.failure().errorText;
    if (why !== 'net::ERR_ABORTED') problems.push(`requestfailed: ${r.url()} ${why}`);   // aborted: we left the page
  });
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(BASE) && !u.startsWith('data:') && u !== 'about:blank') problems.push('external request: ' + u);
  });
  return {
    context, page, problems,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/* visit(page, route) - open BASE/#route and wait until the page has rendered (no "Loading" left). */
export async function visit(page, route) {
  await page.goto('about:blank');
  await page.goto(BASE + '/#' + route);
  await settle(page);
}

/* settle(page) - wait until the app has rendered the route in the address bar and no "Loading…" is left. */
export async function settle(page) {
  await page.waitForFunction(() => document.body && document.body.dataset.rendered === location.hash &&
    !document.querySelector('.loading'), null, { timeout: 15000 });
}

/* shot(page, name) - a full-page screenshot under SHOTS. */
export async function shot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  await page.evaluate(() => window.scrollTo(0, 0));   // the sticky top bar stays on top of a full-page shot
  await page.screenshot({ path: join(SHOTS, name + '.png'), fullPage: true });
}

/* noProblems(b) - assert that the browser saw no console error, page error or failed/external request. */
export function noProblems(b) {
  assert.deepEqual(b.problems.filter((p) => !/favicon/.test(p)), [], 'the browser reported problems');
}

/* texts(page, selector) - the trimmed innerText of every match. */
export function texts(page, selector) {
  return page.$$eval(selector, (els) => els.map((e) => e.innerText.trim()));
}

export { assert };
