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

test('a run shows its consensus line: none checked, or where its ranks disagreed and which is odd', async () => {
  const { page } = b;
  const id = FIX.groups['pair-diverged'][1];
  await visit(page, '/runs/' + id);
  await page.waitForSelector('[data-field=consensus] .badge');
  assert.equal(await page.textContent('[data-field=consensus] .badge'), 'none');
  assert.match(await page.textContent('[data-field=consensus]'), /nothing checked yet/);
  // the same page with the server's answer for a run whose rank 2 held another copy (the API shape of
  // GET /api/v1/runs/{id}; tests/integration/test_consensus.c makes lockstepd produce it)
  await page.route(`**/api/v1/runs/${id}`, async (route) => {
    const res = await route.fetch();
    const json = await res.json();
    json.consensus = { status: 'disagree', checked: 1234, first: { step: 812, name: 'mpi.allreduce', occurrence: 3,
      comm_ranks: [0, 1, 2, 3], comm_size: 4, odd_ranks: [2], clear: true, odd_rank: 2,
      site: { module: 'train', offset: 6699, function: 'train_step' }, node: 'n2', gpu: '3' } };
    await route.fulfill({ response: res, json });
  });
  await visit(page, '/runs/' + id);
  await page.waitForSelector('[data-field=consensus] .badge[data-status=disagree]');
  assert.match(await page.textContent('[data-field=consensus]'),
    /at step 812, mpi\.allreduce #3 on ranks \{0,1,2,3\}: rank 2 is odd \(node n2, gpu 3\) at site train_step \(train\+0x1a2b\); 1,234 windows checked/);
  await shot(page, 'run-consensus');
  await page.unroute(`**/api/v1/runs/${id}`);
  noProblems(b);
});
