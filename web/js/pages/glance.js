// glance.js - what the dashboard writes the same way on every page: a group's kind, a run's outcome in its group, the
// hardware a group's evidence suspects (each as lockstepd decides it: group_kind_of in server/store/group_rule.h,
// twin_outcome in server/compare/outcome.h).
import { h } from '../dom.js';
import { badge } from '../components.js';

/* What each run outcome means (server/compare/outcome.h), on hover. */
export const OUTCOME_WHY = {
  matched: 'the group matched',
  majority: 'holds what the majority holds where the runs parted',
  'odd-one-out': 'the odd one out: the one run outside the majority where the runs parted',
  'outside-majority': 'outside the majority where the runs parted, with other runs',
  diverged: 'differs from a twin; nothing says which of them is at fault',
  failed: 'a rank exited non-zero',
  incomplete: 'the group could not be compared to the end',
  pending: 'the group is still being compared',
};

/* What each kind of group is (group_kind_of, server/store/group_rule.h); incident twins carry no tag. */
export const KIND_LABEL = { replay: 'replay group', noise: 'noise replicas', experiment: 'experiment' };

/* kindTag(kind) - a tag naming a group that is not incident twins. */
export function kindTag(kind) {
  return KIND_LABEL[kind] ? h('span', { class: 'tag tag-kind', 'data-field': 'kind', 'data-kind': kind }, KIND_LABEL[kind]) : null;
}

/* suspectedItems(list) - each suspected node (linked) with its GPU and weight, and the node's state when it is not ok. */
export function suspectedItems(list) {
  return list.map((s, i) => h('span', { class: 'suspected', 'data-node': s.node }, i ? ', ' : '',
    h('a', { href: '#/nodes/' + encodeURIComponent(s.node) }, s.node),
    s.gpu ? [' ', h('code', { title: s.gpu }, s.gpu.length > 14 ? s.gpu.slice(0, 12) + '…' : s.gpu)] : null,
    s.weight < 1 ? h('span', { class: 'rec-kind' }, ' (one of a pair)') : null,
    s.node_state && s.node_state !== 'ok' && s.node_state !== 'repaired' ? [' ', badge(s.node_state)] : null));
}
