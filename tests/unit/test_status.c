/* test_status.c - a twin group's status (server/rules/status.h), from a table of cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/rules/status.h"

static const struct {
    const char *what;
    twin_facts f; /* nruns, running, failed, diverged, missing, unchecked, comparable, awaiting, removed,
                     mpi_unloaded, mpi_unseen */
    const char *status;
} CASES[] = {
    {"no run", {0, 0, 0, 0, 0, 0, 0}, "pending"},
    {"a lone run waits for its twin", {1, 0, 0, 0, 0, 0, 1}, "pending"},
    {"twins still running", {2, 1, 0, 0, 0, 0, 2}, "pending"},
    {"ended, comparison not finished", {2, 0, 0, 0, 0, 1, 2}, "pending"},
    {"ended, compared, agreed", {2, 0, 0, 0, 0, 0, 4}, "match"},
    {"three runs agree", {3, 0, 0, 0, 0, 0, 1}, "match"},
    {"both failed at once with a handful of agreeing records", {2, 0, 2, 0, 0, 0, 4}, "incomplete"},
    {"one failed", {2, 0, 1, 0, 0, 0, 4}, "incomplete"},
    {"both aborted: killed ranks never ended, their steps never compared", {2, 0, 2, 0, 0, 1, 1}, "incomplete"},
    {"one failed while its twin still runs", {2, 1, 1, 0, 0, 1, 1}, "pending"},
    {"ended without anything in common", {2, 0, 0, 0, 0, 0, 0}, "incomplete"},
    {"diverged while running", {2, 1, 0, 1, 0, 3, 2}, "diverged"},
    {"diverged and failed", {2, 0, 1, 1, 0, 0, 2}, "diverged"},
    {"failed, and a run lacks records the other holds: the failure cut them short",
     {2, 0, 2, 1, 1, 0, 2},
     "incomplete"},
    {"a record missing without a failure is a divergence", {2, 0, 0, 1, 1, 0, 2}, "diverged"},
    {"ended, waiting for records agents held back", {2, 0, 0, 0, 0, 2, 2, 2}, "pending"},
    {"still running, records asked for", {2, 1, 0, 0, 0, 1, 2, 1}, "pending"},
    {"diverged on records asked for before", {2, 0, 0, 1, 0, 1, 2, 1}, "diverged"},
    {"ended, stopped at records retention removed", {2, 0, 0, 0, 0, 1, 2, 0, 1}, "incomplete"},
    {"removed records beside records held back: nobody can send them", {2, 0, 0, 0, 0, 2, 2, 1, 1}, "incomplete"},
    {"removed records while a run still runs", {2, 1, 0, 0, 0, 1, 2, 0, 1}, "pending"},
    {"diverged before the removed records", {2, 0, 0, 1, 0, 1, 2, 0, 1}, "diverged"},
    {"removed records of steps compared already (digests agreed)", {2, 0, 0, 0, 0, 0, 2, 0, 0}, "match"},
    {"ended without records: their MPI calls went unseen", {2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, "incomplete"},
    {"MPI calls unseen, yet other records compared and agreed", {2, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2}, "match"},
};

/* Records held back by agents that ended are only sent by a person: the reason says how. */
static void test_awaiting_says_how(void **state)
{
    (void)state;
    twin_facts f = {.nruns = 2, .unchecked = 3, .comparable = 3, .awaiting = 3};
    char why[512] = "";
    assert_string_equal(twin_status(&f, why, sizeof(why)), "pending");
    assert_non_null(strstr(why, "3 ranks"));
    assert_non_null(strstr(why, "lockstep replay --steps asked"));
    f.awaiting = 0;
    twin_status(&f, why, sizeof(why));
    assert_null(strstr(why, "lockstep replay"));
}

/* While a run still runs, records asked for mean the digests differ: the reason says so at once, not that the runs
 * agree so far (before, it did until the records came, a batch interval later). */
static void test_awaiting_while_running_says_digests_differ(void **state)
{
    (void)state;
    twin_facts f = {.nruns = 2, .running = 2, .unchecked = 1, .comparable = 3, .awaiting = 1};
    char why[512] = "";
    assert_string_equal(twin_status(&f, why, sizeof(why)), "pending");
    assert_non_null(strstr(why, "digests show a difference on 1 rank:"));
    assert_non_null(strstr(why, "`lockstep replay --steps asked DIR`")); /* whole: an ended twin's are in its spool */
    assert_null(strstr(why, "agree"));
    f.awaiting = 0;
    twin_status(&f, why, sizeof(why));
    assert_non_null(strstr(why, "they agree so far"));
    f.diverged = 1; /* a divergence found from records says more: it decides */
    f.awaiting = 2;
    assert_string_equal(twin_status(&f, why, sizeof(why)), "diverged");
}

/* Records retention removed: the group says so, not that agents hold them back (before, the held-back reason and
 * `pending` for ever). */
static void test_removed_says_what(void **state)
{
    (void)state;
    twin_facts f = {.nruns = 2, .unchecked = 1, .comparable = 2, .awaiting = 0, .removed = 1};
    char why[512] = "";
    assert_string_equal(twin_status(&f, why, sizeof(why)), "incomplete");
    assert_non_null(strstr(why, "retention removed"));
    assert_null(strstr(why, "lockstep replay"));
    assert_null(strstr(why, "held back"));
}

/* Runs that ended sharing nothing: the reason is the one that applies, never a list of possible ones. */
static const struct {
    const char *what;
    twin_facts f;
    const char *says, *not1, *not2;
} NOTHING_SHARED[] = {
    {"no run recorded",
     {.nruns = 2, .silent = 2, .min_ranks = 2, .max_ranks = 4},
     "(no records)",
     "shard",
     "in common"},
    {"one run recorded nothing",
     {.nruns = 2, .silent = 1, .min_ranks = 2, .max_ranks = 2},
     "1 of 2 runs recorded nothing",
     "shard",
     "in common"},
    {"rank counts differ, a run without shards",
     {.nruns = 2, .min_ranks = 2, .max_ranks = 4, .shardless = 1},
     "different rank counts (2 to 4 ranks)",
     "no records",
     "in common"},
    {"rank counts differ, shards in both, no step in common",
     {.nruns = 2, .min_ranks = 2, .max_ranks = 4},
     "no step in common",
     "no records",
     "no shards"},
    {"same rank counts, no step in common",
     {.nruns = 2, .min_ranks = 2, .max_ranks = 2},
     "no step in common",
     "shard",
     "no records"},
};

static void test_nothing_shared_says_which(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(NOTHING_SHARED) / sizeof(NOTHING_SHARED[0]); i++) {
        char why[512] = "";
        const char *got = twin_status(&NOTHING_SHARED[i].f, why, sizeof(why));
        if (strcmp(got, "incomplete") || !strstr(why, NOTHING_SHARED[i].says) || strstr(why, NOTHING_SHARED[i].not1) ||
            strstr(why, NOTHING_SHARED[i].not2))
            fail_msg("case \"%s\": %s (%s)", NOTHING_SHARED[i].what, got, why);
    }
}

/* Runs that used MPI and recorded none of it: the reason says so, and what to do, rather than "no records". */
static void test_mpi_unseen_says_why(void **state)
{
    (void)state;
    twin_facts f = {.nruns = 2, .mpi_unseen = 2};
    char why[512] = "";
    assert_string_equal(twin_status(&f, why, sizeof(why)), "incomplete");
    assert_non_null(strstr(why, "2 of 2 runs made MPI calls that Lockstep did not see"));
    assert_non_null(strstr(why, "another MPI library or binding"));
    f.mpi_unseen = 0;
    f.mpi_unloaded = 1;
    twin_status(&f, why, sizeof(why));
    assert_non_null(strstr(why, "1 of 2 runs made MPI calls"));
    assert_non_null(strstr(why, "LD_PRELOAD"));
    f.mpi_unloaded = 0;
    twin_status(&f, why, sizeof(why));
    assert_null(strstr(why, "MPI"));
}

static void test_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        char why[512] = "";
        const char *got = twin_status(&CASES[i].f, why, sizeof(why));
        if (strcmp(got, CASES[i].status))
            fail_msg("case \"%s\": %s (%s), want %s", CASES[i].what, got, why, CASES[i].status);
        if (!why[0])
            fail_msg("case \"%s\": no reason", CASES[i].what);
    }
}

/* TWIN_STATUSES (what GET /api/v1/twins?status= accepts) is exactly the set the rule returns. */
static void test_statuses_listed(void **state)
{
    (void)state;
    int seen[8] = {0}, n = 0;
    while (TWIN_STATUSES[n])
        n++;
    assert_int_equal(n, 4);
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        char why[512];
        const char *got = twin_status(&CASES[i].f, why, sizeof(why));
        int k = 0;
        while (TWIN_STATUSES[k] && strcmp(TWIN_STATUSES[k], got))
            k++;
        if (!TWIN_STATUSES[k])
            fail_msg("case \"%s\": %s is not in TWIN_STATUSES", CASES[i].what, got);
        seen[k] = 1;
    }
    for (int k = 0; k < n; k++)
        if (!seen[k])
            fail_msg("no case gives %s", TWIN_STATUSES[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cases),
                                       cmocka_unit_test(test_statuses_listed),
                                       cmocka_unit_test(test_awaiting_says_how),
                                       cmocka_unit_test(test_awaiting_while_running_says_digests_differ),
                                       cmocka_unit_test(test_removed_says_what),
                                       cmocka_unit_test(test_nothing_shared_says_which),
                                       cmocka_unit_test(test_mpi_unseen_says_why)};
    return cmocka_run_group_tests_name("status", tests, NULL, NULL);
}
