// fleet.test.mjs - Fleet, Node and Alerts pages: their data when lockstepd serves it, a clear
// "not available on this server yet" state when it does not.
import { test, before, after } from 'node:test';
import { openBrowser, visit, shot, noProblems, texts, api, assert } from './lib.mjs';

let b;
before(async () => { b = await openBrowser(); });
after(async () => { await b.close(); });

// A 404 for an endpoint the server lacks is logged by the browser as a failed resource; that is expected.
function dropExpected404s() {
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !/status of 404/.test(p)));
}

test('the fleet page lists nodes with scores, or says the server has no fleet view yet', async () => {
  const { page } = b;
  const r = await api('GET', '/nodes');
  await visit(page, '/fleet');
  await shot(page, 'fleet');
  if (r.status === 404) {
    assert.match(await page.textContent('[data-unavailable]'), /not available on this server yet/);
    dropExpected404s();
  } else {
    assert.equal(r.status, 200);
    const nodes = r.json.items.map((n) => n.name);
    const shown = await page.$$eval('tr[data-node]', (trs) => trs.map((t) => t.dataset.node));
    assert.deepEqual(shown.slice().sort(), nodes.slice().sort());
    if (nodes.length) await page.waitForSelector('[data-chart=scores] .uplot');
  }
  noProblems(b);
});

test('a node page shows its history, or says the server has none yet', async () => {
  const { page } = b;
  const r = await api('GET', '/nodes/n3/history');
  await visit(page, '/nodes/n3');
  await shot(page, 'node');
  assert.equal(await page.textContent('h1 .group-name'), 'n3');
  if (r.status === 404 && /no endpoint/.test(r.text)) {
    assert.match(await page.textContent('[data-unavailable]'), /not available on this server yet/);
    dropExpected404s();
  } else {
    assert.ok(await page.locator('ol.timeline, .empty').count() > 0);
    // An admin note lands in the node's history.
    const note = 'browser test note ' + Date.now();
    await page.fill('.actions-form input[name=reason]', note);
    await page.click('[data-action=note]');
    assert.match(await page.textContent('.form-msg'), /admin token/);
    await page.fill('input[name=token]', process.env.LOCKSTEP_ADMIN_TOKEN);
    await page.click('.token-form button[type=submit]');
    await page.click('[data-action=note]');
    await page.waitForFunction((t) => [...document.querySelectorAll('.tl-item[data-kind=action]')].some((li) => li.textContent.includes(t)), note);
    await shot(page, 'node-note');
  }
  noProblems(b);
});

test('the alerts page lists alerts, or says the server has none yet', async () => {
  const { page } = b;
  const r = await api('GET', '/alerts');
  await visit(page, '/alerts');
  await shot(page, 'alerts');
  if (r.status === 404) {
    assert.match(await page.textContent('[data-unavailable]'), /Alerts is not available on this server yet/);
    dropExpected404s();
  } else {
    assert.equal(r.status, 200);
    const n = r.json.items.length;
    assert.equal(await page.locator('tr[data-alert]').count(), n);
  }
  // Acknowledging without a token asks for it instead of failing silently; with the token it works.
  if (await page.locator('[data-action=ack]').count()) {
    await page.evaluate(() => sessionStorage.clear());   // the node test may have left the admin token in this tab
    const id = await page.locator('tr[data-alert]:has([data-action=ack]) >> nth=0').getAttribute('data-alert');
    await page.click(`tr[data-alert="${id}"] [data-action=ack]`);
    assert.match(await page.textContent('.form-msg'), /admin token/);
    await page.fill('input[name=token]', process.env.LOCKSTEP_ADMIN_TOKEN);
    await page.click('.token-form button[type=submit]');
    await page.click(`tr[data-alert="${id}"] [data-action=ack]`);
    await page.waitForSelector(`tr[data-alert="${id}"] .badge[data-status=acknowledged]`);
  }
  assert.deepEqual(await texts(page, 'nav.top a.active'), ['Alerts']);
  noProblems(b);
});
