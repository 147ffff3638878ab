// layout.test.mjs - every page on a phone (390 px) and a desktop (1440 px), light and dark: no page wider than the
// screen, a usable nav, the scheme applied to every surface, text and chart; the top bar says at once when calls fail.
import { test } from 'node:test';
import { openBrowser, visit, settle, shot, noProblems, assert, FIX } from './lib.mjs';

const SCREENS = {
  desktop: { viewport: { width: 1440, height: 900 } },
  phone: { viewport: { width: 390, height: 844 }, mobile: true },
};

/* views() - one URL for every kind of page view, on the fixtures setup.mjs ingested. */
function views() {
  const div = FIX.divergence, cmp = 'base=cmpx&changed=cmpx.change&noise=cmpx.noise';
  return [
    ['groups', '/twins'],
    ['groups of other kinds', '/twins?kind=others'],
    ['twin', '/twins/pair-diverged'],
    ['bit flip', '/twins/bitflip'],
    ['records', `/twins/pair-diverged?step=${div.step}&rank=${div.rank}`],
    ['replay', '/twins/trio-replayed'],
    ['replay group', `/twins/${FIX.narrow.narrow_group}`],
    ['restore', '/twins/resume-bad'],
    ['runs', '/runs'],
    ['run', '/runs/' + FIX.groups['pair-diverged'][1]],
    ['compare', `/compare?${cmp}`],
    ['compare records', `/compare?${cmp}&step=${FIX.compare.changeAt}&rrank=0`],
    ['fleet', '/fleet'],
    ['node', '/nodes/n9'],
    ['alerts', '/alerts'],
    ['not found', '/nowhere'],
  ];
}

/* drawn(page) - wait until every chart on the page is drawn (uPlot draws a frame after the page settles). */
async function drawn(page) {
  await page.waitForFunction(() => [...document.querySelectorAll('.chart')].every((c) =>
    c.querySelector('.uplot canvas') || c.querySelector('.empty-hint') || c.classList.contains('empty-hint')), null, { timeout: 10000 });
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

/* overflow(page) - the document's scroll width and the elements that stick out past the right edge of the screen
 * without a scrolling box around them (what makes the page wider than the screen). */
function overflow(page) {
  return page.evaluate(() => {
    const vw = document.documentElement.clientWidth;
    const scrolls = (el) => {
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
        const o = getComputedStyle(p).overflowX;
        if (o === 'auto' || o === 'scroll' || o === 'hidden') return true;
      }
      return false;
    };
    const out = [];
    for (const el of document.body.querySelectorAll('*')) {
      const r = el.getBoundingClientRect();
      if (r.width && r.right > vw + 0.5 && !scrolls(el)) {
        out.push(`${el.tagName.toLowerCase()}${el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : ''} right=${Math.round(r.right)}`);
      }
    }
    return { scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, vw, culprits: out.slice(0, 8) };
  });
}

/* scheme(page) - colours as drawn: the body's background, every visible text whose contrast with the surface behind
 * it is under 3:1, surfaces that are light in the dark scheme (or dark in the light one), the match map's canvas
 * background and the chart axes' colour against the card. */
function scheme(page, dark) {
  return page.evaluate((inDark) => {
    const rgba = (s) => {
      const m = s.match(/rgba?\(([^)]+)\)/);
      if (!m) return null;
      const [r, g, b, a] = m[1].split(/[ ,/]+/).map(Number);
      return { r, g, b, a: a === undefined || Number.isNaN(a) ? 1 : a };
    };
    const lum = (c) => {
      const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
    };
    const contrast = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
    const surface = (el) => {
      for (let p = el; p; p = p.parentElement) {
        const c = rgba(getComputedStyle(p).backgroundColor);
        if (c && c.a > 0.5) return c;
      }
      return rgba(getComputedStyle(document.documentElement).backgroundColor) || { r: 255, g: 255, b: 255, a: 1 };
    };
    const visible = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden'; };
    const name = (el) => el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\s+/).join('.') : '');
    const lowContrast = [], wrongSurfaces = [];
    for (const el of document.body.querySelectorAll('*')) {
      if (!visible(el) || el.closest('.swatch, .u-marker, .u-legend .u-off')) continue;
      const bar = el.closest('.topbar');   // the top bar is dark in both schemes; its text is still checked
      const st = getComputedStyle(el);
      const bg = rgba(st.backgroundColor);
      // Status colours (badges, tags, swatches) are tinted on purpose; a plain surface is near white or near black.
      if (!bar && bg && bg.a > 0.5 && (inDark ? lum(bg) > 0.35 : lum(bg) < 0.05) && !el.matches('.btn-primary, .seg-item.active, .badge, .tag, .ev')) wrongSurfaces.push(name(el));
      const text = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
      if (!text || parseFloat(st.opacity) < 0.6 || el.closest('[disabled]')) continue;
      const c = contrast(rgba(st.color), surface(el));
      if (c < 3) lowContrast.push(`${name(el)} "${el.textContent.trim().slice(0, 30)}" ${c.toFixed(2)}`);
    }
    const body = rgba(getComputedStyle(document.body).backgroundColor);
    const card = document.querySelector('.card');
    const cardBg = card ? surface(card) : body;
    const canvas = document.querySelector('canvas.matchmap');
    let mapBg = null;
    if (canvas) {
      const [r, g, b] = canvas.getContext('2d').getImageData(1, 1, 1, 1).data;
      mapBg = contrast({ r, g, b }, cardBg);
    }
    const axes = [...document.querySelectorAll('.chart')].map((c) => c.__plot).filter(Boolean)
      .map((u) => { const probe = document.createElement('i'); probe.style.color = u.axes[1].stroke(u, 1); document.body.appendChild(probe);
        const c = rgba(getComputedStyle(probe).color); probe.remove(); return contrast(c, cardBg); });
    return { bodyLum: lum(body), lowContrast: lowContrast.slice(0, 10), wrongSurfaces: [...new Set(wrongSurfaces)].slice(0, 10), mapBg, axes };
  }, dark);
}

for (const [screen, opts] of Object.entries(SCREENS)) {
  for (const colorScheme of ['light', 'dark']) {
    test(`${screen}, ${colorScheme}: every page fits the screen and is drawn in the ${colorScheme} scheme`, async (t) => {
      const b = await openBrowser({ ...opts, colorScheme });
      t.after(() => b.close());
      const { page } = b;
      const width = opts.viewport.width, dark = colorScheme === 'dark';
      const faults = [];   // every page's faults, so that one run shows them all
      const check = (ok, msg) => { if (!ok) faults.push(msg); };
      for (const [what, route] of views()) {
        await visit(page, route);
        await drawn(page);
        const o = await overflow(page);
        check(o.scrollWidth <= width && o.innerWidth <= width,
          `${what} (${route}) is ${o.scrollWidth} px wide on a ${width} px screen: ${o.culprits.join(', ')}`);
        const s = await scheme(page, dark);
        check(dark ? s.bodyLum < 0.05 : s.bodyLum > 0.8, `${what}: the page background is not ${colorScheme} (luminance ${s.bodyLum.toFixed(3)})`);
        check(!s.wrongSurfaces.length, `${what}: surfaces that ignore the ${colorScheme} scheme: ${s.wrongSurfaces.join(', ')}`);
        check(!s.lowContrast.length, `${what}: text under 3:1 contrast with its background: ${s.lowContrast.join('; ')}`);
        check(s.mapBg === null || s.mapBg < 1.1, `${what}: the match map's background is not the card's (contrast ${s.mapBg && s.mapBg.toFixed(2)})`);
        check(s.axes.every((c) => c >= 3), `${what}: chart axis labels' contrast with the card: ${s.axes.map((c) => c.toFixed(2)).join(', ')}`);
        if (['twin', 'compare', 'groups', 'alerts'].includes(what)) await shot(page, `${screen}-${colorScheme}-${what.replace(/ /g, '-')}`);
      }
      assert.deepEqual(faults, []);
      noProblems(b);
    });
  }
}

test('switching the scheme while a page is open redraws it, canvas and charts included', async (t) => {
  const b = await openBrowser({ ...SCREENS.desktop });
  t.after(() => b.close());
  const { page } = b;
  await visit(page, '/twins/pair-diverged');
  // the page's chart and match map exist (drawn() alone is satisfied by a page that has no chart yet)
  await page.waitForFunction(() => document.querySelector('.chart')?.__plot && document.querySelector('canvas.matchmap'),
    null, { timeout: 10000 });
  await drawn(page);
  // what the page shows once its chart is drawn with axes other than `was` (the page polls its group, and a refresh
  // may catch the chart between its old plot and its new one; a chart never redrawn in the new scheme times out)
  const look = async (was) => (await page.waitForFunction((w) => {
    const c = document.querySelector('canvas.matchmap'), u = document.querySelector('.chart')?.__plot;
    if (!c || !u || u.axes[1].stroke(u, 1) === w)
      return null;
    const px = c.getContext('2d').getImageData(1, 1, 1, 1).data;
    return { body: getComputedStyle(document.body).backgroundColor, map: [...px.slice(0, 3)], axis: u.axes[1].stroke(u, 1) };
  }, was, { timeout: 5000 })).jsonValue();
  const light = await look();
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.waitForFunction((m) => {
    const c = document.querySelector('canvas.matchmap');
    return c && String([...c.getContext('2d').getImageData(1, 1, 1, 1).data.slice(0, 3)]) !== String(m);
  }, light.map, { timeout: 5000 });
  await drawn(page);
  const dark = await look(light.axis);
  assert.notEqual(dark.body, light.body);
  assert.ok(dark.map.every((v) => v < 60), `the match map's background in the dark: ${dark.map}`);
  assert.notEqual(dark.axis, light.axis, 'the chart axes take the dark scheme\'s colour');
  noProblems(b);
});

test('phone: the nav folds into a menu that opens, navigates and closes', async (t) => {
  const b = await openBrowser({ ...SCREENS.phone });
  t.after(() => b.close());
  const { page } = b;
  await visit(page, '/twins');
  const toggle = page.locator('[data-action=menu]');
  assert.ok(await toggle.isVisible(), 'a menu button on a phone');
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
  assert.equal(await page.locator('nav.top a[data-nav=runs]').isVisible(), false, 'the links are folded away');
  await toggle.click();
  assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
  const runs = page.locator('nav.top a[data-nav=runs]');
  assert.ok(await runs.isVisible());
  const box = await runs.boundingBox();
  assert.ok(box.height >= 32 && box.x >= 0 && box.x + box.width <= 390, `a link a finger can hit: ${JSON.stringify(box)}`);
  assert.ok(await page.locator('.jump input').isVisible(), 'the group search is in the menu');
  await shot(page, 'phone-menu');
  await runs.click();
  await page.waitForFunction(() => location.hash === '#/runs');
  await settle(page);
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false', 'the menu closes once a page is chosen');
  assert.equal(await runs.isVisible(), false);
  noProblems(b);
});

test('desktop: the nav is a row of links, no menu button', async (t) => {
  const b = await openBrowser({ ...SCREENS.desktop });
  t.after(() => b.close());
  const { page } = b;
  await visit(page, '/runs');
  assert.equal(await page.locator('[data-action=menu]').isVisible(), false);
  for (const k of ['twins', 'runs', 'fleet', 'alerts']) assert.ok(await page.locator(`nav.top a[data-nav=${k}]`).isVisible(), k);
  noProblems(b);
});

test('the top bar turns to "unreachable" or "error" as soon as a call fails, and back once calls answer', async (t) => {
  const b = await openBrowser({ ...SCREENS.desktop });
  t.after(() => b.close());
  const { page } = b;
  await visit(page, '/twins');
  await page.waitForFunction(() => document.getElementById('health').textContent === 'Server OK');
  const health = () => page.evaluate(() => ({ text: document.getElementById('health').textContent, cls: document.getElementById('health').className }));
  // lockstepd stops answering: every API call is refused. The next refresh (3 s) must show it, not the next
  // health check (15 s): poll now and allow one second.
  await page.route('**/api/v1/**', (r) => r.abort('connectionrefused'));
  await page.evaluate(() => window.lockstepDashboard.pollNow());
  await page.waitForFunction(() => document.getElementById('health').textContent === 'Server unreachable', null, { timeout: 1000 });
  assert.match((await health()).cls, /health-bad/);
  await shot(page, 'topbar-unreachable');
  // A proxy answers for it with 502: a server error, said as such.
  await page.unroute('**/api/v1/**');
  await page.route('**/api/v1/**', (r) => r.fulfill({ status: 502, contentType: 'text/html', body: '<h1>Bad Gateway</h1>' }));
  await page.evaluate(() => window.lockstepDashboard.pollNow());
  await page.waitForFunction(() => /^Server error/.test(document.getElementById('health').textContent), null, { timeout: 1000 });
  assert.match((await health()).text, /502/);
  // Navigating while it fails: the page's own call fails and the bar says so with it.
  await visit(page, '/runs');
  assert.match((await health()).text, /^Server error/);
  // lockstepd answers again: the bar follows with the next call.
  await page.unroute('**/api/v1/**');
  await page.evaluate(() => window.lockstepDashboard.pollNow());
  await page.waitForFunction(() => document.getElementById('health').textContent === 'Server OK', null, { timeout: 3000 });
  assert.match((await health()).cls, /health-ok/);
  // A 404 for a group that does not exist is an answer, not a failing server.
  await visit(page, '/twins/no-such-group');
  assert.equal((await health()).text, 'Server OK');
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !/ERR_CONNECTION_REFUSED|status of 502|status of 404/.test(p)));
  noProblems(b);
});
