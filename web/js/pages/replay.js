// replay.js - the twin page's "Verdict by replay": what `lockstep narrow` found when it re-ran the group's diverging
// window on chosen nodes (the verdict, the placements tried and their outcomes, the reasoning, the record), its
// earlier narrows, and for a replay group the group it replays.
import { h, link } from '../dom.js';
import { apiGet } from '../api.js';
import { badge, card, table, emptyState, errorBox, replace } from '../components.js';
import { fmtTime, shortId, fmtFp } from '../format.js';

const VERDICT_TEXT = {
  'persistent-hardware': 'The divergence follows a node: it comes back wherever that node runs the job, and nowhere else.',
  'transient-hardware': 'A one-off: the divergence came back nowhere, not even where it happened.',
  software: 'Software: it does not depend on the hardware the program ran on.',
  inconclusive: 'The replays could not tell; the reason says what was missing.',
};

/* replaySection(box) - a renderer for `box`; call show(summary) with each twin summary (GET /twins/G). It fetches
 * the newest narrow's details only when the summary says it changed. */
export function replaySection(box) {
  let last = '';
  return {
    async show(summary) {
      const rp = summary && summary.replay, of = summary && summary.narrow_of;
      const key = JSON.stringify([rp, of, summary && summary.status, summary && summary.replays]);
      if (key === last) return;
      last = key;
      if (of) {
        replace(box, h('section', { class: 'card', 'data-section': 'narrow-of' },
          h('h2', null, 'Replays of a narrow'),
          h('p', null, 'These runs are the replays ', h('code', null, 'lockstep narrow'), ' started for group ',
            link('/twins/' + encodeURIComponent(of.group), h('strong', { 'data-field': 'narrow-of' }, of.group)),
            ` (narrow ${of.id}): each is the job of one of its runs, placed on chosen nodes. Their verdict is on that group's page.`)));
        return;
      }
      if (!rp) {
        if (!summary || summary.status !== 'diverged') { replace(box); return; }
        replace(box, card('Verdict by replay', emptyState('Not replayed yet.',
          'lockstep narrow ' + (summary.group || '') + ' re-runs the diverging window on chosen nodes (the odd run again where it ran, ' +
          'a majority run on its nodes, the odd run elsewhere) and says whether the divergence follows a node (persistent hardware), ' +
          'came once (transient), or is the program\'s (software).')));
        return;
      }
      let n;
      try {
        n = (await apiGet('/narrows/' + rp.id)).narrow;
      } catch (e) {
        last = '';
        replace(box, card('Verdict by replay', errorBox(e, 'The narrow could not be loaded')));
        return;
      }
      let history = null;
      if ((summary.replays || 0) > 1) {
        try {
          const l = await apiGet('/twins/' + encodeURIComponent(summary.group) + '/narrows', { limit: 50 });
          history = l.items || [];
        } catch (e) {
          history = null;
        }
      }
      replace(box, render(n, history, summary.evidence));
    },
  };
}

/* verdictBadge(v) - a replay verdict (or 'running' while the replays run) as a badge. */
export function verdictBadge(v) {
  const cls = { 'persistent-hardware': 'bad', 'transient-hardware': 'warn', software: 'info', inconclusive: 'neutral' }[v] || 'neutral';
  return h('span', { class: `badge badge-${cls}`, 'data-verdict': v || 'running' }, v || 'running');
}

/* render(n, history, evidence) - narrow n, the group's earlier narrows, and what its verdict did to the group's
 * suspects evidence (GET /twins/G's "evidence", computed by lockstepd; the classification stays the rules'). */
function render(n, history, evidence) {
  const done = n.state === 'done';
  const where = n.node ? [' on ', h('strong', { 'data-field': 'verdict-node' }, n.node), n.gpu ? [' GPU ', h('code', null, n.gpu)] : null] : null;
  const rec = n.record;
  return h('section', { class: 'card' + (n.verdict === 'persistent-hardware' ? ' card-alert' : ''), 'data-section': 'replay' },
    h('h2', null, 'Verdict by replay'),
    h('p', { class: 'divergence-line' }, done ? verdictBadge(n.verdict) : badge('running'), where,
      done ? ' — ' + (VERDICT_TEXT[n.verdict] || '') : ` — the replays are running (deadline ${fmtTime(n.deadline_at)} UTC).`),
    done ? h('p', { 'data-field': 'verdict-reason' }, n.reason) : null,
    done && evidence && evidence.from === 'replay' && evidence.narrow === n.id
      ? h('p', { class: 'sub', 'data-field': 'verdict-evidence' }, 'Suspects evidence: ', evidence.reason,
        ' (the fleet\'s classification above is what its rules concluded; the verdict decides the evidence beside it).') : null,
    h('p', { class: 'sub' }, `Narrow ${n.id}, ${n.kind} design, started ${fmtTime(n.created_at)} UTC`, n.actor ? ` by ${n.actor}` : '',
      done ? `, verdict ${fmtTime(n.finished_at)} UTC` : '', '. Steps ', String(n.window.from), '–', String(n.window.to),
      ' compared, traced ', h('code', null, n.window.trace), '. Replays: ',
      link('/twins/' + encodeURIComponent(n.narrow_group), h('code', null, n.narrow_group)), '.'),
    table([
      { key: 'index', label: '#', num: true },
      { key: 'role', label: 'Placement', render: (p) => h('span', { title: p.why }, p.role) },
      { key: 'source_job_id', label: 'Job of', render: (p) => 'job ' + (p.source_job_id || '?') },
      { key: 'nodes', label: 'Nodes', render: (p) => h('code', null, p.nodes) },
      { key: 'resume_step', label: 'From', render: (p) => (p.resume_step === null || p.resume_step === undefined ? 'the start' : `checkpoint ${p.resume_step}`) },
      { key: 'job_id', label: 'Slurm job', render: (p) => p.job_id || '—' },
      { key: 'outcome', label: 'Outcome', render: (p) => badge(p.outcome === 'ran' ? (p.diverged === true ? 'diverged' : p.diverged === false ? 'match' : 'ended') : p.outcome,
        p.outcome === 'ran' && p.diverged === true ? 'reproduced the divergence' : p.outcome === 'ran' && p.diverged === false ? 'clean' : p.outcome) },
      { key: 'result', label: 'Result', render: (p) => (p.result ? h('code', null, p.result) : '—') },
      { key: 'run_id', label: 'Replay', render: (p) => (p.run_id ? link('/runs/' + encodeURIComponent(p.run_id), h('code', null, shortId(p.run_id))) : '—') },
      { key: 'detail', label: 'What was seen', class: 'wrap', render: (p) => p.detail || (p.outcome === 'pending' ? 'waiting for it to record the window' : '—') },
    ], n.placements || [], { compact: true, rowAttrs: (p) => ({ 'data-placement': p.index, 'data-outcome': p.outcome, 'data-diverged': String(p.diverged) }) }),
    n.notes && n.notes.length ? h('ul', { class: 'sub', 'data-field': 'notes' }, n.notes.map((t) => h('li', null, 'Not placed: ' + t))) : null,
    n.reasoning && n.reasoning.length ? h('details', { class: 'reasoning', open: true, 'data-field': 'reasoning' },
      h('summary', null, 'Reasoning'), h('ol', null, n.reasoning.map((t) => h('li', null, t)))) : null,
    rec ? h('p', { 'data-field': 'record' }, rec.output_differs_while_inputs_matched
      ? 'First record whose output differs while its inputs matched: ' : 'First differing record at the finest level traced: ',
      h('code', null, rec.name), ` (occurrence ${rec.occurrence}, ${rec.level} ${rec.dtype}) at step ${rec.step}, rank ${rec.rank}; `,
      'replay ', h('code', null, fmtFp(rec.fp)), ' vs ', h('code', null, fmtFp(rec.reference_fp)), '.') : null,
    history && history.length > 1 ? h('details', { class: 'narrow-history', 'data-field': 'narrow-history' },
      h('summary', null, `Every narrow of this group (${history.length})`),
      table([
        { key: 'id', label: 'Narrow', num: true },
        { key: 'created_at', label: 'Started (UTC)', class: 'when', render: (x) => fmtTime(x.created_at) },
        { key: 'verdict', label: 'Verdict', render: (x) => verdictBadge(x.verdict) },
        { key: 'node', label: 'Node', render: (x) => x.node || '—' },
        { key: 'reason', label: 'Reason', class: 'wrap', render: (x) => x.reason || '—' },
      ], history, { compact: true, rowAttrs: (x) => ({ 'data-narrow': x.id }) })) : null);
}
