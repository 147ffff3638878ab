/* cons_digests.c - the consensus digests and places of trace files, one line each, for the agent tier's checks:
 *   digest RANK STEP KEY WINDOW N FOLD SIZE one per REC_CONSENSUS_DIGEST pseudo-record (SIZE: the group's ranks)
 *   place RANK STEP KEY INDEX NAME           one per record that carries a consensus place (extension field 6)
 * usage: cons_digests TRACE...   (exit 1 when a file cannot be read whole) */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/record.h"

static int dump_one(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        fprintf(stderr, "cons_digests: cannot open %s\n", path);
        return -1;
    }
    unsigned char *buf = malloc((size_t)st.st_size + 1);
    ssize_t got = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    close(fd);
    if (got != st.st_size) {
        fprintf(stderr, "cons_digests: cannot read %s\n", path);
        free(buf);
        return -1;
    }
    rec_reader rd;
    int rc = -1;
    if (rec_reader_init(&rd, buf, (size_t)got) < 0) {
        fprintf(stderr, "cons_digests: %s: %s\n", path, rd.err);
        goto out_free_buf;
    }
    rec_record r;
    while (rec_reader_next(&rd, &r) == 1) {
        rec_ext x;
        rec_ext_of(&r, &x);
        if (r.flags & REC_CONSENSUS_DIGEST)
            printf("digest %u %" PRId64 " %016" PRIx64 " %u %" PRIu64 " %016" PRIx64 " %u\n", r.rank, r.step, r.value,
                   r.occurrence, r.nbytes, r.fp, x.has_comm ? x.comm_size : 0);
        else if (x.has_consensus)
            printf("place %u %" PRId64 " %016" PRIx64 " %u %.*s\n", r.rank, r.step, x.consensus_key, x.consensus_index,
                   (int)r.name_len, r.name);
    }
    rc = rd.status == REC_OK ? 0 : -1;
    if (rc < 0)
        fprintf(stderr, "cons_digests: %s: %s\n", path, rd.err);
    rec_reader_release(&rd);
out_free_buf:
    free(buf);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0;
    for (int i = 1; i < argc; i++)
        rc |= dump_one(argv[i]) < 0;
    return rc;
}
