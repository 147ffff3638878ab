/* mailmap.c - where alert mail may go (server/alerts/mailmap.h): the site's map of users to addresses and mail_domain.
 */
#include "server/alerts/mailmap.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/xalloc.h"

int mail_user_plain(const char *user)
{
    size_t n = user ? strlen(user) : 0;
    if (n == 0 || n > MAIL_USER_MAX || user[0] == '-' || user[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)user[i]) && !strchr("._-", user[i]))
            return 0;
    return 1;
}

int mail_addr_valid(const char *addr)
{
    const char *at = addr ? strchr(addr, '@') : NULL;
    size_t n = addr ? strlen(addr) : 0;
    if (!at || at == addr || n > MAIL_ADDR_MAX || strchr(at + 1, '@'))
        return 0;
    for (const char *c = addr; c < at; c++)
        if (!isalnum((unsigned char)*c) && !strchr("._+-", *c))
            return 0;
    const char *d = at + 1, *dot = strchr(d, '.');
    if (!*d || !dot || dot == d || d[strlen(d) - 1] == '.' || *d == '-')
        return 0;
    for (const char *c = d; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '.' && *c != '-')
            return 0;
    return 1;
}

void mail_map_release(mail_map *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->users[i]);
        free(m->addrs[i]);
    }
    free(m->users);
    free(m->addrs);
    memset(m, 0, sizeof(*m));
}

/* map_add - one pair into `m` (a user already mapped: -1). */
static int map_add(mail_map *m, const char *user, const char *addr)
{
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->users[i], user))
            return -1;
    m->users = xrealloc(m->users, (m->n + 1) * sizeof(*m->users));
    m->addrs = xrealloc(m->addrs, (m->n + 1) * sizeof(*m->addrs));
    m->users[m->n] = xstrdup(user);
    m->addrs[m->n] = xstrdup(addr);
    m->n++;
    return 0;
}

int mail_map_load(mail_map *m, const char *path, char *err, size_t cap)
{
    mail_map_release(m);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[1024];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *save = NULL, *user = strtok_r(line, " \t\r\n", &save), *addr = strtok_r(NULL, " \t\r\n", &save);
        if (!user)
            continue;
        const char *why = !addr || strtok_r(NULL, " \t\r\n", &save) ? "expected \"user address\""
                          : !mail_user_plain(user)                  ? "the user is not a plain user name"
                          : !mail_addr_valid(addr)                  ? "the address is not local@domain"
                          : map_add(m, user, addr) < 0              ? "the user is mapped twice"
                                                                    : NULL;
        if (why) {
            snprintf(err, cap, "%s:%d: %s", path, lineno, why);
            rc = -1;
        }
    }
    fclose(f);
    if (rc < 0)
        mail_map_release(m);
    return rc;
}

const char *mail_address_of(const mail_map *m, const char *domain, const char *user, char *out, size_t cap)
{
    if (!mail_user_plain(user))
        return NULL;
    for (size_t i = 0; m && i < m->n; i++)
        if (!strcmp(m->users[i], user)) {
            snprintf(out, cap, "%s", m->addrs[i]);
            return out;
        }
    if (!domain || !*domain)
        return NULL;
    int n = snprintf(out, cap, "%s@%s", user, domain);
    if (n < 0 || (size_t)n >= cap || !mail_addr_valid(out))
        return NULL;
    return out;
}
