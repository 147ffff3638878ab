// run.test.mjs - the Run page: job metadata, ranks with hosts and GPUs, manifests, its twin group.
import { test, before, after } from 'node:test';
import { openBrowser, visit, shot, noProblems, texts, assert, FIX } from './lib.mjs';

let b;
before(async () => { b = await openBrowser(); });
after(async () => { await b.close(); });

test('a run shows its job, ranks, nodes and GPUs, manifests and twin group', async () => {
  const { page } = b;
  const id = FIX.groups['pair-diverged'][1];
  await visit(page, '/runs?group=pair-diverged');
  await page.click(`tr[data-run="${id}"] a[href^="#/runs/"]`);
  await page.waitForFunction((x) => location.hash === '#/runs/' + x, id);
  await page.waitForSelector('[data-field=twin] .badge');
  assert.equal(await page.textContent('h1 code'), id);
  assert.equal(await page.textContent('h1 .badge'), 'ended');
  const kv = await page.$$eval('dl.kv dt', (dts) => Object.fromEntries(dts.map((dt) => [dt.textContent, dt.nextElementSibling.textContent])));
  assert.equal(kv.Job, '2002.0');
  assert.equal(kv.User, 'bob');
  assert.equal(kv.Nodes, 'n[3-4]');
  assert.equal(kv.Ranks, '4');
  assert.equal(kv.Mode, 'det');
  assert.match(await page.textContent('[data-field=twin]'), /pair-diverged\s*diverged.*first divergence at step 12, rank 2/);
  const hosts = await texts(page, 'tr[data-rank] td:nth-child(2)');
  assert.deepEqual(hosts, ['n3', 'n3', 'n4', 'n4']);
  const rank0 = await page.locator('tr[data-rank="0"] td').allTextContents();
  assert.ok(rank0.includes('NVIDIA H100 80GB HBM3') && rank0.includes('0–29') && rank0.includes('150'), rank0.join('|'));
  await page.click('details.manifest >> nth=0 >> summary');
  const env = await page.$$eval('details.manifest[open] tbody tr', (trs) => Object.fromEntries(trs.map((t) =>
    [t.children[0].textContent, t.children[1].textContent])));
  assert.equal(env['env.NCCL_ALGO'], 'Tree');
  assert.equal(env.cuda, '12.4');
  await shot(page, 'run');
  await page.click('[data-field=twin] a');
  await page.waitForFunction(() => location.hash === '#/twins/pair-diverged');
  noProblems(b);
});
