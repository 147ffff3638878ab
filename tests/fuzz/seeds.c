/* seeds.c - write the fuzz seed corpus for fuzz_batch (a valid binary batch, a valid JSON batch) to a directory. */
#include <stdio.h>
#include <string.h>

#include "common/record.h"

static int put(const char *dir, const char *name, const void *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fwrite(p, 1, n, f);
    return fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: seeds DIR\n");
        return 2;
    }
    static unsigned char buf[8192];
    rec_header h = {.kind = REC_KIND_BATCH, .rank = 1, .batch_seq = 7};
    snprintf(h.run_id, sizeof(h.run_id), "3f0c1e2d-0000-4000-8000-000000000001");
    buf[0] = 0; /* selector: binary */
    size_t n = 1 + rec_header_encode(&h, buf + 1);
    uint64_t in[2] = {1, 2}, ch[1] = {3};
    rec_record r = {.seq = 4, .step = 2, .fp = 0x1234, .value = 0x4004000000000000ull, .dtype = LS_F64,
                    .flags = REC_HAS_VALUE, .name = "loss", .name_len = 4};
    n += rec_encode(&r, buf + n);
    rec_record t = {.seq = 5, .step = 2, .fp = 0x99, .dtype = LS_BF16, .level = LS_LEVEL_MODULE, .ndim = 2,
                    .shape = {4, 8}, .name = "layer1.out", .name_len = 10, .n_inputs = 2, .inputs = in,
                    .n_chunks = 1, .chunks = ch};
    n += rec_encode(&t, buf + n);
    if (put(argv[1], "binary", buf, n) < 0)
        return 1;
    const char *json = "\x01{\"rank\": 0, \"batch_seq\": 7, \"records\": [{\"seq\": 0, \"step\": 1, \"name\": \"loss\", "
                       "\"occ\": 0, \"level\": \"metric\", \"dtype\": \"f64\", \"shape\": [], \"fp\": "
                       "\"3ff4000000000000\", \"value\": 2.5}, {\"seq\": 1, \"step\": 1, \"name\": \"h\", \"dtype\": "
                       "\"bf16\", \"shape\": [2, 3], \"value_bits\": \"000000000000bfc0\", \"fp\": \"00000000000000ff\", "
                       "\"inputs\": [\"0123456789abcdef\"], \"chunks\": [\"8000000000000000\"]}]}";
    return put(argv[1], "json", json, strlen(json)) < 0;
}
