/* table.c - aligned text tables for the lockstep command's human output. */
#include "cli/table.h"

#include <stdlib.h>
#include <string.h>

void table_init(table *t, int ncols, const char *const *head)
{
    memset(t, 0, sizeof(*t));
    t->ncols = ncols > TABLE_MAX_COLS ? TABLE_MAX_COLS : ncols;
    for (int i = 0; i < t->ncols; i++)
        t->head[i] = head[i];
}

int table_add(table *t, const char *const *cells)
{
    if (t->rows == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 16;
        char **n = realloc(t->cells, nc * (size_t)t->ncols * sizeof(char *));
        if (!n)
            return -1;
        t->cells = n;
        t->cap = nc;
    }
    char **row = t->cells + t->rows * (size_t)t->ncols;
    for (int i = 0; i < t->ncols; i++)
        row[i] = strdup(cells[i] ? cells[i] : "-");
    t->rows++;
    return 0;
}

/* width - display width of a UTF-8 string (code points, not bytes). */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; s && *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80)
            w++;
    return w;
}

void table_print(const table *t, FILE *out)
{
    size_t w[TABLE_MAX_COLS];
    for (int c = 0; c < t->ncols; c++) {
        w[c] = width(t->head[c]);
        for (size_t r = 0; r < t->rows; r++) {
            size_t x = width(t->cells[r * (size_t)t->ncols + (size_t)c]);
            if (x > w[c])
                w[c] = x;
        }
    }
    for (size_t r = 0; r <= t->rows; r++) {
        char *const *row = r ? t->cells + (r - 1) * (size_t)t->ncols : NULL;
        int last = t->ncols - 1; /* no padding after the last non-empty cell */
        while (last > 0 && !*(r ? row[last] : t->head[last]))
            last--;
        for (int c = 0; c <= last; c++) {
            const char *s = r ? row[c] : t->head[c];
            if (c == last)
                fprintf(out, "%s", s);
            else
                fprintf(out, "%s%*s  ", s, (int)(w[c] - width(s)), "");
        }
        fputc('\n', out);
    }
}

void table_free(table *t)
{
    for (size_t i = 0; i < t->rows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}
