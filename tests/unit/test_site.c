/* test_site.c - call sites as people read them, and ignore/step patterns (common/site.h), from tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/site.h"

/* Pattern lists: the spec, and the reason's key words when it is refused (NULL: accepted). */
static const struct {
    const char *spec, *refused;
} SPECS[] = {
    {"", NULL},
    {"report_timings", NULL},
    {"Solver::report_*,mpi.reduce", NULL},
    {"[a-z]*_timings", NULL},
    {"[]x]y", NULL},
    {"a\\*b", NULL},
    {"a,,b", "empty pattern"},
    {"a,", "empty pattern"},
    {",a", "empty pattern"},
    {"*", "matches every record"},
    {"x,**", "matches every record"},
    {"[abc", "without its ']'"},
    {"abc\\", "lone"},
    {"f(int, double)", "'(' without its ')'"},
    {"f(int? double)", NULL},
    {"f)", "')' without"},
    {"a\tb", "control character"},
    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
     "longer than"},
};

static void test_parse(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(SPECS) / sizeof(SPECS[0]); i++) {
        site_patterns p;
        char why[512] = "";
        int rc = site_patterns_parse(SPECS[i].spec, &p, why, sizeof(why));
        if (!SPECS[i].refused && rc != 0)
            fail_msg("'%s' refused: %s", SPECS[i].spec, why);
        if (SPECS[i].refused && (rc == 0 || !strstr(why, SPECS[i].refused)))
            fail_msg("'%s': rc %d, reason '%s', want a refusal naming '%s'", SPECS[i].spec, rc, why, SPECS[i].refused);
    }
    site_patterns p;
    char why[256];
    assert_int_equal(site_patterns_parse("a,b,c", &p, why, sizeof(why)), 0);
    assert_int_equal(p.n, 3);
    assert_string_equal(p.pat[2], "c");
}

/* Matching: patterns, a record name and a site (function, caller), and whether the record is picked. */
static const struct {
    const char *spec, *name, *function, *caller;
    int match;
} MATCHES[] = {
    {"mpi.reduce", "mpi.reduce", NULL, NULL, 1},
    {"mpi.reduce", "mpi.reduce_scatter", NULL, NULL, 0},
    {"mpi.*", "mpi.allreduce", NULL, NULL, 1},
    {"report_timings", "mpi.reduce", "report_timings", NULL, 1},
    {"Solver::report_timings", "mpi.reduce", "Solver::report_timings(int) const", NULL, 1},
    {"Solver::report_timings(int)*", "mpi.reduce", "Solver::report_timings(int) const", NULL, 1},
    {"*timings*", "mpi.allreduce", "Solver::report_timings(int)", NULL, 1},
    {"Solver::finish", "mpi.allreduce", NULL, "Solver::finish()", 1},
    {"solver_finish", "mpi.allreduce", NULL, "solver_finish", 1},
    {"Solver::finish", "mpi.allreduce", "Solver::run()", "Solver::finish()", 1},
    {"Integrator::run", "mpi.allreduce", "Integrator::step(double)", NULL, 0},
    {"ns::f<int>", "x", "ns::f<int>(std::vector<int, std::allocator<int> > const&)", NULL, 1},
    {"(anonymous namespace)::helper", "x", "(anonymous namespace)::helper(int)", NULL, 1},
    {"", "mpi.reduce", "anything", NULL, 0},
    {"libsolver.so.2+0x41a3", "mpi.allreduce", NULL, NULL, 1},
    {"libsolver.so.2+0x41a4", "mpi.allreduce", NULL, NULL, 0},
};

static rec_site make_site(const char *fn, const char *caller)
{
    rec_site s;
    memset(&s, 0, sizeof(s));
    s.module = "libsolver.so.2";
    s.module_len = 14;
    s.offset = 0x41a3;
    s.function = fn;
    s.function_len = fn ? (uint16_t)strlen(fn) : 0;
    s.function_offset = fn ? 0x1a3 : 0;
    s.caller = caller;
    s.caller_len = caller ? (uint16_t)strlen(caller) : 0;
    return s;
}

static void test_match(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(MATCHES) / sizeof(MATCHES[0]); i++) {
        site_patterns p;
        char why[256];
        assert_int_equal(site_patterns_parse(MATCHES[i].spec, &p, why, sizeof(why)), 0);
        rec_site s = make_site(MATCHES[i].function, MATCHES[i].caller);
        int got = site_patterns_match(&p, MATCHES[i].name, strlen(MATCHES[i].name), &s);
        if (got != MATCHES[i].match)
            fail_msg("'%s' against %s / %s / %s: %d, want %d", MATCHES[i].spec, MATCHES[i].name,
                     MATCHES[i].function ? MATCHES[i].function : "-", MATCHES[i].caller ? MATCHES[i].caller : "-", got,
                     MATCHES[i].match);
    }
}

static void test_format(void **state)
{
    (void)state;
    char out[SITE_TEXT_MAX];
    rec_site s = make_site("Solver::report_timings(int)", NULL);
    site_format(&s, out, sizeof(out));
    assert_string_equal(out, "Solver::report_timings(int)+0x1a3 (libsolver.so.2+0x41a3)");
    s = make_site(NULL, "Solver::finish()");
    site_format(&s, out, sizeof(out));
    assert_string_equal(out, "libsolver.so.2+0x41a3 (no symbol), called from Solver::finish()");
    s = make_site(NULL, NULL);
    site_format(&s, out, sizeof(out));
    assert_string_equal(out, "libsolver.so.2+0x41a3");
    memset(&s, 0, sizeof(s));
    s.function = "train.py:84 step";
    s.function_len = 16;
    site_format(&s, out, sizeof(out));
    assert_string_equal(out, "train.py:84 step");
    char small[8];
    s = make_site("Solver::report_timings(int)", NULL);
    assert_int_equal(site_format(&s, small, sizeof(small)), 7);
}

static void test_suggest(void **state)
{
    (void)state;
    char out[SITE_PATTERN_MAX + 1], why[200];
    rec_site s = make_site("Solver::report_timings(int, double)", NULL);
    site_suggest_ignore(&s, "mpi.reduce", 10, out, sizeof(out));
    assert_string_equal(out, "Solver::report_timings");
    s = make_site(NULL, "Solver::finish()");
    site_suggest_ignore(&s, "mpi.reduce", 10, out, sizeof(out));
    assert_string_equal(out, "Solver::finish");
    site_suggest_ignore(NULL, "mpi.reduce", 10, out, sizeof(out));
    assert_string_equal(out, "mpi.reduce");
    s = make_site(NULL, NULL); /* a stripped program: no function, no named caller */
    site_suggest_ignore(&s, "mpi.allreduce", 13, out, sizeof(out));
    assert_string_equal(out, "libsolver.so.2+0x41a3");
    s = make_site("Vec::operator*(Vec const&)", NULL);
    site_suggest_ignore(&s, "x", 1, out, sizeof(out));
    assert_string_equal(out, "Vec::operator\\*");
    /* what it suggests is a valid pattern that picks the record it came from */
    site_patterns p;
    assert_int_equal(site_patterns_parse(out, &p, why, sizeof(why)), 0);
    assert_int_equal(site_patterns_match(&p, "x", 1, &s), 1);
    s = make_site("f<a, b>(int)", NULL);
    site_suggest_ignore(&s, "x", 1, out, sizeof(out));
    assert_string_equal(out, "f<a? b>");
    assert_int_equal(site_patterns_parse(out, &p, why, sizeof(why)), 0);
    assert_int_equal(site_patterns_match(&p, "x", 1, &s), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_suggest),
    };
    return cmocka_run_group_tests_name("site", tests, NULL, NULL);
}
