/* kind.h - what a twin group is for, one pure rule: incident twins, a replay group, noise replicas or part of an experiment.
 *
 * A group's status says whether its runs agreed; its kind says whether a disagreement is news. The kinds, in the
 * order the rule decides them:
 *   replay      the replay group of a `lockstep narrow` experiment (NAME.narrow-N): a narrow made it
 *               (narrows.narrow_group is its key; registration refuses that name to anything else)
 *   noise       noise replicas of an experiment (`lockstep twin --noise K`: NAME.noise), runs declared
 *               nondeterministic: their divergence is what they are for
 *   experiment  the change of an experiment (`lockstep twin --change`: NAME.change), or its baseline (a group NAME
 *               whose owner also holds NAME.change or NAME.noise)
 *   twins       every other group: runs that must be bit-identical, whose divergence is an incident
 * The names are those `lockstep twin` and `lockstep narrow` give (cli/cmd_twin.c, server/fleet/narrow.c), as the
 * owner typed them (twin_groups.name), compared within one owner's groups. Tested from a table of cases in
 * tests/unit/test_kind.c.
 */
#ifndef SERVER_COMPARE_KIND_H
#define SERVER_COMPARE_KIND_H

/* The kinds, in the order of TWIN_KINDS. */
typedef enum twin_kind_id { KIND_TWINS, KIND_REPLAY, KIND_NOISE, KIND_EXPERIMENT } twin_kind_id;

/* What the kind rests on. */
typedef struct kind_facts {
    const char *name; /* the group's name as its owner registered it */
    int narrow;       /* a narrow made it (its replay group) */
    int has_change;   /* the owner holds a group named NAME.change */
    int has_noise;    /* ... NAME.noise */
} kind_facts;

/* Every kind's name, in twin_kind_id order, NULL-terminated (GET /api/v1/twins?kind= accepts these). */
extern const char *const TWIN_KINDS[];

/* twin_kind - the kind of the group `f` describes. Never fails. */
twin_kind_id twin_kind(const kind_facts *f);

/* twin_kind_parse - the kind named `s`, or -1 when no kind has that name. */
int twin_kind_parse(const char *s);

#endif /* SERVER_COMPARE_KIND_H */
