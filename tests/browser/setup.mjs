// setup.mjs - ingest the browser tests' runs into a fresh lockstepd and write their ids to the file in argv[2].
import { writeFileSync } from 'node:fs';
import { endRun, fp64, ingestRun, registerRun, sendSteps, streamRun } from './ingest.mjs';
import { must, BASE } from './lib.mjs';
import { compareFixtures } from './compare_fixtures.mjs';

export const XSS_COMMAND = `python train.py --tag '<img src=x onerror="window.__xss=1">' <script>window.__xss=2</script>`;
export const XSS_USER = '<b onmouseover=window.__xss=4>mallory'; // markup, but no '/': attested users hold none
export const XSS_RECORD = '<svg onload=window.__xss=3>';

async function main() {
  const fx = { groups: {} };
  // The runs of a twin group start together, as twins do: all register, then all stream records.
  const group = async (name, specs) => {
    for (const sp of specs) sp.group = name;
    for (const sp of specs) await registerRun(sp);
    for (const sp of specs) await streamRun(sp);
    fx.groups[name] = specs.map((sp) => sp.id);
  };
  // A matching pair: 2 ranks, 20 steps, bit-identical.
  await group('pair-match', [{ job: 1001, ranks: 2, steps: [0, 19], user: 'alice' },
    { job: 1002, ranks: 2, steps: [0, 19], user: 'alice' }]);
  // A matching pair whose allreduce absorbed one rank's other input at step 3 (the outputs agree).
  await group('pair-absorbed', [{ job: 1011, ranks: 2, steps: [0, 5], user: 'alice' },
    { job: 1012, ranks: 2, steps: [0, 5], user: 'alice', absorb: { step: 3, rank: 1 } }]);
  // A diverged pair: 4 ranks, 30 steps; the second run's allreduce.out on rank 2 differs at step 12, and it
  // ran with NCCL_ALGO=Tree on other hosts (the manifest diff explains it).
  const div = { step: 12, rank: 2, name: 'allreduce.out' };
  await group('pair-diverged', [{ job: 2001, ranks: 4, steps: [0, 29], user: 'bob', nodes: 'n[1-2]' },
    { job: 2002, ranks: 4, steps: [0, 29], user: 'bob', nodes: 'n[3-4]', hosts: ['n3', 'n3', 'n4', 'n4'],
      variant: 'b', diverge: div, ncclAlgo: 'Tree' }]);
  // Three runs; the third is the odd one out from step 7 on rank 1.
  const odd = { step: 7, rank: 1, name: 'layer0.mlp.fc1.out' };
  await group('trio', [{ job: 3001, ranks: 2, steps: [0, 14], user: 'carol' },
    { job: 3002, ranks: 2, steps: [0, 14], user: 'carol' },
    { job: 3003, ranks: 2, steps: [0, 14], user: 'carol', variant: 'c', diverge: odd, nodes: 'n3' }]);
  // A resumed run whose loader forgot the optimizer: the full run saved params, momentum and rng after step 4;
  // the resumed one (start step 5) restored params and rng only.
  const entry = (name, value, state, seq) => ({ seq, step: 4, name, level: 'metric', dtype: 'u64', nbytes: 8,
    fp: fp64('state', name, value), value_bits: value.toString(16).padStart(16, '0'), state });
  const full = { job: 8001, ranks: 1, user: 'erin', group: 'resume-bad' };
  const resumed = { job: 8002, ranks: 1, user: 'erin', group: 'resume-bad', startStep: 5 };
  await registerRun(full);
  await registerRun(resumed);
  full.seq = { 0: 100 };
  await sendSteps(full.id, full, 0, 9);
  await must('POST', `/runs/${full.id}/records`, { rank: 0, batch_seq: 100, records: [
    entry('params', 11, 'saved', 1000), entry('momentum', 22, 'saved', 1001), entry('rng', 33, 'saved', 1002)] });
  await endRun(full.id, 1);
  await must('POST', `/runs/${resumed.id}/records`, { rank: 0, batch_seq: 1, records: [
    entry('params', 11, 'restored', 0), entry('rng', 33, 'restored', 1)] });
  resumed.seq = { 0: 100 };
  resumed.batchSeq = { 0: 1 };
  await sendSteps(resumed.id, resumed, 5, 9);
  await endRun(resumed.id, 1);
  fx.groups['resume-bad'] = [full.id, resumed.id];
  // Three runs on n1, n2, n3 whose n3 run is odd from step 7, replayed by a narrow whose replays on n3 diverge
  // again and whose replays elsewhere match: persistent-hardware on n3 (the twin page's "Verdict by replay").
  const odd3 = { step: 7, rank: 1, name: 'layer0.mlp.fc1.out' };
  await group('trio-replayed', ['n1', 'n2', 'n3'].map((n, k) => ({ job: 3101 + k, ranks: 2, steps: [0, 14], user: 'erin',
    nodes: n, hosts: [n, n], ...(n === 'n3' ? { variant: 'c', diverge: odd3 } : {}) })));
  await settled('trio-replayed', (t) => t.status === 'diverged' && t.per_rank.length === 2);
  fx.narrow = await replayed('trio-replayed', odd3);
  // Markup in the command, the user and a record name must render as text.
  await group('xss-group', [{ job: 4001, ranks: 1, steps: [0, 2], user: XSS_USER, command: XSS_COMMAND, extraName: XSS_RECORD }]);
  // A faulty node: in three three-run groups the odd run ran on n9 (every rank), the others on n1; n9's
  // record differs from step 5 on rank 0. Three strong involvements make n9 a hardware suspect.
  const faulty = { step: 5, rank: 0, name: 'layer0.mlp.fc1.out' };
  for (let g = 0; g < 3; g++) {
    await group(`faulty-${g}`, [{ job: 6000 + 10 * g, ranks: 2, steps: [0, 9], user: 'grace', nodes: 'n1' },
      { job: 6001 + 10 * g, ranks: 2, steps: [0, 9], user: 'grace', nodes: 'n1' },
      { job: 6002 + 10 * g, ranks: 2, steps: [0, 9], user: 'grace', nodes: 'n9', hosts: ['n9', 'n9'], variant: 'f', diverge: faulty }]);
  }
  // A bit flip: the third of three runs (on n6) has the lowest bit of its loss flipped at step 9 on rank 0, and
  // nothing else differs: invisible in the overlaid curves, 1 ULP in the twin page's delta plot.
  const flip = { step: 9, rank: 0 };
  await group('bitflip', [9101, 9102, 9103].map((job, k) => ({ job, ranks: 2, steps: [0, 14], user: 'heidi', nodes: 'n6',
    hosts: ['n6', 'n6'], ...(k === 2 ? { flip } : {}) })));
  fx.flip = flip;
    // Enough runs to page through (50 a page).
  fx.groups.bulk = [];
  for (let i = 0; i < 50; i++) fx.groups.bulk.push(await ingestRun({ group: 'bulk', job: 5000 + i, ranks: 1, user: 'dave', command: `./sweep.sh --lr ${i}` }));
  // A baseline, noise replicas and a change, for the compare page.
  const cmp = await compareFixtures();
  Object.assign(fx.groups, cmp.groups);
  fx.compare = { changeAt: cmp.changeAt };
  // Comparison runs as batches commit; wait until the server has seen what was sent.
  await settled('pair-match', (t) => t.status === 'match');
  await settled('pair-absorbed', (t) => t.status === 'match' && t.absorbed !== null);
  await settled('pair-diverged', (t) => t.per_rank.length === 4);
  await settled('trio', (t) => t.per_rank.length === 2);
  for (let g = 0; g < 3; g++) await settled(`faulty-${g}`, (t) => t.classification && t.classification.class === 'hardware');
  await until('node n9 turns suspect', async () => (await must('GET', '/nodes')).items.some((n) => n.name === 'n9' && n.state === 'suspect'));
  await settled('resume-bad', (t) => t.first_divergence && t.first_divergence.kind === 'restore');
  await settled('bitflip', (t) => t.status === 'diverged' && t.classification !== null);
  fx.divergence = div;
  fx.odd = odd;
  fx.faulty = faulty;
  const all = await must('GET', '/runs?limit=1');
  fx.total = all && typeof all.total === 'number' ? all.total : null;
  writeFileSync(process.argv[2], JSON.stringify(fx, null, 2));
}

/* until(what, ok) - poll ok() until it is true, for at most 15 s. */
async function until(what, ok) {
  for (let i = 0; i < 150; i++) {
    if (await ok()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: not within 15 s`);
}

/* admin(method, path, body) - an admin call (the narrow endpoints take lockstepd's admin token). */
async function admin(method, path, body) {
  const res = await fetch(BASE + '/api/v1' + path, {
    method, headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + process.env.LOCKSTEP_ADMIN_TOKEN },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} -> ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/* replayed(group, diverge) - narrow `group` as lockstep narrow does (the cluster's nodes all idle), each placement
 * becoming a run of the replay group on its nodes that diverges there when it runs on n3; the finished narrow. */
async function replayed(group, diverge) {
  const nodes = ['n1', 'n2', 'n3', 'n5'].map((name) => ({ name, state: 'idle' })); // not n4: the runs page's node filter test owns it
  const n = (await admin('POST', `/twins/${group}/narrows`, { nodes, actor: 'sre' })).narrow;
  const jobs = [];
  for (const p of n.placements) {
    // A replay records as the run it replays: the plugin hands it the placement's settings (its manifest shows them).
    const s = p.settings || {};
    const env = { ...(s.env || {}) };
    for (const [k, v] of [['LOCKSTEP_IGNORE', s.ignore], ['LOCKSTEP_STEP_ON', s.step_on], ['LOCKSTEP_MPI_INPUTS', s.mpi_inputs],
      ['LOCKSTEP_TRACE', s.trace]]) if (v) env[k] = v;
    const spec = { job: 3200 + p.index, group: n.narrow_group, ranks: 2, steps: [0, 14], user: 'erin', nodes: p.nodes,
      hosts: [p.nodes, p.nodes], env, ...(p.nodes === 'n3' ? { variant: 'c', diverge } : {}) };
    await registerRun(spec);
    await streamRun(spec);
    jobs.push({ index: p.index, job_id: String(spec.job) });
  }
  await admin('POST', `/narrows/${n.id}/jobs`, { placements: jobs });
  for (let i = 0; i < 150; i++) {
    const d = (await must('GET', `/narrows/${n.id}`)).narrow;
    if (d.state === 'done') return d;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`narrow ${n.id} of ${group} has no verdict after 15 s`);
}

/* settled(group, ok) - poll GET /twins/{group} until ok(answer), for at most 15 s. */
async function settled(group, ok) {
  let t;
  for (let i = 0; i < 150; i++) {
    t = await must('GET', '/twins/' + group);
    if (ok(t)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`twin group ${group} did not reach the expected state in 15 s: ${JSON.stringify(t).slice(0, 400)}`);
}

if (process.argv[1] && process.argv[1].endsWith('setup.mjs')) {
  main().catch((e) => { console.error('setup failed:', e.message); process.exit(1); });
}
