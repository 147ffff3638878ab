/* slurm_action.c - drain a suspect node and resume a repaired one in Slurm with scontrol (opt-in: slurm_action =
 * drain). */
#include "server/fleet/slurm_action.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/core/log.h"
#include "server/core/state.h"
#include "server/store/db.h"

int slurm_node_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
            return 0;
    return 1;
}

int slurm_set_state(const char *node, int drain, const char *reason, char *out, size_t cap)
{
    char a_node[200], a_state[32], a_reason[600];
    snprintf(a_node, sizeof(a_node), "nodename=%s", node);
    snprintf(a_state, sizeof(a_state), "state=%s", drain ? "drain" : "resume");
    snprintf(a_reason, sizeof(a_reason), "reason=lockstep: %s", reason);
    for (char *c = a_reason; *c; c++)
        if (*c == '\n' || *c == '\r' || *c == '"')
            *c = ' ';
    size_t o = (size_t)snprintf(out, cap, "%s update %s %s%s%s%s", g_srv.cfg.scontrol, a_node, a_state,
                                drain ? " \"" : "", drain ? a_reason : "", drain ? "\"" : "");
    if (o >= cap)
        o = cap - 1;
    if (!slurm_node_ok(node)) {
        snprintf(out + o, cap - o, ": refused, the node name has characters scontrol must not see");
        return -1;
    }
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) < 0) {
        snprintf(out + o, cap - o, ": pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        snprintf(out + o, cap - o, ": fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0)
            dup2(null, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (g_srv.cfg.slurm_conf[0])
            setenv("SLURM_CONF", g_srv.cfg.slurm_conf, 1);
        if (drain)
            execlp(g_srv.cfg.scontrol, g_srv.cfg.scontrol, "update", a_node, a_state, a_reason, (char *)NULL);
        else
            execlp(g_srv.cfg.scontrol, g_srv.cfg.scontrol, "update", a_node, a_state, (char *)NULL);
        dprintf(1, "cannot run %s: %s", g_srv.cfg.scontrol, strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    fcntl(fd[0], F_SETFL, O_NONBLOCK);
    char buf[512];
    size_t got = 0;
    int st = 0, done = 0;
    for (int i = 0; i < 600 && !done; i++) {
        ssize_t r;
        while ((r = read(fd[0], buf + got, sizeof(buf) - 1 - got)) > 0)
            got += (size_t)r;
        if (waitpid(pid, &st, WNOHANG) == pid)
            done = 1;
        else {
            struct timespec ts = {0, 50000000L};
            nanosleep(&ts, NULL);
        }
    }
    if (!done) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    ssize_t r;
    while ((r = read(fd[0], buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)r;
    close(fd[0]);
    buf[got] = 0;
    while (got && (buf[got - 1] == '\n' || buf[got - 1] == ' '))
        buf[--got] = 0;
    int ok = done && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    snprintf(out + o, cap - o, ": %s%s%s", ok ? "ok" : !done ? "timed out after 30 s" : "failed", got ? ": " : "", buf);
    return ok ? 0 : -1;
}

int slurm_apply(const char *node, int drain, const char *reason)
{
    if (!g_srv.cfg.slurm_drain)
        return 0;
    char out[1500], err[256];
    int rc = slurm_set_state(node, drain, reason, out, sizeof(out));
    if (rc == 0)
        log_info("slurm: %s", out);
    else
        log_warn("slurm: %s (hint: check scontrol and slurm_conf in lockstepd.conf)", out);
    const char *p[] = {node, out, drain ? "drain" : "resume"};
    if (db_do("slurm_event_add", 3, p, err, sizeof(err)) < 0)
        log_warn("slurm: cannot write the history of node %s: %s", node, err);
    return rc;
}

void slurm_action_register(void)
{
    db_register("slurm_event_add", "INSERT INTO hw_history (node, kind, state, detail) VALUES ($1, 'slurm', $3, $2)");
}
