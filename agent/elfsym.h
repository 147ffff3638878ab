/* elfsym.h - which function of an ELF file holds an address: the file's own symbol table (.symtab, else .dynsym), read
 * from disk.
 *
 * dladdr(3) knows only the dynamic symbols, and names the nearest exported symbol *below* an address even
 * when the address lies in a static function after it (a stripped library's helpers): this reads the
 * file's full symbol table when it has one and takes a symbol only when the address is inside its extent.
 * Files are mapped once and kept in a small table of modules (the oldest unmapped when it is full); reads only.
 */
#ifndef AGENT_ELFSYM_H
#define AGENT_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

/* elfsym_lookup - the function symbol of the ELF file at `path` whose extent holds virtual address `vaddr`
 * (the file's own addresses: a run-time address less the module's load bias). Returns 1 with the symbol's
 * raw (mangled) name in `name` (cut to `cap`) and its start in *start, 0 when no symbol holds it, -1 when
 * the file cannot be read as ELF or memory runs out. Not thread-safe: callers serialize. */
int elfsym_lookup(const char *path, uint64_t vaddr, char *name, size_t cap, uint64_t *start);

/* elfsym_fortran - 1 when the ELF file at `path` was built by gfortran (its symbol table names the gfortran
 * run time, _gfortran_*, as every program and nearly every library it compiles does), 0 otherwise or when the
 * file cannot be read. Decided once per file. Not thread-safe: callers serialize. */
int elfsym_fortran(const char *path);

#endif /* AGENT_ELFSYM_H */
