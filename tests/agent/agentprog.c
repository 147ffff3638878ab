/* agentprog.c - a program for the agent tier: records metrics and tensors per step, optionally forking or sleeping.
 *
 * usage: agentprog [--steps N] [--sleep-ms M] [--kib K] [--fork] [--no-init] [--exit CODE] [--flip-at S]
 *                  [--layers L]
 *   --no-init   never call ls_init/ls_shutdown: the agent must start itself (LD_PRELOAD)
 *   --fork      fork a child at step 1 that tries to record and leaves through exit()
 *   --flip-at   from step S on, one element of the gradient differs (a twin that diverges there)
 *   --layers    L more collective records a step ("layerI.allreduce"), as a trainer's gradient buckets
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "include/lockstep.h"

int main(int argc, char **argv)
{
    int steps = 10, sleep_ms = 0, kib = 4, do_fork = 0, no_init = 0, code = 0, flip_at = -1, layers = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sleep-ms") && i + 1 < argc)
            sleep_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--kib") && i + 1 < argc)
            kib = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--exit") && i + 1 < argc)
            code = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--flip-at") && i + 1 < argc)
            flip_at = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--layers") && i + 1 < argc)
            layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fork"))
            do_fork = 1;
        else if (!strcmp(argv[i], "--no-init"))
            no_init = 1;
        else {
            fprintf(stderr, "agentprog: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (!no_init && ls_init() < 0) {
        fprintf(stderr, "agentprog: ls_init: %s\n", ls_last_error());
        return 1;
    }
    size_t n = (size_t)kib * 1024 / sizeof(float);
    float *buf = malloc(n * sizeof(float) + 1);
    if (!buf)
        return 1;
    for (size_t i = 0; i < n; i++)
        buf[i] = (float)i * 0.25f;
    for (int s = 0; s < steps; s++) {
        ls_step_begin(s);
        double loss = 1.0 / (1.0 + s);
        if (ls_metric("loss", loss) < 0)
            fprintf(stderr, "agentprog: ls_metric: %s\n", ls_last_error());
        buf[s % n] += 1.0f;
        if (s == flip_at)
            buf[n / 2] += 0.5f;
        int64_t shape[1] = {(int64_t)n};
        for (int l = 0; l < layers; l++) {
            char name[32];
            snprintf(name, sizeof(name), "layer%d.allreduce", l);
            buf[(size_t)l % n] += 0.125f;
            ls_tensor_at(LS_LEVEL_COLLECTIVE, name, buf, n * sizeof(float), LS_F32, 1, shape);
        }
        ls_tensor_at(LS_LEVEL_COLLECTIVE, "grad", buf, n * sizeof(float), LS_F32, 1, shape);
        ls_metric("grad_norm", loss * 3);
        ls_step_end();
        if (do_fork && s == 1) {
            pid_t pid = fork();
            if (pid == 0) {
                ls_metric("child.metric", 42.0); /* must be dropped, with one warning */
                exit(0);                         /* runs the agent's exit handler in the child */
            }
            int st;
            waitpid(pid, &st, 0);
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fprintf(stderr, "agentprog: the forked child failed\n");
                return 1;
            }
        }
        if (sleep_ms) {
            struct timespec ts = {sleep_ms / 1000, (long)(sleep_ms % 1000) * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    free(buf);
    if (!no_init)
        ls_shutdown();
    return code;
}
