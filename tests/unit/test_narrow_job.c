/* test_narrow_job.c - the batch script of a narrow's replay (cli/narrow_job.h): sh runs exactly the launcher's words
 * and the placement's words, whatever they hold, and nothing else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/narrow_job.h"

/* run_script - sh SCRIPT (a file in `dir`) with its output captured; bytes read, -1 when sh failed. */
/* remove_entry - nftw's callback that removes each file and directory (deepest first) of the test's directory. */
static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)st, (void)type, (void)f;
    return remove(path);
}

static long run_script(const char *dir, const char *script, char *out, size_t cap)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/job.sh", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(script, f);
    fclose(f);
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        if (chdir(dir) < 0)
            _exit(126);
        execl("/bin/sh", "sh", path, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while ((r = read(fd[0], out + n, cap - n)) > 0)
        n += (size_t)r;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    unlink(path);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? (long)n : -1;
}

static void test_script_runs_only_the_words(void **state)
{
    (void)state;
    char dir[] = "/tmp/ls-njob.XXXXXX", out[8192], why[200];
    assert_non_null(mkdtemp(dir));
    /* a job whose words try every way out of a command line, and a checkpoint path filled into a template */
    static const char *const words[] = {"python3",
                                        "train.py",
                                        "; touch owned1 #",
                                        "$(touch owned2)",
                                        "`touch owned3`",
                                        "x && touch owned4",
                                        "/ck/step-4\ntouch owned5 #",
                                        "it's \"quoted\"",
                                        "*",
                                        "-rf",
                                        "",
                                        "\xff\xfe bytes"};
    json_t *argv = json_array();
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        json_array_append_new(argv, json_stringn_nocheck(words[i], strlen(words[i])));
    /* the launcher: a program that prints its arguments, each ended by a NUL */
    char *launcher[] = {"printf", "%s\\0"};
    char *script = narrow_job_script(12, 3, launcher, 2, argv, why, sizeof(why));
    assert_non_null(script);
    assert_non_null(strstr(script, "# lockstep narrow 12, placement 3"));
    long n = run_script(dir, script, out, sizeof(out));
    free(script);
    assert_true(n > 0);
    long at = 0;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        size_t l = strlen(words[i]);
        if (at + (long)l + 1 > n || memcmp(out + at, words[i], l) || out[at + (long)l])
            fail_msg("word %zu did not reach the program as it was", i);
        at += (long)l + 1;
    }
    assert_int_equal(at, n);
    /* nothing but the program ran */
    for (int k = 1; k <= 5; k++) {
        char owned[300];
        struct stat st;
        snprintf(owned, sizeof(owned), "%s/owned%d", dir, k);
        assert_int_equal(stat(owned, &st), -1);
    }
    /* sbatch reads #SBATCH lines only before the first command: the script has none, and its first command line
     * follows the comment at once */
    script = narrow_job_script(12, 3, launcher, 2, argv, why, sizeof(why));
    const char *second = strchr(script, '\n') + 1, *third = strchr(second, '\n') + 1;
    assert_true(!strncmp(second, "# lockstep", 10));
    assert_true(third[0] == '\'');
    assert_null(strstr(script, "\n#SBATCH"));
    free(script);
    json_decref(argv);
    rmdir(dir);
}

static void test_script_refusals(void **state)
{
    (void)state;
    char why[200];
    char *launcher[] = {"srun"};
    json_t *none = json_array();
    assert_null(narrow_job_script(1, 0, launcher, 1, none, why, sizeof(why)));
    assert_non_null(strstr(why, "no words"));
    json_array_append_new(none, json_integer(7));
    assert_null(narrow_job_script(1, 0, launcher, 1, none, why, sizeof(why)));
    assert_non_null(strstr(why, "not a string"));
    assert_null(narrow_job_script(1, 0, launcher, 1, NULL, why, sizeof(why)));
    json_decref(none);
}

/* A placement that carries its run's settings: sbatch (a stand-in on PATH that writes down what it was given) gets
 * the run's ignore rule, trace and working directory as options, each one word, and the job's environment holds the
 * run's determinism environment and step rule in place of the operator's; what the settings cannot carry is left
 * out. */
static void test_submit_carries_settings(void **state)
{
    (void)state;
    char dir[] = "/tmp/ls-nsub.XXXXXX", path[400], line[4096], why[400];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/sbatch", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "#!/bin/sh\nfor a in \"$@\"; do printf 'arg %%s\\n' \"$a\"; done >%s/args\nenv >%s/env\ncat >/dev/null\n"
            "echo 4242\n",
            dir, dir);
    fclose(f);
    chmod(path, 0755);
    const char *old_path = getenv("PATH");
    char newpath[2000];
    snprintf(newpath, sizeof(newpath), "%s:%s", dir, old_path ? old_path : "/usr/bin:/bin");
    setenv("PATH", newpath, 1);
    setenv("LOCKSTEP_IGNORE", "operator_rule", 1); /* the operator's own: never the replay's */
    setenv("OMP_NUM_THREADS", "99", 1);
    struct passwd *me = getpwuid(geteuid());
    assert_non_null(me);
    json_t *n = json_pack("{s:i, s:s, s:{s:s}}", "id", 7, "narrow_group", "g.narrow-7", "window", "trace",
                          "collectives;modules:steps=5-7");
    json_t *p = json_pack("{s:i, s:s, s:s, s:i, s:i, s:s, s:[s, s], s:{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s}}}",
                          "index", 0, "user", me->pw_name, "nodes", "n1", "nnodes", 1, "ranks", 2, "mode", "det",
                          "argv", "./train", "--steps 8", "settings", "ignore", "report_timings,'Solver::*'", "step_on",
                          "train_step", "trace", "metrics;modules:steps=5-7", "cwd", "/work dir/run 1", "env",
                          "OMP_NUM_THREADS", "4", "CUBLAS_WORKSPACE_CONFIG", ":4096:8", "BAD NAME", "x");
    narrow_job job;
    if (narrow_job_submit(n, p, NULL, 0, dir, &job, why, sizeof(why)) < 0)
        fail_msg("not submitted: %s", why);
    assert_string_equal(job.id, "4242");
    snprintf(path, sizeof(path), "%s/args", dir);
    f = fopen(path, "r");
    assert_non_null(f);
    int ignore = 0, trace = 0, chdir_seen = 0;
    while (fgets(line, sizeof(line), f)) {
        ignore += !strcmp(line, "arg --lockstep-ignore=report_timings,'Solver::*'\n");
        trace += !strcmp(line, "arg --lockstep-trace=metrics;modules:steps=5-7\n");
        chdir_seen += !strcmp(line, "arg --chdir=/work dir/run 1\n");
    }
    fclose(f);
    assert_int_equal(ignore, 1);
    assert_int_equal(trace, 1);
    assert_int_equal(chdir_seen, 1);
    snprintf(path, sizeof(path), "%s/env", dir);
    f = fopen(path, "r");
    assert_non_null(f);
    int omp = 0, omp_op = 0, cublas = 0, step_on = 0, op_ignore = 0, bad = 0;
    while (fgets(line, sizeof(line), f)) {
        omp += !strcmp(line, "OMP_NUM_THREADS=4\n");
        omp_op += !strcmp(line, "OMP_NUM_THREADS=99\n");
        cublas += !strcmp(line, "CUBLAS_WORKSPACE_CONFIG=:4096:8\n");
        step_on += !strcmp(line, "LOCKSTEP_STEP_ON=train_step\n");
        op_ignore += !strncmp(line, "LOCKSTEP_IGNORE=", 16);
        bad += !strncmp(line, "BAD NAME", 8);
    }
    fclose(f);
    assert_int_equal(omp, 1);
    assert_int_equal(omp_op, 0);
    assert_int_equal(cublas, 1);
    assert_int_equal(step_on, 1);
    assert_int_equal(op_ignore, 0);
    assert_int_equal(bad, 0);
    json_decref(n);
    json_decref(p);
    unsetenv("LOCKSTEP_IGNORE");
    unsetenv("OMP_NUM_THREADS");
    setenv("PATH", old_path ? old_path : "/usr/bin:/bin", 1);
    assert_int_equal(nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_script_runs_only_the_words),
        cmocka_unit_test(test_script_refusals),
        cmocka_unit_test(test_submit_carries_settings),
    };
    return cmocka_run_group_tests_name("narrow_job", tests, NULL, NULL);
}
