// glance.js - what the dashboard writes the same way on every page: a group's kind and the hardware a group's evidence
// suspects (as lockstepd decides them: group_kind_of in server/rules/group_rule.h); a run's outcome and what it means
// come from lockstepd as they are (outcome, outcome_why: server/rules/outcome.h).
import { h } from '../dom.js';
import { badge } from '../components.js';

/* What each kind of group is (group_kind_of, server/rules/group_rule.h); incident twins carry no tag. */
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
