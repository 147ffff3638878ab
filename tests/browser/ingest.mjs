// ingest.mjs - build real runs for the browser tests and send them through lockstepd's ingest API.
import { BASE, must } from './lib.mjs';

/* fp64(...parts) - a deterministic 64-bit fingerprint (16 hex digits) for a record's identity and variant. */
export function fp64(...parts) {
  let h = 0xcbf29ce484222325n;
  for (const ch of parts.join('|')) {
    h ^= BigInt(ch.codePointAt(0));
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  h ^= h >> 33n; h = (h * 0xff51afd7ed558ccdn) & 0xffffffffffffffffn; h ^= h >> 33n;
  return h.toString(16).padStart(16, '0');
}

/* nextUlp(x, n) - the double n representable values above x. */
export function nextUlp(x, n) {
  const dv = new DataView(new ArrayBuffer(8));
  dv.setFloat64(0, x);
  dv.setBigInt64(0, dv.getBigInt64(0) + BigInt(n));
  return dv.getFloat64(0);
}

/* flipLowBit(x) - x with the lowest bit of its (double) mantissa flipped: 1 ULP away. */
export function flipLowBit(x) {
  const dv = new DataView(new ArrayBuffer(8));
  dv.setFloat64(0, x);
  dv.setBigUint64(0, dv.getBigUint64(0) ^ 1n);
  return dv.getFloat64(0);
}

/* stepRecords(opts) - the records one rank writes in one step: two module outputs (the same name twice),
 * allreduce.out (collective), grad_norm and loss (metrics). With opts.variant set, the run diverges like a
 * real one: at diverge.step only diverge.name on diverge.rank differs; every later step differs on every
 * rank, the metrics by a few ULP. With opts.flip ({step, rank}) the loss of that step and rank has its lowest
 * bit flipped, and nothing else differs (a bit flip in one value, which training here does not carry on). With
 * opts.absorb ({step, rank}) the allreduce.out of that step and rank has another input fingerprint and the same
 * output: a difference the reduction absorbed. */
export function stepRecords({ rank, step, seq0, variant, diverge, extraName, flip, absorb }) {
  const after = variant && step > diverge.step;
  const at = variant && step === diverge.step && rank === diverge.rank;
  const loss0 = 2.5 / (1 + step * 0.1) + rank * 1e-3;
  const gn0 = 1.0 / Math.sqrt(1 + step) + rank * 1e-4;
  const names = [['layer0.mlp.fc1.out', 'module', 0], ['layer0.mlp.fc1.out', 'module', 1], ['allreduce.out', 'collective', 0],
    ['grad_norm', 'metric', 0], ['loss', 'metric', 0]];
  if (extraName) names.splice(2, 0, [extraName, 'module', 0]);
  const out = [];
  let seq = seq0;
  for (const [name, level, occ] of names) {
    const differs = after || (at && name === diverge.name);
    let value = null, dtype = 'f32', shape = [64, 128];
    if (name === 'loss') { value = differs ? nextUlp(loss0, 3 + step - diverge.step) : loss0; dtype = 'f64'; shape = []; }
    if (name === 'loss' && flip && flip.step === step && flip.rank === rank) value = flipLowBit(value);
    if (name === 'grad_norm') { value = differs ? nextUlp(gn0, 1 + step - diverge.step) : gn0; dtype = 'f64'; shape = []; }
    const fp = fp64(name, step, rank, occ, value === null ? (differs ? variant : 'same') : value);
    const rec = { seq: seq++, step, name, occ, level, dtype, shape, fp };
    if (value !== null) rec.value = value;
    if (name === 'allreduce.out') {
      // A 4 MiB output: its input fingerprint differs only once an earlier record did; chunk 2 holds the change.
      rec.nbytes = 4 << 20;
      const absorbed = absorb && absorb.step === step && absorb.rank === rank;
      rec.inputs = [fp64('allreduce.in', step, rank, after ? variant : absorbed ? 'absorbed' : 'same')];
      rec.chunks = [0, 1, 2, 3].map((c) => fp64('chunk', c, step, rank, differs && c === 2 ? variant : 'same'));
    }
    out.push(rec);
  }
  return out;
}

/* registerRun(spec) - register a run and send each rank's manifest (spec.env: variables added to its env). Returns
 * the run id (also in spec.id). */
export async function registerRun(spec) {
  // What slurmstepd would attest (here the admin does), before the run registers as the plugin's registration
  // does: which host ran each rank and the job's user. Hardware evidence counts only where a manifest's host agrees
  // with it, and a group whose owner is attested takes only attested runs (docs/server.md, "Attested identity").
  const hostOf = (rank) => (spec.hosts ? spec.hosts[rank] : `n${1 + (rank >> 1)}`);
  const byHost = new Map();
  for (let rank = 0; rank < spec.ranks; rank++) byHost.set(hostOf(rank), [...(byHost.get(hostOf(rank)) || []), rank]);
  for (const [node, ranks] of byHost) {
    const res = await fetch(BASE + '/api/v1/attest', {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${process.env.LOCKSTEP_ADMIN_TOKEN}` },
      body: JSON.stringify({ job_id: String(spec.job), step_id: '0', node, ranks, user: spec.user || 'alice',
        nodes: spec.nodes || 'n[1-2]' }),
    });
    if (res.status !== 200) throw new Error(`POST /attest -> ${res.status}: ${(await res.text()).slice(0, 300)}`);
  }
  const reg = await must('POST', '/runs', {
    job_id: String(spec.job), step_id: '0', twin_group: spec.group, ranks: spec.ranks, start_step: spec.startStep || 0,
    user: spec.user || 'alice', nodes: spec.nodes || 'n[1-2]', command: spec.command || 'srun --lockstep=det python train.py', mode: 'det',
  });
  const id = spec.id = reg.run_id;
  for (let rank = 0; rank < spec.ranks; rank++) {
    await must('POST', `/runs/${id}/manifest`, {
      rank, host: hostOf(rank), gpu_name: 'NVIDIA H100 80GB HBM3',
      gpu_uuid: `GPU-${fp64(spec.job, rank).slice(0, 8)}-0000`, gpu_pci_bus: `0000:${(0x18 + rank).toString(16)}:00.0`,
      driver: '550.54.15', cuda: '12.4', nccl: spec.nccl || '2.21.5', mpi: 'Open MPI 4.1.4',
      env: { NCCL_ALGO: spec.ncclAlgo || 'Ring', NCCL_PROTO: 'Simple', CUBLAS_WORKSPACE_CONFIG: ':4096:8', OMP_NUM_THREADS: '8', PYTHONHASHSEED: '0',
        ...(spec.env || {}) },
    });
  }
  return id;
}

/* streamRun(spec) - send spec.steps = [from, to] of a registered run (ten steps a batch) and end it unless
 * spec.keepRunning. */
export async function streamRun(spec) {
  if (spec.steps) await sendSteps(spec.id, spec, spec.steps[0], spec.steps[1]);
  if (!spec.keepRunning) await endRun(spec.id, spec.ranks);
}

/* ingestRun(spec) - registerRun then streamRun; spec keeps the batch and record counters for sendSteps.
 * Returns the run id. */
export async function ingestRun(spec) {
  const id = await registerRun(spec);
  await streamRun(spec);
  return id;
}

/* sendSteps(id, spec, from, to) - send steps from..to of every rank of run id, in batches of 10 steps. */
export async function sendSteps(id, spec, from, to) {
  spec.batchSeq = spec.batchSeq || {};
  spec.seq = spec.seq || {};
  for (let rank = 0; rank < spec.ranks; rank++) {
    for (let s = from; s <= to; s += 10) {
      const records = [];
      for (let step = s; step <= Math.min(to, s + 9); step++) {
        const recs = stepRecords({ rank, step, seq0: spec.seq[rank] || 0, variant: spec.variant || null,
          diverge: spec.diverge, extraName: spec.extraName, flip: spec.flip, absorb: spec.absorb });
        spec.seq[rank] = (spec.seq[rank] || 0) + recs.length;
        records.push(...recs);
      }
      const batchSeq = spec.batchSeq[rank] = (spec.batchSeq[rank] || 0) + 1;
      await must('POST', `/runs/${id}/records`, { rank, batch_seq: batchSeq, records });
    }
  }
}

/* endRun(id, ranks) - every rank reports exit code 0. */
export async function endRun(id, ranks) {
  for (let rank = 0; rank < ranks; rank++) await must('POST', `/runs/${id}/end`, { rank, exit_code: 0 });
}
