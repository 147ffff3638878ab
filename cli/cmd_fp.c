/* cmd_fp.c - `lockstep fp FILE...`: LSFP-1 of whole files, printed like sha256sum. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/lsfp1.h"

#define FP_READ_BYTES (8u << 20)

/* fp_fd - LSFP-1 of everything readable from `fd`, streamed in 8 MiB reads
 * (a checkpoint may not fit in memory twice). Returns 0 or -1 with errno. */
static int fp_fd(int fd, unsigned char *buf, uint64_t *out)
{
    fp_stream s;
    fp_stream_init(&s);
    for (;;) {
        ssize_t n = read(fd, buf, FP_READ_BYTES);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        fp_stream_update(&s, buf, (size_t)n);
    }
    *out = fp_stream_digest(&s);
    return 0;
}

int cmd_fp(int argc, char **argv)
{
    if (argc < 2) {
        cli_error("fp needs at least one file", NULL, "usage: lockstep fp FILE... ('-' reads stdin)");
        return CLI_BAD_INPUT;
    }
    unsigned char *buf = malloc(FP_READ_BYTES);
    if (!buf) {
        cli_error("out of memory", NULL, NULL);
        return CLI_BAD_INPUT;
    }
    int rc = CLI_OK;
    for (int i = 1; i < argc; i++) {
        const char *path = argv[i];
        int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
        uint64_t fp;
        if (fd < 0 || fp_fd(fd, buf, &fp) < 0) {
            char detail[512];
            snprintf(detail, sizeof(detail), "%s: %s", path, strerror(errno));
            cli_error("cannot read a file", detail, "check the path and its permissions");
            rc = CLI_BAD_INPUT;
        } else {
            printf("%016llx  %s\n", (unsigned long long)fp, path);
        }
        if (fd > STDIN_FILENO)
            close(fd);
    }
    free(buf);
    if (fflush(stdout) != 0)
        rc = CLI_BAD_INPUT;
    return rc;
}
