/* mailmap.h - where alert mail may go: the addresses a site maps its users to (mail_map, mail_domain), never an address
 * a job wrote.
 *
 * The rule, for one user (the attested user of a run: what slurmstepd or the admin vouched for, never what a job
 * reported):
 *   - a user name that is not a plain name (letters, digits, '.', '_', '-'; 1..64 bytes; not starting with '-' or
 *     '.') gets no mail: a name that looks like an address is never used as one;
 *   - else the address the site's map gives the user (mail_map: "user address" lines);
 *   - else user@mail_domain when mail_domain is set;
 *   - else none.
 * Addresses the site configures (the map's, mail_admin) are checked too: local@domain of plain characters, so
 * that nothing a file holds can add a header to the message. Tested in tests/unit/test_mailmap.c.
 */
#ifndef SERVER_ALERTS_MAILMAP_H
#define SERVER_ALERTS_MAILMAP_H

#include <stddef.h>

#define MAIL_ADDR_MAX 254 /* bytes of one address */
#define MAIL_USER_MAX 64  /* bytes of one user name */

/* A site's map of users to addresses. */
typedef struct mail_map {
    char **users, **addrs; /* n pairs, owned */
    size_t n;
} mail_map;

/* mail_map_load - read `path`: one "user address" pair a line (blank lines and '#' comments skipped), into `m`
 * (released first). Returns 0, or -1 with "path:line: reason" in `err` (an unreadable file, a line that is not
 * two words, a user name that is not plain, an address that is not local@domain, a user mapped twice); `m` is
 * then empty. */
int mail_map_load(mail_map *m, const char *path, char *err, size_t cap);

/* mail_map_release - free what `m` holds; it is then empty. */
void mail_map_release(mail_map *m);

/* mail_user_plain - 1 when `user` is a plain user name (see above), else 0. */
int mail_user_plain(const char *user);

/* mail_addr_valid - 1 when `addr` is local@domain: the local part of letters, digits and ". _ + -", the domain
 * of letters, digits, '.' and '-' with a dot inside, MAIL_ADDR_MAX bytes at most; else 0. */
int mail_addr_valid(const char *addr);

/* mail_address_of - the address mail for `user` goes to, by the rule above, into `out` (`m` may be NULL: no map;
 * `domain` "" or NULL: none). Returns out, or NULL when the site maps the user to none. */
const char *mail_address_of(const mail_map *m, const char *domain, const char *user, char *out, size_t cap);

#endif /* SERVER_ALERTS_MAILMAP_H */
