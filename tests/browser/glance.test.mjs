// glance.test.mjs - pages read at a glance: the front page's columns (suspected node/GPU, odd run, a classification in
// a dozen words with the reason on expand), group kinds behind a filter, the chart strip; the twin page's per-step delta
// plot on a bit flip; the node page's charts; the runs list marking the odd run; one fleet baseline everywhere.
import { test, before, after } from 'node:test';
import { openBrowser, visit, shot, noProblems, texts, must, assert, FIX } from './lib.mjs';

let b;
before(async () => { b = await openBrowser(); });
after(async () => { await b.close(); });

/* chartData(page, name) - the data arrays uPlot draws in the chart `name` (once it is drawn). */
async function chartData(page, name) {
  const sel = `.chart[data-chart="${name}"]`;
  await page.waitForFunction((s) => document.querySelector(s) && document.querySelector(s).__plot, sel, { timeout: 10000 });
  return page.$eval(sel, (el) => el.__plot.data.map((a) => Array.from(a)));
}

const words = (s) => s.trim().split(/\s+/).length;

test('the front page says whose fault at a glance: suspected node, odd run, a classification in a dozen words', async () => {
  const { page } = b;
  const api = await must('GET', '/twins?kind=twins&limit=50');
  const g = api.items.find((x) => x.group === 'faulty-0');
  await visit(page, '/');
  await shot(page, 'front-glance');
  const row = page.locator('tr[data-group="faulty-0"]');
  // suspected hardware: the node the evidence names, with its state now (n9 is a suspect)
  assert.deepEqual(g.suspected.map((s) => s.node), ['n9']);
  assert.equal(g.suspected[0].weight, 1);
  assert.equal(await row.locator('[data-field=suspected] a').textContent(), 'n9');
  assert.equal(await row.locator('[data-field=suspected] a').getAttribute('href'), '#/nodes/n9');
  assert.equal(await row.locator('[data-field=suspected] .badge').textContent(), 'suspect');
  // the odd run: the one lockstepd names (outside the majority), with its job and node
  assert.equal(g.odd_runs.length, 1);
  const odd = g.runs.find((r) => r.run_id === g.odd_runs[0]);
  assert.equal(odd.outcome, 'odd-one-out');
  assert.equal(odd.job_id, '6002');
  assert.deepEqual(g.runs.filter((r) => r.outcome === 'majority').length, 2);
  assert.equal(await row.locator('[data-field=odd-run] a').textContent(), 'job 6002');
  assert.equal(await row.locator('[data-field=odd-run] a').getAttribute('href'), '#/runs/' + odd.run_id);
  assert.match(await row.locator('[data-field=odd-run]').textContent(), /on n9/);
  // the classification: lockstepd's summary, at most twelve words; its reason in full only on expand
  const c = g.classification;
  assert.equal(c.summary, "Hardware: the odd run's node n9");
  assert.equal(await row.locator('[data-field=class]').textContent(), c.summary);
  assert.equal(await row.locator('[data-field=class]').getAttribute('data-class'), 'hardware');
  for (const x of api.items) if (x.classification) assert.ok(words(x.classification.summary) <= 12, x.classification.summary);
  assert.equal(await row.locator('[data-field=classification-reason]').isVisible(), false, 'the reason is folded');
  await row.locator('details.why summary').click();
  assert.equal(await row.locator('[data-field=classification-reason]').isVisible(), true);
  assert.equal(await row.locator('[data-field=classification-reason]').textContent(), c.reason);
  assert.ok(words(c.reason) > 12);
  // a pair that diverged names no odd run: either may be at fault
  const pair = api.items.find((x) => x.group === 'pair-diverged');
  assert.deepEqual(pair.odd_runs, []);
  assert.equal(await page.textContent('tr[data-group="pair-diverged"] td:nth-child(4)'), '—');
  noProblems(b);
});

test('incidents first: replay groups, noise replicas and experiments are behind the Kind filter', async () => {
  const { page } = b;
  const kinds = Object.fromEntries((await must('GET', '/twins?limit=100')).items.map((g) => [g.group, g.kind]));
  assert.equal(kinds['pair-diverged'], 'twins');
  assert.equal(kinds['cmpx.noise'], 'noise');
  assert.equal(kinds['cmpx.change'], 'experiment');
  assert.equal(kinds.cmpx, 'twins');   // the baseline of an experiment: deterministic twins, an incident if they part
  assert.equal(kinds[FIX.narrow.narrow_group], 'replay');
  const incidents = await must('GET', '/twins?kind=twins&limit=100');
  await visit(page, '/twins');
  const rows = await page.$$eval('tr[data-group]', (trs) => trs.map((t) => [t.dataset.group, t.dataset.kind]));
  assert.deepEqual(rows.map(([gname]) => gname), incidents.items.map((g) => g.group).slice(0, 50));
  assert.ok(rows.every(([, k]) => k === 'twins'));
  for (const other of ['cmpx.noise', 'cmpx.change', FIX.narrow.narrow_group]) {
    assert.equal(await page.locator(`tr[data-group="${other}"]`).count(), 0, `${other} is not an incident`);
  }
  assert.match(await page.textContent('[data-field=kind-note]'), /Incident twins only/);
  // the others, one click away, each with its kind named
  await page.click('[data-action=other-kinds]');
  await page.waitForFunction(() => location.hash.includes('kind=others'));
  await page.waitForSelector('tr[data-group="cmpx.noise"]');
  const others = await must('GET', '/twins?kind=replay,noise,experiment&limit=100');
  const shown = await page.$$eval('tr[data-group]', (trs) => trs.map((t) => t.dataset.group));
  assert.deepEqual(shown, others.items.map((g) => g.group));
  assert.equal(await page.textContent('tr[data-group="cmpx.noise"] [data-field=kind]'), 'noise replicas');
  assert.equal(await page.textContent(`tr[data-group="${FIX.narrow.narrow_group}"] [data-field=kind]`), 'replay group');
  assert.equal(await page.textContent('tr[data-group="cmpx.change"] [data-field=kind]'), 'experiment');
  await shot(page, 'front-other-kinds');
  // one kind alone, from the select
  await page.selectOption('select[name=kind]', 'noise');
  await page.click('form.filters button[type=submit]');
  await page.waitForFunction(() => location.hash.includes('kind=noise'));
  await page.waitForFunction(() => document.querySelectorAll('tr[data-group]').length === 1);
  assert.deepEqual(await page.$$eval('tr[data-group]', (trs) => trs.map((t) => t.dataset.group)), ['cmpx.noise']);
  await visit(page, '/twins?kind=all');
  assert.ok(await page.locator('tr[data-group="cmpx.noise"]').count() === 1 && await page.locator('tr[data-group="pair-match"]').count() === 1);
  noProblems(b);
});

test('the chart strip: incidents per day by class and open suspects, as lockstepd counts them', async () => {
  const { page } = b;
  const t = await must('GET', '/fleet/timeline?days=14');
  assert.equal(t.buckets.length, 14);
  const sum = (k) => t.buckets.reduce((n, x) => n + x[k], 0);
  const incidents = (await must('GET', '/twins?kind=twins&status=diverged&limit=100')).items;
  const classes = (c) => incidents.filter((g) => g.classification && g.classification.class === c).length;
  assert.equal(sum('hardware'), classes('hardware'));
  assert.equal(sum('software'), classes('software'));
  assert.ok(t.other_kinds >= 2, 'cmpx.noise and the replay group diverged, and are not counted');
  const today = t.buckets[t.buckets.length - 1];
  const nodes = (await must('GET', '/nodes')).items;
  assert.equal(today.suspect, nodes.filter((n) => n.state === 'suspect').length);
  await visit(page, '/');
  const strip = page.locator('[data-section=chart-strip]');
  assert.equal(await strip.locator('[data-legend=incidents] [data-count=hardware]').textContent(), String(sum('hardware')));
  assert.equal(await strip.locator('[data-legend=incidents] [data-count=software]').textContent(), String(sum('software')));
  assert.equal(await strip.locator('[data-legend=suspects] [data-count=suspect]').textContent(), String(today.suspect));
  // the bars: the tallest stack of each day is every incident of that day
  const bars = await chartData(page, 'incidents');
  assert.equal(bars[0].length, 14);
  assert.deepEqual(bars[1], t.buckets.map((x) => x.hardware + x.software + x.unclassified));
  assert.deepEqual(bars[3], t.buckets.map((x) => x.hardware));
  const sus = await chartData(page, 'suspects');
  assert.deepEqual(sus[1], t.buckets.map((x) => x.suspect + x.drained));
  noProblems(b);
});

test('the twin page draws each run\'s per-step difference from the majority: a bit flip shows at its step', async () => {
  const { page } = b;
  const { step } = FIX.flip;
  const t = await must('GET', '/twins/bitflip');
  assert.equal(t.status, 'diverged');
  assert.equal(t.first_divergence.step, step);
  assert.equal(t.first_divergence.name, 'loss');
  const oddId = t.odd_runs[0];
  assert.equal(t.runs[2].run_id, oddId);
  const d = await must('GET', '/twins/bitflip/deltas?rank=0&name=loss');
  const loss = d.series[0];
  const at = loss.steps.indexOf(step);
  assert.equal(loss.first_step, step);
  assert.deepEqual(loss.runs.map((r) => r.ulp[at]), [0, 0, 1]);
  assert.ok(loss.runs[2].ulp.every((u, i) => i === at || u === 0), 'only the flipped step differs');
  assert.ok(loss.runs[2].rel[at] > 0 && loss.runs[2].rel[at] < 1e-15);
  await visit(page, '/twins/bitflip');
  await page.locator('[data-section=deltas]').scrollIntoViewIfNeeded();
  // The overlaid losses cannot show it: the odd run's curve is the others' at plot scale.
  const curves = await chartData(page, 'loss');
  const ci = curves[0].indexOf(step);
  assert.ok(Math.abs(curves[3][ci] - curves[1][ci]) / curves[1][ci] < 1e-15);
  // The delta plot does: the odd run's series alone, 1 ULP at the flipped step, nothing before or after.
  const data = await chartData(page, 'loss delta');
  const xi = data[0].indexOf(step);
  assert.equal(data.length, 2, 'only the run that differs is drawn');
  assert.equal(await page.getAttribute('.chart[data-chart="loss delta"]', 'data-runs'), oddId);
  assert.equal(data[1][xi], 1);
  assert.ok(data[1].every((v, i) => i === xi || v === null));
  assert.equal(await page.getAttribute('.chart[data-chart="loss delta"]', 'data-first-step'), String(step));
  assert.match(await page.textContent('[data-field=delta-first]'), new RegExp(`loss first differs at step ${step}`));
  // the point is drawn: the canvas has the run's colour where the point is
  const lit = await page.$eval('.chart[data-chart="loss delta"]', (el, i) => {
    const u = el.__plot, x = Math.round(u.valToPos(u.data[0][i], 'x', true)), y = Math.round(u.valToPos(u.data[1][i], 'y', true));
    const px = u.ctx.getImageData(x - 2, y - 2, 5, 5).data;
    let n = 0;
    for (let k = 3; k < px.length; k += 4) n += px[k] > 0 ? 1 : 0;
    return n;
  }, xi);
  assert.ok(lit > 0, 'the flipped step\'s point is painted');
  // grad_norm never differs: said in words, no empty chart
  assert.match(await page.textContent('.chart[data-chart="grad_norm delta"]'), /every run holds the majority's bits/);
  // relative on the toggle
  await page.click('[data-section=deltas] [data-measure=rel]');
  await page.waitForSelector('.chart[data-chart="loss delta"][data-measure=rel]');
  const rel = await chartData(page, 'loss delta');
  assert.ok(rel[1][xi] > 0 && rel[1][xi] < 1e-15);
  await shot(page, 'twin-bitflip');
  noProblems(b);
});

test('the node page draws its score and involvements over time', async () => {
  const { page } = b;
  const n = (await must('GET', '/nodes/n9')).node;
  const tl = await must('GET', '/nodes/n9/timeline');
  const last = tl.points[tl.points.length - 1];
  assert.equal(last.kind, 'now');
  assert.equal(last.score, n.score);
  assert.equal(last.involvements, n.involvements);
  assert.equal(last.runs, n.runs);
  assert.ok(tl.points.some((p) => p.kind === 'state' && p.state === 'suspect'));
  const scores = tl.points.filter((p) => p.kind === 'score').map((p) => p.involvements);
  assert.ok(scores.length >= 2 && scores[0] < scores[scores.length - 1], 'the involvements grew');
  await visit(page, '/nodes/n9');
  const score = await chartData(page, 'node score');
  assert.equal(score[0].length, tl.points.length);
  assert.equal(score[1][score[1].length - 1], n.score);
  const inv = await chartData(page, 'node involvements');
  assert.deepEqual(inv[1], tl.points.map((p) => p.involvements));
  assert.deepEqual(inv[2], tl.points.map((p) => p.runs));
  await shot(page, 'node-charts');
  noProblems(b);
});

test('the runs list marks the odd run, not its group\'s status', async () => {
  const { page } = b;
  const t = await must('GET', '/twins/trio');
  const odd = t.odd_runs[0];
  await visit(page, '/runs?group=trio');
  const marks = Object.fromEntries(await page.$$eval('table.data tbody tr', (trs) => trs.map((r) =>
    [r.dataset.run, r.querySelector('[data-field=twin-outcome]').textContent])));
  assert.equal(Object.keys(marks).length, 3);
  for (const [id, m] of Object.entries(marks)) assert.equal(m, id === odd ? 'odd-one-out' : 'majority', `run ${id}`);
  // the group's status is still there, on hover
  assert.equal(await page.getAttribute(`tr[data-run="${odd}"] [data-field=twin-outcome]`, 'data-group-status'), 'diverged');
  // what each outcome means, on hover, in lockstepd's words (twin_outcome_why): the dashboard restates none
  const trio = await must('GET', '/runs?group=trio');
  for (const r of trio.items) {
    assert.ok(r.twin_outcome_why, `run ${r.run_id} has no twin_outcome_why`);
    assert.equal(await page.getAttribute(`tr[data-run="${r.run_id}"] [data-field=twin-outcome] .badge`, 'title'),
      `${r.twin_outcome_why}; the group is diverged`);
  }
  // the API says the same, and a pair's runs (nothing says which) both read diverged
  const api = await must('GET', '/runs?group=trio');
  for (const r of api.items) assert.equal(r.twin_outcome, r.run_id === odd ? 'odd-one-out' : 'majority');
  await visit(page, '/runs?group=pair-diverged');
  assert.deepEqual(await texts(page, 'table.data tbody tr [data-field=twin-outcome]'), ['diverged', 'diverged']);
  await visit(page, '/runs?group=pair-match');
  assert.deepEqual(await texts(page, 'table.data tbody tr [data-field=twin-outcome]'), ['matched', 'matched']);
  // every run of the page: its outcome as GET /twins/G's runs say it
  const all = await must('GET', '/runs?limit=50');
  await visit(page, '/runs');
  const byRun = Object.fromEntries(await page.$$eval('table.data tbody tr', (trs) => trs.map((t2) =>
    [t2.dataset.run, (t2.querySelector('[data-field=twin-outcome]') || {}).textContent || null])));
  for (const r of all.items) assert.equal(byRun[r.run_id], r.twin_outcome, `run ${r.run_id}`);
  for (const gname of [...new Set(all.items.map((r) => r.twin_group).filter(Boolean))].slice(0, 6)) {
    const one = await must('GET', '/twins/' + encodeURIComponent(gname));
    for (const r of all.items.filter((x) => x.twin_group === gname)) {
      const mine = one.runs.find((x) => x.run_id === r.run_id);
      if (mine) assert.equal(r.twin_outcome, mine.outcome, `run ${r.run_id} of ${gname}`);
    }
  }
  await shot(page, 'runs-outcome');
  noProblems(b);
});

test('one fleet baseline, the same number on every page and in the API', async () => {
  const { page } = b;
  const nodes = await must('GET', '/nodes');
  const want = `${(nodes.baseline * 100).toFixed(1)}%`;
  const k = nodes.items.reduce((s, n) => s + n.involvements, 0), runs = nodes.items.reduce((s, n) => s + n.runs, 0);
  assert.ok(Math.abs(nodes.baseline - k / runs) < 1e-9, 'the fleet baseline is the fleet\'s involvements over its runs');
  for (const n of nodes.items) assert.equal(n.baseline, nodes.baseline, `node ${n.name} says the fleet's baseline`);
  const n9 = (await must('GET', '/nodes/n9')).node;
  assert.equal(n9.baseline, nodes.baseline);
  assert.notEqual(n9.reference_rate, n9.baseline, 'the rest of the fleet is another number, called otherwise');
  const seen = [];
  await visit(page, '/fleet');
  seen.push(['fleet', await page.textContent('[data-field=fleet-baseline]')]);
  for (const name of ['n9', 'n3']) {
    await visit(page, '/nodes/' + name);
    seen.push([name, await page.textContent('[data-field=fleet-baseline]')]);
  }
  await visit(page, '/');
  seen.push(['front', await page.textContent('[data-section=fleet-summary] [data-field=fleet-baseline]')]);
  assert.deepEqual(seen, seen.map(([where]) => [where, want]));
  // the node page names the score's reference otherwise
  await visit(page, '/nodes/n9');
  assert.equal(await page.textContent('[data-field=reference-rate]'), `${(n9.reference_rate * 100).toFixed(1)}%`);
  noProblems(b);
});
