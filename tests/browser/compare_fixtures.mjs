// compare_fixtures.mjs - runs for the compare page's tests: a deterministic baseline (cmpx, two runs), four noise
// replicas (cmpx.noise, metrics within 1e-9 of the baseline's), one more replica (cmpx-extra) and a change
// (cmpx.change) whose metrics move by 1e-3 from step CHANGE_AT on. 20 steps, 2 ranks, loss and grad_norm.
import { fp64, registerRun, endRun } from './ingest.mjs';
import { must } from './lib.mjs';

export const CHANGE_AT = 6;
const STEPS = 20;

/* unit(seed, step, k) - a fixed pseudo-random number in [-1, 1). */
function unit(seed, step, k) {
  let x = (seed * 2654435761 + step * 40503 + k * 9973) >>> 0;
  x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
  return (x / 4294967296) * 2 - 1;
}

function records(spec, rank, step, seq0) {
  const out = [];
  let seq = seq0;
  for (const [name, k] of [['loss', 0], ['allreduce.out', -1], ['grad_norm', 1]]) {
    if (k < 0) {
      const differs = spec.noise || (spec.shift && step >= CHANGE_AT);
      out.push({ seq: seq++, step, name, level: 'collective', dtype: 'f32', shape: [256], nbytes: 1024,
        fp: fp64(name, step, rank, differs ? spec.seed : 'base') });
      continue;
    }
    let v = k === 0 ? 2 / (1 + 0.05 * step) + 1e-3 * rank : 1 / Math.sqrt(step) + 1e-4 * rank;
    if (spec.noise) v *= 1 + 1e-9 * unit(spec.seed, step, k);
    if (spec.shift && step >= CHANGE_AT) v *= 1 + spec.shift;
    out.push({ seq: seq++, step, name, level: 'metric', dtype: 'f64', shape: [], value: v, fp: fp64(name, String(v)) });
  }
  return out;
}

async function ingest(spec) {
  const id = await registerRun({ job: spec.job, group: spec.group, ranks: 2, user: 'erin', command: 'lockstep-train ' + (spec.args || '') });
  for (let rank = 0; rank < 2; rank++) {
    const recs = [];
    for (let step = 1; step <= STEPS; step++) recs.push(...records(spec, rank, step, recs.length));
    await must('POST', `/runs/${id}/records`, { rank, batch_seq: 1, records: recs });
  }
  await endRun(id, 2);
  return id;
}

/* compareFixtures() - ingest them; returns {groups: {name: [ids]}, changeAt}. */
export async function compareFixtures() {
  const groups = {};
  const add = async (g, spec) => { (groups[g] = groups[g] || []).push(await ingest({ ...spec, group: g })); };
  // job ids unique among all fixtures (setup.mjs: 6000-6032 for the faulty groups): a job is attested once
  await add('cmpx', { job: 6501 });
  await add('cmpx', { job: 6502 });
  for (let i = 0; i < 4; i++) await add('cmpx.noise', { job: 6510 + i, seed: 11 + i, noise: true, args: '--nondeterministic' });
  await add('cmpx-extra', { job: 6520, seed: 31, noise: true, args: '--nondeterministic' });
  await add('cmpx.change', { job: 6530, seed: 41, shift: 1e-3, args: '--lr 2e-3' });
  return { groups, changeAt: CHANGE_AT };
}
