#!/usr/bin/env python3
"""Canonical, id-free text of a BTF file, from bpftool's raw dump: one line per type, sorted.

    scripts/btf-canon.py FILE   # runs `bpftool btf dump file FILE format raw`

Two BTF files that describe the same types, in any order and with any ids, give the same
text. A type id in a record is replaced by the referenced type's description: a named
struct, union, enum, forward declaration, typedef, int or float by its kind and name, any
other type by its whole description, recursively. The tests use it as a judge independent of
dwarf2btf (whose own `diff` is the code under test): bpftool parses the files, this script
only renames.
"""

import re
import shutil
import subprocess
import sys

# Kinds a reference names instead of describing: C gives them names that identify them.
NOMINAL = {"STRUCT", "UNION", "ENUM", "ENUM64", "FWD", "TYPEDEF", "INT", "FLOAT"}
HEADER = re.compile(r"^\[(\d+)\] (\S+) '([^']*)'(.*)$")
REF = re.compile(r"\b((?:ret_|index_)?type_id)=(\d+)")
# Cuts a description's recursion; C has no cycle that avoids every named type.
MAX_DEPTH = 32


def dump(path):
    bpftool = shutil.which("bpftool") or "/usr/sbin/bpftool"
    cmd = [bpftool, "btf", "dump", "file", path, "format", "raw"]
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


def canon(types):
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

    return sorted(describe(tid) for tid in types)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: btf-canon.py FILE")
    for line in canon(parse(dump(sys.argv[1]))):
        print(line)


if __name__ == "__main__":
    main()
