/* used.c - configuration as the program really uses it (agent/used.h). */
#include "agent/used.h"

#include "agent/manifest.h"
#include "agent/send.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* arg_file - the path an argument names, if it may be a file: the argument, or what follows '=' in "--opt=PATH". */
static const char *arg_path(const char *arg)
{
    if (arg[0] == '-') {
        const char *eq = strchr(arg, '=');
        return eq && eq[1] ? eq + 1 : NULL;
    }
    return arg[0] ? arg : NULL;
}

/* fingerprintable - 1 when `path` is a regular file of at most USED_ARG_FILE_BYTES outside /proc, /sys and /dev
 * (its real path, links followed, into `real`). */
static int fingerprintable(const char *path, char real[PATH_MAX])
{
    struct stat st;
    if (strlen(path) >= PATH_MAX || stat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > USED_ARG_FILE_BYTES)
        return 0;
    if (!realpath(path, real))
        return 0;
    static const char *const apart[] = {"/proc/", "/sys/", "/dev/"};
    for (size_t i = 0; i < sizeof(apart) / sizeof(apart[0]); i++)
        if (!strncmp(real, apart[i], strlen(apart[i])))
            return 0;
    return 1;
}

void used_arg_files(jw *w)
{
    size_t n;
    char *buf = manifest_cmdline(&n);
    int count = 0, open_arr = 0;
    if (buf) {
        char *p = buf + strlen(buf) + 1; /* argv[0] is the executable, hashed as exe */
        for (; p < buf + n && count < USED_ARG_FILES_MAX; p += strlen(p) + 1) {
            const char *path = arg_path(p);
            char real[PATH_MAX], hex[17];
            if (!path || !fingerprintable(path, real) || manifest_hash_file(real, hex) < 0)
                continue;
            count++;
            if (!open_arr) {
                jw_key(w, "arg_files");
                jw_arr_begin(w);
                open_arr = 1;
            }
            jw_obj_begin(w);
            jw_kv_str(w, "arg", path);
            jw_kv_str(w, "xxh3", hex);
            jw_obj_end(w);
        }
    }
    if (open_arr)
        jw_arr_end(w);
    free(buf);
}

int used_key_valid(const char *key)
{
    size_t n = key ? strnlen(key, USED_KEY_MAX + 1) : 0;
    if (n == 0 || n > USED_KEY_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = key[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.'))
            return 0;
    }
    return 1;
}

/* The thread-count getters, found once. */
typedef int (*count_fn)(void);
static const struct {
    const char *fact, *symbol;
} GETTERS[] = {
    {"threads.omp", "omp_get_max_threads"},
    {"threads.mkl", "mkl_get_max_threads"},
    {"threads.openblas", "openblas_get_num_threads"},
};
#define NGETTERS (sizeof(GETTERS) / sizeof(GETTERS[0]))
static count_fn getter[NGETTERS];
static int last[NGETTERS];
static int resolved;
static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;

/* resolve_in - the getters `h` (a handle, or RTLD_DEFAULT) holds that are not found yet. */
static void resolve_in(void *h)
{
    for (size_t i = 0; i < NGETTERS; i++)
        if (!getter[i])
            getter[i] = (count_fn)(uintptr_t)dlsym(h, GETTERS[i].symbol);
}

/* resolve_all - look for the getters in the global scope, then in each library `libs` lists that is loaded
 * (RTLD_NOLOAD: a library a program loaded locally, as Python extensions are, is not in the global scope; the
 * agent never loads one itself). */
static void resolve_all(const char *libs)
{
    resolve_in(RTLD_DEFAULT);
    for (const char *p = libs; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char path[PATH_MAX];
        if (len && len < sizeof(path) && (strstr(p, "omp") || strstr(p, "mkl") || strstr(p, "blas"))) {
            memcpy(path, p, len);
            path[len] = 0;
            void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
            if (h) {
                resolve_in(h);
                dlclose(h); /* drops the reference RTLD_NOLOAD took; the program's own stays */
            }
        }
        p = nl ? nl + 1 : p + len;
    }
}

void used_probe_threads(const char *libs)
{
    pthread_mutex_lock(&probe_mu);
    if (!resolved && libs) {
        resolve_all(libs);
        resolved = 1;
    }
    for (size_t i = 0; i < NGETTERS; i++) {
        if (!getter[i])
            continue;
        int n = getter[i]();
        if (n == last[i])
            continue;
        char v[24];
        snprintf(v, sizeof(v), "%d", n);
        if (send_note(GETTERS[i].fact, v) == 0)
            last[i] = n;
    }
    pthread_mutex_unlock(&probe_mu);
}
