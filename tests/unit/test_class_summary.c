/* test_class_summary.c - a twin group's classification in a dozen words (server/rules/class_summary.h), from a table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "server/rules/class_summary.h"

static const struct {
    const char *cls, *code, *implicated, *summary;
} CASES[] = {
    {"hardware", "minority", "n3", "Hardware: the odd run's node n3"},
    {"hardware", "minority", "n3,n7", "Hardware: the odd run's nodes n3 and n7"},
    {"hardware", "minority", "n3,n7,n8,n9", "Hardware: the odd run's nodes n3, n7 and 2 more"},
    {"hardware", "minority", "", "Hardware: the odd run's hardware"},
    {"hardware", "pair", "n3,n4", "Hardware: n3 or n4, one of the pair"},
    {"hardware", "pair", "n1,n2,n3,n4", "Hardware: one of n1, n2 and 2 more"},
    {"hardware", "pair", "n3", "Hardware: one of the pair on n3"},
    {"hardware", "replay", "n3", "Hardware: the replays diverged again on n3"},
    {"hardware", "something-new", "n3", "Hardware: n3"},
    {"software", "configuration", "", "Software: the twins' configurations differ"},
    {"software", "every_rank", "", "Software: every rank's inputs differed at once"},
    {"software", "operation", "", "Software: same inputs, another output (an order-dependent reduction)"},
    {"software", "restore", "", "Software: the resumed run restored other state than was saved"},
    {"software", "layout", "", "Software: other rank counts round differently"},
    {"software", "same_hardware", "n3", "Software: the twins diverged on the same hardware"},
    {"software", "local", "", "Software: the difference never left its process"},
    {"software", "root_input", "", "Software: the broadcast's root read another value"},
    {"inconclusive", "same_hardware", "n3", "Inconclusive: diverged on the same hardware, narrow it"},
    {"inconclusive", "content", "n1,n2", "Inconclusive: every rank diverged at once, narrow it"},
    {"inconclusive", "something-new", "", "Inconclusive: narrow it"},
    {"software", "no_hardware", "", "Software: no attested hardware ran the diverging rank"},
    {"software", "spread", "n1,n2,n3,n4", "Software: the record diverges on too many unrelated nodes"},
    {"software", "replay", "", "Software: so the replays of lockstep narrow say"},
    {"software", "nondeterministic", "", "Software: noise replicas, declared nondeterministic"},
    {"software", "something-new", "", "Software"},
    {"none", "match", "", "No divergence: nothing to classify"},
    {"none", "incomplete", "", "Not classified: a run failed or nothing was compared"},
    {"none", "replay", "", "No node blamed by the replays"},
    {NULL, NULL, NULL, "Not classified"},
};

static int words(const char *s)
{
    int n = 0, in = 0;
    for (; *s; s++) {
        int blank = *s == ' ' || *s == '\t' || *s == '\n';
        n += !blank && !in;
        in = !blank;
    }
    return n;
}

static void test_summary_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
        char out[CLASS_SUMMARY_MAX];
        class_summary(CASES[i].cls, CASES[i].code, CASES[i].implicated, out, sizeof(out));
        if (strcmp(out, CASES[i].summary))
            fail_msg("%s/%s: \"%s\", expected \"%s\"", CASES[i].cls, CASES[i].code, out, CASES[i].summary);
        assert_true(words(out) <= CLASS_SUMMARY_WORDS);
    }
}

/* Whatever the nodes are called, a summary stays within a dozen words and CLASS_SUMMARY_MAX bytes: a long list is
 * cut to two names, a name with blanks stays one word. */
static void test_summary_bounded(void **state)
{
    (void)state;
    char many[4096] = "", out[CLASS_SUMMARY_MAX];
    for (int i = 0; i < 300; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%snode with blanks %d", i ? "," : "", i);
    const char *codes[] = {"minority", "pair", "replay", "other"};
    for (size_t k = 0; k < 4; k++) {
        class_summary("hardware", codes[k], many, out, sizeof(out));
        assert_true(words(out) <= CLASS_SUMMARY_WORDS);
        assert_true(strlen(out) < sizeof(out) - 1);
        assert_non_null(strstr(out, "node_with_blanks_0"));
    }
    char longname[300];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    class_summary("hardware", "pair", longname, out, sizeof(out));
    assert_true(words(out) <= CLASS_SUMMARY_WORDS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary_table),
        cmocka_unit_test(test_summary_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
