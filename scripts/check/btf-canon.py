#!/usr/bin/env python3
"""Canonical, id-free text of a BTF file, from bpftool's raw dump: one line per type, sorted.

    scripts/check/btf-canon.py [--base BASE] [--only CATEGORIES] [--set] FILE

runs `bpftool btf dump file FILE format raw` (with `-B BASE` for split BTF, whose base is
dumped too, so that references into it can be described) and prints one line per type of
FILE, sorted. Two BTF files that describe the same types, in any order and with any ids, give
the same text. A type id in a record is replaced by the referenced type's description: a
named struct, union, enum, forward declaration, typedef, int or float by its kind and name,
any other type by its whole description, recursively. The tests use it as a judge
independent of dwarf2btf (whose own `diff` is the code under test): bpftool parses the
files, this script only renames.

--only CATEGORIES (a comma-separated list of types, funcs, vars, datasecs) prints only the
items of those categories: named types and anonymous enums are `types`, FUNCs `funcs`, VARs
`vars`, DATASECs `datasecs`, and a DECL_TAG belongs to the category of what it tags. Other
anonymous types (pointers, arrays, prototypes, anonymous structs) are then not lines of their
own: they appear inside the items that refer to them, so two encoders that keep different
unreferenced anonymous types still compare equal.

--set prints each line once (compares as sets rather than multisets).
"""

import argparse
import re
import shutil
import subprocess
import sys

# Kinds a reference names instead of describing: C gives them names that identify them.
NOMINAL = {"STRUCT", "UNION", "ENUM", "ENUM64", "FWD", "TYPEDEF", "INT", "FLOAT"}
CATEGORY_OF_KIND = {"FUNC": "funcs", "VAR": "vars", "DATASEC": "datasecs"}
CATEGORIES = {"types", "funcs", "vars", "datasecs"}
HEADER = re.compile(r"^\[(\d+)\] (\S+) '([^']*)'(.*)$")
REF = re.compile(r"\b((?:ret_|index_)?type_id)=(\d+)")
DECL_TAG_TARGET = re.compile(r"\btype_id=(\d+)")
# Cuts a description's recursion; C has no cycle that avoids every named type.
MAX_DEPTH = 32


def dump(path, base=None):
    bpftool = shutil.which("bpftool") or "/usr/sbin/bpftool"
    cmd = [bpftool, "btf", "dump", "file", path]
    if base is not None:
        cmd += ["-B", base]
    cmd += ["format", "raw"]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def parse(text):
    """{id: (kind, name, header rest, [member lines])} in dump order."""
    types = {}
    current = None
    for line in text.splitlines():
        m = HEADER.match(line)
        if m:
            tid, kind, name, rest = m.groups()
            current = [kind, name, rest, []]
            types[int(tid)] = current
        elif line.startswith("\t") and current is not None:
            current[3].append(line.strip())
    return types


def category(types, tid):
    """The category of `tid` as an item, or None when it is not one."""
    kind, name, rest, _ = types[tid]
    if kind == "DECL_TAG":
        m = DECL_TAG_TARGET.search(rest)
        target = types.get(int(m.group(1))) if m else None
        return CATEGORY_OF_KIND.get(target[0] if target else None, "types")
    if kind in CATEGORY_OF_KIND:
        return CATEGORY_OF_KIND[kind]
    if name != "(anon)" or kind in ("ENUM", "ENUM64"):
        return "types"
    return None


def canon(types, own=None, only=None):
    """The sorted descriptions of the types whose ids are in `own` (all when None), or of
    their items in the categories `only`."""
    memo = {}

    def ref(tid, depth):
        if tid == 0:
            return "void"
        t = types.get(tid)
        if t is None:
            return f"<missing {tid}>"
        kind, name = t[0], t[1]
        if kind in NOMINAL and name != "(anon)":
            return f"{kind} '{name}'"
        if depth > MAX_DEPTH:
            return f"{kind} '{name}' ..."
        return "{" + describe(tid, depth + 1) + "}"

    def rename(s, depth):
        return REF.sub(lambda m: f"{m.group(1)}={ref(int(m.group(2)), depth)}", s)

    def describe(tid, depth=0):
        key = (tid, depth == 0)
        if key in memo:
            return memo[key]
        kind, name, rest, members = types[tid]
        # A DATASEC entry names its VAR after the id: bpftool's "(VAR 'v')" stays as is.
        parts = [f"{kind} '{name}'{rename(rest, depth)}"]
        parts += [rename(m, depth) for m in members]
        text = " | ".join(parts)
        memo[key] = text
        return text

    ids = types if own is None else own
    if only is not None:
        ids = [tid for tid in ids if category(types, tid) in only]
    return sorted(describe(tid) for tid in ids)


def main():
    p = argparse.ArgumentParser(description="id-free text of a BTF file, from bpftool")
    p.add_argument("--base", help="the base BTF of a split BTF FILE")
    p.add_argument("--only", help="comma-separated categories: types, funcs, vars, datasecs")
    p.add_argument("--set", action="store_true", help="print each line once")
    p.add_argument("file")
    args = p.parse_args()
    only = None
    if args.only is not None:
        only = set(args.only.split(","))
        if not only <= CATEGORIES:
            sys.exit(f"btf-canon.py: unknown categories {sorted(only - CATEGORIES)}")
    types = {}
    if args.base is not None:
        types = parse(dump(args.base))
    own = parse(dump(args.file, args.base))
    types.update(own)
    lines = canon(types, own, only)
    if args.set:
        lines = sorted(set(lines))
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
