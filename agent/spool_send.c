/* spool_send.c - send what a spool holds to lockstepd: used by `lockstep replay DIR` (a later process). */
#include "agent/spool_send.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/hold.h"
#include "agent/http.h"
#include "agent/spool.h"
#include "agent/uplink.h"
#include "common/record.h"
#include "common/wire.h"

#define MAX_STEPS 4096

typedef struct dir_list {
    char **v;
    size_t n, cap;
} dir_list;

static int list_add(dir_list *l, const char *path)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 16;
        char **nv = realloc(l->v, nc * sizeof(*nv));
        if (!nv)
            return -1;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n] = strdup(path);
    return l->v[l->n] ? (int)l->n++ * 0 : -1;
}

/* collect - the rank directories under `dir`, depth first. */
static void collect(const char *dir, int depth, dir_list *out)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/" SPOOL_META, dir);
    if (access(p, F_OK) == 0) {
        list_add(out, dir);
        return;
    }
    if (depth >= 3)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) /* a link to a directory is not followed */
            collect(p, depth + 1, out);
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void say(const spool_send_opts *o, const char *dir, const char *what)
{
    if (o->log)
        fprintf(o->log, "%s: %s\n", dir, what);
}

/* parse_steps - "5,7-9" into up to `cap` inclusive ranges; -1 when malformed. */
static int parse_steps(const char *s, long long (*r)[2], int cap)
{
    int n = 0;
    while (*s) {
        char *end;
        long long a = strtoll(s, &end, 10), b = a;
        if (end == s || n == cap)
            return -1;
        if (*end == '-') {
            const char *q = end + 1;
            b = strtoll(q, &end, 10);
            if (end == q || b < a)
                return -1;
        }
        r[n][0] = a;
        r[n][1] = b;
        n++;
        if (*end == ',')
            end++;
        else if (*end)
            return -1;
        s = end;
    }
    return n;
}

int spool_send_steps_valid(const char *steps)
{
    long long r[64][2];
    return steps && (!strcmp(steps, "asked") || parse_steps(steps, r, 64) > 0);
}

/* send_held - post the held records of the steps o->steps names (or lockstepd asks for) kept in `sp`. Returns 0,
 * or -1 when something could not be sent (said on o->log). */
static int send_held(const spool *sp, const spool_meta *m, uplink *up, const spool_send_opts *o, spool_send_stats *st)
{
    char why[600], line[900];
    long long steps[MAX_STEPS];
    int n = 0;
    if (!strcmp(o->steps, "asked")) {
        char path[400], *resp = malloc(65536);
        if (!resp)
            return -1;
        snprintf(path, sizeof(path), "/api/v1/runs/%s/wanted?rank=%ld", m->run_id, m->rank);
        long status = http_request(up->http, "GET", path, NULL, NULL, 0, o->timeout_ms, resp, 65536, why, sizeof(why));
        if (status != 200 || (n = wire_obj_int_array(resp, "steps", steps, MAX_STEPS)) < 0) {
            snprintf(line, sizeof(line), "cannot learn which steps lockstepd asks for (%ld): %.300s", status,
                     status < 0 ? why : resp);
            say(o, sp->dir, line);
            free(resp);
            return -1;
        }
        free(resp);
    } else {
        long long r[64][2];
        int nr = parse_steps(o->steps, r, 64);
        for (int i = 0; i < nr; i++)
            for (long long s = r[i][0]; s <= r[i][1] && n < MAX_STEPS; s++)
                steps[n++] = s;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        hold_copy *c;
        long got = hold_spool_step(sp, steps[i], &c, why, sizeof(why));
        for (long k = 0; k < got; k++) {
            rec_reader rd;
            rec_record rec;
            uint64_t count = 0;
            if (rec_reader_init(&rd, c[k].buf, c[k].len) == 0)
                while (rec_reader_next(&rd, &rec) == 1)
                    count++;
            rec_reader_release(&rd);
            int r = uplink_post_batch(up, c[k].buf, c[k].len, NULL, 0);
            if (r != UP_OK) {
                snprintf(line, sizeof(line), "held records of step %lld not sent: %s", steps[i], up->last_error);
                say(o, sp->dir, line);
                rc = -1;
                if (r == UP_RETRY)
                    break;
                continue;
            }
            st->held_batches++;
            st->held_records += count;
        }
        hold_copies_free(c, got > 0 ? got : 0);
    }
    return rc;
}

/* send_one - send one rank directory. Returns 0 when it is gone, -1 when
 * something is left, 1 when busy. */
static int send_one(const char *dir, const spool_send_opts *o, spool_send_stats *st)
{
    spool sp;
    spool_meta m;
    uplink up;
    char why[600], line[900];
    int busy = 0, rc = -1;

    if (spool_open_dir(&sp, dir, o->force, &busy, why, sizeof(why)) < 0) {
        say(o, dir, busy ? "in use by a running agent; skipped" : why);
        return busy ? 1 : -1;
    }
    if (spool_meta_read(&sp, &m, why, sizeof(why)) <= 0) {
        say(o, dir, why);
        goto out_close;
    }
    /* The server and CA file are the sending user's, never what the spool names; the token is the spool's own job's
     * unless the user gives one. */
    snprintf(m.server, sizeof(m.server), "%s", o->server);
    snprintf(m.ca_file, sizeof(m.ca_file), "%s", o->ca_file ? o->ca_file : "");
    if (o->token)
        snprintf(m.token, sizeof(m.token), "%s", o->token);
    if (uplink_open(&up, &m, o->timeout_ms, why, sizeof(why)) < 0) {
        say(o, dir, why);
        goto out_close;
    }

    int64_t give_up = mono_ns() + (int64_t)o->wait_ms * 1000000;
    int r;
    while ((r = uplink_resolve(&up)) == UP_RETRY && up.last_status > 0 && mono_ns() < give_up) {
        struct timespec ts = {0, 200 * 1000000};
        nanosleep(&ts, NULL); /* rank 0 of this run may not be registered yet */
    }
    if (r != UP_OK) {
        snprintf(line, sizeof(line), "cannot find or register the run: %s", up.last_error);
        say(o, dir, line);
        goto out_uplink;
    }
    if (spool_meta_write(&sp, &m, why, sizeof(why)) < 0)
        say(o, dir, why);

    unsigned char *buf;
    size_t len;
    if (spool_get(&sp, SPOOL_MANIFEST, &buf, &len, why, sizeof(why)) > 0) {
        r = uplink_post_json(&up, "manifest", (const char *)buf, NULL, 0);
        free(buf);
        if (r == UP_RETRY) {
            say(o, dir, up.last_error);
            goto out_uplink;
        }
        spool_remove(&sp, SPOOL_MANIFEST);
    }
    uint64_t *seqs;
    long n = spool_batches(&sp, &seqs, why, sizeof(why));
    for (long i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof(name), SPOOL_BATCH_FMT, (unsigned long long)seqs[i]);
        if (spool_get(&sp, name, &buf, &len, why, sizeof(why)) <= 0)
            continue;
        rec_reader rd;
        uint64_t count = 0;
        rec_record rec;
        if (rec_reader_init(&rd, buf, len) == 0)
            while (rec_reader_next(&rd, &rec) == 1)
                count++;
        rec_reader_release(&rd);
        r = uplink_post_batch(&up, buf, len, NULL, 0);
        free(buf);
        if (r == UP_RETRY) {
            say(o, dir, up.last_error);
            free(seqs);
            goto out_uplink;
        }
        if (r == UP_REJECT) {
            snprintf(line, sizeof(line), "batch %llu refused, kept as %s.rejected: %s", (unsigned long long)seqs[i],
                     name, up.last_error);
            say(o, dir, line);
            char to[100];
            snprintf(to, sizeof(to), "%s.rejected", name);
            spool_rename(&sp, name, to);
            st->rejected++;
            continue;
        }
        spool_remove(&sp, name);
        st->batches++;
        st->records += count;
    }
    free(seqs);
    if (spool_get(&sp, SPOOL_END, &buf, &len, why, sizeof(why)) > 0) {
        r = uplink_post_json(&up, "end", (const char *)buf, NULL, 0);
        free(buf);
        if (r == UP_RETRY) {
            say(o, dir, up.last_error);
            goto out_uplink;
        }
        spool_remove(&sp, SPOOL_END);
    }
    if (o->steps && send_held(&sp, &m, &up, o, st) < 0)
        goto out_uplink;
    snprintf(line, sizeof(line), "sent to run %s on %s", m.run_id, m.server);
    say(o, dir, line);
    rc = 0;

out_uplink:
    uplink_close(&up);
out_close:
    if (rc == 0 && spool_is_empty(&sp))
        spool_remove_dir(&sp);
    else
        spool_close(&sp);
    return rc;
}

int spool_send_tree(const char *root, const spool_send_opts *o, spool_send_stats *st)
{
    dir_list l = {0};
    memset(st, 0, sizeof(*st));
    if (!o->server || !*o->server) {
        if (o->log)
            fprintf(o->log, "%s: no server given; a spool's own server is never used\n", root);
        return -1;
    }
    collect(root, 0, &l);
    /* rank-00000 sorts first within its run, so rank 0 registers before the others look */
    if (l.n)
        qsort(l.v, l.n, sizeof(*l.v), cmp_str);
    int rc = 0;
    for (size_t i = 0; i < l.n; i++) {
        st->dirs++;
        int r = send_one(l.v[i], o, st);
        if (r == 0)
            st->dirs_done++;
        else if (r > 0)
            st->dirs_busy++, rc = -1;
        else
            st->dirs_failed++, rc = -1;
        free(l.v[i]);
    }
    free(l.v);
    return rc;
}
