#!/usr/bin/env bash
# The benchmark page from one command: runs the -j matrix (scripts/bench/bench-matrix.sh) on the
# reference vmlinux against Debian unstable's pahole 1.32, keeps the run as dated data in
# docs/bench/runs/DATE-jmatrix-pahole-1.32/ (matrix.csv, the printed tables, the plots, and
# provenance.txt: commit, rustc, CPU, cores, load, the command; a README.md over them, and
# a row in the runs' index), runs the many-core projection (scripts/bench/projection.sh) into
# the same folder, copies its plots to docs/bench/rss.svg, wall.svg and projection.svg, and
# rewrites the comparison table between the `<!-- bench-table -->` markers of README.md and
# docs/benchmarks.md from the run's medians, and the projection between docs/benchmarks.md's
# `<!-- projection -->` markers.
#
#   scripts/bench/bench-page.sh                      # -j 1 2 4 8 16 32 64, three designs, 3 runs
#   JOBS="1 2 64" RUNS=5 scripts/bench/bench-page.sh
#   RUN_NAME=2026-12-06-jmatrix-pahole-1.32-second scripts/bench/bench-page.sh  # a day's second run
#
# The machine should be otherwise idle: the runs alternate between the tools, but a busy
# machine still widens the spread. The table shows the binary's default design (shared).
set -euo pipefail
cd "$(dirname "$0")/../.."

export JOBS=${JOBS:-"1 2 4 8 16 32 64"}
export RUNS=${RUNS:-3}
export DESIGNS=${DESIGNS:-"shared dashmap save-merge"}
export PAHOLE
PAHOLE=$(scripts/setup/fetch-pahole-1.32.sh)
DATE=$(date -u +%Y-%m-%d)
export OUT=docs/bench/runs/${RUN_NAME:-$DATE-jmatrix-pahole-1.32}
mkdir -p "$OUT"
# Before provenance.txt is written: an earlier run's file, truncated, would read as -dirty.
COMMIT=$(git describe --always --dirty 2>/dev/null || echo unknown)

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit: $COMMIT"
  echo "rustc: $(rustc --version)"
  echo "cpu: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) CPUs"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "pahole: $("$PAHOLE" --version) (Debian unstable's build, scripts/setup/fetch-pahole-1.32.sh)"
  echo "command: JOBS=\"$JOBS\" RUNS=$RUNS DESIGNS=\"$DESIGNS\" RUN_NAME=$(basename "$OUT") scripts/bench/bench-page.sh"
} > "$OUT/provenance.txt"

scripts/bench/bench-matrix.sh | tee "$OUT/tables.md"
# The many-core projection from -j1 and -j2, both tools split the same way.
ROUNDS=${PROJECTION_ROUNDS:-5} scripts/bench/projection.sh
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/provenance.txt"
cp "$OUT/rss.svg" "$OUT/wall.svg" "$OUT/projection.svg" docs/bench/

python3 - "$OUT" "$DATE" README.md docs/benchmarks.md <<'PY'
import csv, re, statistics, sys
out, date, pages = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = list(csv.DictReader(open(f"{out}/matrix.csv")))

def medians(pick):
    got = [r for r in rows if pick(r)]
    return [statistics.median_low(float(r[k]) for r in got) for k in ("wall_s", "cpu_s", "peak_rss_kib")]

table = ["| -j | dwarf2btf wall / CPU / peak | pahole 1.32 wall / CPU / peak | ratio wall / CPU / peak |",
         "|---:|---|---|---|"]
jobs = sorted({int(r["jobs"]) for r in rows})
for j in jobs:
    d = medians(lambda r: r["tool"] == "dwarf2btf" and r["design"] == "shared" and int(r["jobs"]) == j)
    p = medians(lambda r: r["tool"] != "dwarf2btf" and int(r["jobs"]) == j)
    side = lambda m: f"{m[0]:.2f} s / {m[1]:.2f} s / {m[2] / 1024:.0f} MiB"
    table.append(f"| {j} | {side(d)} | {side(p)} | "
                 f"{d[0] / p[0]:.2f} / {d[1] / p[1]:.2f} / {d[2] / p[2]:.3f} |")
runs = len([r for r in rows if r["tool"] == "dwarf2btf" and r["design"] == "shared" and int(r["jobs"]) == jobs[0]])
name = out.split("/")[-1]
block = "\n".join([
    "<!-- bench-table -->",
    f"The reference vmlinux, the kernel's flags, medians of {runs} alternating runs against",
    f"Debian unstable's pahole 1.32, {date}",
    f"([the run](docs/bench/runs/{name}/README.md), made by `scripts/bench/bench-page.sh`):",
    "",
    *table,
    "<!-- /bench-table -->",
])
provenance = open(f"{out}/provenance.txt").read()
tables = open(f"{out}/tables.md").read()
open(f"{out}/README.md", "w").write(
    f"# {date}: the -j matrix against pahole 1.32\n\n"
    "Made by `scripts/bench/bench-page.sh`; every run is in [matrix.csv](matrix.csv), what the\n"
    "script printed in [tables.md](tables.md).\n\n"
    f"```\n{provenance}```\n\n{tables}\n"
    "![peak RSS against -j](rss.svg)\n![wall time against -j](wall.svg)\n\n"
    "## The many-core projection\n\n"
    f"{open(f'{out}/phases.md').read()}\n{open(f'{out}/projection.md').read()}\n"
    "![projected wall time against cores](projection.svg)\n")
index = "docs/bench/runs/README.md"
text = open(index).read()
row = f"| [{name}]({name}/) | `scripts/bench/bench-page.sh`: the -j matrix against pahole 1.32, the benchmark page's table and plots |"
if f"[{name}]" not in text:
    text = text.replace("| run | what |\n|---|---|\n", f"| run | what |\n|---|---|\n{row}\n", 1)
    open(index, "w").write(text)
projection = "\n".join([
    "<!-- projection -->",
    f"From the same run ([the run](bench/runs/{name}/README.md), `scripts/bench/projection.sh`),",
    "medians of alternating -j1 and -j2 runs of both tools; dwarf2btf's phases:",
    "",
    open(f"{out}/phases.md").read().rstrip(),
    "",
    "Each tool's wall time split into a serial and a parallel part, and projected by Amdahl's law:",
    "",
    open(f"{out}/projection.md").read().rstrip(),
    "",
    "![projected wall time against cores](bench/projection.svg)",
    "<!-- /projection -->",
])

def rewrite(page, marker, here):
    text = open(page).read()
    new, n = re.subn(f"<!-- {marker} -->.*?<!-- /{marker} -->", lambda _: here, text, flags=re.S)
    if n != 1:
        sys.exit(f"bench-page.sh: {page} has no <!-- {marker} --> ... <!-- /{marker} --> block")
    open(page, "w").write(new)
    print(f"rewrote the {marker} block in {page}")

for page in pages:
    rewrite(page, "bench-table", block if page == "README.md" else block.replace("](docs/", "]("))
rewrite("docs/benchmarks.md", "projection", projection)
PY
