/* test_groups.c - the twin group ownership rules (server/rules/group_rule.h), from tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "server/rules/group_rule.h"

/* Who joins whose group: 0 = may, -1 = may not. */
static void test_may_join(void **state)
{
    (void)state;
    static const struct {
        const char *what, *owner;
        int attested;
        const char *shared, *reported, *att_user;
        int admin, want;
    } cases[] = {
        {"the owner, attested", "alice", 1, "{}", "alice", "alice", 0, 0},
        {"another attested user", "alice", 1, "{}", "mallory", "mallory", 0, -1},
        {"reporting the owner, unattested", "alice", 1, "{}", "alice", NULL, 0, -1},
        {"shared with, attested", "alice", 1, "{bob}", "bob", "bob", 0, 0},
        {"shared with, unattested", "alice", 1, "{bob}", "bob", NULL, 0, -1},
        {"shared with anyone, attested", "alice", 1, "{*}", "x", "carol", 0, 0},
        {"shared with anyone, unattested", "alice", 1, "{*}", "x", NULL, 0, -1},
        {"the admin", "alice", 1, "{}", "", NULL, 1, 0},
        {"reported owner, reporting it", "alice", 0, "{}", "alice", NULL, 0, 0},
        {"reported owner, attested as it", "alice", 0, "{}", "bob", "alice", 0, 0},
        {"reported owner, attested as another", "alice", 0, "{}", "alice", "mallory", 0, -1},
        {"quoted share", "alice", 0, "{\"b c\",d}", "b c", NULL, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        group_owner g = {cases[i].owner, cases[i].attested, cases[i].shared};
        run_claim who = {cases[i].reported, cases[i].att_user, cases[i].admin};
        char why[400] = "";
        int got = group_may_join(&g, &who, why, sizeof(why));
        if (got != cases[i].want)
            fail_msg("%s: %d, want %d (%s)", cases[i].what, got, cases[i].want, why);
        if (got < 0 && !strstr(why, cases[i].owner))
            fail_msg("%s: the reason does not name the owner: %s", cases[i].what, why);
    }
}

/* The groups that exist, as the registration reads them. */
static const group_row ROWS[] = {
    {"exp1", "alice", "exp1", "{}", 1, 2},               /* alice's, first of its name */
    {"bob/exp1", "bob", "exp1", "{}", 1, 1},             /* bob's, the name held */
    {"shared", "alice", "shared", "{bob}", 1, 1},        /* alice's, shared with bob */
    {"old", "alice", "old", "{}", 0, 3},                 /* made before alice was attested */
    {"squat", "mallory", "squat", "{}", 0, 1},           /* made unattested by mallory */
    {"paper", "mallory", "paper", "{}", 1, 1},           /* an attested squatter took alice's name first */
    {"alice/taken", "carol", "alice/taken", "{}", 0, 1}, /* an old unattested group holding alice's OWNER/NAME */
};

/* What a registration's name does. */
static void test_plan(void **state)
{
    (void)state;
    static const struct {
        const char *what, *typed, *reported, *att_user;
        int admin;
        group_act act;
        const char *key; /* JOIN/CLAIM/CREATE: the group's key; REFUSE: the status as text */
    } cases[] = {
        {"the owner, by name", "exp1", "alice", "alice", 0, GROUP_JOIN, "exp1"},
        {"the owner, by OWNER/NAME", "alice/exp1", "alice", "alice", 0, GROUP_JOIN, "exp1"},
        {"the second owner of a name, by name", "exp1", "bob", "bob", 0, GROUP_JOIN, "bob/exp1"},
        {"the second owner, by OWNER/NAME", "bob/exp1", "bob", "bob", 0, GROUP_JOIN, "bob/exp1"},
        {"a third user: a group of its own", "exp1", "carol", "carol", 0, GROUP_CREATE, "carol/exp1"},
        {"a third user, by another's OWNER/NAME", "alice/exp1", "carol", "carol", 0, GROUP_REFUSE, "403"},
        {"shared, by OWNER/NAME", "alice/shared", "bob", "bob", 0, GROUP_JOIN, "shared"},
        {"shared, by the plain name: bob's own", "shared", "bob", "bob", 0, GROUP_CREATE, "bob/shared"},
        {"the admin vouching for bob, by OWNER/NAME", "alice/exp1", "bob", "bob", 1, GROUP_JOIN, "exp1"},
        {"the owner's first attested run claims", "old", "alice", "alice", 0, GROUP_CLAIM, "old"},
        {"another attested user's \"old\"", "old", "bob", "bob", 0, GROUP_CREATE, "bob/old"},
        {"an attested squatter's name is no lock", "paper", "alice", "alice", 0, GROUP_CREATE, "alice/paper"},
        {"nor an unattested one's", "squat", "alice", "alice", 0, GROUP_CREATE, "alice/squat"},
        {"a new name", "fresh", "alice", "alice", 0, GROUP_CREATE, "fresh"},
        {"a new name with '/'", "a/b", "alice", "alice", 0, GROUP_CREATE, "alice/a/b"},
        {"OWNER/NAME held by an old group", "taken", "alice", "alice", 0, GROUP_CREATE, "taken"},
        {"unattested, the reported owner's", "squat", "mallory", NULL, 0, GROUP_JOIN, "squat"},
        {"unattested, an attested owner's", "exp1", "alice", NULL, 0, GROUP_REFUSE, "403"},
        {"unattested, the reported owner's old group", "old", "alice", NULL, 0, GROUP_JOIN, "old"},
        {"unattested, a new name", "mine", "dave", NULL, 0, GROUP_CREATE, "mine"},
        {"unattested, a new name with '/'", "alice/new", "mallory", NULL, 0, GROUP_REFUSE, "403"},
        {"unattested admin, a new name with '/'", "x/y", "", NULL, 1, GROUP_CREATE, "x/y"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run_claim who = {cases[i].reported, cases[i].att_user, cases[i].admin};
        group_plan p;
        group_plan_make(cases[i].typed, &who, ROWS, (int)(sizeof(ROWS) / sizeof(ROWS[0])), &p);
        char status[8] = "";
        if (p.act == GROUP_REFUSE)
            snprintf(status, sizeof(status), "%d", p.status);
        const char *got = p.act == GROUP_REFUSE ? status : p.key;
        if (p.act != cases[i].act || strcmp(got, cases[i].key))
            fail_msg("%s: act %d key %s, want act %d key %s (%s)", cases[i].what, (int)p.act, got, (int)cases[i].act,
                     cases[i].key, p.why);
    }
    /* alice's "taken" is held by another group: her OWNER/NAME then is too */
    group_row held[] = {{"taken", "carol", "taken", "{}", 0, 1}, {"alice/taken", "carol", "alice/taken", "{}", 0, 1}};
    run_claim alice = {"alice", "alice", 0};
    group_plan p;
    group_plan_make("taken", &alice, held, 2, &p);
    assert_int_equal(p.act, GROUP_REFUSE);
    assert_int_equal(p.status, 409);
    /* a name that makes OWNER/NAME too long */
    char longname[GROUP_NAME_MAX + 1];
    memset(longname, 'x', GROUP_NAME_MAX - 3);
    longname[GROUP_NAME_MAX - 3] = 0;
    group_row lrow[] = {{longname, "carol", longname, "{}", 1, 1}};
    group_plan_make(longname, &alice, lrow, 1, &p);
    assert_int_equal(p.act, GROUP_REFUSE);
    assert_int_equal(p.status, 400);
}

/* Which names lockstepd reserves. */
static void test_reserved(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int want;
    } cases[] = {
        {"g.narrow-1", 1}, {"alice/g.narrow-12", 1}, {"g.narrow-", 0},    {".narrow-3", 0},     {"g.narrow-3x", 0},
        {"g.narrow3", 0},  {"narrow-3", 0},          {"g.narrow-3/x", 0}, {"g.narrow-0042", 1}, {"g", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (group_reserved(cases[i].name) != cases[i].want)
            fail_msg("%s: %d, want %d", cases[i].name, !cases[i].want, cases[i].want);
}

/* What a group is for, by its key: replays, noise replicas and experiments by the names lockstep gives them. */
static void test_kind_of(void **state)
{
    (void)state;
    static const struct {
        const char *key;
        group_kind want;
    } cases[] = {
        {"exp", GROUP_TWINS},
        {"exp.noise", GROUP_NOISE},
        {"alice/exp.noise", GROUP_NOISE},
        {"exp.change", GROUP_EXPERIMENT},
        {"bob/exp.change", GROUP_EXPERIMENT},
        {"exp.narrow-3", GROUP_REPLAY},
        {"alice/exp.narrow-12", GROUP_REPLAY},
        {".noise", GROUP_TWINS},
        {"alice/.noise", GROUP_TWINS},
        {"exp.noisy", GROUP_TWINS},
        {"exp.noise.2", GROUP_TWINS},
        {"noise", GROUP_TWINS},
        {".change", GROUP_TWINS},
        {"exp.narrow-", GROUP_TWINS},
        {"exp.noise.narrow-4", GROUP_REPLAY},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (group_kind_of(cases[i].key) != cases[i].want)
            fail_msg("%s: %s, want %s", cases[i].key, group_kind_name(group_kind_of(cases[i].key)),
                     group_kind_name(cases[i].want));
    assert_string_equal(group_kind_name(GROUP_NOISE), "noise");
}

/* Who joins a narrow's replay group. */
static void test_may_replay(void **state)
{
    (void)state;
    static const replay_source attested[] = {{"alice", "alice"}, {"bob", "bob"}};
    static const replay_source reported[] = {{NULL, "alice"}, {"bob", "x"}};
    static const struct {
        const char *what;
        const replay_source *src;
        int owner_attested;
        const char *reported, *att_user;
        int admin, want;
    } cases[] = {
        {"a replayed run's user, attested", attested, 1, "alice", "alice", 0, 0},
        {"the other replayed run's user", attested, 1, "bob", "bob", 0, 0},
        {"another attested user", attested, 1, "mallory", "mallory", 0, -1},
        {"reporting a replayed run's user, unattested", attested, 1, "alice", NULL, 0, -1},
        {"the admin", attested, 1, "", NULL, 1, 0},
        {"reported owner: reporting the run's reported user", reported, 0, "alice", NULL, 0, 0},
        {"reported owner: the run's attested user", reported, 0, "x", "bob", 0, 0},
        {"reported owner: another user", reported, 0, "carol", NULL, 0, -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run_claim who = {cases[i].reported, cases[i].att_user, cases[i].admin};
        char why[400] = "";
        int got = group_may_replay(cases[i].src, 2, cases[i].owner_attested, &who, why, sizeof(why));
        if (got != cases[i].want)
            fail_msg("%s: %d, want %d (%s)", cases[i].what, got, cases[i].want, why);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_may_join), cmocka_unit_test(test_plan),       cmocka_unit_test(test_reserved),
        cmocka_unit_test(test_kind_of),  cmocka_unit_test(test_may_replay),
    };
    return cmocka_run_group_tests_name("twin group ownership rules", tests, NULL, NULL);
}
