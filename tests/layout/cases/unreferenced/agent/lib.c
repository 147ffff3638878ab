/* lib.c - fixture of tests/layout/unreferenced.py: roots no source calls. */
int exported_fn(void); /* named in lib.map */

int exported_fn(void)
{
    return 0;
}

__attribute__((constructor)) static void on_load(void)
{
}
