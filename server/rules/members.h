/* members.h - which runs of a twin group are compared: runs that share no steps with the others (an absurd start_step,
 * nothing recorded, ended empty) never hold the comparison of the others back.
 *
 * Pure: no database. The comparison applies it to each rank (facts of that rank), the group's status to
 * whole runs (facts of any rank), so the status says why a run was left out with the same words the
 * comparison used. In order, a run is left out when
 *   1. it ended without a record anywhere                        ("ended without records");
 *   2. it runs and has no record here yet                        ("no records yet": it joins when it records);
 *   3. all its records come before its own start_step            ("its records all come before its start_step");
 * The others are compared from one shared start: of their start_steps, the one that the most of them cover
 * (a run covers a step from its start_step up to its highest recorded step; an ended run that recorded
 * nothing here covers every step, where it is missing), the latest on a tie. A run that does not cover it
 * is left out as well:
 *   4. it starts later                                          ("no other run has reached its start_step"),
 *   5. it has not come that far                                 ("it has not reached the shared start_step");
 * and when no step is covered by two runs, all are left out    ("it shares no step with the other runs").
 * A run left out by 2, 4 or 5 joins (and the comparison starts over) once it covers the shared start.
 * Tested from a table in tests/unit/test_members.c.
 */
#ifndef SERVER_RULES_MEMBERS_H
#define SERVER_RULES_MEMBERS_H

#include <stdint.h>

/* One run, as the rule sees it. */
typedef struct cmp_member {
    int64_t start_step;  /* where it starts (a resumed run starts late) */
    int has_records;     /* it recorded something here (this rank, or any rank for a whole run) */
    int has_any_records; /* it recorded something on any rank */
    int64_t max_step;    /* its highest recorded step here (when has_records) */
    int ended;           /* it ended here (this rank, or the run) */
    int in;              /* out: compared */
    const char *why;     /* out: why it is left out (NULL when in) */
} cmp_member;

#define CMP_OUT_ENDED_EMPTY "ended without records"
#define CMP_OUT_NOT_YET "no records yet"
#define CMP_OUT_BEFORE_START "its records all come before its start_step"
#define CMP_OUT_NOT_REACHED "no other run has reached its start_step"
#define CMP_OUT_BEHIND "it has not reached the shared start_step"
#define CMP_OUT_NO_OVERLAP "it shares no step with the other runs"

/* cmp_members_pick - decide for each of the `n` runs whether it is compared
 * (m[i].in) or why not (m[i].why), and the shared start in *lo. Returns how
 * many are compared: 0, or at least 2. */
int cmp_members_pick(cmp_member *m, int n, int64_t *lo);

#endif /* SERVER_RULES_MEMBERS_H */
