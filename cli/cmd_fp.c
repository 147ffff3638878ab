/* cmd_fp.c - `lockstep fp`: LSFP-1 of files and directory trees printed like sha256sum (a checkpoint content manifest),
 * and `fp --check MANIFEST` like sha256sum -c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/fpfiles.h"
#include "common/fsutil.h"
#include "common/lsfp1.h"

#define FP_READ_BYTES (8u << 20)

enum { FP_RECURSIVE = 'r', FP_CHECK = 'c', FP_JOBS = 'j', FP_QUIET = CLI_KEY_LONG };

/* fp_fd - LSFP-1 of everything readable from `fd`, streamed in 8 MiB reads
 * (a checkpoint may not fit in memory twice). Returns 0 or -1 with errno. */
static int fp_fd(int fd, uint64_t *out)
{
    unsigned char *buf = malloc(FP_READ_BYTES);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    fp_stream s;
    fp_stream_init(&s);
    int rc = 0;
    for (;;) {
        ssize_t n = read(fd, buf, FP_READ_BYTES);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -1;
            break;
        }
        if (n == 0)
            break;
        fp_stream_update(&s, buf, (size_t)n);
    }
    if (rc == 0)
        *out = fp_stream_digest(&s);
    int e = errno;
    free(buf);
    errno = e;
    return rc;
}

/* print_line - one manifest line as sha256sum writes it: a name holding a backslash or a newline is escaped
 * and the line starts with a backslash. */
static void print_line(uint64_t fp, const char *path)
{
    int esc = strpbrk(path, "\\\n") != NULL;
    printf("%s%016llx  ", esc ? "\\" : "", (unsigned long long)fp);
    for (const char *c = path; *c; c++) {
        if (esc && *c == '\\')
            fputs("\\\\", stdout);
        else if (esc && *c == '\n')
            fputs("\\n", stdout);
        else
            putchar(*c);
    }
    putchar('\n');
}

static void read_error(const char *path, int err)
{
    char detail[600];
    snprintf(detail, sizeof(detail), "%s: %s", path,
             err == EIO ? "it changed size while it was read, or could not be read" : strerror(err));
    cli_error("cannot read a file", detail,
              err == EISDIR ? "pass -r to fingerprint every file under a directory"
                            : "check the path and its permissions");
}

/* parse_jobs - the value of -j. */
static int parse_jobs(const cli_args *a, const char *s, int *out)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *end || v < 1 || v > 256) {
        cli_args_fail(a, "-j takes a thread count from 1 to 256");
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* unescape - undo print_line's escaping in place. Returns 0, or -1 on a bad escape. */
static int unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r != '\\') {
            *w++ = *r;
            continue;
        }
        r++;
        if (*r == '\\')
            *w++ = '\\';
        else if (*r == 'n')
            *w++ = '\n';
        else
            return -1;
    }
    *w = 0;
    return 0;
}

/* check_manifest - recompute every file a manifest lists; print PATH: OK or FAILED. */
static int check_manifest(const char *manifest, int threads, int quiet)
{
    fs_blob blob;
    if (fs_blob_load(&blob, manifest) < 0) {
        read_error(manifest, errno);
        return CLI_BAD_INPUT;
    }
    fpf_list l = {0};
    uint64_t *want = NULL;
    size_t bad_lines = 0, line_no = 0, want_cap = 0;
    int rc = CLI_OK;
    char *text = malloc(blob.len + 1);
    if (!text) {
        fs_blob_release(&blob);
        cli_error("out of memory", NULL, NULL);
        return CLI_BAD_INPUT;
    }
    memcpy(text, blob.data, blob.len);
    text[blob.len] = 0;
    fs_blob_release(&blob);
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        line_no++;
        if (!*line)
            continue;
        int esc = line[0] == '\\';
        char *p = line + esc;
        uint64_t fp = 0;
        int ok = strlen(p) > 18 && p[16] == ' ' && (p[17] == ' ' || p[17] == '*');
        for (int i = 0; ok && i < 16; i++) {
            char c = p[i];
            int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            ok = d >= 0;
            fp = fp << 4 | (uint64_t)(d < 0 ? 0 : d);
        }
        char *path = p + 18;
        if (ok && esc)
            ok = unescape(path) == 0;
        if (!ok) {
            if (!bad_lines)
                fprintf(stderr,
                        "lockstep: %s: line %zu is not a fingerprint line (16 hex digits, two spaces, a path)\n",
                        manifest, line_no);
            bad_lines++;
            continue;
        }
        if (l.n == want_cap) {
            want_cap = want_cap ? 2 * want_cap : 64;
            uint64_t *nw = realloc(want, want_cap * sizeof(*nw));
            if (!nw)
                goto out_oom;
            want = nw;
        }
        if (fpf_add(&l, path) < 0)
            goto out_oom;
        want[l.n - 1] = fp;
    }
    if (!l.n) {
        cli_error("no fingerprint lines in the manifest", manifest, "write one with `lockstep fp -r DIR > MANIFEST`");
        rc = CLI_BAD_INPUT;
        goto out_free;
    }
    if (fpf_hash(&l, threads) < 0)
        goto out_oom;
    size_t mismatched = 0, unreadable = 0;
    for (size_t i = 0; i < l.n; i++) {
        const fpf_item *it = &l.v[i];
        if (it->err) {
            printf("%s: FAILED open or read (%s)\n", it->path, strerror(it->err));
            unreadable++;
        } else if (it->fp != want[i]) {
            printf("%s: FAILED\n", it->path);
            mismatched++;
        } else if (!quiet) {
            printf("%s: OK\n", it->path);
        }
    }
    if (bad_lines)
        fprintf(stderr, "lockstep: WARNING: %zu line%s of %s %s improperly formatted\n", bad_lines,
                bad_lines == 1 ? "" : "s", manifest, bad_lines == 1 ? "is" : "are");
    if (unreadable)
        fprintf(stderr, "lockstep: WARNING: %zu listed file%s could not be read\n", unreadable,
                unreadable == 1 ? "" : "s");
    if (mismatched)
        fprintf(stderr, "lockstep: WARNING: %zu computed fingerprint%s did NOT match\n", mismatched,
                mismatched == 1 ? "" : "s");
    rc = unreadable || bad_lines ? CLI_BAD_INPUT : mismatched ? CLI_DIVERGED : CLI_OK;
    goto out_free;
out_oom:
    cli_error("out of memory", NULL, NULL);
    rc = CLI_BAD_INPUT;
out_free:
    fpf_release(&l);
    free(want);
    free(text);
    return rc;
}

static int cmd_fp(const cli_args *a)
{
    int recursive = cli_args_count(a, FP_RECURSIVE) > 0, check = cli_args_count(a, FP_CHECK) > 0,
        quiet = cli_args_count(a, FP_QUIET) > 0, threads = fpf_default_threads(), n_paths = a->npos;
    const char *const *paths = (const char *const *)a->pos;
    const char *jobs = cli_args_last(a, FP_JOBS);
    if (jobs && parse_jobs(a, jobs, &threads) < 0)
        return CLI_BAD_INPUT;
    int rc = CLI_OK;
    if (check) {
        if (n_paths != 1 || recursive)
            return cli_args_fail(a, "fp --check takes one manifest");
        return check_manifest(paths[0], threads, quiet);
    }
    if (!n_paths)
        return cli_args_fail(a, "fp needs at least one file");

    /* Every file to hash, in output order; '-' (stdin) is read here after the pool. */
    fpf_list l = {0};
    for (int i = 0; i < n_paths; i++) {
        struct stat st;
        char why[700];
        if (strcmp(paths[i], "-") && recursive && stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (fpf_walk(&l, paths[i], why, sizeof(why)) < 0) {
                cli_error("cannot list a directory", why, "check the path and its permissions");
                rc = CLI_BAD_INPUT;
            }
        } else if (fpf_add(&l, paths[i]) < 0) {
            cli_error("out of memory", NULL, NULL);
            rc = CLI_BAD_INPUT;
            break;
        }
    }
    if (rc == CLI_OK) {
        /* stdin is not a file the pool can read in pieces: it is read here, in its place */
        for (size_t i = 0; i < l.n; i++)
            l.v[i].skip = !strcmp(l.v[i].path, "-");
        int hashed = fpf_hash(&l, threads) == 0;
        if (!hashed) {
            cli_error("cannot start the hashing threads", NULL, "try -j 1");
            rc = CLI_BAD_INPUT;
        }
        for (size_t i = 0; hashed && i < l.n; i++) {
            fpf_item *it = &l.v[i];
            if (!strcmp(it->path, "-")) {
                it->err = fp_fd(STDIN_FILENO, &it->fp) < 0 ? errno : 0;
            }
            if (it->err) {
                read_error(it->path, it->err);
                rc = CLI_BAD_INPUT;
                continue;
            }
            print_line(it->fp, it->path);
        }
    }
    fpf_release(&l);
    if (fflush(stdout) != 0)
        rc = CLI_BAD_INPUT;
    return rc;
}

static const cli_opt fp_opts[] = {
    {"recursive", FP_RECURSIVE, NULL, NULL, "every file under each DIR, in name order (a checkpoint manifest)"},
    {"check", FP_CHECK, NULL, NULL, "recompute the fingerprints a manifest lists, like sha256sum -c"},
    {"quiet", FP_QUIET, NULL, NULL, "with --check: print only the files that fail"},
    {"jobs", FP_JOBS, "N", NULL, "hash with N threads (1 to 256; default: the CPUs, at most 16)"},
    {0},
};

const cli_command cli_cmd_fp = {
    .name = "fp",
    .run = cmd_fp,
    .synopsis = "fp [-r] [-j N] FILE|DIR...\nfp --check [--quiet] [-j N] MANIFEST",
    .summary = "LSFP-1 of each file ('-' reads stdin), like sha256sum; -r: every file\n"
               "under DIR (a checkpoint manifest); --check: recompute a manifest's\n"
               "fingerprints, like sha256sum -c",
    .opts = fp_opts,
    .complete = {"@file", "@file", "@file"},
};
