/* elfsym.c - which function of an ELF file holds an address, from the file's own symbol table (agent/elfsym.h). */
#include "agent/elfsym.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODS 64

/* One mapped file and its symbol table (or none: ok = 0). */
typedef struct mod {
    char path[PATH_MAX];
    int used, ok;
    int fortran; /* -1 until elfsym_fortran asks */
    void *map;
    size_t size;
    const Elf64_Sym *syms;
    size_t nsyms;
    const char *strs;
    size_t strsz;
} mod;

static mod mods[MODS];
static unsigned next_victim;

static void mod_unmap(mod *m)
{
    if (m->map)
        munmap(m->map, m->size);
    memset(m, 0, sizeof(*m));
}

/* section - the i-th section header, or NULL when it lies outside the file. */
static const Elf64_Shdr *section(const mod *m, const Elf64_Ehdr *eh, unsigned i)
{
    if (i >= eh->e_shnum)
        return NULL;
    uint64_t off = eh->e_shoff + (uint64_t)i * eh->e_shentsize;
    if (eh->e_shentsize < sizeof(Elf64_Shdr) || off > m->size || m->size - off < sizeof(Elf64_Shdr))
        return NULL;
    return (const Elf64_Shdr *)((const char *)m->map + off);
}

static int inside(const mod *m, uint64_t off, uint64_t len)
{
    return off <= m->size && len <= m->size - off;
}

/* find_table - the symbol table of section type `type` (and its strings) into `m`. Returns 1 when found. */
static int find_table(mod *m, const Elf64_Ehdr *eh, uint32_t type)
{
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = section(m, eh, i);
        if (!sh || sh->sh_type != type || sh->sh_entsize != sizeof(Elf64_Sym))
            continue;
        const Elf64_Shdr *st = section(m, eh, sh->sh_link);
        if (!st || !inside(m, sh->sh_offset, sh->sh_size) || !inside(m, st->sh_offset, st->sh_size))
            continue;
        m->syms = (const Elf64_Sym *)((const char *)m->map + sh->sh_offset);
        m->nsyms = sh->sh_size / sizeof(Elf64_Sym);
        m->strs = (const char *)m->map + st->sh_offset;
        m->strsz = st->sh_size;
        return 1;
    }
    return 0;
}

/* debug_path - the separate debug file of a stripped module, by its build id
 * (/usr/lib/debug/.build-id/xx/yyyy.debug, as Debian's -dbgsym packages install them). Returns 1 when the
 * module has a build id. */
static int debug_path(const mod *m, const Elf64_Ehdr *eh, char *out, size_t cap)
{
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = section(m, eh, i);
        if (!sh || sh->sh_type != SHT_NOTE || !inside(m, sh->sh_offset, sh->sh_size))
            continue;
        const unsigned char *p = (const unsigned char *)m->map + sh->sh_offset;
        uint64_t left = sh->sh_size;
        while (left >= sizeof(Elf64_Nhdr)) {
            const Elf64_Nhdr *nh = (const Elf64_Nhdr *)p;
            uint64_t nsz = (nh->n_namesz + 3u) & ~3u, dsz = (nh->n_descsz + 3u) & ~3u;
            if (sizeof(*nh) + nsz + dsz > left)
                break;
            const unsigned char *desc = p + sizeof(*nh) + nsz;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(p + sizeof(*nh), "GNU", 4) &&
                nh->n_descsz >= 2 && nh->n_descsz <= 64) {
                size_t n = (size_t)snprintf(out, cap, "/usr/lib/debug/.build-id/%02x/", desc[0]);
                for (unsigned k = 1; k < nh->n_descsz && n + 3 < cap; k++)
                    n += (size_t)snprintf(out + n, cap - n, "%02x", desc[k]);
                snprintf(out + n, cap - n, ".debug");
                return 1;
            }
            p += sizeof(*nh) + nsz + dsz;
            left -= sizeof(*nh) + nsz + dsz;
        }
    }
    return 0;
}

/* mod_map - map `path` into slot `m` and find its symbol table. Returns 0 (m->ok says whether it has one)
 * or -1, with nothing mapped, when it is not a readable 64-bit little-endian ELF file. */
static int mod_map(mod *m, const char *path)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->path, sizeof(m->path), "%s", path);
    m->used = 1;
    m->fortran = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return -1;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return -1;
    m->map = p;
    m->size = (size_t)st.st_size;
    const Elf64_Ehdr *eh = p;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB) {
        munmap(m->map, m->size);
        m->map = NULL;
        m->size = 0;
        return -1;
    }
    m->ok = find_table(m, eh, SHT_SYMTAB) || find_table(m, eh, SHT_DYNSYM);
    return 0;
}

/* get - the slot of `path`, mapped on first use. */
static mod *get(const char *path)
{
    mod *free_slot = NULL;
    for (int i = 0; i < MODS; i++) {
        if (mods[i].used && !strcmp(mods[i].path, path))
            return &mods[i];
        if (!mods[i].used && !free_slot)
            free_slot = &mods[i];
    }
    if (!free_slot) {
        free_slot = &mods[next_victim++ % MODS];
        mod_unmap(free_slot);
    }
    mod_map(free_slot, path); /* unreadable: the slot stays, unmapped, so the file is not tried again */
    return free_slot;
}

/* search - the FUNC symbol of `m` holding `vaddr`; a global name beats a local alias of it. */
static const Elf64_Sym *search(const mod *m, uint64_t vaddr)
{
    const Elf64_Sym *best = NULL;
    for (size_t i = 0; i < m->nsyms; i++) {
        const Elf64_Sym *s = &m->syms[i];
        int type = ELF64_ST_TYPE(s->st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s->st_shndx == SHN_UNDEF || s->st_size == 0)
            continue;
        if (vaddr < s->st_value || vaddr - s->st_value >= s->st_size || s->st_name >= m->strsz)
            continue;
        if (!best || (ELF64_ST_BIND(best->st_info) == STB_LOCAL && ELF64_ST_BIND(s->st_info) != STB_LOCAL))
            best = s;
    }
    return best;
}

int elfsym_lookup(const char *path, uint64_t vaddr, char *name, size_t cap, uint64_t *start)
{
    mod *m = get(path);
    if (!m->map)
        return -1;
    const Elf64_Sym *s = m->ok ? search(m, vaddr) : NULL;
    const mod *from = m;
    if (!s) {
        /* A stripped module may have its full table in a separate debug file. */
        char dbg[PATH_MAX];
        if (debug_path(m, (const Elf64_Ehdr *)m->map, dbg, sizeof(dbg)) && access(dbg, R_OK) == 0) {
            mod *d = get(dbg);
            if (d == m) /* evicted by get: look no further */
                return 0;
            if (d->map && d->ok && (s = search(d, vaddr)))
                from = d;
        }
    }
    if (!s)
        return 0;
    const char *nm = from->strs + s->st_name;
    size_t len = strnlen(nm, from->strsz - s->st_name);
    if (len == 0)
        return 0;
    snprintf(name, cap, "%.*s", (int)len, nm);
    *start = s->st_value;
    return 1;
}

int elfsym_fortran(const char *path)
{
    mod *m = get(path);
    if (m->fortran < 0) {
        m->fortran = 0;
        for (size_t i = 0; m->ok && i < m->nsyms && !m->fortran; i++) {
            const Elf64_Sym *s = &m->syms[i];
            if (s->st_name < m->strsz && m->strsz - s->st_name > 10 && !strncmp(m->strs + s->st_name, "_gfortran_", 10))
                m->fortran = 1;
        }
    }
    return m->fortran;
}
