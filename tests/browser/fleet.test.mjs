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

test('the fleet page lists the runs whose consensus disagreed, linked to their run and node', async () => {
  const { page } = b;
  const r = await api('GET', '/consensus');
  assert.equal(r.status, 200);
  await visit(page, '/fleet');
  if (!r.json.items.length) assert.match(await page.textContent('body'), /No run's consensus has disagreed/);
  const items = [{ run_id: '11111111-2222-3333-4444-555555555555', job_id: '812', user: 'alice', step: 812,
    name: 'mpi.allreduce', occurrence: 3, comm_ranks: [0, 1, 2, 3], comm_size: 4, odd_ranks: [2], clear: true,
    node: 'n2', gpu: '3', detected_at: new Date().toISOString() },
  { run_id: '66666666-7777-8888-9999-000000000000', job_id: '813', user: 'bob', step: 4, name: '', occurrence: 0,
    comm_ranks: [0, 1], comm_size: 2, odd_ranks: [0, 1], clear: false, node: null, gpu: null,
    detected_at: new Date().toISOString() }];
  await page.route('**/api/v1/consensus', (route) => route.fulfill({ json: { items } }));
  await visit(page, '/fleet');
  await page.waitForSelector('tr[data-cons-run]');
  const rows = await page.$$eval('tr[data-cons-run]', (trs) => trs.map((t) => [...t.children].map((c) => c.textContent)));
  assert.equal(rows.length, 2);
  assert.deepEqual(rows[0].slice(1, 8), ['812', 'alice', '812', 'mpi.allreduce #3', '2', 'n2', '3']);
  assert.deepEqual(rows[1].slice(4, 6), ['records awaited', '0, 1 (one of these)']);
  await shot(page, 'fleet-consensus');
  await page.click('tr[data-cons-run] a[href^="#/runs/"]');
  await page.waitForFunction(() => location.hash === '#/runs/11111111-2222-3333-4444-555555555555');
  await page.unroute('**/api/v1/consensus');
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !/status of 404/.test(p)));
  noProblems(b);
});
