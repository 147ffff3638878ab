/* test_replay.c - the designed experiment of a replay and its verdict (server/rules/replay.h), from tables of cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/hostlist.h"
#include "server/rules/replay.h"

/* ---- node lists ---- */

static void test_hostlist(void **state)
{
    (void)state;
    static const struct {
        const char *list;
        int n;
        const char *joined;
    } CASES[] = {
        {"", 0, ""},
        {"n3", 1, "n3"},
        {"n1,n2", 2, "n1,n2"},
        {"n[1-3]", 3, "n1,n2,n3"},
        {"n[1-2,07]", 3, "n1,n2,07"},
        {"n[01-03]", 3, "n01,n02,n03"},
        {"rack[1-2]n[1-2]", 4, "rack1n1,rack1n2,rack2n1,rack2n2"},
        {"gpu01, n[3-4] ,gpu01", 3, "gpu01,n3,n4"},
        {"n[1-3", -1, NULL},
        {"n1]", -1, NULL},
        {"n[3-1]", -1, NULL},
        {"n[a-b]", -1, NULL},
        {"n[]", -1, NULL},
    };
    char names[16][HOSTLIST_NAME_MAX], joined[256];
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        int n = hostlist_expand(CASES[i].list, names, 16);
        if (n != CASES[i].n)
            fail_msg("'%s': %d names, want %d", CASES[i].list, n, CASES[i].n);
        if (n < 0)
            continue;
        /* "n[1-2,07]" keeps the prefix: the third name is n07 */
        if (!strcmp(CASES[i].list, "n[1-2,07]")) {
            assert_string_equal(names[2], "n07");
            continue;
        }
        assert_int_equal(hostlist_join(names, n, joined, sizeof(joined)), 0);
        if (strcmp(joined, CASES[i].joined))
            fail_msg("'%s' gave '%s', want '%s'", CASES[i].list, joined, CASES[i].joined);
    }
    assert_int_equal(hostlist_expand("n[1-20]", names, 16), -1); /* more than fit */
}

static void test_usable(void **state)
{
    (void)state;
    static const struct {
        const char *state;
        int usable;
    } CASES[] = {{"idle", 1}, {"mix", 1},   {"alloc", 1}, {"comp", 1}, {"drain", 0}, {"drng", 0},
                 {"down", 0}, {"idle*", 0}, {"down*", 0}, {"fail", 0}, {"resv", 0},  {"maint", 0},
                 {"", 0},     {"idle~", 0}, {"mixed", 1}, {"unk", 0}};
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++)
        if (rp_node_usable(CASES[i].state) != CASES[i].usable)
            fail_msg("state '%s': usable %d, want %d", CASES[i].state, !CASES[i].usable, CASES[i].usable);
}

/* ---- the design ---- */

#define MAXN 8
typedef struct plan_case {
    const char *what;
    rp_run runs[4];
    int nruns, odd, software;
    rp_node nodes[MAXN];
    int max;
    int rc;
    const char *want[8]; /* "role source nodes", in order */
    const char *note;    /* a note that must appear (substring), or NULL */
} plan_case;

#define IDLE4                                                                                                          \
    {                                                                                                                  \
        {"n1", "idle"}, {"n2", "idle"}, {"n3", "idle"},                                                                \
        {                                                                                                              \
            "n4", "idle"                                                                                               \
        }                                                                                                              \
    }
static const plan_case PLANS[] = {
    {"three runs, odd on n3, a free node",
     {{"a", "n1", 0}, {"b", "n2", 0}, {"c", "n3", 1}},
     3,
     2,
     0,
     IDLE4,
     6,
     0,
     {"odd-again 2 n3", "majority-on-odd-nodes 0 n3", "odd-on-majority-nodes 2 n1", "odd-on-other-nodes 2 n4"},
     NULL},
    {"three runs, the odd run's node drained",
     {{"a", "n1", 0}, {"b", "n2", 0}, {"c", "n3", 1}},
     3,
     2,
     0,
     {{"n1", "idle"}, {"n2", "idle"}, {"n3", "drain"}, {"n4", "idle"}},
     6,
     0,
     {"odd-on-majority-nodes 2 n1", "odd-on-other-nodes 2 n4"},
     "n3 is drain in Slurm"},
    {"three runs, no node outside the group",
     {{"a", "n1", 0}, {"b", "n2", 0}, {"c", "n3", 1}},
     3,
     2,
     0,
     {{"n1", "idle"}, {"n2", "idle"}, {"n3", "idle"}, {"n4", "down*"}},
     6,
     0,
     {"odd-again 2 n3", "majority-on-odd-nodes 0 n3", "odd-on-majority-nodes 2 n1"},
     "outside the group for a control"},
    {"a majority run on a drained node: the other majority run stands in",
     {{"a", "n1", 0}, {"b", "n2", 0}, {"c", "n3", 1}},
     3,
     2,
     0,
     {{"n1", "drain"}, {"n2", "alloc"}, {"n3", "idle"}, {"n4", "mix"}},
     6,
     0,
     {"odd-again 2 n3", "majority-on-odd-nodes 1 n3", "odd-on-majority-nodes 2 n2", "odd-on-other-nodes 2 n4"},
     NULL},
    {"three runs, the only free node already a suspect: no control on it",
     {{"a", "n1", 0}, {"b", "n2", 0}, {"c", "n4", 1}},
     3,
     2,
     0,
     {{"n1", "idle"}, {"n2", "idle"}, {"n3", "idle", 1}, {"n4", "idle"}},
     6,
     0,
     {"odd-again 2 n4", "majority-on-odd-nodes 0 n4", "odd-on-majority-nodes 2 n1"},
     "n3 is not a control: lockstepd already holds it a hardware suspect"},
    {"two runs and two free nodes",
     {{"a", "n1", 0}, {"b", "n2", 1}},
     2,
     -1,
     0,
     IDLE4,
     6,
     0,
     {"run-again 0 n1", "run-again 1 n2", "swapped 0 n2", "swapped 1 n1", "other-nodes 0 n3", "other-nodes 0 n4"},
     NULL},
    {"two runs, at most 5 placements",
     {{"a", "n1", 0}, {"b", "n2", 1}},
     2,
     -1,
     0,
     IDLE4,
     5,
     0,
     {"run-again 0 n1", "run-again 1 n2", "swapped 0 n2", "swapped 1 n1", "other-nodes 0 n3"},
     NULL},
    {"two runs, nothing free outside",
     {{"a", "n1", 0}, {"b", "n2", 1}},
     2,
     -1,
     0,
     {{"n1", "idle"}, {"n2", "idle"}, {"n3", "drain"}, {"n4", "drng"}},
     6,
     0,
     {"run-again 0 n1", "run-again 1 n2", "swapped 0 n2", "swapped 1 n1"},
     "without a third opinion"},
    {"two runs, one node down",
     {{"a", "n1", 0}, {"b", "n2", 1}},
     2,
     -1,
     0,
     {{"n1", "idle"}, {"n2", "down"}, {"n3", "idle"}, {"n4", "idle"}},
     6,
     0,
     {"run-again 0 n1", "swapped 1 n1", "other-nodes 0 n3", "other-nodes 0 n4"},
     "n2 is down"},
    {"software by cause: each run in place",
     {{"a", "n1", 0}, {"b", "n2", 1}},
     2,
     -1,
     1,
     IDLE4,
     6,
     0,
     {"run-again 0 n1", "run-again 1 n2"},
     NULL},
    {"multi-node runs",
     {{"a", "n[1-2]", 0}, {"b", "n[3-4]", 1}, {"c", "n[5-6]", 0}},
     3,
     1,
     0,
     {{"n1", "idle"},
      {"n2", "idle"},
      {"n3", "idle"},
      {"n4", "idle"},
      {"n5", "idle"},
      {"n6", "idle"},
      {"n7", "idle"},
      {"n8", "mix"}},
     6,
     0,
     {"odd-again 1 n[3-4]", "majority-on-odd-nodes 0 n[3-4]", "odd-on-majority-nodes 1 n[1-2]",
      "odd-on-other-nodes 1 n7,n8"},
     NULL},
    {"three runs, the odd run's nodes not attested: nothing can be placed",
     {{"a", "n1", 0}, {"b", "n2", 0}, {"c", "", 1}},
     3,
     2,
     0,
     IDLE4,
     6,
     0,
     {NULL},
     "the odd run's nodes are unknown"},
    {"three runs, a majority run's nodes not attested: the other stands in, and the control avoids only known nodes",
     {{"a", "", 0}, {"b", "n2", 0}, {"c", "n3", 1}},
     3,
     2,
     0,
     IDLE4,
     6,
     0,
     {"odd-again 2 n3", "majority-on-odd-nodes 1 n3", "odd-on-majority-nodes 2 n2", "odd-on-other-nodes 2 n1",
      "odd-on-other-nodes 2 n4"},
     "run a: slurmstepd attested no node list"},
    {"two runs, one not attested: the other runs again, a control sized by it, nothing swapped",
     {{"a", "", 0}, {"b", "n2", 1}},
     2,
     -1,
     0,
     IDLE4,
     6,
     0,
     {"run-again 1 n2", "other-nodes 1 n1", "other-nodes 1 n3", "other-nodes 1 n4"},
     "nodes are unknown"},
    {"software by cause, one run not attested: only the other runs in place",
     {{"a", "n1", 0}, {"b", "", 1}},
     2,
     -1,
     1,
     IDLE4,
     6,
     0,
     {"run-again 0 n1"},
     "run b: slurmstepd attested"},
    {"a node list that does not parse",
     {{"a", "n[1-", 0}, {"b", "n2", 1}},
     2,
     -1,
     0,
     IDLE4,
     6,
     -1,
     {NULL},
     "no node list"},
    {"one run", {{"a", "n1", 0}}, 1, -1, 0, IDLE4, 6, -1, {NULL}, "2 to"},
};

static void test_plan(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(PLANS) / sizeof(PLANS[0]); i++) {
        const plan_case *c = &PLANS[i];
        int nn = 0;
        while (nn < MAXN && c->nodes[nn].name)
            nn++;
        rp_group g = {c->runs, c->nruns, c->odd, c->software};
        rp_plan p;
        int rc = rp_plan_make(&g, c->nodes, nn, c->max, &p);
        if (rc != c->rc)
            fail_msg("plan \"%s\": rc %d, want %d", c->what, rc, c->rc);
        int want = 0;
        while (want < 8 && c->want[want])
            want++;
        if (rc == 0 && p.n != want) {
            for (int k = 0; k < p.n; k++)
                print_message("  got %s %d %s\n", p.p[k].role, p.p[k].source, p.p[k].nodes);
            fail_msg("plan \"%s\": %d placements, want %d", c->what, p.n, want);
        }
        for (int k = 0; rc == 0 && k < want; k++) {
            char got[700];
            snprintf(got, sizeof(got), "%s %d %s", p.p[k].role, p.p[k].source, p.p[k].nodes);
            if (strcmp(got, c->want[k]))
                fail_msg("plan \"%s\", placement %d: '%s', want '%s'", c->what, k, got, c->want[k]);
            if (!p.p[k].why[0])
                fail_msg("plan \"%s\", placement %d says not why", c->what, k);
        }
        if (c->note) {
            int found = 0;
            for (int k = 0; k < p.nnotes; k++)
                found |= strstr(p.notes[k], c->note) != NULL;
            if (!found) {
                for (int k = 0; k < p.nnotes; k++)
                    print_message("  note: %s\n", p.notes[k]);
                fail_msg("plan \"%s\": no note with '%s'", c->what, c->note);
            }
        }
    }
}

/* ---- the verdict ---- */

typedef struct ex {
    int original;
    const char *label, *probe, *gpu;
    rp_outcome outcome;
    int content;
} ex;

typedef struct verdict_case {
    const char *what;
    const char *cause;
    int software, majority;
    ex e[10];
    const char *verdict, *node, *gpu;
    const char *reason; /* a substring of the reason */
    const char *note;
} verdict_case;

#define ORIG3(odd_c)                                                                                                   \
    {1, "run a on n1", "n1", "", RP_RAN, 0}, {1, "run b on n2", "n2", "", RP_RAN, 0},                                  \
    {                                                                                                                  \
        1, "run c on n3", "n3", "", RP_RAN, odd_c                                                                      \
    }
#define RAN(l, p, c)                                                                                                   \
    {                                                                                                                  \
        0, l, p, "", RP_RAN, c                                                                                         \
    }
#define NOT(l, p, o)                                                                                                   \
    {                                                                                                                  \
        0, l, p, "", o, -1                                                                                             \
    }

static const verdict_case VERDICTS[] = {
    {"persistent: the divergence follows n3",
     "origin",
     0,
     0,
     {ORIG3(1), RAN("odd-again on n3", "n3", 1), RAN("majority-on-odd-nodes on n3", "n3", 1),
      RAN("odd-on-majority-nodes on n1", "n1", 0), RAN("odd-on-other-nodes on n4", "n4", 0)},
     "persistent-hardware",
     "n3",
     "",
     "follows n3",
     NULL},
    {"persistent, with the GPU every diverging execution names",
     "origin",
     0,
     0,
     {{1, "run a", "n1", "GPU-1", RP_RAN, 0},
      {1, "run b", "n2", "GPU-2", RP_RAN, 0},
      {1, "run c", "n3", "GPU-3", RP_RAN, 1},
      {0, "odd-again", "n3", "GPU-3", RP_RAN, 1},
      {0, "majority-on-odd", "n3", "GPU-3", RP_RAN, 1},
      {0, "odd-on-majority", "n1", "GPU-1", RP_RAN, 0}},
     "persistent-hardware",
     "n3",
     "GPU-3",
     "GPU GPU-3",
     NULL},
    {"transient: it came back nowhere, not even on n3",
     "origin",
     0,
     0,
     {ORIG3(1), RAN("odd-again on n3", "n3", 0), RAN("majority-on-odd-nodes on n3", "n3", 0),
      RAN("odd-on-majority-nodes on n1", "n1", 0)},
     "transient-hardware",
     "n3",
     "",
     "one-off",
     NULL},
    {"no replay on n3: cannot tell transient from persistent",
     "origin",
     0,
     0,
     {ORIG3(1), NOT("odd-again on n3", "n3", RP_NOT_RUN), RAN("odd-on-majority-nodes on n1", "n1", 0),
      RAN("odd-on-other-nodes on n4", "n4", 0)},
     "inconclusive",
     "",
     "",
     "none ran on n3",
     "n3 is drain in Slurm and takes no job"},
    {"software by cause",
     "operation",
     1,
     -1,
     {{1, "run a", "n1", "", RP_RAN, 0},
      {1, "run b", "n2", "", RP_RAN, 1},
      RAN("run-again on n1", "n1", 2),
      RAN("run-again on n2", "n2", 3)},
     "software",
     "",
     "",
     "the cause is operation",
     NULL},
    {"software: replays on one node disagree",
     "content",
     0,
     -1,
     {{1, "run a", "n1", "", RP_RAN, 0},
      {1, "run b", "n2", "", RP_RAN, 1},
      RAN("run-again on n1", "n1", 2),
      RAN("run-again on n2", "n2", 3),
      RAN("swapped on n2", "n2", 4),
      RAN("swapped on n1", "n1", 5)},
     "software",
     "",
     "",
     "does not repeat itself",
     NULL},
    {"software: it differs wherever it runs",
     "origin",
     0,
     0,
     {ORIG3(1), RAN("odd-again on n3", "n3", 1), RAN("odd-on-majority-nodes on n1", "n1", 2),
      RAN("odd-on-other-nodes on n4", "n4", 3)},
     "software",
     "",
     "",
     "share no node",
     NULL},
    {"a pair: a third node says n3's result is wrong",
     "origin",
     0,
     -1,
     {{1, "run a on n1", "n1", "", RP_RAN, 0},
      {1, "run b on n3", "n3", "", RP_RAN, 1},
      RAN("a again on n1", "n1", 0),
      RAN("b again on n3", "n3", 1),
      RAN("a on n3", "n3", 1),
      RAN("b on n1", "n1", 0),
      RAN("a on n4", "n4", 0)},
     "persistent-hardware",
     "n3",
     "",
     "follows n3",
     NULL},
    {"a pair without a third node: no majority",
     "origin",
     0,
     -1,
     {{1, "run a on n1", "n1", "", RP_RAN, 0},
      {1, "run b on n3", "n3", "", RP_RAN, 1},
      RAN("a again on n1", "n1", 0),
      RAN("b again on n3", "n3", 1),
      RAN("a on n3", "n3", 1),
      RAN("b on n1", "n1", 0)},
     "inconclusive",
     "",
     "",
     "no majority",
     "without a third opinion"},
    {"a pair: n3's divergence was a one-off",
     "origin",
     0,
     -1,
     {{1, "run a on n1", "n1", "", RP_RAN, 0},
      {1, "run b on n3", "n3", "", RP_RAN, 1},
      RAN("a again on n1", "n1", 0),
      RAN("b again on n3", "n3", 0),
      RAN("a on n3", "n3", 0),
      RAN("b on n1", "n1", 0)},
     "transient-hardware",
     "n3",
     "",
     "one-off",
     NULL},
    {"intermittent: n3 diverged once and ran clean once",
     "origin",
     0,
     0,
     {ORIG3(1), RAN("odd-again on n3", "n3", 1), RAN("majority-on-odd-nodes on n3", "n3", 0),
      RAN("odd-on-majority-nodes on n1", "n1", 0)},
     "inconclusive",
     "",
     "",
     "does not always come back on n3",
     NULL},
    {"reproduced on n3 but no control ran",
     "origin",
     0,
     0,
     {ORIG3(1), RAN("odd-again on n3", "n3", 1), RAN("majority-on-odd-nodes on n3", "n3", 1),
      NOT("odd-on-majority-nodes on n1", "n1", RP_FAILED), NOT("odd-on-other-nodes on n4", "n4", RP_TIMED_OUT)},
     "inconclusive",
     "",
     "",
     "no replay ran clean elsewhere",
     NULL},
    {"nothing ran",
     "origin",
     0,
     0,
     {ORIG3(1), NOT("odd-again on n3", "n3", RP_NOT_RUN), NOT("odd-on-majority-nodes on n1", "n1", RP_FAILED)},
     "inconclusive",
     "",
     "",
     "no replay recorded the window: odd-again on n3 was never started",
     NULL},
    {"nodes that always move together",
     "origin",
     0,
     0,
     {{1, "run a", "n1,n2", "", RP_RAN, 0},
      {1, "run b", "n5,n6", "", RP_RAN, 0},
      {1, "run c", "n3,n4", "", RP_RAN, 1},
      RAN("odd-again", "n3,n4", 1),
      RAN("majority-on-odd", "n3,n4", 1),
      RAN("odd-on-majority", "n1,n2", 0)},
     "inconclusive",
     "",
     "",
     "follows n3, n4 together",
     NULL},
};

/* probes - split "n1,n2" into the exec's probe array (the strings live in `buf`). */
static void probes(const char *list, const char *gpu, rp_exec *e, char (*buf)[32])
{
    e->nprobe = 0;
    char tmp[128];
    snprintf(tmp, sizeof(tmp), "%s", list);
    for (char *save, *t = strtok_r(tmp, ",", &save); t && e->nprobe < RP_MAX_PROBE; t = strtok_r(NULL, ",", &save)) {
        snprintf(buf[e->nprobe], 32, "%s", t);
        e->probe[e->nprobe] = buf[e->nprobe];
        e->gpu[e->nprobe] = gpu;
        e->nprobe++;
    }
}

static void test_verdict(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(VERDICTS) / sizeof(VERDICTS[0]); i++) {
        const verdict_case *c = &VERDICTS[i];
        rp_exec e[10];
        char bufs[10][RP_MAX_PROBE][32];
        char notes[1][320];
        int n = 0;
        for (; n < 10 && c->e[n].label; n++) {
            memset(&e[n], 0, sizeof(e[n]));
            e[n].original = c->e[n].original;
            e[n].label = c->e[n].label;
            e[n].outcome = c->e[n].outcome;
            e[n].content = c->e[n].content;
            probes(c->e[n].probe, c->e[n].gpu, &e[n], bufs[n]);
        }
        snprintf(notes[0], sizeof(notes[0]), "%s", c->note ? c->note : "");
        rp_facts f = {c->cause, "why", c->software, c->majority, e, n, (const char(*)[320])notes, c->note ? 1 : 0};
        rp_verdict v;
        rp_judge(&f, &v);
        if (strcmp(v.verdict, c->verdict) || strcmp(v.node, c->node) || strcmp(v.gpu, c->gpu) ||
            !strstr(v.reason, c->reason) ||
            (c->note && strcmp(c->verdict, "persistent-hardware") && !strstr(v.reason, c->note))) {
            for (int k = 0; k < v.nsteps; k++)
                print_message("  step: %s\n", v.steps[k]);
            fail_msg("verdict \"%s\": %s node '%s' gpu '%s' (%s); want %s '%s' '%s' with '%s'", c->what, v.verdict,
                     v.node, v.gpu, v.reason, c->verdict, c->node, c->gpu, c->reason);
        }
        if (!v.nsteps)
            fail_msg("verdict \"%s\": no reasoning", c->what);
    }
}

/* The diverged flags: which executions the verdict counts as diverged. */
static void test_diverged_flags(void **state)
{
    (void)state;
    const verdict_case *c = &VERDICTS[0];
    rp_exec e[10];
    char bufs[10][RP_MAX_PROBE][32];
    int n = 0;
    for (; n < 10 && c->e[n].label; n++) {
        memset(&e[n], 0, sizeof(e[n]));
        e[n].original = c->e[n].original;
        e[n].label = c->e[n].label;
        e[n].outcome = c->e[n].outcome;
        e[n].content = c->e[n].content;
        probes(c->e[n].probe, c->e[n].gpu, &e[n], bufs[n]);
    }
    rp_facts f = {c->cause, "why", 0, 0, e, n, NULL, 0};
    rp_verdict v;
    rp_judge(&f, &v);
    const int want[] = {0, 0, 1, 1, 1, 0, 0};
    for (int k = 0; k < n; k++)
        assert_int_equal(v.diverged[k], want[k]);
    assert_int_equal(v.healthy, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_hostlist), cmocka_unit_test(test_usable),
                                       cmocka_unit_test(test_plan), cmocka_unit_test(test_verdict),
                                       cmocka_unit_test(test_diverged_flags)};
    return cmocka_run_group_tests_name("replay", tests, NULL, NULL);
}
