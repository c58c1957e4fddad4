#!/usr/bin/env python3
"""Rewrites the generated tables of a Markdown page from the run folders that made them.

    scripts/bench/doc-tables.py docs/concurrency.md

A generated table sits between two comments:

    <!-- table SOURCE [table=N] [cols=A,B,...] [where=COL=V,...] -->
    ...
    <!-- /table -->

SOURCE is a file of a run folder, with `*` standing for the date (`docs/bench/runs/*-replay-
saves/replay.md`): the newest folder that matches is read. For a `.md` source the N-th
Markdown table in it (from 1, default 1) is taken; for a `.csv` source, its rows. `cols` keeps
those columns in that order (by header name; default all), `where` keeps the rows whose
columns have those values; the arguments are split as a shell would (quote a column name
with spaces: `cols="wall ms,CPU ms"`). The block gets the table and a line naming the file it came from,
so that every figure on the page says which run made it. Exits non-zero, naming the block,
when a source, a table or a column is missing: a page is never left half rewritten.
"""

import csv
import glob
import os
import re
import shlex
import sys

BLOCK = re.compile(r"<!-- table (?P<args>[^>]*?) -->\n.*?<!-- /table -->", re.S)


def newest(pattern):
    found = sorted(glob.glob(pattern))
    if not found:
        raise LookupError(f"no file matches {pattern}")
    return found[-1]


def md_tables(text):
    """Every Markdown table of `text` as (header, rows), rows as lists of cells."""
    tables, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-:| ]+\|$", lines[i + 1]):
            header = cells(lines[i])
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(cells(lines[i]))
                i += 1
            tables.append((header, rows))
        else:
            i += 1
    return tables


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def read_table(path, number):
    if path.endswith(".csv"):
        with open(path) as f:
            rows = list(csv.reader(f))
        return rows[0], rows[1:]
    tables = md_tables(open(path).read())
    if number > len(tables):
        raise LookupError(f"{path} has {len(tables)} tables, not {number}")
    return tables[number - 1]


def render(header, rows, numeric):
    align = ["---:" if numeric[i] else "---" for i in range(len(header))]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def is_number(cell):
    return re.fullmatch(r"[-+]?[\d,.]+( [A-Za-z%]+)?", cell) is not None


def generate(args, root):
    words = shlex.split(args)
    source, opts = words[0], dict(w.split("=", 1) for w in words[1:])
    path = newest(os.path.join(root, source))
    header, rows = read_table(path, int(opts.get("table", "1")))
    for cond in filter(None, opts.get("where", "").split(",")):
        col, value = cond.split("=", 1)
        if col not in header:
            raise LookupError(f"{path}: no column {col!r} (columns: {', '.join(header)})")
        rows = [r for r in rows if r[header.index(col)] == value]
    keep = opts["cols"].split(",") if "cols" in opts else header
    for col in keep:
        if col not in header:
            raise LookupError(f"{path}: no column {col!r} (columns: {', '.join(header)})")
    # A name the header has twice (a margin for wall and one for CPU) takes its occurrences in
    # turn.
    seen, index = {}, []
    for c in keep:
        at = [i for i, h in enumerate(header) if h == c]
        index.append(at[min(seen.get(c, 0), len(at) - 1)])
        seen[c] = seen.get(c, 0) + 1
    rows = [[r[i] for i in index] for r in rows]
    if not rows:
        raise LookupError(f"{path}: no row left")
    numeric = [all(is_number(r[i]) for r in rows) for i in range(len(keep))]
    rel = os.path.relpath(path, root)
    return f"<!-- table {args} -->\n{render(keep, rows, numeric)}\n\n(From `{rel}`.)\n<!-- /table -->"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    page = sys.argv[1]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = open(page).read()

    def replace(m):
        try:
            return generate(m.group("args"), root)
        except (LookupError, ValueError, OSError) as e:
            sys.exit(f"doc-tables.py: {page}: block '{m.group('args')}': {e}")

    new, n = BLOCK.subn(replace, text)
    open(page, "w").write(new)
    print(f"doc-tables.py: rewrote {n} tables in {page}")


if __name__ == "__main__":
    main()
