/* vectors.c - the LSFP-1 test vectors as buffers, for the kernel checks on CPU and GPU. */
#include "kernels/vectors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/lsfp1.h"

int lsk_vector_pattern(const char *name, unsigned char *p, size_t n)
{
    if (strcmp(name, "pattern_4096") == 0) {
        for (size_t i = 0; i < n; i++)
            p[i] = (unsigned char)((i * 31 + 7) % 256);
        return 0;
    }
    if (strcmp(name, "pattern_3MiB_plus_5") == 0) {
        for (size_t i = 0; i < n; i++)
            p[i] = (unsigned char)((i * 131 + (i >> 8)) % 256);
        return 0;
    }
    return -1;
}

void lsk_fill_random(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (size_t i = 0; i < n; i++) {
        if (i % 8 == 0)
            s = fp_fmix64(s + 0x632be59bd9b4e019ULL);
        p[i] = (unsigned char)(s >> (8 * (i % 8)));
    }
}

void lsk_vectors_free(lsk_vector *v, int n)
{
    for (int i = 0; v && i < n; i++) {
        free(v[i].data);
        free(v[i].chunks);
    }
    free(v);
}

/* load_case - case `c` into `v`. Returns 0 or -1 with `why`. */
static int load_case(json_t *c, lsk_vector *v, char *why, size_t cap)
{
    const char *name = json_string_value(json_object_get(c, "name"));
    const char *hex = json_string_value(json_object_get(c, "hex"));
    const char *fp = json_string_value(json_object_get(c, "fp"));
    json_t *parts = json_object_get(c, "chunk_partials");
    if (!name || !fp || !json_is_array(parts) || !json_is_integer(json_object_get(c, "nbytes"))) {
        snprintf(why, cap, "a vector lacks name, nbytes, fp or chunk_partials");
        return -1;
    }
    snprintf(v->name, sizeof(v->name), "%s", name);
    v->nbytes = (size_t)json_integer_value(json_object_get(c, "nbytes"));
    v->fp = strtoull(fp, NULL, 16);
    v->n_chunks = json_array_size(parts);
    v->data = malloc(v->nbytes + 1);
    v->chunks = calloc(v->n_chunks + 1, sizeof(uint64_t));
    if (!v->data || !v->chunks) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    for (size_t k = 0; k < v->n_chunks; k++)
        v->chunks[k] = strtoull(json_string_value(json_array_get(parts, k)) ?: "", NULL, 16);
    if (hex) {
        if (strlen(hex) != 2 * v->nbytes) {
            snprintf(why, cap, "vector %s: hex is not 2 * nbytes long", name);
            return -1;
        }
        for (size_t k = 0; k < v->nbytes; k++) {
            unsigned x;
            if (sscanf(hex + 2 * k, "%2x", &x) != 1) {
                snprintf(why, cap, "vector %s: bad hex", name);
                return -1;
            }
            v->data[k] = (unsigned char)x;
        }
    } else if (lsk_vector_pattern(name, v->data, v->nbytes) < 0) {
        snprintf(why, cap, "vector %s has no hex and no generator here: add one to kernels/vectors.c", name);
        return -1;
    }
    return 0;
}

int lsk_vectors_load(const char *path, lsk_vector **out, char *why, size_t cap)
{
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) {
        snprintf(why, cap, "cannot load %s: %s", path, err.text);
        return -1;
    }
    json_t *cases = json_object_get(root, "cases");
    int n = (int)json_array_size(cases);
    lsk_vector *v = calloc((size_t)n + 1, sizeof(lsk_vector));
    if (!v) {
        snprintf(why, cap, "out of memory");
        json_decref(root);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (load_case(json_array_get(cases, (size_t)i), &v[i], why, cap) < 0) {
            lsk_vectors_free(v, n);
            json_decref(root);
            return -1;
        }
    }
    json_decref(root);
    *out = v;
    return n;
}
