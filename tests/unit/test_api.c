/* test_api.c - the public API: misuse, numbering, windows, exact values, and concurrent callers. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/tracedir.h"
#include "common/lsfp1.h"
#include "include/lockstep.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ls-test-api-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    setenv("LOCKSTEP_TRACE_DIR", dir, 1);
    setenv("LOCKSTEP_RANK", "2", 1);
    setenv("LOCKSTEP_RUN_ID", "run-under-test", 1);
    setenv("LOCKSTEP_TRACE", "modules", 1); /* ls_tensor records at module level */
    unsetenv("LOCKSTEP_MODE");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ls_shutdown();
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* load - the trace the agent wrote, as a run. */
static void load(td_run *run)
{
    char why[512];
    if (td_load(run, dir, why, sizeof(why)) < 0)
        fail_msg("cannot load the trace: %s", why);
    assert_int_equal(run->n_ranks, 1);
    assert_int_equal(run->ranks[0].status, REC_OK);
}

/* A wrapper, as the MPI and NCCL libraries are: it records on behalf of its caller, naming the return address. */
__attribute__((noinline)) static void wrapper(const char *name, uint64_t fp)
{
    int64_t shape[1] = {1};
    uint64_t in = fp ^ 1;
    if (ls_enabled_at(LS_LEVEL_COLLECTIVE, name, __builtin_return_address(0)))
        ls_record_fp_at(LS_LEVEL_COLLECTIVE, name, fp, 8, LS_F64, 1, shape, 1, &in, __builtin_return_address(0), NULL);
    __asm__ volatile("" ::: "memory"); /* no tail call: the wrapper's frame stays */
}

/* Two call sites in static functions of this test program: a symbol only its .symtab holds (dladdr would not
 * know it). */
__attribute__((noinline)) static void solver_report_timings(uint64_t fp)
{
    wrapper("mpi.reduce", fp);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void integrator_run(uint64_t fp)
{
    wrapper("mpi.allreduce", fp);
    __asm__ volatile("" ::: "memory");
}

static void test_call_sites(void **state)
{
    (void)state;
    setenv("LOCKSTEP_TRACE", "collectives", 1);
    setenv("LOCKSTEP_STEP_ON", "integrator_run", 1);       /* a call-site pattern: each call opens a step */
    setenv("LOCKSTEP_IGNORE", "solver_report_t?mings", 1); /* by function: never made */
    assert_int_equal(ls_init(), 0);
    for (int i = 0; i < 3; i++) {
        integrator_run(100 + (uint64_t)i);
        solver_report_timings(200 + (uint64_t)i);
    }
    ls_site own = {"train.py", 0, "step", 0, NULL};
    int64_t shape[1] = {1};
    assert_int_equal(ls_record_fp_at(LS_LEVEL_COLLECTIVE, "client", 7, 8, LS_F64, 1, shape, 0, NULL, NULL, &own), 0);
    ls_shutdown();
    unsetenv("LOCKSTEP_STEP_ON");
    unsetenv("LOCKSTEP_IGNORE");

    td_run run;
    load(&run);
    const td_rank *r = &run.ranks[0];
    assert_int_equal(r->n, 4); /* three allreduces and the client's record; no reduce */
    uint64_t off0 = 0;
    for (size_t i = 0; i < 3; i++) {
        const rec_record *x = &r->recs[i];
        assert_int_equal(x->name_len, 13);
        assert_int_equal(x->step, (int64_t)i + 1); /* steps opened by the call site */
        assert_true(rec_has_site(x));
        assert_int_equal(x->site.function_len, strlen("integrator_run"));
        assert_memory_equal(x->site.function, "integrator_run", x->site.function_len);
        assert_memory_equal(x->site.module, "test_api", x->site.module_len);
        assert_true(x->site.function_offset > 0 && x->site.function_offset < 4096);
        if (i == 0)
            off0 = x->site.offset;
        assert_true(x->site.offset == off0); /* one call site, one offset */
    }
    const rec_record *c = &r->recs[3];
    assert_memory_equal(c->site.function, "step", c->site.function_len);
    assert_memory_equal(c->site.module, "train.py", c->site.module_len);
    td_release(&run);
    /* An invalid pattern is an error with its reason, not a silent no-op. */
    setenv("LOCKSTEP_IGNORE", "report,[x", 1);
    assert_int_equal(ls_init(), -1);
    assert_non_null(strstr(ls_last_error(), "LOCKSTEP_IGNORE is invalid: pattern '[x'"));
    unsetenv("LOCKSTEP_IGNORE");
}

static void test_misuse_before_init(void **state)
{
    (void)state;
    ls_shutdown(); /* safe before init */
    assert_int_equal(ls_metric("loss", 1.0), -1);
    assert_non_null(strstr(ls_last_error(), "before ls_init"));
    double x = 1;
    assert_int_equal(ls_tensor("w", &x, sizeof(x), LS_F64, 0, NULL), -1);
    ls_step_begin(3); /* must not crash */
    ls_step_end();
    assert_null(ls_run_id());
    assert_int_equal(ls_rank(), -1);
    assert_int_equal(ls_checkpoint(4, "/ck/step-4"), -1);
    assert_non_null(strstr(ls_last_error(), "ls_checkpoint called before ls_init"));
}

static void test_misuse_after_shutdown(void **state)
{
    (void)state;
    assert_int_equal(ls_init(), 0);
    assert_int_equal(ls_init(), 0); /* twice is fine */
    assert_string_equal(ls_run_id(), "run-under-test");
    assert_int_equal(ls_rank(), 2);
    assert_int_equal(ls_metric("loss", 1.0), 0);
    /* tracing to files only: a checkpoint has no server to be declared to, and that is not an error */
    assert_int_equal(ls_checkpoint(4, "/ck/step-4"), 0);
    assert_int_equal(ls_checkpoint(-1, NULL), -1);
    assert_non_null(strstr(ls_last_error(), "step -1 is negative"));
    /* a path lockstepd would refuse is refused here, where the program hears of it */
    assert_int_equal(ls_checkpoint(4, "/ck/step-4\ntouch owned"), -1);
    assert_non_null(strstr(ls_last_error(), "control character"));
    assert_int_equal(ls_checkpoint(4, "--evil"), -1);
    assert_non_null(strstr(ls_last_error(), "begins with '-'"));
    ls_shutdown();
    ls_shutdown(); /* twice is fine */
    assert_int_equal(ls_metric("loss", 1.0), -1);
    assert_non_null(strstr(ls_last_error(), "after ls_shutdown"));
}

static void test_bad_arguments(void **state)
{
    (void)state;
    assert_int_equal(ls_init(), 0);
    char longname[LS_NAME_MAX + 2];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    float f[4] = {1, 2, 3, 4};
    int64_t shape[LS_MAX_DIMS + 1] = {4};

    assert_int_equal(ls_metric(NULL, 1.0), -1);
    assert_int_equal(ls_metric("", 1.0), -1);
    assert_int_equal(ls_metric(longname, 1.0), -1);
    assert_int_equal(ls_metric("bad\nname", 1.0), -1);
    assert_non_null(strstr(ls_last_error(), "control character"));
    assert_int_equal(ls_tensor("t", NULL, 16, LS_F32, 1, shape), -1);
    assert_int_equal(ls_tensor("t", f, 16, LS_F32, LS_MAX_DIMS + 1, shape), -1);
    assert_int_equal(ls_tensor("t", f, 16, LS_F32, 1, NULL), -1);
    assert_int_equal(ls_tensor("t", f, 16, (ls_dtype)99, 1, shape), -1);
    assert_int_equal(ls_tensor_at((ls_level)9, "t", f, 16, LS_F32, 1, shape), -1);
    assert_int_equal(ls_tensor("t", f, 16, LS_F32, 1, shape), 0);
    ls_shutdown();

    td_run run;
    load(&run);
    assert_int_equal(run.n_records, 1); /* only the valid call was recorded */
    td_release(&run);

    /* A broken configuration fails ls_init with a reason. */
    setenv("LOCKSTEP_TRACE", "everything", 1);
    assert_int_equal(ls_init(), -1);
    assert_non_null(strstr(ls_last_error(), "LOCKSTEP_TRACE"));
    setenv("LOCKSTEP_TRACE", "metrics", 1);
    setenv("LOCKSTEP_RANK", "two", 1);
    assert_int_equal(ls_init(), -1);
    assert_non_null(strstr(ls_last_error(), "LOCKSTEP_RANK"));
    assert_int_equal(ls_metric("loss", 1.0), -1);
}

static void test_records_and_numbering(void **state)
{
    (void)state;
    setenv("LOCKSTEP_TRACE", "modules", 1);
    assert_int_equal(ls_init(), 0);
    double neg_zero = -0.0, tiny = 5e-324;
    float w[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    for (int64_t step = 10; step < 13; step++) {
        ls_step_begin(step);
        assert_int_equal(ls_metric("loss", step == 11 ? neg_zero : tiny), 0);
        assert_int_equal(ls_tensor("layer0.w", w, sizeof(w), LS_F32, 2, shape), 0);
        assert_int_equal(ls_tensor("layer0.w", w, sizeof(w), LS_F32, 2, shape), 0);
        assert_int_equal(ls_tensor_at(LS_LEVEL_OP, "matmul", w, sizeof(w), LS_F32, 2, shape), 0); /* filtered */
        ls_step_end();
    }
    ls_shutdown();

    td_run run;
    load(&run);
    const td_rank *r = &run.ranks[0];
    assert_int_equal(r->hdr.rank, 2);
    assert_string_equal(r->hdr.run_id, "run-under-test");
    assert_string_equal(r->hdr.algo, "lsfp1");
    assert_int_equal(r->n, 9);
    for (size_t i = 0; i < r->n; i++) {
        const rec_record *x = &r->recs[i];
        assert_int_equal(x->seq, i);
        assert_int_equal(x->step, 10 + (int64_t)i / 3);
        if (i % 3 == 0) {
            double want = x->step == 11 ? neg_zero : tiny, got;
            assert_true(x->flags & REC_HAS_VALUE);
            memcpy(&got, &x->value, 8);
            assert_memory_equal(&got, &want, 8); /* exact bits, -0 included */
            assert_int_equal(x->level, LS_LEVEL_METRIC);
            assert_true(x->fp == fp_lsfp1(&want, 8));
        } else {
            assert_int_equal(x->occurrence, (i % 3) - 1); /* the repeat is occurrence 1 */
            assert_int_equal(x->ndim, 2);
            assert_int_equal(x->shape[1], 3);
            assert_int_equal(x->nbytes, sizeof(w));
            assert_true(x->fp == fp_lsfp1(w, sizeof(w)));
        }
    }
    td_release(&run);
}

static void test_window(void **state)
{
    (void)state;
    setenv("LOCKSTEP_TRACE", "metrics;ops:steps=5-6:ranks=0,2-3", 1);
    assert_int_equal(ls_init(), 0);
    float w[2] = {1, 2};
    for (int64_t step = 0; step < 10; step++) {
        ls_step_begin(step);
        ls_metric("loss", (double)step);
        assert_int_equal(ls_enabled(LS_LEVEL_OP), step == 5 || step == 6);
        ls_tensor_at(LS_LEVEL_OP, "op", w, sizeof(w), LS_F32, 0, NULL);
        ls_step_end();
    }
    ls_shutdown();
    td_run run;
    load(&run);
    assert_int_equal(run.n_records, 12);
    td_release(&run);

    /* Rank 2 outside the rank list: ops never recorded. */
    setenv("LOCKSTEP_TRACE", "ops:ranks=0-1", 1);
    assert_int_equal(ls_init(), 0);
    assert_int_equal(ls_enabled(LS_LEVEL_METRIC), 0);
    ls_metric("loss", 1.0);
    ls_shutdown();
    load(&run);
    assert_int_equal(run.n_records, 0);
    td_release(&run);
}

/* The innermost launcher's rank wins over the Slurm step's. */
static void test_rank_sources(void **state)
{
    (void)state;
    static const struct {
        const char *env[4][2];
        int rank;
    } cases[] = {
        {{{"SLURM_PROCID", "7"}}, 7},
        {{{"SLURM_PROCID", "0"}, {"OMPI_COMM_WORLD_RANK", "3"}}, 3}, /* mpirun inside a batch script */
        {{{"SLURM_PROCID", "0"}, {"PMIX_RANK", "2"}}, 2},
        {{{"SLURM_PROCID", "1"}, {"RANK", "5"}, {"LOCAL_RANK", "1"}}, 5}, /* torchrun under srun */
        {{{"SLURM_PROCID", "1"}, {"RANK", "5"}}, 1},                      /* a RANK of something else */
        {{{"LOCKSTEP_RANK", "4"}, {"RANK", "5"}, {"LOCAL_RANK", "1"}}, 4},
        {{{"PMI_RANK", "6"}}, 6},
    };
    static const char *const all[] = {"LOCKSTEP_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                      "RANK",          "LOCAL_RANK"};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++)
            unsetenv(all[k]);
        for (int k = 0; k < 4 && cases[i].env[k][0]; k++)
            setenv(cases[i].env[k][0], cases[i].env[k][1], 1);
        assert_int_equal(ls_init(), 0);
        if (ls_rank() != cases[i].rank)
            fail_msg("case %zu: rank %d, expected %d", i, ls_rank(), cases[i].rank);
        ls_shutdown();
    }
    for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++)
        unsetenv(all[k]);
    setenv("LOCKSTEP_RANK", "2", 1);
}

/* A second live process claiming the same rank is refused, not allowed to
 * truncate the first one's trace. */
static void test_rank_claimed_twice(void **state)
{
    (void)state;
    int up[2], down[2];
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char c = ls_init() == 0 ? 'y' : 'n';
        ls_metric("loss", 1.0);
        ls_step_end();
        if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) != 1)
            _exit(2);
        ls_shutdown();
        _exit(0);
    }
    char c;
    assert_int_equal(read(up[0], &c, 1), 1);
    assert_int_equal(c, 'y');
    assert_int_equal(ls_init(), -1);
    assert_non_null(strstr(ls_last_error(), "another live process"));
    assert_int_equal(write(down[1], "x", 1), 1);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    td_run run;
    load(&run); /* the first process's trace is whole */
    assert_int_equal(run.n_records, 1);
    td_release(&run);
    assert_int_equal(ls_init(), 0); /* free again once it exited */
    ls_shutdown();
    for (int i = 0; i < 2; i++) {
        close(up[i]);
        close(down[i]);
    }
}

/* The default trace level is collectives: module records are left out. */
static void test_default_level(void **state)
{
    (void)state;
    unsetenv("LOCKSTEP_TRACE");
    assert_int_equal(ls_init(), 0);
    float w[2] = {1, 2};
    assert_int_equal(ls_enabled(LS_LEVEL_COLLECTIVE), 1);
    assert_int_equal(ls_enabled(LS_LEVEL_MODULE), 0);
    assert_int_equal(ls_tensor("w", w, sizeof(w), LS_F32, 0, NULL), 0);
    assert_int_equal(ls_tensor_at(LS_LEVEL_COLLECTIVE, "allreduce.out", w, sizeof(w), LS_F32, 0, NULL), 0);
    ls_shutdown();
    td_run run;
    load(&run);
    assert_int_equal(run.n_records, 1);
    assert_int_equal(run.ranks[0].recs[0].level, LS_LEVEL_COLLECTIVE);
    td_release(&run);
}

static void test_mode_off(void **state)
{
    (void)state;
    setenv("LOCKSTEP_MODE", "off", 1);
    assert_int_equal(ls_init(), 0);
    assert_int_equal(ls_metric("loss", 1.0), 0);
    ls_shutdown();
    unsetenv("LOCKSTEP_MODE");
    assert_int_equal(access(dir, F_OK), 0);
    char path[300];
    snprintf(path, sizeof(path), "%s/rank-00002.lstrace", dir);
    assert_int_equal(access(path, F_OK), -1); /* nothing written */
}

/* Chunk partials ride along for tensors over 1 MiB. */
static void test_large_tensor_chunks(void **state)
{
    (void)state;
    size_t n = 3 * FP_CHUNK_BYTES + 40;
    unsigned char *buf = malloc(n);
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(i * 13);
    assert_int_equal(ls_init(), 0);
    int64_t shape[1] = {(int64_t)n};
    assert_int_equal(ls_tensor("big", buf, n, LS_U8, 1, shape), 0);
    ls_shutdown();
    td_run run;
    load(&run);
    const rec_record *x = &run.ranks[0].recs[0];
    assert_int_equal(x->n_chunks, 4);
    uint64_t acc = 0;
    for (unsigned k = 0; k < 4; k++)
        acc += x->chunks[k];
    assert_true(fp_finish(acc, n) == x->fp);
    assert_true(x->fp == fp_lsfp1(buf, n));
    td_release(&run);
    free(buf);
}

#define THREADS 4
#define PER_THREAD 2000

static void *worker(void *arg)
{
    char name[32];
    snprintf(name, sizeof(name), "thread%ld", (long)(intptr_t)arg);
    float v[16] = {0};
    for (int i = 0; i < PER_THREAD; i++) {
        if (i % 2)
            ls_metric(name, (double)i);
        else
            ls_tensor(name, v, sizeof(v), LS_F32, 0, NULL);
        if ((intptr_t)arg == 0 && i % 500 == 0)
            ls_step_end(); /* flushes race with appends */
    }
    return NULL;
}

static void test_concurrent_calls(void **state)
{
    (void)state;
    assert_int_equal(ls_init(), 0);
    ls_step_begin(1);
    pthread_t t[THREADS];
    for (intptr_t i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    ls_shutdown();

    td_run run;
    load(&run);
    const td_rank *r = &run.ranks[0];
    assert_int_equal(r->n, THREADS * PER_THREAD);
    /* seq strictly increasing; each thread's occurrences are 0..PER_THREAD-1 in order */
    uint32_t next_occ[THREADS] = {0};
    for (size_t i = 0; i < r->n; i++) {
        assert_int_equal(r->recs[i].seq, i);
        int th = r->recs[i].name[6] - '0';
        assert_true(th >= 0 && th < THREADS);
        assert_int_equal(r->recs[i].occurrence, next_occ[th]);
        next_occ[th]++;
    }
    td_release(&run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_misuse_before_init, setup, teardown),
        cmocka_unit_test_setup_teardown(test_misuse_after_shutdown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_records_and_numbering, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rank_sources, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rank_claimed_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_level, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mode_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_tensor_chunks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_sites, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_calls, setup, teardown),
    };
    return cmocka_run_group_tests_name("api", tests, NULL, NULL);
}
