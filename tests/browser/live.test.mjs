// live.test.mjs - pages update without a reload while runs are ingested.
import { test, before, after } from 'node:test';
import { openBrowser, visit, shot, noProblems, assert } from './lib.mjs';
import { ingestRun, sendSteps, endRun } from './ingest.mjs';

let b;
before(async () => { b = await openBrowser(); });
after(async () => { await b.close(); });

test('a twin group page follows ingest live: pending, then diverged, then the records appear', async () => {
  const { page } = b;
  const group = 'live-' + Date.now();
  const a = { group, job: 7001, ranks: 2, user: 'erin', keepRunning: true, steps: [0, 9] };
  const idA = await ingestRun(a);
  await visit(page, `/twins/${group}?step=15&rank=1`);
  assert.equal(await page.textContent('h1 .badge'), 'pending');
  assert.match(await page.textContent('#records'), /No run has records at this step and rank/);
  await page.evaluate(() => { window.__sameDocument = true; });

  // The twin arrives and diverges at step 15 on rank 1; the first run catches up.
  const idB = await ingestRun({ group, job: 7002, ranks: 2, user: 'erin', keepRunning: true, steps: [0, 19],
    variant: 'x', diverge: { step: 15, rank: 1, name: 'allreduce.out' } });
  await sendSteps(idA, a, 10, 19);   // continues a's batch and record sequence numbers
  await endRun(idA, 2);
  await endRun(idB, 2);

  await page.waitForFunction(() => document.querySelector('h1 .badge').textContent === 'diverged', null, { timeout: 20000 });
  await page.waitForSelector('[data-section=first-divergence] [data-field=step]');
  assert.equal(await page.textContent('[data-section=first-divergence] [data-field=step]'), '15');
  await page.waitForSelector('#records tr[data-record="allreduce.out"][data-status=diverged]', { timeout: 20000 });
  await page.waitForFunction(() => /diverged [1-9]/.test(document.querySelector('.legend').textContent));
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the page was not reloaded');
  await shot(page, 'live-diverged');
  noProblems(b);
});

test('the runs page shows a newly registered run without a reload', async () => {
  const { page } = b;
  const group = 'live-runs-' + Date.now();
  await visit(page, '/runs');
  await page.evaluate(() => { window.__sameDocument = true; });
  const id = await ingestRun({ group, job: 7101, ranks: 1, user: 'frank', keepRunning: true });
  await page.waitForSelector(`tr[data-run="${id}"]`, { timeout: 20000 });
  assert.equal(await page.textContent(`tr[data-run="${id}"] [data-field=run-status]`), 'running');
  assert.equal(await page.textContent(`tr[data-run="${id}"] [data-field=twin-outcome]`), 'pending');   // alone in its group
  await endRun(id, 1);
  await page.waitForFunction((x) => document.querySelector(`tr[data-run="${x}"] [data-field=run-status]`).textContent === 'ended', id, { timeout: 20000 });
  assert.equal(await page.evaluate(() => window.__sameDocument), true);
  noProblems(b);
});
