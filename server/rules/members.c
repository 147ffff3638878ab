/* members.c - which runs of a twin group are compared (server/rules/members.h). */
#include "server/rules/members.h"

#include <stddef.h>

/* covers - whether candidate `m` covers step `s`. */
static int covers(const cmp_member *m, int64_t s)
{
    if (!m->has_records)
        return 1; /* ended without records here: missing at every step */
    return m->start_step <= s && m->max_step >= s;
}

int cmp_members_pick(cmp_member *m, int n, int64_t *lo)
{
    for (int i = 0; i < n; i++) {
        m[i].in = 1;
        m[i].why = NULL;
        if (m[i].ended && !m[i].has_any_records)
            m[i].why = CMP_OUT_ENDED_EMPTY;
        else if (!m[i].ended && !m[i].has_records)
            m[i].why = CMP_OUT_NOT_YET;
        else if (m[i].has_records && m[i].start_step > m[i].max_step)
            m[i].why = CMP_OUT_BEFORE_START;
        if (m[i].why)
            m[i].in = 0;
    }
    /* the shared start: the candidates' start_step that the most candidates cover, the latest on a tie */
    int best = 0;
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        if (!m[i].in || !m[i].has_records)
            continue;
        int count = 0;
        for (int j = 0; j < n; j++)
            count += m[j].in && covers(&m[j], m[i].start_step);
        if (count > best || (count == best && m[i].start_step > start)) {
            best = count;
            start = m[i].start_step;
        }
    }
    int in = 0;
    for (int i = 0; i < n; i++) {
        if (!m[i].in)
            continue;
        if (best < 2) {
            m[i].in = 0;
            m[i].why = CMP_OUT_NO_OVERLAP;
        } else if (!covers(&m[i], start)) {
            m[i].in = 0;
            m[i].why = m[i].start_step > start ? CMP_OUT_NOT_REACHED : CMP_OUT_BEHIND;
        } else {
            in++;
        }
    }
    *lo = start;
    return in;
}
