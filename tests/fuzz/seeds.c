/* seeds.c - write a fuzz target's seed corpus to a directory: for fuzz_batch a valid binary batch and a valid JSON
 * batch; for fuzz_text one valid text for each of its parsers (the first byte picks the parser). */
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

static int text_seeds(const char *dir)
{
    static const char *const texts[] = {
        "\x00metrics;ops:steps=120-125:ranks=0,4-7",
        "\x00collectives:steps=5-:ranks=3",
        "\x00off",
        "\x01"
        "7:0:12",
        "\x01"
        "20:3",
        "\x02node=n3,step=20,bit=12",
        "\x02rank=1,step=7",
        "\x03listen = 127.0.0.1:8080",
        "\x03retain_days = 30",
        "\x03alert_webhook_url = http://127.0.0.1:9/hook",
        "\x04/api/v1/twins/caf%C3%A9/steps?from=0&to=9&compact=1",
        "\x04/index.html%00.js",
        "\x05login,n[1-3,7],gpu[001-012]-ib",
        "\x05r[1-2]n[1-4]",
        "\x06job\n42 \xc3\xa9\xff",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        char name[32];
        snprintf(name, sizeof(name), "text%zu", i);
        /* a leading "\x00" is the selector byte, not the end of the string */
        size_t n = texts[i][0] ? strlen(texts[i]) : 1 + strlen(texts[i] + 1);
        if (put(dir, name, texts[i], n) < 0)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: seeds DIR [fuzz_batch|fuzz_text]\n");
        return 2;
    }
    if (argc == 3 && strcmp(argv[2], "fuzz_text") == 0)
        return text_seeds(argv[1]);
    static unsigned char buf[8192];
    rec_header h = {.kind = REC_KIND_BATCH, .rank = 1, .batch_seq = 7};
    snprintf(h.run_id, sizeof(h.run_id), "3f0c1e2d-0000-4000-8000-000000000001");
    buf[0] = 0; /* selector: binary */
    size_t n = 1 + rec_header_encode(&h, buf + 1);
    uint64_t in[2] = {1, 2}, ch[1] = {3};
    rec_record r = {.seq = 4,
                    .step = 2,
                    .fp = 0x1234,
                    .value = 0x4004000000000000ull,
                    .dtype = LS_F64,
                    .flags = REC_HAS_VALUE,
                    .name = "loss",
                    .name_len = 4};
    n += rec_encode(&r, buf + n);
    rec_record t = {.seq = 5,
                    .step = 2,
                    .fp = 0x99,
                    .dtype = LS_BF16,
                    .level = LS_LEVEL_MODULE,
                    .ndim = 2,
                    .shape = {4, 8},
                    .name = "layer1.out",
                    .name_len = 10,
                    .n_inputs = 2,
                    .inputs = in,
                    .n_chunks = 1,
                    .chunks = ch};
    n += rec_encode(&t, buf + n);
    rec_record u = {.seq = 6,
                    .step = 2,
                    .fp = 0x77,
                    .dtype = LS_F64,
                    .level = LS_LEVEL_COLLECTIVE,
                    .name = "mpi.reduce",
                    .name_len = 10,
                    .n_inputs = 1,
                    .inputs = in,
                    .site = {.offset = 0x41a3,
                             .module = "libsolver.so",
                             .module_len = 12,
                             .caller = "Solver::finish()",
                             .caller_len = 16}}; /* a call site: the framing's extension block */
    n += rec_encode(&u, buf + n);
    /* extension fields and state flags: a shard, a chunk size, scales, a saved state entry */
    unsigned char ext[REC_EXT_ENCODED_MAX];
    rec_ext x = {.has_shard = 1,
                 .shard_offset = 64,
                 .shard_total = 192,
                 .shard_acc = 5,
                 .chunk_bytes = 4096,
                 .has_scales = 1,
                 .scales_dtype = LS_E8M0,
                 .scales_ndim = 1,
                 .scales_shape = {2},
                 .scales_nbytes = 2,
                 .scales_fp = 6};
    rec_record e = {.seq = 7,
                    .step = 2,
                    .fp = 0x77,
                    .dtype = LS_F8E4M3,
                    .level = LS_LEVEL_MODULE,
                    .ndim = 1,
                    .shape = {128},
                    .nbytes = 128,
                    .name = "w.shard",
                    .name_len = 7,
                    .ext = ext,
                    .ext_len = (uint16_t)rec_ext_encode(&x, ext)};
    n += rec_encode(&e, buf + n);
    rec_record st = {.seq = 8,
                     .step = 2,
                     .fp = 0x88,
                     .dtype = LS_U64,
                     .nbytes = 8,
                     .value = 9,
                     .flags = REC_HAS_VALUE | REC_STATE_RESTORED,
                     .name = "data_pos",
                     .name_len = 8};
    n += rec_encode(&st, buf + n);
    /* a call site and a shard in one extension block, on a saved state entry */
    unsigned char ext2[REC_EXT_ENCODED_MAX];
    rec_ext x2 = {.has_shard = 1, .shard_offset = 0, .shard_total = 64, .shard_acc = 7};
    rec_record both = {.seq = 9,
                       .step = 2,
                       .fp = 0x66,
                       .dtype = LS_F32,
                       .level = LS_LEVEL_COLLECTIVE,
                       .ndim = 1,
                       .shape = {8},
                       .nbytes = 32,
                       .flags = REC_STATE_SAVED,
                       .name = "mpi.allgather",
                       .name_len = 13,
                       .site = {.offset = 0x1c0,
                                .function_offset = 0x40,
                                .module = "train",
                                .module_len = 5,
                                .function = "save_ckpt",
                                .function_len = 9},
                       .ext = ext2,
                       .ext_len = (uint16_t)rec_ext_encode(&x2, ext2)};
    n += rec_encode(&both, buf + n);
    if (put(argv[1], "binary", buf, n) < 0)
        return 1;
    const char *json =
        "\x01{\"rank\": 0, \"batch_seq\": 7, \"records\": [{\"seq\": 0, \"step\": 1, \"name\": \"loss\", "
        "\"occ\": 0, \"level\": \"metric\", \"dtype\": \"f64\", \"shape\": [], \"fp\": "
        "\"3ff4000000000000\", \"value\": 2.5}, {\"seq\": 1, \"step\": 1, \"name\": \"h\", \"dtype\": "
        "\"bf16\", \"shape\": [2, 3], \"value_bits\": \"000000000000bfc0\", \"fp\": \"00000000000000ff\", "
        "\"inputs\": [\"0123456789abcdef\"], \"chunks\": [\"8000000000000000\"], \"site\": {\"module\": \"a.so\", "
        "\"offset\": 16, \"function\": \"f(int)\", \"function_offset\": 3}}, {\"seq\": 2, \"step\": 1, "
        "\"name\": \"g\", \"fp\": \"0000000000000001\", \"site\": \"train.py:84 step\"}, {\"seq\": 3, "
        "\"step\": 1, \"name\": \"s\", \"nbytes\": 16, \"fp\": \"00000000000000aa\", \"state\": \"saved\", "
        "\"chunk_bytes\": 64, \"shard\": {\"offset\": 8, \"total\": 24, \"acc\": \"0000000000000001\"}, "
        "\"scales\": {\"dtype\": \"e8m0\", \"shape\": [1], \"nbytes\": 1, \"fp\": \"0000000000000002\"}}, "
        "{\"seq\": 4, \"step\": 1, \"name\": \"t\", \"nbytes\": 8, \"fp\": \"00000000000000bb\", "
        "\"state\": \"restored\", \"site\": \"ckpt.py:12 load\", \"shard\": {\"offset\": 0, \"total\": 8, "
        "\"acc\": \"0000000000000003\"}}]}";
    return put(argv[1], "json", json, strlen(json)) < 0;
}
