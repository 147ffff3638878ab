// runs.test.mjs - the Runs page: content, filters and their deep links, sorting, paging, markup as text.
import { test, before, after } from 'node:test';
import { openBrowser, visit, settle, shot, noProblems, texts, assert, must, FIX, BASE, api } from './lib.mjs';
import { XSS_COMMAND, XSS_USER } from './setup.mjs';

let b;
before(async () => { b = await openBrowser(); });
after(async () => { await b.close(); });

test('the runs page lists the newest 50 runs with a pager over all of them', async () => {
  const { page } = b;
  const { total } = await must('GET', '/runs?limit=1');   // other test files may have added runs
  await visit(page, '/runs');
  await shot(page, 'runs');
  assert.equal(await page.title(), 'Runs · Lockstep');
  const rows = await page.$$('table.data tbody tr');
  assert.equal(rows.length, 50);
  const info = await page.textContent('.pager-info');
  assert.equal(info, `1–50 of ${total}`);
  await page.click('.pager [data-action=next]');
  await settle(page);
  await page.waitForFunction(() => location.hash.includes('offset=50'));
  await page.waitForFunction(() => /^51–/.test(document.querySelector('.pager-info').textContent));
  assert.equal((await page.$$('table.data tbody tr')).length, Math.min(50, total - 50));
  noProblems(b);
});

test('filtering by twin group and status narrows the list and lands in the URL', async () => {
  const { page } = b;
  await visit(page, '/runs');
  await page.fill('input[name=group]', 'trio');
  await page.click('form.filters button[type=submit]');
  await page.waitForFunction(() => location.hash.includes('group=trio'));
  await settle(page);
  await page.waitForFunction(() => document.querySelectorAll('table.data tbody tr').length === 3);
  const runIds = await page.$$eval('table.data tbody tr', (trs) => trs.map((t) => t.dataset.run).sort());
  assert.deepEqual(runIds, FIX.groups.trio.slice().sort());
  // A deep link with the filters reproduces the view, the form filled in.
  await visit(page, '/runs?user=bob&status=ended');
  assert.equal(await page.inputValue('input[name=user]'), 'bob');
  assert.equal(await page.inputValue('select[name=status]'), 'ended');
  const users = await texts(page, 'table.data tbody tr td:nth-child(3)');
  assert.deepEqual(users, ['bob', 'bob']);
  await shot(page, 'runs-filtered');
  // Nothing matches: an empty state that says what to do.
  await visit(page, '/runs?user=nobody-at-all');
  assert.match(await page.textContent('.empty'), /No run matches these filters.*Loosen or clear/);
  noProblems(b);
});

test('node and date filters match the expanded hostlist and the start day', async () => {
  const { page } = b;
  await visit(page, '/runs?node=n4');
  const groups = await texts(page, 'table.data tbody tr td:nth-child(4)');
  assert.deepEqual(groups, ['pair-diverged'], 'only the run on n[3-4] ran on n4');
  assert.match(await page.textContent('.table-foot .note'), /applied in the browser/);
  // the runs' own start day (UTC, as the page filters), not today's: a tier that runs across midnight sees both
  const listed = await api('GET', '/runs?group=pair-match');
  const day = new Date(listed.json.items[0].created_at).toISOString().slice(0, 10);
  await visit(page, `/runs?since=${day}&until=${day}&group=pair-match`);
  assert.equal((await page.$$('table.data tbody tr')).length, 2);
  await visit(page, '/runs?since=2001-01-01&until=2001-01-02');
  assert.match(await page.textContent('.empty-title'), /No run matches/);
  noProblems(b);
});

test('clicking a column header sorts the page and keeps the order in the URL', async () => {
  const { page } = b;
  await visit(page, '/runs?group=trio');
  await page.click('th[data-key=job_id]');
  await page.waitForFunction(() => location.hash.includes('sort=job_id'));
  await settle(page);
  let jobs = await texts(page, 'table.data tbody tr td:nth-child(2)');
  assert.deepEqual(jobs, ['3003.0', '3002.0', '3001.0']);
  await page.click('th[data-key=job_id]');
  await page.waitForFunction(() => location.hash.includes('dir=asc'));
  await settle(page);
  jobs = await texts(page, 'table.data tbody tr td:nth-child(2)');
  assert.deepEqual(jobs, ['3001.0', '3002.0', '3003.0']);
  noProblems(b);
});

test('markup in a run\'s command and user is shown as text, never run', async () => {
  const { page } = b;
  await visit(page, '/runs?group=xss-group');
  const cmd = await page.textContent('table.data tbody td.cmd code');
  assert.equal(cmd, XSS_COMMAND);
  assert.equal(await page.textContent('table.data tbody td:nth-child(3)'), XSS_USER);
  assert.equal(await page.$('table.data img, table.data script, table.data b, table.data svg'), null);
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  await shot(page, 'runs-markup');
  const id = FIX.groups['xss-group'][0];
  await visit(page, '/runs/' + id);
  assert.equal(await page.textContent('code.command'), XSS_COMMAND);
  await visit(page, `/twins/xss-group?step=1&rank=0`);
  const names = await page.$$eval('#records tbody tr', (trs) => trs.map((t) => t.dataset.record));
  assert.ok(names.includes('<svg onload=window.__xss=3>'), 'the record named with markup is listed by its name');
  assert.equal(await page.$('main svg, main img, main script'), null);
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  noProblems(b);
});

test('an unknown route and an unknown run say where to go', async () => {
  const { page } = b;
  await visit(page, '/nowhere');
  assert.match(await page.textContent('.empty'), /No page at \/nowhere.*runs list/);
  await visit(page, '/runs/00000000-0000-4000-8000-000000000000');
  assert.match(await page.textContent('.empty'), /No run 00000000-.*runs list/);
  assert.ok(BASE);
  // The browser logs the 404 of the API call itself; that is the page working as meant.
  b.problems.length = 0;
});
