/* a.h - fixture of tests/layout/unreferenced.py: prototypes are no reference. */
int dead_global(int x);
int dead_recursive(int n);
int only_tests(void);
int via_macro(void);
int used_by_b(void);
