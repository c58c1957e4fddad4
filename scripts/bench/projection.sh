#!/usr/bin/env bash
# The many-core projection: measures dwarf2btf and pahole at -j1 and -j2 on the reference
# vmlinux (alternating runs), splits each tool's run into a serial part and a parallel part,
# and projects the wall time at 1-64 cores by Amdahl's law. Writes, into OUT:
#   projection-runs.csv   every run: tool, -j, wall, CPU, peak RSS and, for dwarf2btf, the
#                         wall outside the parallel encoding (--stats=csv) and its CPU
#   phases.md             dwarf2btf's per-phase wall and CPU at -j1 and -j2 (medians)
#   projection.md         both tools' serial and parallel parts and the projected wall times
#   projection.csv        the projected wall time per core count, per tool
#   measured.csv          the medians the projection starts from (-j1, -j2)
#   projection.svg        the projection drawn (gnuplot)
#
#   scripts/bench/projection.sh                 # 5 rounds, OUT=docs/bench
#   ROUNDS=9 OUT=/tmp/p scripts/bench/projection.sh
#
# Both tools are split the same way, from their wall times alone (a two-point fit of
# T(n) = s + p/n to T(1) and T(2): p = 2 (T1 - T2), s = 2 T2 - T1). For dwarf2btf the serial part
# is also measured directly: everything after the workers join, and before they start, is one
# thread (the dedup's reference-type helper aside), so s is the run's wall minus the `cus`
# phase's; the table shows both, and the plot draws the measured one as a dashed line. A
# projection from two cores ignores what more cores add (memory bandwidth, the last-level
# cache, pahole's per-thread BTF merged at the end): it is a bound a reader can check, not a
# measurement at 64 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/timed.sh

ROUNDS=${ROUNDS:-5}
OUT=${OUT:-docs/bench}
PAHOLE=${PAHOLE:-$(scripts/setup/fetch-pahole-1.32.sh)}
VMLINUX=${VMLINUX:-$(scripts/setup/fetch-kernel.sh)}
bench_setup

FEATURES=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs
RUNS=$OUT/projection-runs.csv
echo "tool,jobs,round,wall_s,cpu_s,peak_rss_kib,serial_wall_s,cus_wall_s,cus_cpu_s" > "$RUNS"

# run1 TOOL J ROUND CMD...: runs CMD once under GNU time and appends its row.
run1() {
  local tool=$1 j=$2 round=$3; shift 3
  timed "$TMP/log" "$@"
  local split=",,,"
  if [ "$tool" = dwarf2btf ]; then
    split=$(python3 - "$TMP/log" <<'PY'
import csv, sys
lines = open(sys.argv[1]).read().splitlines()
head = next(i for i, l in enumerate(lines) if l.startswith("design,"))
row = next(csv.DictReader(lines[head:head + 2]))
wall, cus = float(row["wall_s"]), float(row["phase.cus.wall_s"])
print(f",{wall - cus:.3f},{cus:.3f},{float(row['phase.cus.cpu_s']):.3f}")
PY
)
    cp "$TMP/log" "$TMP/stats-$j-$round.csv"
  fi
  echo "$tool,$j,$round,$(cat "$TMP/log.row")$split" >> "$RUNS"
}

for round in $(seq "$ROUNDS"); do
  for j in 1 2; do
    echo "round $round/$ROUNDS, -j$j" >&2
    run1 pahole "$j" "$round" "$PAHOLE" -J "-j$j" --lang_exclude=rust --btf_features=$FEATURES \
      "--btf_encode_detached=$TMP/p.btf" "$VMLINUX"
    run1 dwarf2btf "$j" "$round" "$BIN" -J "-j$j" --lang_exclude=rust --btf_features=$FEATURES \
      --stats=csv "--btf_encode_detached=$TMP/d.btf" "$VMLINUX"
  done
done

python3 - "$OUT" "$TMP" "$("$PAHOLE" --version)" <<'PY'
import csv, glob, statistics, sys
out, tmp, pahole_version = sys.argv[1], sys.argv[2], sys.argv[3]
runs = list(csv.DictReader(open(f"{out}/projection-runs.csv")))
med = lambda tool, j, key: statistics.median(float(r[key]) for r in runs
                                             if r["tool"] == tool and r["jobs"] == str(j))

# Per-phase wall and CPU of dwarf2btf, medians over the rounds.
phases = ["elf", "cus", "functions", "datasecs", "dedup", "write"]
lines = ["| phase | -j1 wall s | -j1 CPU s | -j2 wall s | -j2 CPU s |", "|---|---:|---:|---:|---:|"]
stats = {j: [next(csv.DictReader(l for l in open(f) if "," in l))
             for f in sorted(glob.glob(f"{tmp}/stats-{j}-*.csv"))] for j in (1, 2)}
def pmed(j, key):
    got = [float(r[key]) for r in stats[j] if r.get(key)]
    return f"{statistics.median(got):.3f}" if got else "-"
for p in phases + ["total"]:
    k = "" if p == "total" else f"phase.{p}."
    cells = [pmed(j, k + m) for j in (1, 2) for m in ("wall_s", "cpu_s")]
    lines.append(f"| {p} | " + " | ".join(cells) + " |")
dedup = [k for j in (1, 2) for k in stats[j][0] if k.startswith("dedup.") and k.endswith(".wall_s")]
lines += ["", "The dedup's own phases, wall s at -j1 / -j2: " + ", ".join(
    f"{k[6:-7].replace('_', ' ')} {pmed(1, k)} / {pmed(2, k)}" for k in dict.fromkeys(dedup)) + "."]
open(f"{out}/phases.md", "w").write("\n".join(lines) + "\n")

# Two-point Amdahl fit for both tools; the measured serial part for dwarf2btf.
fit = {}
for tool in ("dwarf2btf", "pahole"):
    t1, t2 = med(tool, 1, "wall_s"), med(tool, 2, "wall_s")
    fit[tool] = (max(2 * t2 - t1, 0.0), 2 * (t1 - t2), t1, t2)
measured_s = med("dwarf2btf", 2, "serial_wall_s")
measured_p = med("dwarf2btf", 1, "cus_cpu_s")
serial_j1 = med("dwarf2btf", 1, "serial_wall_s")
cores = [1, 2, 4, 8, 16, 32, 64]
proj = lambda s, p, n: s + p / n
rows = ["| | T(1) s | T(2) s | serial s | parallel s | serial share at -j1 | "
        + " | ".join(f"{n} cores" for n in cores[2:]) + " |",
        "|---|---:|---:|---:|---:|---:|" + "---:|" * len(cores[2:])]
def row(name, s, p, t1, t2, share=None):
    share = s / t1 if share is None else share
    return (f"| {name} | {t1:.2f} | {t2:.2f} | {s:.2f} | {p:.2f} | {share:.0%} | "
            + " | ".join(f"{proj(s, p, n):.2f}" for n in cores[2:]) + " |")
s, p, t1, t2 = fit["pahole"]
rows.append(row(f"pahole {pahole_version}, fit", s, p, t1, t2))
s, p, t1, t2 = fit["dwarf2btf"]
rows.append(row("dwarf2btf, fit", s, p, t1, t2))
rows.append(row("dwarf2btf, measured", measured_s, measured_p, t1, t2, serial_j1 / t1))
ps, pp, _, _ = fit["pahole"]
ds, dp, _, _ = fit["dwarf2btf"]
rows += ["", f"dwarf2btf measured: serial {serial_j1:.2f} s of {t1:.2f} s at -j1, {measured_s:.2f} s "
         f"at -j2 (the serial column), parallel = the workers' CPU at -j1. Projected wall ratio "
         f"dwarf2btf / pahole at 64 cores: {proj(ds, dp, 64) / proj(ps, pp, 64):.2f} (fit), "
         f"{proj(measured_s, measured_p, 64) / proj(ps, pp, 64):.2f} (measured)."]
open(f"{out}/projection.md", "w").write("\n".join(rows) + "\n")
with open(f"{out}/measured.csv", "w") as f:
    f.write("cores,pahole_s,dwarf2btf_s\n")
    for n in (1, 2):
        f.write(f"{n},{med('pahole', n, 'wall_s'):.3f},{med('dwarf2btf', n, 'wall_s'):.3f}\n")
with open(f"{out}/projection.csv", "w") as f:
    f.write("cores,pahole_fit_s,dwarf2btf_fit_s,dwarf2btf_measured_s\n")
    for n in range(1, 65):
        f.write(f"{n},{proj(ps, pp, n):.3f},{proj(ds, dp, n):.3f},"
                f"{proj(measured_s, measured_p, n):.3f}\n")
PY

gnuplot <<EOF
set terminal svg size 720,440 dynamic font 'sans,12'
set output '$OUT/projection.svg'
set datafile separator ','
set logscale x 2
set xrange [1:64]
set yrange [0:*]
set xlabel 'cores'
set ylabel 'projected wall time (s)'
set key top right
set title 'Amdahl projection from -j1 and -j2 on the reference vmlinux'
plot '$OUT/projection.csv' every ::1 using 1:2 with lines lw 2 title 'pahole 1.32 (fit)', \
     '' every ::1 using 1:3 with lines lw 2 title 'dwarf2btf (fit)', \
     '' every ::1 using 1:4 with lines lw 2 dt 2 title 'dwarf2btf (measured serial part)', \
     '$OUT/measured.csv' every ::1 using 1:2 with points pt 7 lc 'black' title 'measured medians', \
     '' every ::1 using 1:3 with points pt 7 lc 'black' notitle
EOF
cat "$OUT/phases.md" "$OUT/projection.md"
echo "wrote $RUNS, $OUT/phases.md, $OUT/projection.md, $OUT/projection.csv, $OUT/measured.csv, $OUT/projection.svg"
