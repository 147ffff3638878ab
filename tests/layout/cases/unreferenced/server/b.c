/* b.c - fixture of tests/layout/unreferenced.py: a second file, with a static named like a.c's. */
#include "server/a.h"

/* same_name - b.c's own static: only b_dead calls it, so both are unreferenced. */
static int same_name(void)
{
    return 4;
}

int b_dead(void)
{
    return same_name();
}

int b_main(void)
{
    return used_by_b();
}

int b_caller(void)
{
    return b_main();
}
