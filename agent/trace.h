/* trace.h - the per-rank trace file: a buffered writer of framed records. */
#ifndef AGENT_TRACE_H
#define AGENT_TRACE_H

#include <stddef.h>

#include "common/record.h"

#define TRACE_BUF_BYTES (256 * 1024)
#define TRACE_FILE_FMT "rank-%05u.lstrace"

typedef struct trace_writer {
    int fd; /* -1 when closed */
    unsigned char *buf;
    size_t len, cap;
    char path[4096];
} trace_writer;

/* trace_open - create (truncating) DIR/rank-NNNNN.lstrace, creating DIR if
 * needed, and write the header `h`. Returns 0, or -1 with a reason in `why`;
 * the writer is then closed. */
int trace_open(trace_writer *w, const char *dir, const rec_header *h, char *why, size_t cap);

/* trace_append - buffer one record, writing the buffer out when full.
 * Returns 0, or -1 with a reason in `why` (the record is lost; the writer
 * stays usable). */
int trace_append(trace_writer *w, const rec_record *r, char *why, size_t cap);

/* trace_flush - write out what is buffered. Returns 0 or -1 with `why`. */
int trace_flush(trace_writer *w, char *why, size_t cap);

/* trace_close - flush and close; safe on a closed writer. Returns 0 or -1
 * with `why` when the last flush failed. */
int trace_close(trace_writer *w, char *why, size_t cap);

#endif /* AGENT_TRACE_H */
