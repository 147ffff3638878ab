// replay.test.mjs - the twin page's "Verdict by replay": a narrowed group shows its verdict, the placements tried
// with their outcomes, the reasoning and the record; the replay group links back; a group never narrowed says how.
import { test, before, after } from 'node:test';
import { openBrowser, visit, settle, shot, noProblems, texts, assert, FIX } from './lib.mjs';

let b;
before(async () => { b = await openBrowser(); });
after(async () => { await b.close(); });

test('a narrowed group: persistent-hardware on n3, with every placement and the reasoning', async () => {
  const { page } = b;
  const n = FIX.narrow;
  assert.equal(n.verdict, 'persistent-hardware');
  await visit(page, '/twins/trio-replayed');
  await settle(page);
  const sec = page.locator('[data-section=replay]');
  await sec.waitFor();
  assert.equal(await sec.locator('[data-verdict]').first().getAttribute('data-verdict'), 'persistent-hardware');
  assert.equal(await sec.locator('[data-field=verdict-node]').textContent(), 'n3');
  assert.match(await sec.locator('[data-field=verdict-reason]').textContent(), /follows n3/);
  const rows = sec.locator('tr[data-placement]');
  assert.equal(await rows.count(), n.placements.length);
  const nodes = await texts(page, '[data-section=replay] tr[data-placement] td:nth-child(4)');
  const diverged = [];
  for (let i = 0; i < n.placements.length; i++) diverged.push(await rows.nth(i).getAttribute('data-diverged'));
  assert.deepEqual(diverged, nodes.map((x) => String(x === 'n3')), nodes.join('|'));
  assert.ok((await texts(page, '[data-field=reasoning] li')).length >= 3);
  assert.match(await sec.locator('[data-field=record]').textContent(), /layer0\.mlp\.fc1\.out|allreduce|loss|grad_norm/);
  await shot(page, 'twin-replay-verdict');

  // The replay group's page links back to the group it replays.
  await sec.locator(`a[href="#/twins/${encodeURIComponent(n.narrow_group)}"]`).click();
  await page.waitForFunction((g) => location.hash === '#/twins/' + encodeURIComponent(g), n.narrow_group);
  await settle(page);
  const back = page.locator('[data-section=narrow-of] [data-field=narrow-of]');
  assert.equal(await back.textContent(), 'trio-replayed');
  noProblems(b);
});

test('a diverged group never narrowed says how to replay it', async () => {
  const { page } = b;
  await visit(page, '/twins/pair-diverged');
  await settle(page);
  const box = page.locator('[data-section=replay-box]');
  assert.match(await box.textContent(), /Not replayed yet\..*lockstep narrow pair-diverged/);
  noProblems(b);
});
