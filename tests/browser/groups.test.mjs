// groups.test.mjs - the front page (the twin-group index, its filters, paging and live updates, the fleet summary
// beside it), each run's group status on the Runs page, the classification on the twin page, and alerts that ended.
import { test, before, after } from 'node:test';
import { openBrowser, visit, settle, shot, noProblems, texts, must, assert, FIX } from './lib.mjs';
import { ingestRun, registerRun, endRun } from './ingest.mjs';

let b;
before(async () => { b = await openBrowser(); });
after(async () => { await b.close(); });

/* shown(page) - {group: status} of the index's rows. */
async function shown(page) {
  const rows = await page.$$eval('[data-section=groups] tr[data-group]', (trs) => trs.map((t) => [t.dataset.group, t.querySelector('.badge').textContent]));
  return Object.fromEntries(rows);
}

test('the front page is the twin-group index: status, runs, first divergence and its cause, classification from lockstepd', async () => {
  const { page } = b;
  const api = await must('GET', '/twins?kind=twins&limit=50');   // incident twins: what the front page opens on
  await visit(page, '/');
  await shot(page, 'front');
  assert.equal(await page.title(), 'Twin groups · Lockstep');
  assert.deepEqual(await texts(page, 'nav.top a.active'), ['Twin groups']);
  const rows = await shown(page);
  assert.deepEqual(rows, Object.fromEntries(api.items.map((g) => [g.group, g.status])));
  for (const g of ['pair-match', 'pair-diverged', 'trio', 'faulty-0']) assert.ok(g in rows, `${g} is listed`);
  assert.equal(rows['pair-match'], 'match');
  assert.equal(rows['pair-diverged'], 'diverged');
  // The status, first divergence, its cause and the classification are the server's, as it says them: the
  // list's first divergence is GET /twins/G's.
  const pd = api.items.find((g) => g.group === 'pair-diverged');
  const one = await must('GET', '/twins/pair-diverged');
  assert.deepEqual(pd.first_divergence, one.first_divergence);
  assert.equal(pd.status, one.status);
  assert.equal(pd.status_reason, one.status_reason);
  assert.deepEqual(pd.classification, one.classification);
  assert.equal(pd.verdict, undefined);
  const fd = pd.first_divergence;
  const row = page.locator('tr[data-group="pair-diverged"]');
  assert.equal(await row.locator('[data-field=where]').textContent(), `step ${fd.step}, rank ${fd.rank}, ${fd.name}`);
  assert.equal(fd.step, FIX.divergence.step);
  assert.equal(await row.locator('[data-field=cause]').textContent(), fd.cause);
  assert.equal(await row.locator('[data-field=class]').getAttribute('data-class'), pd.classification.class);
  assert.equal(await row.locator('[data-field=class]').textContent(), pd.classification.summary);
  assert.equal(await row.locator('[data-field=classification-reason]').textContent(), pd.classification.reason);
  assert.match(pd.classification.reason, /NCCL_ALGO/);
  assert.equal(await row.locator('[data-field=status]').getAttribute('title'), pd.status_reason);   // why, on hover
  const faulty = page.locator('tr[data-group="faulty-0"]');
  const ff = api.items.find((g) => g.group === 'faulty-0');
  assert.equal(await faulty.locator('[data-field=class]').getAttribute('data-class'), 'hardware');
  assert.equal(await faulty.locator('[data-field=where]').textContent(), `step ${FIX.faulty.step}, rank ${FIX.faulty.rank}, ${FIX.faulty.name}`);
  assert.equal(await faulty.locator('[data-field=cause]').textContent(), ff.first_divergence.cause);
  // A row opens its group.
  await page.click('tr[data-group="trio"] a');
  await page.waitForFunction(() => location.hash === '#/twins/trio');
  await settle(page);
  assert.equal(await page.textContent('h1 .badge'), 'diverged');
  noProblems(b);
});

test('filters narrow the index on the server and live in the URL', async () => {
  const { page } = b;
  await visit(page, '/twins');
  // the status filter offers what lockstepd says ?status= takes, and restates none
  const all = await must('GET', '/twins?kind=twins&limit=50');
  await page.waitForFunction((n) => document.querySelectorAll('select[name=status] option').length === n, all.statuses.length + 1);
  assert.deepEqual(await page.$$eval('select[name=status] option', (os) => os.map((o) => o.value)), ['', ...all.statuses]);
  await page.selectOption('select[name=status]', 'diverged');
  await page.click('form.filters button[type=submit]');
  await page.waitForFunction(() => location.hash.includes('status=diverged'));
  await settle(page);
  const api = await must('GET', '/twins?status=diverged&kind=twins&limit=50');
  assert.deepEqual(Object.keys(await shown(page)).sort(), api.items.map((g) => g.group).sort());
  assert.ok(Object.values(await shown(page)).every((s) => s === 'diverged'));
  await shot(page, 'front-diverged');
  await visit(page, '/twins?user=carol');
  assert.equal(await page.inputValue('input[name=user]'), 'carol');
  assert.deepEqual(await shown(page), { trio: 'diverged' });
  await visit(page, '/twins?node=n4');   // the hostlist n[3-4] names n4
  assert.deepEqual(Object.keys(await shown(page)), ['pair-diverged']);
  await visit(page, '/twins?node=n9&status=diverged');
  assert.deepEqual(Object.keys(await shown(page)).sort(), ['faulty-0', 'faulty-1', 'faulty-2']);
  await visit(page, '/twins?since=2099-01-01');
  assert.match(await page.textContent('.empty'), /No twin group matches these filters.*Loosen or clear/);
  await page.click('[data-action=clear]');
  await page.waitForFunction(() => location.hash === '#/twins');
  noProblems(b);
});

test('the fleet summary beside the index: node counts, the suspects with their scores, open alerts', async () => {
  const { page } = b;
  const nodes = await must('GET', '/nodes');
  const open = await must('GET', '/alerts?state=open&limit=1');
  await visit(page, '/');
  const side = page.locator('[data-section=fleet-summary]');
  assert.equal(await side.locator('[data-count=nodes]').textContent(), String(nodes.items.length));
  const suspects = nodes.items.filter((n) => n.state === 'suspect');
  assert.ok(suspects.some((n) => n.name === 'n9'), 'n9 is a suspect');
  assert.equal(await side.locator('[data-count=suspect]').textContent(), String(suspects.length));
  assert.deepEqual(await side.locator('li[data-node]').evaluateAll((els) => els.map((e) => e.dataset.node)), suspects.map((n) => n.name));
  assert.match(await side.locator('li[data-node=n9]').textContent(), new RegExp(`score ${suspects.find((n) => n.name === 'n9').score.toFixed(3)}`));
  assert.equal(await side.locator('[data-count=open-alerts]').textContent(), String(open.total));
  await page.click('li[data-node=n9] a');
  await page.waitForFunction(() => location.hash === '#/nodes/n9');
  noProblems(b);
});

test('the index follows ingest live: a new group appears pending and turns diverged without a reload', async () => {
  const { page } = b;
  const group = 'live-index-' + Date.now();
  await visit(page, '/');
  await page.evaluate(() => { window.__sameDocument = true; });
  const a = { group, job: 7201, ranks: 2, user: 'ivan', keepRunning: true, steps: [0, 9] };
  const idA = await ingestRun(a);
  await page.waitForSelector(`tr[data-group="${group}"]`, { timeout: 20000 });
  assert.equal(await page.textContent(`tr[data-group="${group}"] .badge`), 'pending');
  const idB = await ingestRun({ group, job: 7202, ranks: 2, user: 'ivan', keepRunning: true, steps: [0, 9],
    variant: 'y', diverge: { step: 4, rank: 1, name: 'layer0.mlp.fc1.out' } });
  await endRun(idA, 2);
  await endRun(idB, 2);
  await page.waitForFunction((g) => document.querySelector(`tr[data-group="${g}"] .badge`).textContent === 'diverged', group, { timeout: 20000 });
  await page.waitForFunction((g) => /step 4, rank 1/.test(document.querySelector(`tr[data-group="${g}"] [data-field=first-divergence]`)?.textContent || ''), group);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the page was not reloaded');
  await shot(page, 'front-live');
  noProblems(b);
});

test('each run on the Runs page shows its outcome in its group, and its group\'s status on hover', async () => {
  const { page } = b;
  await visit(page, '/runs?group=trio');
  const st = await page.$$eval('table.data tbody tr [data-field=twin-outcome]', (els) => els.map((e) => e.dataset.groupStatus));
  assert.deepEqual(st, ['diverged', 'diverged', 'diverged']);
  assert.deepEqual((await texts(page, 'table.data tbody tr [data-field=twin-outcome]')).sort(), ['majority', 'majority', 'odd-one-out']);
  assert.deepEqual(await texts(page, 'table.data tbody tr [data-field=run-status]'), ['ended', 'ended', 'ended']);
  await visit(page, '/runs?group=pair-match');
  assert.deepEqual(await texts(page, 'table.data tbody tr [data-field=twin-outcome]'), ['matched', 'matched']);
  const api = await must('GET', '/runs?limit=50');
  await visit(page, '/runs');
  const byRun = Object.fromEntries(await page.$$eval('table.data tbody tr', (trs) => trs.map((t) => {
    const o = t.querySelector('[data-field=twin-outcome]');
    return [t.dataset.run, o ? o.dataset.groupStatus : null];
  })));
  for (const r of api.items) assert.equal(byRun[r.run_id], r.group_status, `run ${r.run_id}`);
  await shot(page, 'runs-group-status');
  noProblems(b);
});

test('the twin page says the fleet\'s classification and why', async () => {
  const { page } = b;
  const t = await must('GET', '/twins/faulty-1');
  await visit(page, '/twins/faulty-1');
  assert.equal(await page.getAttribute('[data-section=classification] [data-field=class]', 'data-class'), 'hardware');
  assert.equal(await page.textContent('[data-section=classification] [data-field=class]'), t.classification.summary);
  assert.equal(await page.textContent('[data-section=classification] [data-field=classification-reason]'), t.classification.reason);
  assert.match(t.classification.reason, /n9/);
  // the first divergence's cause stays in its own section, apart from the fleet's classification
  assert.equal(await page.textContent('[data-section=first-divergence] [data-field=cause]'), t.first_divergence.cause);
  assert.deepEqual(await texts(page, '.crumbs a'), ['Twin groups']);
  noProblems(b);
});

test('an alert that ended says how: a repaired node resolves its alerts, and the state filter finds them', async () => {
  const { page } = b;
  const token = process.env.LOCKSTEP_ADMIN_TOKEN;
  // n9's suspect alert and the faulty groups' hardware divergences blame n9 (an earlier test may have
  // acknowledged one of them: those still open end with the repair).
  const blaming = (await must('GET', '/alerts?limit=1000')).items.filter((a) => a.node === 'n9' || /^faulty-/.test(a.group || ''));
  assert.equal(blaming.length, 4);
  const wasOpen = blaming.filter((a) => a.state === 'open');
  assert.ok(wasOpen.length >= 3, 'at most one was acknowledged before');
  const res = await fetch(`${process.env.LOCKSTEP_URL}/api/v1/nodes/n9/actions`, { method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + token },
    body: JSON.stringify({ action: 'repair', reason: 'GPU replaced', actor: 'browser-test' }) });
  assert.equal(res.status, 200);
  for (const a of wasOpen) {
    const now = (await must('GET', '/alerts?limit=1000')).items.find((x) => x.id === a.id);
    assert.equal(now.state, 'resolved');
    assert.equal(now.resolved_reason, 'repaired');
  }
  await visit(page, '/alerts?state=resolved');
  const row = page.locator(`tr[data-alert="${wasOpen[0].id}"]`);
  await row.waitFor();
  assert.equal(await row.locator('.badge').first().textContent(), 'resolved');
  assert.equal(await row.locator('[data-field=resolution]').textContent(), 'node n9 repaired');
  // An alert that has ended cannot be acknowledged: no button offers it.
  assert.ok(await page.locator('tr[data-alert]').count() >= wasOpen.length);
  assert.equal(await page.locator('tr[data-alert] [data-action=ack]').count(), 0, 'a resolved alert offers Acknowledge');
  const open = await must('GET', '/alerts?state=open&limit=1000');
  await visit(page, '/alerts?state=open');
  assert.equal(await page.locator('tr[data-alert]').count(), open.items.length);
  assert.equal(await page.locator('tr[data-alert] [data-action=ack]').count(), open.items.length, 'each open alert offers Acknowledge');
  assert.ok(open.items.every((a) => a.state === 'open'));
  await shot(page, 'alerts-resolved');
  noProblems(b);
});

test('more groups than a page: Next follows the server\'s cursor, First page returns', async () => {
  const { page } = b;
  for (let i = 0; i < 52; i++) await registerRun({ group: `page-${String(i).padStart(2, '0')}`, job: 7300 + i, ranks: 1, user: 'pagina' });
  await visit(page, '/twins?user=pagina');
  assert.equal(await page.locator('tr[data-group]').count(), 50);
  assert.equal(await page.textContent('.pager-info'), '50 of 52 groups');
  assert.equal(await page.textContent('tr[data-group] >> nth=0 >> .group-name'), 'page-51');   // newest first
  await page.click('.pager [data-action=next]');
  await page.waitForFunction(() => location.hash.includes('cursor=50'));
  await settle(page);
  assert.deepEqual(Object.keys(await shown(page)), ['page-01', 'page-00']);
  await page.click('.pager [data-action=first]');
  await page.waitForFunction(() => !location.hash.includes('cursor='));
  await settle(page);
  assert.equal(await page.locator('tr[data-group]').count(), 50);
  noProblems(b);
});
