/* proc.c - run a program from the lockstep command and capture what it prints. */
#include "cli/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int proc_run(char *const *argv, char *out, size_t cap)
{
    return proc_run_env(argv, NULL, 0, out, cap);
}

/* run - proc_run_env with standard input from descriptor `in` (-1: this process's). */
static int run(char *const *argv, char *const *envp, int with_stderr, int in, char *out, size_t cap)
{
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) < 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (in >= 0)
        posix_spawn_file_actions_adddup2(&fa, in, STDIN_FILENO);
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

int proc_run_env(char *const *argv, char *const *envp, int with_stderr, char *out, size_t cap)
{
    return run(argv, envp, with_stderr, -1, out, cap);
}

int proc_run_input(char *const *argv, char *const *envp, const char *input, size_t len, char *out, size_t cap)
{
    /* a file in memory: no name anyone could swap, and the program reads it whole whatever its size */
    int in = memfd_create("lockstep-input", MFD_CLOEXEC);
    if (in < 0)
        return -1;
    int rc = -1;
    for (size_t done = 0; done < len;) {
        ssize_t n = write(in, input + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            goto out_close;
        done += (size_t)n;
    }
    if (lseek(in, 0, SEEK_SET) == 0)
        rc = run(argv, envp, 1, in, out, cap);
out_close:
    close(in);
    return rc;
}
