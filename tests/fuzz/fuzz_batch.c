/* fuzz_batch.c - libFuzzer target for lockstepd's ingest decoders: byte 0 picks binary framing (even) or JSON (odd). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "server/store/batch.h"
#include "common/recmatch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    srv_batch b;
    srv_error e;
    int rc = (data[0] & 1) ? batch_decode_json(&b, data + 1, size - 1, &e)
                           : batch_decode_binary(&b, data + 1, size - 1, &e);
    if (rc == 0) {
        /* a decoded batch is whole: every record passes the framing's own checks */
        for (size_t i = 0; i < b.n; i++) {
            char why[160];
            if (rec_check(&b.recs[i], why, sizeof(why)) < 0 || !batch_utf8_valid(b.recs[i].name, b.recs[i].name_len))
                __builtin_trap();
            if (i && b.recs[i].seq <= b.recs[i - 1].seq)
                __builtin_trap();
            (void)rec_digest_term(&b.recs[i]);
        }
    } else if (!e.error[0] || !e.hint[0]) {
        __builtin_trap(); /* every rejection says what and what to do */
    }
    batch_release(&b);
    return 0;
}
