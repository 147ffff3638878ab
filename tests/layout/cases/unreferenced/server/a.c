/* a.c - fixture of tests/layout/unreferenced.py: each kind of reference the scan must see, and functions nobody
 * references (their names say which). Never compiled. */
#include "server/a.h"

static void on_tick(void *arg); /* a prototype is no reference */
static void loop_fn(worker *w);
static const struct {
    const char *name;
    void (*fn)(void *);
} table[] = {{"tick", on_tick}};                     /* a pointer stored in a table */
static worker thread = WORKER_INIT("loop", loop_fn); /* a file-scope initialiser */

static void on_tick(void *arg)
{
    (void)arg;
}

static void loop_fn(worker *w)
{
    (void)w;
}

/* dead_helper - only dead_global calls it, so it goes with it. */
static int dead_helper(int x)
{
    return x + 1;
}

/* dead_global - declared in a.h and named in this comment and in a string: no reference. */
int dead_global(int x)
{
    const char *name = "dead_global";
    (void)name;
    return dead_helper(x);
}

/* dead_recursive - its calls of itself do not count. */
int dead_recursive(int n)
{
    return n ? dead_recursive(n - 1) : 0;
}

int only_tests(void)
{
    return 1;
}

#define VIA_MACRO() via_macro()

int via_macro(void)
{
    return 2;
}

int used_by_b(void)
{
    return VIA_MACRO() + table[0].name[0] + (thread.running ? 1 : 0);
}

/* same_name - a static of a.c that a.c calls; b.c has its own, which nobody calls. */
static int same_name(void)
{
    return 3;
}

int main(void)
{
    return same_name();
}
