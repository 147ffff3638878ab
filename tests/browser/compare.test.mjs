// compare.test.mjs - the Compare page: reached from a twin group page, a change beyond the noise band with its first
// effect and records, the curves over the band, one more replica within the noise, no replicas, and bad inputs.
import { test, before, after } from 'node:test';
import { openBrowser, visit, settle, shot, noProblems, texts, assert, FIX, must } from './lib.mjs';

let b;
before(async () => { b = await openBrowser(); });
after(async () => { await b.close(); });

test('twin group -> compare: a change beyond the noise, its first effect and its records', async () => {
  const { page } = b;
  const at = FIX.compare.changeAt;
  const [base] = FIX.groups.cmpx;
  const [change] = FIX.groups['cmpx.change'];
  await visit(page, '/twins/cmpx');
  await page.waitForSelector('[data-action=compare-experiment]');
  assert.equal(await page.textContent('[data-action=compare-experiment]'), 'Compare cmpx.change with cmpx over the noise of cmpx.noise');
  await page.click('[data-action=compare-experiment]');
  await page.waitForFunction(() => location.hash.startsWith('#/compare?'));
  await settle(page);
  // Every verdict is lockstepd's: the page shows the answer of GET /api/v1/compare.
  const api = await must('GET', '/compare?base=cmpx&changed=cmpx.change&noise=cmpx.noise&series=0');
  assert.equal(api.verdict, 'beyond-noise');
  assert.equal(await page.getAttribute('h1 [data-verdict]', 'data-verdict'), 'beyond-noise');
  assert.match(await page.textContent('[data-field=verdict-text]'), /moves grad_norm, loss beyond the run-to-run noise of 4 replicas/);
  const fe = page.locator('[data-section=first-effect]');
  assert.equal(await fe.locator('[data-field=step]').textContent(), String(at));
  assert.equal(await fe.locator('[data-field=rank]').textContent(), '0');
  assert.equal(await fe.locator('[data-field=name]').textContent(), 'loss');
  assert.equal(await fe.locator('[data-field=call-site]').textContent(), 'not recorded by this program');
  // The cause, by lockstepd's one cause rule: the change's command line is a configuration difference.
  assert.equal(api.first_effect.cause, 'configuration');
  assert.equal(await fe.locator('[data-field=cause]').textContent(), 'configuration');
  assert.match(await fe.locator('[data-field=configuration]').textContent(), /--lr 2e-3/);
  const rows = await fe.locator('tbody tr').evaluateAll((trs) => trs.map((t) => [t.dataset.who, t.querySelector('td:nth-child(2)').textContent]));
  assert.deepEqual(rows, [['BASE', base.slice(0, 8)], ['CHANGED', change.slice(0, 8)]]);
  assert.equal(await fe.locator('tr[data-who=CHANGED] td:last-child').textContent(), Number(api.first_effect.ulp).toLocaleString('en-US'));
  // The metrics table: both beyond the noise, from the step of the change, as the API says.
  const metrics = await page.$$eval('[data-section=metrics] tbody tr', (trs) => trs.map((t) => [t.dataset.metric, t.dataset.verdict]));
  assert.deepEqual(metrics, [['grad_norm', 'beyond-noise'], ['loss', 'beyond-noise']]);
  const loss = api.metrics.find((m) => m.name === 'loss');
  const cells = await page.locator('[data-section=metrics] tr[data-metric=loss] td').allTextContents();
  assert.equal(cells[5], String(at));
  assert.equal(loss.first_step_differs, at);
  // The curves: values over the shaded band, and |deviation| against the band.
  await page.waitForSelector('[data-curves=loss] [data-kind=values] .uplot canvas');
  await page.waitForSelector('[data-curves=loss] [data-kind=deviation] .uplot canvas');
  const legend = await texts(page, '[data-curves=loss] [data-kind=values] .u-legend .u-series th');
  assert.ok(legend.includes('BASE') && legend.includes('band top') && legend.some((t) => t.startsWith('CHANGED ')), legend.join('|'));
  await shot(page, 'compare-beyond');

  // The records of the first effect, side by side.
  await page.click('[data-action=show-first-effect]');
  await page.waitForFunction((s) => location.hash.includes(`step=${s}`) && location.hash.includes('rrank=0'), at);
  await settle(page);
  await page.waitForSelector('#records tbody tr');
  assert.match(await page.textContent('#records h2'), new RegExp(`step ${at}, rank 0`));
  const st = await page.$$eval('#records tbody tr', (trs) => trs.map((t) => [t.dataset.record, t.dataset.status]));
  assert.deepEqual(st, [['loss', 'diverged'], ['allreduce.out', 'diverged'], ['grad_norm', 'diverged']]);
  const heads = await texts(page, '#records thead th');
  assert.ok(heads.includes('Fingerprint ' + base.slice(0, 8)) && heads.includes('Fingerprint ' + change.slice(0, 8)), heads.join('|'));
  await shot(page, 'compare-records');
  noProblems(b);
});

test('one more replica of the noise is within it', async () => {
  const { page } = b;
  await visit(page, '/compare?base=cmpx&changed=cmpx-extra&noise=cmpx.noise');
  assert.equal(await page.getAttribute('h1 [data-verdict]', 'data-verdict'), 'within-noise');
  const metrics = await page.$$eval('[data-section=metrics] tbody tr', (trs) => trs.map((t) => t.dataset.verdict));
  assert.deepEqual(metrics, ['within-noise', 'within-noise']);
  await page.waitForSelector('[data-curves=grad_norm] [data-kind=deviation] .uplot canvas');
  await shot(page, 'compare-within');
  noProblems(b);
});

test('without replicas the page says what can and cannot be concluded', async () => {
  const { page } = b;
  await visit(page, '/compare?base=cmpx&changed=cmpx.change');
  assert.equal(await page.getAttribute('h1 [data-verdict]', 'data-verdict'), 'differs');
  assert.match(await page.textContent('[data-section=verdict]'), /Without noise replicas/);
  assert.equal(await page.locator('[data-section=metrics] th', { hasText: 'Threshold' }).count(), 0);
  noProblems(b);
});

test('a twin group compared with itself is identical; an unknown group is a clear error', async () => {
  const { page } = b;
  const [a, c] = FIX.groups.cmpx;
  await visit(page, `/compare?base=${a}&changed=${c}`);
  assert.equal(await page.getAttribute('h1 [data-verdict]', 'data-verdict'), 'identical');
  assert.match(await page.textContent('[data-section=first-effect]'), /No record of CHANGED differs from BASE/);
  await visit(page, '/compare?base=cmpx&changed=no-such-group&noise=cmpx.noise');
  assert.match(await page.textContent('[data-section=verdict] .error'), /unknown twin group or run.*HTTP 404/s);
  assert.match(await page.textContent('[data-section=verdict] .error-detail'), /CHANGED names "no-such-group"/);
  // The API's 404 is logged by the browser as a failed resource; that one is expected here, and nothing else.
  assert.ok(b.problems.every((p) => /status of 404/.test(p)), b.problems.join('|'));
  b.problems.length = 0;
  await visit(page, '/compare');
  assert.match(await page.textContent('[data-section=verdict]'), /Name a baseline and a change/);
  // The form compares what it is given.
  await page.fill('input[name=base]', 'cmpx');
  await page.fill('input[name=changed]', 'cmpx-extra');
  await page.fill('input[name=noise]', 'cmpx.noise');
  await page.click('form.compare-form button[type=submit]');
  await page.waitForFunction(() => location.hash.includes('changed=cmpx-extra'));
  await settle(page);
  assert.equal(await page.getAttribute('h1 [data-verdict]', 'data-verdict'), 'within-noise');
  noProblems(b);
});
