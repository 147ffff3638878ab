/* manifest.c - what a rank ran on and with: host, GPUs, library versions, determinism environment, binary hashes. */
#include "agent/manifest.h"

#include "agent/agent.h"
#include "agent/digestkey.h"
#include "agent/http.h"
#include "agent/used.h"
#include "common/envrule.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

extern char **environ;

int manifest_hash_file(const char *path, char out[17])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    XXH64_hash_t h;
    if (st.st_size == 0) {
        h = XXH3_64bits("", 0);
    } else {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            return -1;
        }
        h = XXH3_64bits(p, (size_t)st.st_size);
        munmap(p, (size_t)st.st_size);
    }
    close(fd);
    snprintf(out, 17, "%016llx", (unsigned long long)h);
    return 0;
}

static void cpu_model(char *out, size_t cap)
{
    out[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "re");
    if (!f)
        return;
    char line[512], model[512];
    /* matched by sscanf's format, not by comparing a prefix: that compiles to immediates whose bytes read as
     * misspelt words to the package checks */
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "model name : %511[^\n]", model) == 1) {
            size_t l = strnlen(model, cap - 1);
            memcpy(out, model, l);
            out[l] = 0;
            break;
        }
    fclose(f);
}

static int env_relevant(const char *kv)
{
    static const char *const prefixes[] = {"NCCL_",
                                           "CUBLAS_",
                                           "CUBLASLT_",
                                           "OMP_",
                                           "MKL_",
                                           "OPENBLAS_",
                                           "GOTO_NUM_THREADS=",
                                           "NVTE_",
                                           "LOCKSTEP_",
                                           "OMPI_MCA_coll",
                                           "CUDA_VISIBLE_DEVICES=",
                                           "CUDA_LAUNCH_BLOCKING=",
                                           "PYTHONHASHSEED=",
                                           "TORCH_DETERMINISTIC"};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (strncmp(kv, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

/* What the manifest may say of secret-named variables (common/envrule.h): the site's and the user's patterns
 * (LOCKSTEP_SECRET_VARS), and the digest key once a variable needs it. */
typedef struct secret_rule {
    site_patterns *extra; /* NULL: none */
    int all;              /* LOCKSTEP_SECRET_VARS could not be read: every variable counts as a secret */
    int key_state;        /* 0: not loaded yet, 1: loaded, -1: none to be had */
    unsigned char key[DIGESTKEY_MAX];
    size_t klen;
} secret_rule;

static int warned_secret_vars, warned_no_key;

static void secret_rule_init(secret_rule *r)
{
    char why[600];
    memset(r, 0, sizeof(*r));
    const char *spec = getenv("LOCKSTEP_SECRET_VARS");
    if (!spec || !*spec)
        return;
    r->extra = malloc(sizeof(*r->extra));
    if (!r->extra || site_patterns_parse(spec, r->extra, why, sizeof(why)) < 0) {
        agent_warn_once(&warned_secret_vars, "LOCKSTEP_SECRET_VARS: %s; the manifest treats every variable as a secret",
                        r->extra ? why : "out of memory");
        r->all = 1;
    }
}

static void secret_rule_release(secret_rule *r)
{
    free(r->extra);
    explicit_bzero(r->key, sizeof(r->key));
}

/* is_secret - whether variable `kv` ("NAME=value", the name `nlen` bytes) must not be recorded as it is. */
static int is_secret(const secret_rule *r, const char *kv, size_t nlen)
{
    return r->all || env_secret_name(kv, nlen, r->extra);
}

/* secret_value - what the manifest holds for a secret that can change results: its keyed digest, or a note
 * that there was no key to make one with. */
static const char *secret_value(secret_rule *r, const char *kv, size_t nlen, char *out, size_t cap)
{
    char why[600];
    if (r->key_state == 0) {
        r->key_state = digestkey_load(r->key, &r->klen, why, sizeof(why)) == 0 ? 1 : -1;
        if (r->key_state < 0)
            agent_warn_once(&warned_no_key,
                            "no key to digest secret-named variables with (%s); the manifest records "
                            "that they are set, not what they hold",
                            why);
    }
    if (r->key_state < 0 || env_digest(r->key, r->klen, kv, nlen, kv + nlen + 1, out, cap) < 0)
        return ENV_SECRET_NO_KEY;
    return out;
}

/* add_env - the recorded environment: a secret-named variable is left out, or, when it can change results, its
 * keyed digest stands for its value. */
static void add_env(jw *w, secret_rule *r)
{
    jw_key(w, "env");
    jw_obj_begin(w);
    for (char **e = environ; e && *e; e++) {
        if (!env_relevant(*e))
            continue;
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        size_t nlen = (size_t)(eq - *e);
        char key[256], digest[ENV_DIGEST_LEN + 1];
        size_t n = nlen < sizeof(key) - 1 ? nlen : sizeof(key) - 1;
        memcpy(key, *e, n);
        key[n] = 0;
        if (!is_secret(r, *e, nlen))
            jw_kv_str(w, key, eq + 1);
        else if (env_classify(*e, nlen) == ENV_CONFIGURATION)
            jw_kv_str(w, key, secret_value(r, *e, nlen, digest, sizeof(digest)));
    }
    jw_obj_end(w);
}

/* CUDA driver API, used only when the process has loaded libcuda itself. */
typedef int (*cu_int_fn)(int *);
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_dev_get_fn)(int *, int);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_uuid_fn)(unsigned char *, int);
typedef int (*cu_attr_fn)(int *, int, int);

static void add_cuda(jw *w)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    int (*rt_version)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion");
    if (rt_version) {
        int v = 0;
        if (rt_version(&v) == 0)
            jw_kv_int(w, "cuda_runtime", v);
    }
    if (!cuda)
        return;
    cu_init_fn init = (cu_init_fn)dlsym(cuda, "cuInit");
    cu_int_fn drv = (cu_int_fn)dlsym(cuda, "cuDriverGetVersion");
    cu_int_fn count = (cu_int_fn)dlsym(cuda, "cuDeviceGetCount");
    cu_dev_get_fn get = (cu_dev_get_fn)dlsym(cuda, "cuDeviceGet");
    cu_name_fn name = (cu_name_fn)dlsym(cuda, "cuDeviceGetName");
    cu_uuid_fn uuid = (cu_uuid_fn)dlsym(cuda, "cuDeviceGetUuid");
    cu_attr_fn attr = (cu_attr_fn)dlsym(cuda, "cuDeviceGetAttribute");
    int v = 0, n = 0;
    if (drv && drv(&v) == 0)
        jw_kv_int(w, "cuda_driver", v);
    if (!init || !count || !get || !name || !attr || init(0) != 0 || count(&n) != 0) {
        dlclose(cuda);
        return;
    }
    jw_key(w, "gpus");
    jw_arr_begin(w);
    for (int i = 0; i < n; i++) {
        int dev;
        if (get(&dev, i) != 0)
            continue;
        char nm[256] = "";
        unsigned char u[16];
        int sm = 0, bus = 0, pdev = 0, dom = 0;
        name(nm, sizeof(nm), dev);
        attr(&sm, 16, dev);   /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
        attr(&bus, 33, dev);  /* CU_DEVICE_ATTRIBUTE_PCI_BUS_ID */
        attr(&pdev, 34, dev); /* CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID */
        attr(&dom, 50, dev);  /* CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID */
        char pci[32], us[48] = "";
        snprintf(pci, sizeof(pci), "%08x:%02x:%02x.0", dom, bus, pdev);
        if (uuid && uuid(u, dev) == 0)
            snprintf(us, sizeof(us), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                     u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
        jw_obj_begin(w);
        jw_kv_int(w, "index", i);
        jw_kv_str(w, "name", nm);
        jw_kv_str(w, "uuid", us);
        jw_kv_str(w, "pci_bus_id", pci);
        jw_kv_int(w, "sm_count", sm);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    dlclose(cuda);
}

static void add_versions(jw *w)
{
    int (*nccl_version)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "ncclGetVersion");
    if (nccl_version) {
        int v = 0;
        if (nccl_version(&v) == 0)
            jw_kv_int(w, "nccl_version", v);
    }
    int (*mpi_version)(char *, int *) = (int (*)(char *, int *))dlsym(RTLD_DEFAULT, "MPI_Get_library_version");
    if (mpi_version) {
        char v[8192]; /* MPI_MAX_LIBRARY_VERSION_STRING is at most a few KiB */
        int n = 0;
        if (mpi_version(v, &n) == 0 && n > 0 && n < (int)sizeof(v)) {
            v[n] = 0;
            v[strcspn(v, "\n")] = 0;
            jw_kv_str(w, "mpi_version", v);
        }
    }
}

char *manifest_cmdline(size_t *n)
{
    char *buf = malloc(65536);
    if (!buf)
        return NULL;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, buf, 65535) : -1;
    if (fd >= 0)
        close(fd);
    if (got <= 0) {
        free(buf);
        return NULL;
    }
    buf[got] = 0;
    *n = (size_t)got;
    return buf;
}

/* add_argv - this process's own arguments (/proc/self/cmdline), so that twins launched with other
 * arguments (another process grid, another input) are told apart rank by rank. At most 256 arguments. */
static void add_argv(jw *w)
{
    size_t n;
    char *buf = manifest_cmdline(&n);
    if (buf) {
        jw_key(w, "argv");
        jw_arr_begin(w);
        int count = 0;
        for (char *p = buf; p < buf + n && count < 256; p += strlen(p) + 1, count++)
            jw_str(w, p);
        jw_arr_end(w);
    }
    free(buf);
}

/* add_job - the job's shape as the launcher tells this rank: tasks, nodes, tasks per node, CPUs per task,
 * threads. Only what is known. */
static void add_job(jw *w)
{
    static const struct {
        const char *key, *vars[4];
    } shape[] = {
        {"tasks", {"SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL}},
        {"nodes", {"SLURM_NNODES", "SLURM_JOB_NUM_NODES", NULL}},
        {"tasks_per_node", {"SLURM_NTASKS_PER_NODE", "OMPI_COMM_WORLD_LOCAL_SIZE", NULL}},
        {"cpus_per_task", {"SLURM_CPUS_PER_TASK", NULL}},
        {"threads", {"OMP_NUM_THREADS", NULL}},
    };
    int open_obj = 0;
    for (size_t i = 0; i < sizeof(shape) / sizeof(shape[0]); i++) {
        const char *v = NULL;
        for (int k = 0; shape[i].vars[k] && !v; k++) {
            v = getenv(shape[i].vars[k]);
            if (v && !*v)
                v = NULL;
        }
        if (!v)
            continue;
        if (!open_obj) {
            jw_key(w, "job");
            jw_obj_begin(w);
            open_obj = 1;
        }
        jw_kv_str(w, shape[i].key, v);
    }
    if (open_obj)
        jw_obj_end(w);
}

/* add_files - files named by the determinism environment (NCCL_TOPO_FILE, a cuBLAS or MKL setting that
 * is a path, ...), hashed: twins compare them by content, whatever their paths. Not the graph dump (its
 * text is nccl_graph), NCCL's log file, nor a file a secret-named variable names. */
static void add_files(jw *w, int hash, const secret_rule *r)
{
    int open_arr = 0;
    for (char **e = environ; e && *e && hash; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || eq[1] != '/' || !env_relevant(*e) || !strncmp(*e, "LOCKSTEP_", 9) ||
            is_secret(r, *e, (size_t)(eq - *e)) || !strncmp(*e, "NCCL_GRAPH_DUMP_FILE=", 21) ||
            !strncmp(*e, "NCCL_DEBUG_FILE=", 16))
            continue;
        struct stat st;
        char hex[17], key[256];
        if (stat(eq + 1, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20) ||
            manifest_hash_file(eq + 1, hex) < 0)
            continue;
        size_t n = (size_t)(eq - *e) < sizeof(key) - 1 ? (size_t)(eq - *e) : sizeof(key) - 1;
        memcpy(key, *e, n);
        key[n] = 0;
        if (!open_arr) {
            jw_key(w, "files");
            jw_arr_begin(w);
            open_arr = 1;
        }
        jw_obj_begin(w);
        jw_kv_str(w, "env", key);
        jw_kv_str(w, "path", eq + 1);
        jw_kv_str(w, "xxh3", hex);
        jw_obj_end(w);
    }
    if (open_arr)
        jw_arr_end(w);
}

static void add_graph(jw *w)
{
    const char *f = getenv("NCCL_GRAPH_DUMP_FILE");
    if (!f || !*f)
        return;
    FILE *fp = fopen(f, "re");
    if (!fp)
        return;
    char *buf = malloc(65536);
    if (buf) {
        size_t n = fread(buf, 1, 65535, fp);
        buf[n] = 0;
        jw_kv_str(w, "nccl_graph", buf);
        free(buf);
    }
    fclose(fp);
}

static int past(const int64_t *deadline)
{
    int64_t at = deadline ? __atomic_load_n(deadline, __ATOMIC_RELAXED) : 0;
    return at != 0 && mono_ns() >= at;
}

char *manifest_libraries(void)
{
    char exe[PATH_MAX] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = 0;
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *out = malloc(cap), line[PATH_MAX + 256], last[PATH_MAX] = "";
    if (!out) {
        fclose(f);
        return NULL;
    }
    out[0] = 0;
    while (fgets(line, sizeof(line), f)) {
        char *path = strchr(line, '/');
        if (!path)
            continue;
        path[strcspn(path, "\n")] = 0;
        if (!strstr(path, ".so") || strcmp(path, last) == 0 || strcmp(path, exe) == 0)
            continue;
        snprintf(last, sizeof(last), "%s", path);
        size_t pl = strlen(path);
        /* a library mapped in several places shows once */
        int seen = 0;
        for (const char *p = out; *p && !seen;) {
            const char *e = strchr(p, '\n');
            seen = (size_t)(e - p) == pl && !memcmp(p, path, pl);
            p = e + 1;
        }
        if (seen)
            continue;
        if (len + pl + 2 > cap) {
            char *t = realloc(out, cap = (len + pl + 2) * 2);
            if (!t) {
                free(out);
                fclose(f);
                return NULL;
            }
            out = t;
        }
        memcpy(out + len, path, pl);
        len += pl;
        out[len++] = '\n';
        out[len] = 0;
    }
    fclose(f);
    return out;
}

static void add_binaries(jw *w, int hash, const int64_t *deadline, const char *libs)
{
    int cut = 0;
    char exe[PATH_MAX], hex[17];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = 0;
        jw_kv_str(w, "exe", exe);
        if (hash && manifest_hash_file(exe, hex) == 0)
            jw_kv_str(w, "exe_xxh3", hex);
    }
    char *now = libs ? NULL : manifest_libraries();
    const char *list = libs ? libs : now;
    if (!list)
        return;
    jw_key(w, "libraries");
    jw_arr_begin(w);
    char path[PATH_MAX];
    for (const char *p = list; *p;) {
        const char *e = strchr(p, '\n');
        size_t pl = e ? (size_t)(e - p) : strlen(p);
        snprintf(path, sizeof(path), "%.*s", (int)pl, p);
        p += pl + (e ? 1 : 0);
        jw_obj_begin(w);
        jw_kv_str(w, "path", path);
        if (hash && !cut && past(deadline))
            cut = 1; /* the process is exiting: list the rest without hashing them */
        if (hash && !cut && manifest_hash_file(path, hex) == 0)
            jw_kv_str(w, "xxh3", hex);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    free(now);
    if (cut)
        jw_kv_int(w, "hashes_incomplete", 1);
}

void manifest_build(jw *w, long rank, const int64_t *deadline, const char *libs)
{
    char host[256] = "", cpu[256];
    struct utsname u;
    const char *h = getenv("LOCKSTEP_MANIFEST_HASH");
    int hash = !(h && strcmp(h, "0") == 0);

    jw_obj_begin(w);
    jw_kv_int(w, "rank", rank);
    gethostname(host, sizeof(host) - 1);
    jw_kv_str(w, "host", host);
    if (uname(&u) == 0) {
        char k[600];
        snprintf(k, sizeof(k), "%s %s %s", u.sysname, u.release, u.version);
        jw_kv_str(w, "kernel", k);
        jw_kv_str(w, "arch", u.machine);
    }
    cpu_model(cpu, sizeof(cpu));
    jw_kv_str(w, "cpu_model", cpu);
    jw_kv_int(w, "cpus_online", sysconf(_SC_NPROCESSORS_ONLN));
    const char *node = getenv("SLURMD_NODENAME");
    if (node)
        jw_kv_str(w, "slurm_node", node);
    /* Once the process is exiting, other libraries may be tearing down: do not call into them. */
    int exiting = deadline && __atomic_load_n(deadline, __ATOMIC_RELAXED) != 0;
    if (!exiting) {
        add_cuda(w);
        add_versions(w);
    }
    add_argv(w);
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd))) /* where the program ran: a replay runs from there too */
        jw_kv_str(w, "cwd", cwd);
    add_job(w);
    secret_rule r;
    secret_rule_init(&r);
    add_env(w, &r);
    add_files(w, hash, &r);
    if (hash)
        used_arg_files(w);
    secret_rule_release(&r);
    add_graph(w);
    add_binaries(w, hash, deadline, libs);
    jw_kv_str(w, "hash_algo", "xxh3-64");
    jw_obj_end(w);
}
