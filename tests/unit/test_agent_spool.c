/* test_agent_spool.c - the agent's spool files, meta and lock, its JSON writer and its settings parsers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/config.h"
#include "agent/http.h"
#include "common/jsonw.h"
#include "agent/spool_send.h"
#include "agent/spool.h"
#include "common/fsutil.h"
#include "common/record.h"

static char root[256];

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/ls-test-spool-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_batches_sorted_and_files_atomic(void **state)
{
    (void)state;
    spool sp;
    char why[512];
    assert_int_equal(spool_open(&sp, root, "J.0", 3, NULL, why, sizeof(why)), 0);
    uint64_t order[] = {12, 3, 100000000000ULL, 7};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(spool_put_batch(&sp, order[i], "abc", 3, why, sizeof(why)), 0);
    uint64_t *seqs;
    assert_int_equal(spool_batches(&sp, &seqs, why, sizeof(why)), 4);
    assert_int_equal(seqs[0], 3);
    assert_int_equal(seqs[1], 7);
    assert_int_equal(seqs[2], 12);
    assert_true(seqs[3] == 100000000000ULL);
    free(seqs);

    unsigned char *buf;
    size_t len;
    char name[64];
    snprintf(name, sizeof(name), SPOOL_BATCH_FMT, 7ULL);
    assert_int_equal(spool_get(&sp, name, &buf, &len, why, sizeof(why)), 1);
    assert_int_equal(len, 3);
    assert_memory_equal(buf, "abc", 3);
    free(buf);
    assert_int_equal(spool_get(&sp, "absent", &buf, &len, why, sizeof(why)), 0);
    assert_int_equal(spool_is_empty(&sp), 0);
    for (size_t i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), SPOOL_BATCH_FMT, (unsigned long long)order[i]);
        assert_int_equal(spool_remove(&sp, name), 0);
    }
    assert_int_equal(spool_is_empty(&sp), 1);
    assert_int_equal(spool_remove_dir(&sp), 0);
    char path[400];
    snprintf(path, sizeof(path), "%s/J.0", root);
    assert_int_not_equal(access(path, F_OK), 0); /* the run's directory went with its last rank */
}

static void test_meta_round_trip(void **state)
{
    (void)state;
    spool sp;
    spool_meta m, r;
    char why[512];
    assert_int_equal(spool_open(&sp, root, "J.1", 0, NULL, why, sizeof(why)), 0);
    memset(&m, 0, sizeof(m));
    snprintf(m.server, sizeof(m.server), "http://127.0.0.1:1");
    snprintf(m.token, sizeof(m.token), "tok");
    snprintf(m.job_id, sizeof(m.job_id), "J");
    snprintf(m.step_id, sizeof(m.step_id), "1");
    snprintf(m.reg, sizeof(m.reg), "{\"job_id\":\"J\",\"command\":\"a=b c\"}");
    m.rank = 0;
    assert_int_equal(spool_meta_write(&sp, &m, why, sizeof(why)), 0);
    assert_int_equal(spool_meta_read(&sp, &r, why, sizeof(why)), 1);
    assert_string_equal(r.server, m.server);
    assert_string_equal(r.token, "tok");
    assert_string_equal(r.run_id, "");
    assert_string_equal(r.reg, m.reg); /* values may hold '=' */
    assert_int_equal(r.rank, 0);
    spool_close(&sp);
}

static void test_lock_excludes_other_process(void **state)
{
    (void)state;
    spool sp;
    char why[512];
    assert_int_equal(spool_open(&sp, root, "J.2", 1, NULL, why, sizeof(why)), 0);
    pid_t pid = fork();
    if (pid == 0) {
        spool other;
        int busy = 0;
        char dir[4200];
        snprintf(dir, sizeof(dir), "%s/J.2/rank-00001", root);
        _exit(spool_open_dir(&other, dir, 0, &busy, why, sizeof(why)) < 0 && busy ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    spool_close(&sp);
}

/* write_file - `text` into `path` (mode 0644). */
static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void expect_file(const char *path, const char *text)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    assert_string_equal(buf, text);
}

/* A spool someone else prepared with links where its files go: a replay never reads or writes through one. */
static void test_planted_links(void **state)
{
    (void)state;
    char dir[600], victim[600], link[700], why[512];
    snprintf(dir, sizeof(dir), "%s/P.0/rank-00000", root);
    snprintf(victim, sizeof(victim), "%s/victim", root);
    assert_int_equal(fs_mkdir_p(dir), 0);
    write_file(victim, "the replaying user's file\n");
    /* the lock, a batch, the manifest, and every name the meta file's rewrite could use are links to the victim */
    static const char *const names[] = {"lock", "batch-00000000000000000001.lsbatch", "manifest.json", NULL};
    for (const char *const *n = names; *n; n++) {
        snprintf(link, sizeof(link), "%s/%s", dir, *n);
        assert_int_equal(symlink(victim, link), 0);
    }
    spool sp;
    int busy;
    assert_int_equal(spool_open_dir(&sp, dir, 0, &busy, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "link"));
    snprintf(link, sizeof(link), "%s/lock", dir);
    unlink(link);
    assert_int_equal(spool_open_dir(&sp, dir, 0, &busy, why, sizeof(why)), 0);
    for (int pid = getpid() - 2; pid <= getpid() + 2; pid++) { /* the temporary name a rewrite once used */
        snprintf(link, sizeof(link), "%s/.%s.%d.tmp", dir, SPOOL_META, pid);
        assert_int_equal(symlink(victim, link), 0);
    }
    unsigned char *buf;
    size_t len;
    assert_int_equal(spool_get(&sp, "manifest.json", &buf, &len, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "link"));
    assert_int_equal(spool_get(&sp, "batch-00000000000000000001.lsbatch", &buf, &len, why, sizeof(why)), -1);
    spool_meta m;
    memset(&m, 0, sizeof(m));
    snprintf(m.server, sizeof(m.server), "http://127.0.0.1:1");
    assert_int_equal(spool_meta_write(&sp, &m, why, sizeof(why)), 0);
    assert_int_equal(spool_meta_read(&sp, &m, why, sizeof(why)), 1);
    /* a FIFO where a file goes: refused at once, not waited on */
    snprintf(link, sizeof(link), "%s/end.json", dir);
    assert_int_equal(mkfifo(link, 0600), 0);
    assert_int_equal(spool_get(&sp, "end.json", &buf, &len, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "not a regular file"));
    spool_close(&sp);
    expect_file(victim, "the replaying user's file\n");
    /* the rank directory itself a link: refused */
    snprintf(link, sizeof(link), "%s/P.0/rank-00001", root);
    assert_int_equal(symlink(dir, link), 0);
    assert_int_equal(spool_open_dir(&sp, link, 1, &busy, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "link or not a directory"));
}

/* A spool directory, or a file in it, of another user: refused unless forced (needs root to make one). */
static void test_foreign_spool(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    char dir[600], path[700], why[512];
    snprintf(dir, sizeof(dir), "%s/F.0/rank-00000", root);
    assert_int_equal(fs_mkdir_p(dir), 0);
    snprintf(path, sizeof(path), "%s/manifest.json", dir);
    write_file(path, "{}");
    assert_int_equal(chown(dir, 65534, 65534), 0);
    spool sp;
    int busy;
    assert_int_equal(spool_open_dir(&sp, dir, 0, &busy, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "belongs to uid 65534"));
    assert_int_equal(spool_open_dir(&sp, dir, 1, &busy, why, sizeof(why)), 0);
    spool_close(&sp);
    /* our directory, another user's file in it */
    assert_int_equal(chown(dir, 0, 0), 0);
    assert_int_equal(chown(path, 65534, 65534), 0);
    assert_int_equal(spool_open_dir(&sp, dir, 0, &busy, why, sizeof(why)), 0);
    unsigned char *buf;
    size_t len;
    assert_int_equal(spool_get(&sp, "manifest.json", &buf, &len, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "another user"));
    spool_close(&sp);
    assert_int_equal(spool_open_dir(&sp, dir, 1, &busy, why, sizeof(why)), 0);
    assert_int_equal(spool_get(&sp, "manifest.json", &buf, &len, why, sizeof(why)), 1);
    free(buf);
    spool_close(&sp);
    /* an agent never spools into a rank directory another user made first */
    assert_int_equal(chown(dir, 65534, 65534), 0);
    assert_int_equal(spool_open(&sp, root, "F.0", 0, NULL, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "belongs to uid 65534"));
}

/* lockstep replay follows no link to a spool, and sends only where it is told, never where a spool says. */
static void test_replay_tree_links_and_server(void **state)
{
    (void)state;
    char dir[600], link[700], meta[700];
    snprintf(dir, sizeof(dir), "%s/R.0/rank-00000", root);
    assert_int_equal(fs_mkdir_p(dir), 0);
    snprintf(meta, sizeof(meta), "%s/spool.meta", dir);
    write_file(meta, "server=http://127.0.0.1:1\nrank=0\njob_id=R\nstep_id=0\n");
    snprintf(link, sizeof(link), "%s/elsewhere", root);
    assert_int_equal(symlink(dir, link), 0); /* a link to a spool: not followed */
    spool_send_opts o = {.timeout_ms = 200, .wait_ms = 0, .log = NULL};
    spool_send_stats st;
    assert_int_equal(spool_send_tree(root, &o, &st), -1); /* no server: nothing is sent anywhere */
    assert_int_equal(st.dirs, 0);
    o.server = "http://127.0.0.1:1";
    spool_send_tree(root, &o, &st);
    assert_int_equal(st.dirs, 1);
}

static void test_jsonw_escapes_and_nests(void **state)
{
    (void)state;
    jw w;
    jw_init(&w);
    jw_obj_begin(&w);
    jw_kv_str(&w, "a", "q\"b\\s\n\x01");
    jw_kv_int(&w, "n", -5);
    jw_key(&w, "l");
    jw_arr_begin(&w);
    jw_int(&w, 1);
    jw_str(&w, "x");
    jw_obj_begin(&w);
    jw_obj_end(&w);
    jw_arr_end(&w);
    jw_obj_end(&w);
    assert_string_equal(jw_text(&w), "{\"a\":\"q\\\"b\\\\s\\u000a\\u0001\",\"n\":-5,\"l\":[1,\"x\",{}]}");
    jw_release(&w);
}

static void test_settings_parsers(void **state)
{
    (void)state;
    size_t n;
    long ms;
    assert_int_equal(config_size("64M", &n), 0);
    assert_true(n == 64u << 20);
    assert_int_equal(config_size("4k", &n), 0);
    assert_int_equal(n, 4096);
    assert_int_equal(config_size("512", &n), 0);
    assert_int_equal(n, 512);
    assert_int_equal(config_size("1GiB", &n), 0);
    assert_true(n == 1u << 30);
    assert_int_equal(config_size("-1", &n), -1);
    assert_int_equal(config_size("12Q", &n), -1);
    assert_int_equal(config_size("", &n), -1);
    assert_int_equal(config_seconds_ms("2.5", &ms), 0);
    assert_int_equal(ms, 2500);
    assert_int_equal(config_seconds_ms("x", &ms), -1);
    assert_int_equal(config_seconds_ms("-3", &ms), -1);
}

static void test_stream_config_from_env(void **state)
{
    (void)state;
    rec_header h;
    memset(&h, 0, sizeof(h));
    snprintf(h.run_id, sizeof(h.run_id), "local-run");
    send_cfg c;
    char why[512];
    unsetenv("LOCKSTEP_SERVER");
    assert_int_equal(config_stream(&c, 0, &h, why, sizeof(why)), 0);
    setenv("LOCKSTEP_SERVER", "ftp://x", 1);
    assert_int_equal(config_stream(&c, 0, &h, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "LOCKSTEP_SERVER"));
    setenv("LOCKSTEP_SERVER", "http://127.0.0.1:9", 1);
    setenv("LOCKSTEP_JOB_ID", "77", 1);
    setenv("LOCKSTEP_STEP_ID", "2", 1);
    setenv("LOCKSTEP_TWIN_GROUP", "g\"1", 1);
    setenv("LOCKSTEP_MAX_MEM", "1M", 1);
    unsetenv("LOCKSTEP_RUN_ID");
    assert_int_equal(config_stream(&c, 5, &h, why, sizeof(why)), 1);
    assert_string_equal(c.job_id, "77");
    assert_string_equal(c.spool_key, "77.2");
    assert_string_equal(c.run_id, "");
    assert_true(c.mem_cap == 1u << 20);
    assert_int_equal(c.hdr.rank, 5);
    assert_int_equal(c.hdr.kind, REC_KIND_BATCH);
    assert_non_null(strstr(c.reg_json, "\"twin_group\":\"g\\\"1\""));
    assert_non_null(strstr(c.reg_json, "\"job_id\":\"77\""));
    free(c.reg_json);
    /* without the plugin: Slurm's step id, and the attempt of a requeued job in the key */
    unsetenv("LOCKSTEP_STEP_ID");
    setenv("SLURM_STEP_ID", "3", 1);
    setenv("SLURM_RESTART_COUNT", "2", 1);
    assert_int_equal(config_stream(&c, 5, &h, why, sizeof(why)), 1);
    assert_string_equal(c.step_id, "3.r2");
    assert_string_equal(c.spool_key, "77.3.r2");
    assert_non_null(strstr(c.reg_json, "\"step_id\":\"3.r2\""));
    free(c.reg_json);
    setenv("SLURM_RESTART_COUNT", "0", 1);
    assert_int_equal(config_stream(&c, 5, &h, why, sizeof(why)), 1);
    assert_string_equal(c.step_id, "3");
    free(c.reg_json);
    unsetenv("SLURM_STEP_ID");
    unsetenv("SLURM_RESTART_COUNT");
    setenv("LOCKSTEP_BATCH_MS", "soon", 1);
    assert_int_equal(config_stream(&c, 5, &h, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "LOCKSTEP_BATCH_MS"));
    unsetenv("LOCKSTEP_BATCH_MS");
    unsetenv("LOCKSTEP_SERVER");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_batches_sorted_and_files_atomic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_meta_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_excludes_other_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_planted_links, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_spool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_tree_links_and_server, setup, teardown),
        cmocka_unit_test(test_jsonw_escapes_and_nests),
        cmocka_unit_test(test_settings_parsers),
        cmocka_unit_test(test_stream_config_from_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
