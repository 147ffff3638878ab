/* digestkey.c - the manifest digests' key: LOCKSTEP_DIGEST_KEY, else ~/.config/lockstep/digest-key (digestkey.h). */
#include "agent/digestkey.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/text.h"

#define KEY_BYTES 32

/* from_hex - 64 hex digits (a trailing newline allowed) into KEY_BYTES bytes. Returns 0, or -1. */
static int from_hex(const char *s, size_t n, unsigned char *out)
{
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    if (n != 2 * KEY_BYTES)
        return -1;
    for (size_t i = 0; i < KEY_BYTES; i++) {
        int hi = text_hex_digit(s[2 * i]), lo = text_hex_digit(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

/* key_dir - $XDG_CONFIG_HOME/lockstep, else $HOME/.config/lockstep, created (0700) where missing. */
static int key_dir(char *out, size_t cap, char *why, size_t wcap)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    char parent[PATH_MAX];
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(parent, sizeof(parent), "%s", xdg);
    else if (home && home[0] == '/')
        n = snprintf(parent, sizeof(parent), "%s/.config", home);
    else {
        snprintf(why, wcap, "no home directory for the key file (HOME is not set)");
        return -1;
    }
    if (n < 0 || (size_t)n >= sizeof(parent) || snprintf(out, cap, "%s/lockstep", parent) >= (int)cap) {
        snprintf(why, wcap, "the key file's path is too long");
        return -1;
    }
    if ((mkdir(parent, 0700) < 0 && errno != EEXIST) || (mkdir(out, 0700) < 0 && errno != EEXIST)) {
        snprintf(why, wcap, "cannot create %s: %s", out, strerror(errno));
        return -1;
    }
    return 0;
}

/* read_key - the key file at `path`, which must be private to this user. Returns 0, -1 with errno ENOENT when
 * there is none, or -1 with `why`. */
static int read_key(const char *path, unsigned char *key, char *why, size_t cap)
{
    char text[2 * KEY_BYTES + 8], reason[200];
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK); /* never wait on a FIFO */
    if (fd < 0) {
        int e = errno;
        snprintf(why, cap, "cannot open %s: %s", path, e == ELOOP ? "it is a symbolic link" : strerror(e));
        errno = e;
        return -1;
    }
    if (fs_private_check(fd, 1, reason, sizeof(reason)) < 0) {
        close(fd);
        snprintf(why, cap, "%s is not private: %s (chmod 600 it, or remove it to have a new one made)", path, reason);
        errno = EPERM;
        return -1;
    }
    ssize_t got = read(fd, text, sizeof(text));
    close(fd);
    int rc = got > 0 ? from_hex(text, (size_t)got, key) : -1;
    explicit_bzero(text, sizeof(text));
    if (rc < 0) {
        snprintf(why, cap, "%s does not hold 64 hex digits (remove it to have a new one made)", path);
        errno = EINVAL;
    }
    return rc;
}

/* make_key - a new key file at `path` in `dir`: written to a private temporary file, then linked into place,
 * so that ranks starting together all end up with the one that was linked first. */
static int make_key(const char *dir, const char *path, char *why, size_t cap)
{
    unsigned char raw[KEY_BYTES];
    char tmp[PATH_MAX], text[2 * KEY_BYTES + 2];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t r = getrandom(raw + got, sizeof(raw) - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(why, cap, "no random bytes for a new key: %s", strerror(errno));
            return -1;
        }
        got += (size_t)r;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(text + 2 * i, 3, "%02x", raw[i]);
    text[2 * KEY_BYTES] = '\n';
    explicit_bzero(raw, sizeof(raw));
    snprintf(tmp, sizeof(tmp), "%s/.digest-key.XXXXXX", dir);
    int fd = mkostemp(tmp, O_CLOEXEC); /* mode 0600 */
    int rc = -1;
    if (fd < 0) {
        snprintf(why, cap, "cannot create a key file in %s: %s", dir, strerror(errno));
        goto out_wipe;
    }
    if (fs_write_all(fd, text, 2 * KEY_BYTES + 1) < 0 || fsync(fd) < 0) {
        snprintf(why, cap, "cannot write %s: %s", tmp, strerror(errno));
        close(fd);
        goto out_unlink;
    }
    close(fd);
    if (link(tmp, path) < 0 && errno != EEXIST) {
        snprintf(why, cap, "cannot create %s: %s", path, strerror(errno));
        goto out_unlink;
    }
    rc = 0;
out_unlink:
    unlink(tmp);
out_wipe:
    explicit_bzero(text, sizeof(text));
    return rc;
}

int digestkey_load(unsigned char key[DIGESTKEY_MAX], size_t *len, char *why, size_t cap)
{
    const char *env = getenv("LOCKSTEP_DIGEST_KEY");
    if (env && *env) {
        size_t n = strlen(env);
        if (from_hex(env, n, key) == 0) {
            *len = KEY_BYTES;
            return 0;
        }
        *len = n < DIGESTKEY_MAX ? n : DIGESTKEY_MAX;
        memcpy(key, env, *len);
        return 0;
    }
    char dir[PATH_MAX], path[PATH_MAX + 16];
    if (key_dir(dir, sizeof(dir), why, cap) < 0)
        return -1;
    snprintf(path, sizeof(path), "%s/digest-key", dir);
    if (read_key(path, key, why, cap) < 0) {
        if (errno != ENOENT || make_key(dir, path, why, cap) < 0 || read_key(path, key, why, cap) < 0)
            return -1;
    }
    *len = KEY_BYTES;
    return 0;
}
