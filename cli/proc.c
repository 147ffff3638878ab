/* proc.c - run a program from the lockstep command and capture what it prints. */
#include "cli/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int proc_run(char *const *argv, char *out, size_t cap)
{
    return proc_run_env(argv, NULL, 0, out, cap);
}

int proc_run_env(char *const *argv, char *const *envp, int with_stderr, char *out, size_t cap)
{
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) < 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
    if (with_stderr)
        posix_spawn_file_actions_adddup2(&fa, fd[1], STDERR_FILENO);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, envp ? envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (rc != 0) {
        close(fd[0]);
        errno = rc;
        return -1;
    }
    size_t len = 0;
    for (;;) {
        char sink[4096];
        char *dst = len + 1 < cap ? out + len : sink;
        size_t room = len + 1 < cap ? cap - 1 - len : sizeof(sink);
        ssize_t n = read(fd[0], dst, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (dst != sink)
            len += (size_t)n;
    }
    close(fd[0]);
    if (cap)
        out[len] = 0;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
