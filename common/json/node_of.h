/* node_of.h - which node and GPU ran a rank: the manifest's own word, weighed against slurmstepd's attestation.
 *
 * Pure: JSON in (jansson, borrowed), strings out, no I/O. The one home of this rule: lockstepd's suspects rules
 * and replay probes, the manifest diff's node count, and the SQL that restates it for a round trip (held to the
 * same cases by the SQL tier). The rule:
 *
 *   reported   the manifest's host: `slurm_node`, else `node`, else `host` (a non-empty string; else "").
 *   GPU        the manifest's `gpu` object when it has one, else the one element of `gpus` (a rank that sees
 *              several GPUs names none); its `uuid` and `name` (strings; else "").
 *   node       what the rank's evidence counts against. Attested (slurmstepd named the node that ran the rank):
 *              that node, unless the manifest reports another host (equal, or the node's name followed by a
 *              '.' and a domain, is the same host) -- then nothing: the job's word and Slurm's disagree. Not
 *              attested: nothing, or with trust_reported_hosts the reported host, else the run's node when its
 *              node list names a single node. The GPU counts only with a node.
 *
 * Tested from the cases in tests/data/node_of/cases.json (tests/unit/test_node_of.c); adding a case needs no
 * code.
 */
#ifndef COMMON_JSON_NODE_OF_H
#define COMMON_JSON_NODE_OF_H

#include <jansson.h>

/* The manifest keys the rule reads: SQL that hands lockstepd only those of a manifest selects these
 * (`jsonb_object_agg` over `jsonb_each` where the key is one of them). A text[] literal. */
#define NODE_OF_KEYS_SQL "{slurm_node,node,host,gpu,gpus}"

/* What Slurm says of the rank. */
typedef struct node_facts {
    const char *attested;  /* the node slurmstepd attested for the rank; NULL or "": none */
    int trust_reported;    /* the trust_reported_hosts setting */
    const char *run_nodes; /* the run's Slurm node list (hostlist form); NULL or "": unknown */
} node_facts;

/* The answer; every string is borrowed from the manifest or the facts, never NULL but `node`. */
typedef struct node_place {
    const char *reported;       /* the manifest's host, "" when it names none */
    const char *node;           /* the node the rank counts against, NULL: none */
    const char *gpu, *gpu_name; /* the GPU's uuid and name, "" when unknown or without a node */
} node_place;

/* node_of_rank - fill `out` for a rank whose manifest is `manifest` (NULL, or not an object: none arrived) and
 * whose attestation and run are `facts`. Never fails; `out` borrows from its inputs. */
void node_of_rank(const json_t *manifest, const node_facts *facts, node_place *out);

/* node_of_reported - the manifest's host alone (the `reported` of node_of_rank), "" when it names none. */
const char *node_of_reported(const json_t *manifest);

/* node_of_same_host - 1 when `reported` (a manifest's host) names node `node`: equal, or `node` followed by '.'. */
int node_of_same_host(const char *reported, const char *node);

#endif /* COMMON_JSON_NODE_OF_H */
