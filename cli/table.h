/* table.h - aligned text tables for the lockstep command's human output. */
#ifndef CLI_TABLE_H
#define CLI_TABLE_H

#include <stdio.h>

#define TABLE_MAX_COLS 12

typedef struct table {
    int ncols;
    const char *head[TABLE_MAX_COLS];
    char **cells; /* rows * ncols strings, owned */
    size_t rows, cap;
} table;

/* table_init - a table with the given column headings (borrowed, static). */
void table_init(table *t, int ncols, const char *const *head);

/* table_add - append a row of ncols cells (copied; NULL prints "-").
 * Returns 0, or -1 when out of memory. */
int table_add(table *t, const char *const *cells);

/* table_print - write the table with columns padded to their widest cell. */
void table_print(const table *t, FILE *out);

/* table_free - free the rows. */
void table_free(table *t);

#endif /* CLI_TABLE_H */
