// twin.test.mjs - the Twin group page: runs -> group -> first divergence -> records, the match map, curves,
// the three-run majority, a matching pair, the manifest diff, and deep links to each view.
import { test, before, after } from 'node:test';
import { openBrowser, visit, settle, shot, noProblems, texts, must, assert, FIX } from './lib.mjs';
import { ingestRun } from './ingest.mjs';

let b;
before(async () => { b = await openBrowser(); });
after(async () => { await b.close(); });

test('runs -> twin group -> first divergence -> records at that step and rank', async () => {
  const { page } = b;
  const [runA, runB] = FIX.groups['pair-diverged'];
  const d = FIX.divergence;
  await visit(page, '/runs?group=pair-diverged');
  await page.click('table.data tbody tr >> nth=0 >> a[href^="#/twins/"]');
  await page.waitForFunction(() => location.hash === '#/twins/pair-diverged');
  await settle(page);
  assert.equal(await page.textContent('h1 .badge'), 'diverged');
  // why the group has its status, and what each run's outcome means: lockstepd's sentences, restated by no page
  const g = await must('GET', '/twins/pair-diverged');
  assert.equal(await page.textContent('[data-field=status-reason]'), `${g.runs.length} runs: ${g.status_reason}.`);
  for (const r of g.runs) {
    assert.ok(r.outcome_why, `run ${r.run_id} has no outcome_why`);
    assert.equal(await page.getAttribute(`tr[data-run="${r.run_id}"] [data-field=outcome] .badge`, 'title'), r.outcome_why);
  }
  const fd = page.locator('[data-section=first-divergence]');
  assert.equal(await fd.locator('[data-field=step]').textContent(), String(d.step));
  assert.equal(await fd.locator('[data-field=rank]').textContent(), String(d.rank));
  assert.equal(await fd.locator('[data-field=name]').textContent(), d.name);
  // Both fingerprints, side by side, and they differ.
  const fps = await fd.locator('tbody tr >> nth=0').locator('td:nth-child(2)').textContent();
  const fps2 = await fd.locator('tbody tr >> nth=1').locator('td:nth-child(2)').textContent();
  assert.match(fps, /^[0-9a-f]{4}( [0-9a-f]{4}){3}$/);
  assert.notEqual(fps, fps2);
  // Ranks 0, 1, 3 first diverge one step later, at the first record of the step.
  const perRank = await texts(page, '.per-rank tbody tr td:nth-child(1)');
  assert.deepEqual(perRank, ['2', '0', '1', '3']);
  await shot(page, 'twin-diverged');

  await page.click('[data-action=show-divergence]');
  await page.waitForFunction((s) => location.hash.includes(`step=${s.step}`) && location.hash.includes(`rank=${s.rank}`), d);
  await settle(page);
  const rows = page.locator('#records tbody tr');
  assert.equal(await rows.count(), 5);
  const bad = page.locator(`#records tr[data-record="${d.name}"]`);
  assert.equal(await bad.getAttribute('data-status'), 'diverged');
  assert.equal(await page.locator('#records tr[data-record="loss"]').getAttribute('data-status'), 'match');
  // The fingerprint of the second run is marked as the differing one; its inputs matched, so it arose
  // here, and the chunk partials put the change in the third MiB.
  assert.equal(await bad.locator('code.fp-diff').count(), 1);
  assert.equal(await bad.locator('[data-ev=inputs]').textContent(), 'inputs matched: it diverged here');
  assert.equal(await bad.locator('[data-ev=chunk]').textContent(), 'first difference in MiB 2 of 4');
  const heads = await texts(page, '#records thead th');
  assert.ok(heads.includes('Fingerprint ' + runA.slice(0, 8)) && heads.includes('Fingerprint ' + runB.slice(0, 8)), heads.join('|'));
  await shot(page, 'twin-records');
  noProblems(b);
});

test('records after the divergence show both values and their ULP distance', async () => {
  const { page } = b;
  const step = FIX.divergence.step + 2;   // loss differs by 3 + 2 ULP there (tests/browser/ingest.mjs)
  await visit(page, `/twins/pair-diverged?step=${step}&rank=0`);
  const loss = page.locator('#records tr[data-record="loss"]');
  assert.equal(await loss.getAttribute('data-status'), 'diverged');
  const cells = await loss.locator('td').allTextContents();
  assert.equal(cells[cells.length - 1], '5', 'ULP distance of loss');
  const v1 = Number(cells[cells.length - 3]), v2 = Number(cells[cells.length - 2]);
  assert.ok(v1 !== v2 && Math.abs(v1 - v2) < 1e-12, `values ${v1} and ${v2}`);
  const gn = await page.locator('#records tr[data-record="grad_norm"] td').allTextContents();
  assert.equal(gn[gn.length - 1], '3');
  // Later, the collective's inputs differ already: it only carried the divergence on.
  assert.equal(await page.locator('#records tr[data-record="allreduce.out"] [data-ev=inputs]').textContent(), 'inputs differ');
  noProblems(b);
});

test('the match map shows matches before the divergence, and a click opens that cell\'s records', async () => {
  const { page } = b;
  await visit(page, '/twins/pair-diverged');
  const legend = await texts(page, '.legend-item[data-count]');
  // 4 ranks x 12 matching steps before step 12, 3 ranks at step 12; rank 2 and all later steps diverged.
  assert.deepEqual(legend, ['match 51', 'diverged 69', 'missing 0', 'pending 0']);
  await page.locator('canvas.matchmap').scrollIntoViewIfNeeded(); // the page above it grew (cause, call site)
  const box = await page.locator('canvas.matchmap').evaluate((c) => {
    const r = c.getBoundingClientRect();
    return { x: r.left, y: r.top, left: +c.dataset.left, top: +c.dataset.top, cw: +c.dataset.cellW, ch: +c.dataset.cellH, from: +c.dataset.from };
  });
  const step = 5, rank = 3;
  await page.mouse.click(box.x + box.left + (step - box.from) * box.cw + box.cw / 2, box.y + box.top + rank * box.ch + box.ch / 2);
  await page.waitForFunction(() => location.hash.includes('step=5') && location.hash.includes('rank=3'));
  await settle(page);
  assert.match(await page.textContent('#records h2'), /step 5, rank 3/);
  const st = await page.$$eval('#records tbody tr', (trs) => trs.map((t) => t.dataset.status));
  assert.deepEqual([...new Set(st)], ['match']);
  await shot(page, 'twin-map-click');
  noProblems(b);
});

test('loss and grad_norm curves of both runs are drawn with uPlot', async () => {
  const { page } = b;
  await visit(page, '/twins/pair-diverged');
  await page.waitForSelector('[data-chart=loss] .uplot canvas');
  await page.waitForSelector('[data-chart=grad_norm] .uplot canvas');
  const legend = await texts(page, '[data-chart=loss] .u-legend .u-series th');
  assert.equal(legend.filter((t) => t.startsWith('run ')).length, 2, legend.join('|'));
  noProblems(b);
});

test('three runs: the majority names the odd one out', async () => {
  const { page } = b;
  const odd = FIX.groups.trio[2];
  await visit(page, '/twins/trio');
  assert.equal(await page.textContent('h1 .badge'), 'diverged');
  const fd = page.locator('[data-section=first-divergence]');
  assert.equal(await fd.locator('[data-field=step]').textContent(), String(FIX.odd.step));
  assert.equal(await fd.locator('[data-field=rank]').textContent(), String(FIX.odd.rank));
  const tagged = await page.$$eval('[data-section=first-divergence] tbody tr', (trs) =>
    trs.filter((t) => t.querySelector('.tag-bad')).map((t) => t.dataset.run));
  assert.deepEqual(tagged, [odd]);
  assert.equal(await page.locator(`[data-section=runs] tr[data-run="${odd}"] .tag-bad`).count(), 1);
  await shot(page, 'twin-trio');
  noProblems(b);
});

test('a matching pair shows match, no divergence, an all-green map and agreeing manifests', async () => {
  const { page } = b;
  await visit(page, '/twins/pair-match');
  assert.equal(await page.textContent('h1 .badge'), 'match');
  assert.equal(await page.locator('[data-section=first-divergence]').count(), 0);
  assert.deepEqual(await texts(page, '.legend-item[data-count]'), ['match 40', 'diverged 0', 'missing 0', 'pending 0']);
  assert.match(await page.textContent('#records'), /No step and rank chosen/);
  await shot(page, 'twin-match');
  noProblems(b);
});

test('the manifest diff names what differs between the twins', async () => {
  const { page } = b;
  await visit(page, '/twins/pair-diverged');
  const algo = page.locator('#manifest-diff tr[data-key="env.NCCL_ALGO"]');
  const cells = await algo.locator('td').allTextContents();
  assert.deepEqual(cells, ['env.NCCL_ALGO', '0–3', 'yes', 'Ring', 'Tree']);
  const keys = await page.$$eval('#manifest-diff tbody tr', (trs) => [...new Set(trs.map((t) => t.dataset.key))].sort());
  assert.deepEqual(keys, ['env.NCCL_ALGO', 'gpu_uuid']);
  // host names differ by nature: kept apart as identities, never an explanation
  assert.equal(await page.locator('#manifest-diff [data-section=identities] code[data-key=host]').count(), 1);
  // NCCL_ALGO explains the divergence: its cause is the configuration
  assert.equal(await page.textContent('[data-section=first-divergence] [data-field=cause]'), 'configuration');
  await page.locator('#manifest-diff').scrollIntoViewIfNeeded();
  noProblems(b);
});

test('twins whose rank 1 called MPI_Abort show the same exit: the abort\'s code, rank 1 named', async () => {
  const { page } = b;
  const group = 'abort-pair-' + Date.now();
  const ids = [];
  for (const job of [7401, 7402]) ids.push(await ingestRun({ group, job, ranks: 2, steps: [0, 3], keepRunning: true }));
  // one twin's killed peer reports first, the other's abort does; the plugin's report of the aborting rank after
  await must('POST', `/runs/${ids[0]}/end`, { rank: 0, exit_code: 137 });
  await must('POST', `/runs/${ids[0]}/end`, { rank: 1, exit_code: 5, abort: true });
  await must('POST', `/runs/${ids[1]}/end`, { rank: 1, exit_code: 5, abort: true });
  await must('POST', `/runs/${ids[1]}/end`, { rank: 0, exit_code: 137 });
  await must('POST', `/runs/${ids[1]}/end`, { rank: 1, exit_code: 137 });
  await visit(page, '/twins/' + group);
  for (const id of ids) {
    const cell = page.locator(`tr[data-run="${id}"] td:has-text("aborted")`);
    assert.equal(await cell.textContent(), '5 (rank 1 aborted, others killed)');
    assert.match(await cell.locator('span').getAttribute('title'), /rank 1 called MPI_Abort with code 5/);
  }
  noProblems(b);
});

test('an unknown group explains how runs join a group', async () => {
  const { page } = b;
  await visit(page, '/twins/no-such-group');
  assert.match(await page.textContent('.page-head .empty'), /No twin group named "no-such-group".*--lockstep-twin/);
  b.problems.length = 0;   // the API's 404 is logged by the browser as a failed resource; that is expected here
});

test('a resumed run that did not restore its optimizer: the restore difference and the restored checkpoints', async () => {
  const { page } = b;
  const [, resumed] = FIX.groups['resume-bad'];
  await visit(page, '/twins/resume-bad');
  assert.equal(await page.textContent('h1 .badge'), 'diverged');
  const fd = page.locator('[data-section=first-divergence]');
  assert.match(await fd.locator('h2').textContent(), /a restore/);
  assert.equal(await fd.locator('[data-field=step]').textContent(), '4');
  assert.equal(await fd.locator('[data-field=name]').textContent(), 'momentum');
  assert.match(await fd.locator('.divergence-line').textContent(), /not what its twin saved/);
  // the verdict's cause, as lockstepd, the CLI and the alert give it: the restore, on the rank that restored
  assert.equal(await fd.locator('[data-field=cause]').textContent(), 'restore');
  assert.equal(await fd.locator('[data-field=origin]').textContent(), '0');
  assert.match(await fd.locator('.divergence-cause').textContent(), /checkpoint loading/);
  // the saved side holds it, the restored side does not
  const roles = await texts(page, '[data-section=first-divergence] tbody tr td:last-child');
  assert.deepEqual(roles, ['saved', 'restored']);
  assert.equal(await fd.locator('[data-action=show-divergence]').count(), 0);
  const row = page.locator('[data-section=restores] tr[data-restore=not-restored]');
  assert.equal(await row.count(), 1);
  assert.match(await row.textContent(), new RegExp(resumed.slice(0, 8)));
  assert.match(await row.textContent(), /momentum not-restored/);
  await shot(page, 'twin-restore');
  noProblems(b);
});

test('a matching pair that absorbed a difference says so, with the first one', async () => {
  const { page } = b;
  const t = await must('GET', '/twins/pair-absorbed');
  assert.equal(t.status, 'match');
  assert.equal(t.absorbed.count, 1);
  await visit(page, '/twins/pair-absorbed');
  await settle(page);
  const line = page.locator('[data-section=absorbed]');
  assert.equal(await line.locator('[data-field=absorbed-count]').textContent(), '1');
  assert.equal(await line.locator('[data-field=absorbed-rank]').textContent(), '1');
  assert.match(await line.textContent(), /first at step 3, rank 1: allreduce\.out \(occurrence 0\)/);
  noProblems(b);
});
