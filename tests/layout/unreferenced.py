#!/usr/bin/env python3
# unreferenced.py - lists C functions that are defined and never referenced; the layout tier fails on any.
#
# Reads the sources, not the objects: comments, strings and character constants are blanked, then every identifier
# is placed at its brace depth. A function is defined where `name (...) {` stands at depth 0; it is referenced
# where its name appears inside a body or an initialiser (depth > 0: a call, a pointer stored in a table), in a
# macro's text, in a linker version script (*.map: the symbols a library exports to its callers), or as a Fortran
# source's bind(C, name='...') (*.f90: C called from Fortran). Prototypes
# (depth 0, followed by `;`) are no reference. A function whose only references sit in the bodies of
# unreferenced functions is unreferenced too (repeated until nothing changes); a function's calls of itself do not
# count. A static function is referenced only from its own file (others may hold a static of the same name).
# Roots that no source calls: `main`, and functions marked constructor/destructor.
# A name also used for something else (a variable, a field) that some body mentions counts as referenced: the scan
# knows no types. tests/layout/cases/unreferenced/ holds a small tree with the expected findings.
# usage: unreferenced.py [--tests-only] [--root DIR]   reads the repository (or DIR); prints "FAIL name (file:line)"
# per unreferenced function, and with --tests-only also "note name (file:line): only tests or benchmarks call it"
# for functions only tests/ and bench/ reach. Exits 1 when any function is unreferenced.
import os, re, sys

ROOTS = ("agent", "bench", "cli", "common", "examples", "include", "kernels", "server", "spank", "tests")
PROGRAM_ROOTS = ("agent", "cli", "common", "include", "kernels", "server", "spank")
ident = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined", "__attribute__", "_Static_assert",
            "__typeof__", "typeof", "_Alignof", "alignof", "__asm__", "asm", "_Generic", "__extension__"}


def blank(src):
    """src with comments, strings and character constants replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", src[i + 1:j - 1]) + c if j - i >= 2 else src[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def scan(path):
    """(definitions, references) of one file: definitions [(name, line, static, span)], references [(name, pos)]."""
    src = blank(open(path, encoding="utf-8", errors="replace").read())
    # Preprocessor lines (with their continuations) count as references wherever they stand; cut them out so
    # their braces do not move the depth.
    refs, body = [], list(src)
    for m in re.finditer(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", src, re.M):
        for t in ident.finditer(m.group(0)):
            refs.append((t.group(0), m.start() + t.start()))
        for k in range(m.start(), m.end()):
            if body[k] != "\n":
                body[k] = " "
    text = "".join(body)
    defs = []
    depth, n, init = 0, len(text), False
    tokens = [(m.group(0), m.start()) for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*|[{}()\[\];=,]", text)]
    k = 0
    while k < len(tokens):
        tok, pos = tokens[k]
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
        elif depth == 0 and tok in ("=", ";"):
            init = tok == "="  # a file-scope initialiser runs to its `;`
        elif (depth > 0 or init) and ident.fullmatch(tok):
            refs.append((tok, pos))
        elif depth == 0 and ident.fullmatch(tok) and tok not in KEYWORDS and k + 1 < len(tokens) \
                and tokens[k + 1][0] == "(":
            # name ( ... ) then attributes, then `{` makes a definition; `;` or `,` a prototype.
            j, par = k + 1, 0
            while j < len(tokens):
                if tokens[j][0] == "(":
                    par += 1
                elif tokens[j][0] == ")":
                    par -= 1
                    if par == 0:
                        break
                j += 1
            m = j + 1
            while m < len(tokens) and tokens[m][0] not in ("{", ";", "=", ",", ")"):
                if tokens[m][0] == "(":  # __attribute__((...)) after the parameters
                    par = 0
                    while m < len(tokens):
                        par += {"(": 1, ")": -1}.get(tokens[m][0], 0)
                        if par == 0:
                            break
                        m += 1
                m += 1
            if m < len(tokens) and tokens[m][0] == "{":
                line_start = text.rfind(";", 0, pos)
                line_start = max(line_start, text.rfind("}", 0, pos), 0)
                head = text[line_start:pos]
                static = re.search(r"\bstatic\b", head) is not None
                root = re.search(r"\b(constructor|destructor)\b", text[line_start:tokens[m][1]]) is not None
                defs.append({"name": tok, "line": text.count("\n", 0, pos) + 1, "static": static,
                             "root": root or tok in ("main", "LLVMFuzzerTestOneInput"), "span": (pos, None), "file": path})
                # find the body's end
                d, e = 0, m
                while e < len(tokens):
                    d += {"{": 1, "}": -1}.get(tokens[e][0], 0)
                    if d == 0:
                        break
                    e += 1
                defs[-1]["span"] = (tokens[m][1], tokens[e][1] if e < len(tokens) else n)
                for t, p in tokens[m:e + 1]:
                    if ident.fullmatch(t):
                        refs.append((t, p))
                k = e + 1
                continue
        k += 1
    return defs, refs


def main():
    tests_only = "--tests-only" in sys.argv
    if "--root" in sys.argv:
        os.chdir(sys.argv[sys.argv.index("--root") + 1])
    files, exported = [], set()
    for root in ROOTS:
        for d, subdirs, names in os.walk(root):
            if d == os.path.join("tests", "layout"):
                subdirs[:] = [x for x in subdirs if x != "cases"]  # fixtures, not code
            for f in names:
                p = os.path.join(d, f)
                if f.endswith((".c", ".h", ".cu")):
                    files.append(p)
                elif f.endswith(".map"):
                    exported |= set(ident.findall(blank(open(p, encoding="utf-8").read())))
                elif f.endswith(".f90"):  # Fortran calls C by its bind(C) name, written as a string there
                    exported |= set(re.findall(r"""bind\(C, *name *= *['"]([A-Za-z_]\w*)['"]\)""",
                                               open(p, encoding="utf-8").read(), re.I))
    defs, refs = [], []  # refs: (name, file, enclosing definition index or None)
    for p in sorted(files):
        fd, fr = scan(p)
        base = len(defs)
        defs.extend(fd)
        for name, pos in fr:
            owner = None
            for i, d in enumerate(fd):
                if d["span"][0] <= pos <= d["span"][1]:
                    owner = base + i
                    break
            refs.append((name, p, owner))
    by_name = {}
    for i, d in enumerate(defs):
        by_name.setdefault(d["name"], []).append(i)

    def callers(i, live):
        """Whether definition i has a reference from outside itself and from a live place."""
        d = defs[i]
        for name, f, owner in refs_of.get(d["name"], ()):
            if owner == i or (owner is not None and owner not in live):
                continue
            if d["static"] and d["file"].endswith(".c") and f != d["file"]:
                continue
            yield f

    refs_of = {}
    for r in refs:
        if r[0] in by_name:
            refs_of.setdefault(r[0], []).append(r)

    def dead_set(program_only):
        """Definitions unreferenced when only program sources (not tests/bench) count as callers, or all do."""
        live = set(range(len(defs)))
        while True:
            gone = set()
            for i in live:
                d = defs[i]
                if d["root"] or d["name"] in exported:
                    continue
                fs = [f for f in callers(i, live) if not program_only or f.startswith(PROGRAM_ROOTS)]
                if not fs:
                    gone.add(i)
            if not gone:
                return set(range(len(defs))) - live
            live -= gone

    dead = dead_set(False)
    for i in sorted(dead, key=lambda i: (defs[i]["file"], defs[i]["line"])):
        print("FAIL %s (%s:%d) is defined and never referenced" % (defs[i]["name"], defs[i]["file"], defs[i]["line"]))
    if tests_only:
        for i in sorted(dead_set(True) - dead, key=lambda i: (defs[i]["file"], defs[i]["line"])):
            d = defs[i]
            if d["file"].startswith(PROGRAM_ROOTS):
                print("note %s (%s:%d): only tests or benchmarks call it" % (d["name"], d["file"], d["line"]))
    print("%d functions, %d unreferenced" % (len(defs), len(dead)))
    return 1 if dead else 0


if __name__ == "__main__":
    sys.exit(main())
