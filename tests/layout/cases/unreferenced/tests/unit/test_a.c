/* test_a.c - fixture of tests/layout/unreferenced.py: a test is a caller, noted apart. */
#include "server/a.h"

int main(void)
{
    return only_tests() + b_caller();
}
