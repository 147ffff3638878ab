/* test_mailmap.c - where alert mail may go (server/alerts/mailmap.h), from tables of cases: plain user names, the
 * site's map, mail_domain, and maps that are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/alerts/mailmap.h"

/* The map every lookup case runs against. */
static const char MAP[] = "# site users\n"
                          "dave   dave.smith@lab.example.org\n"
                          "\n"
                          "erin\terin+alerts@example.org   # with a tag\n";

static const struct {
    const char *what, *user, *domain;
    const char *want; /* NULL: no mail */
} LOOKUPS[] = {
    {"a mapped user: the map's address", "dave", "example.org", "dave.smith@lab.example.org"},
    {"the map wins without a domain too", "erin", "", "erin+alerts@example.org"},
    {"an unmapped user: user@mail_domain", "alice", "example.org", "alice@example.org"},
    {"an unmapped user, no domain: no mail", "alice", "", NULL},
    {"a name that is an address is never used as one", "mallory@evil.example", "example.org", NULL},
    {"nor with the map's domain", "dave@lab.example.org", "example.org", NULL},
    {"a header in the name", "bob\nBcc: x@evil.example", "example.org", NULL},
    {"a comma list", "bob,x@evil.example", "example.org", NULL},
    {"a space", "bob x", "example.org", NULL},
    {"a leading dash (an option to the mail program)", "-oQ/tmp", "example.org", NULL},
    {"a leading dot", ".profile", "example.org", NULL},
    {"empty", "", "example.org", NULL},
    {"too long", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "example.org", NULL},
    {"non-ASCII",
     "ali\xc3\xa7"
     "e",
     "example.org", NULL},
    {"dots, dashes, underscores", "j.doe-2_x", "example.org", "j.doe-2_x@example.org"},
    {"a bad domain gives nothing", "alice", "exa mple.org", NULL},
};

static const struct {
    const char *addr;
    int valid;
} ADDRS[] = {
    {"a@b.org", 1},   {"first.last+tag@sub.example.org", 1},
    {"a@b", 0},       {"@b.org", 0},
    {"a@.org", 0},    {"a@b.org.", 0},
    {"a@@b.org", 0},  {"a@b@c.org", 0},
    {"a b@c.org", 0}, {"a@b.org\nBcc: x@y.org", 0},
    {"a\"@b.org", 0}, {"a@-b.org", 0},
    {"<a@b.org>", 0}, {"", 0},
};

/* MAPS: a map file and whether it loads (a line that is not "user address", a user that is not plain, an
 * address that is not local@domain, a user mapped twice are refused, with the line). */
static const struct {
    const char *text;
    int ok;
    const char *why; /* a part of the error */
} MAPS[] = {
    {"alice alice@example.org\n", 1, NULL},
    {"# nothing\n\n", 1, NULL},
    {"alice\n", 0, ":1: expected"},
    {"alice a@b.org extra\n", 0, ":1: expected"},
    {"ok ok@b.org\nal@ice a@b.org\n", 0, ":2: the user is not a plain user name"},
    {"alice not-an-address\n", 0, ":1: the address is not local@domain"},
    {"alice a@b.org\nalice c@d.org\n", 0, ":2: the user is mapped twice"},
};

static char map_path[64];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_lookups(void **state)
{
    (void)state;
    mail_map m = {0};
    char err[256], out[MAIL_ADDR_MAX + 1];
    write_file(map_path, MAP);
    assert_int_equal(mail_map_load(&m, map_path, err, sizeof(err)), 0);
    assert_int_equal(m.n, 2);
    for (size_t i = 0; i < sizeof(LOOKUPS) / sizeof(LOOKUPS[0]); i++) {
        const char *got = mail_address_of(&m, LOOKUPS[i].domain, LOOKUPS[i].user, out, sizeof(out));
        if (!LOOKUPS[i].want ? got != NULL : !got || strcmp(got, LOOKUPS[i].want))
            fail_msg("%s: %s gave %s, want %s", LOOKUPS[i].what, LOOKUPS[i].user, got ? got : "(none)",
                     LOOKUPS[i].want ? LOOKUPS[i].want : "(none)");
    }
    /* no map at all: the domain alone */
    assert_string_equal(mail_address_of(NULL, "example.org", "dave", out, sizeof(out)), "dave@example.org");
    mail_map_release(&m);
    assert_int_equal(m.n, 0);
}

static void test_addresses(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(ADDRS) / sizeof(ADDRS[0]); i++)
        if (mail_addr_valid(ADDRS[i].addr) != ADDRS[i].valid)
            fail_msg("\"%s\" should be %s", ADDRS[i].addr, ADDRS[i].valid ? "valid" : "refused");
}

static void test_maps(void **state)
{
    (void)state;
    char err[256];
    for (size_t i = 0; i < sizeof(MAPS) / sizeof(MAPS[0]); i++) {
        mail_map m = {0};
        write_file(map_path, MAPS[i].text);
        int rc = mail_map_load(&m, map_path, err, sizeof(err));
        if (MAPS[i].ok ? rc != 0 : rc != -1 || !strstr(err, MAPS[i].why))
            fail_msg("map %zu: rc %d, error \"%s\"", i, rc, rc ? err : "");
        if (!MAPS[i].ok)
            assert_int_equal(m.n, 0); /* a refused map maps nobody */
        mail_map_release(&m);
    }
    mail_map m = {0};
    assert_int_equal(mail_map_load(&m, "/nonexistent/mail-map", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "/nonexistent/mail-map"));
}

static int setup(void **state)
{
    (void)state;
    snprintf(map_path, sizeof(map_path), "/tmp/test_mailmap.%d", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(map_path);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_lookups), cmocka_unit_test(test_addresses),
                                       cmocka_unit_test(test_maps)};
    return cmocka_run_group_tests_name("where alert mail may go", tests, setup, teardown);
}
