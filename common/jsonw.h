/* jsonw.h - a tiny JSON writer that never aborts (an allocation failure marks the text unusable): the agent's bodies
 * and the wire requests. */
#ifndef COMMON_JSONW_H
#define COMMON_JSONW_H

#include <stddef.h>

#define JW_MAX_DEPTH 16

typedef struct jw {
    char *buf;
    size_t len, cap;
    int err; /* set once an allocation failed or nesting went too deep; the text is then unusable */
    int depth;
    int first[JW_MAX_DEPTH];
} jw;

/* jw_init - an empty writer. jw_release frees its buffer. */
void jw_init(jw *w);
void jw_release(jw *w);

/* Structure and values. A key must precede each value inside an object. */
void jw_obj_begin(jw *w);
void jw_obj_end(jw *w);
void jw_arr_begin(jw *w);
void jw_arr_end(jw *w);
void jw_key(jw *w, const char *key);
void jw_str(jw *w, const char *s);
void jw_int(jw *w, long long v);

/* jw_kv_str / jw_kv_int - a key and its value. */
void jw_kv_str(jw *w, const char *key, const char *s);
void jw_kv_int(jw *w, const char *key, long long v);

/* jw_text - the NUL-terminated text, or NULL after an error. */
const char *jw_text(const jw *w);

#endif /* COMMON_JSONW_H */
