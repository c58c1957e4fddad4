#!/usr/bin/env bash
# The contention model's figures in docs/concurrency.md ("The contention model"):
#   1. the model over the reference kernel's trace on 1-64 cores, recorded schedule
#      (docs/bench/model-kernel.csv), over a generated many-owners workload back to back
#      (docs/bench/model-spread64.csv), and over generated workloads with 1 to 34 owners per
#      function at 64 cores (docs/bench/model-owners.csv), with a plot (docs/bench/model.svg);
#   2. the check against this machine: the replay runs the kernel trace at 2 owners and the
#      generated one at 2, 16 and 64 owners (one thread per owner) with --timeline, saves back
#      to back, and the model is run over each run's timeline as recorded; counted and
#      predicted CAS failures (shared) and shard lock waits (dashmap) side by side
#      (docs/bench/model-check.csv).
#   Every CSV gets a provenance sidecar (scripts/bench/provenance.sh).
#
#   scripts/bench/model-figure.sh
#   RUNS=5 OUT=/tmp/fig scripts/bench/model-figure.sh
#   LAB=path/to/dwarf2btf-lab scripts/bench/model-figure.sh   # a lab binary already built
set -euo pipefail
cd "$(dirname "$0")/../.."

RUNS=${RUNS:-3}
OUT=${OUT:-docs/bench}
TRACE=${TRACE:-docs/bench/vmlinux-6.1.0-57-j2.saves}
scripts/setup/apt-install.sh gnuplot-nox
if [ -z "${LAB:-}" ]; then
  cargo build --release --quiet -p dwarf2btf-lab
  LAB=${CARGO_TARGET_DIR:-target}/release/dwarf2btf-lab
fi
mkdir -p "$OUT"
# shellcheck source=scripts/bench/provenance.sh
source scripts/bench/provenance.sh
"$LAB" inspect "$TRACE" >/dev/null # refuses a trace of another format or pipeline version
COMMAND="RUNS=$RUNS OUT=$OUT TRACE=$TRACE scripts/bench/model-figure.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$LAB" generate --out "$tmp/spread64.saves" --functions 4096 --saves 200000 --spread 64 \
  --batch-saves 100

# 1. Predictions.
"$LAB" model "$TRACE" --cores 1,2,4,8,16,32,64 --window-ns 100,1000 >"$OUT/model-kernel.csv"
"$LAB" model "$tmp/spread64.saves" --cores 1,2,4,8,16,32,64 --window-ns 100,1000 \
  --save-ns 200 --hold-ns 200 >"$OUT/model-spread64.csv"

# The list length: generated workloads whose functions spread over 1 to 64 batches (owners
# per function), at 64 cores, back to back.
echo "spread,cores,owners_mean,owners_max,walk_mean,cas_failures_100ns,cas_failures_1us,\
transfers_per_save_packed,transfers_per_save_padded,lock_waits_4x,lock_waits_8" \
  >"$OUT/model-owners.csv"
for spread in 1 2 4 8 16 32 64; do
  "$LAB" generate --out "$tmp/sp.saves" --functions 4096 --saves 200000 --spread $spread \
    --batch-saves 100
  "$LAB" model "$tmp/sp.saves" --cores 64 --save-ns 200 --hold-ns 200 --window-ns 100,1000 |
    awk -F, -v sp=$spread 'NR > 1 { k = $3 "," $4; cas[k] = $10; tps[k] = $14
      o = $7; m = $8; w = $9; l4 = $15; l8 = $16 }
      END { print sp ",64," o "," m "," w "," cas["100,packed"] "," cas["1000,packed"] "," \
        tps["100,packed"] "," tps["100,padded"] "," l4 "," l8 }' >>"$OUT/model-owners.csv"
done

# 2. The check: counted (the replay's last run) against predicted (the model over that run's
#    own timeline: the saves as they happened, each save's duration as its CAS window and lock
#    hold). Failed CAS for the shared table, shard lock waits for dashmap (8 shards at 2, 16
#    and 64 threads on this 2-CPU machine).
echo "trace,design,fold,threads,counted,predicted" >"$OUT/model-check.csv"
for name in kernel spread64; do
  trace=$TRACE threads=2
  [ "$name" = spread64 ] && trace=$tmp/spread64.saves threads=2,16,64
  "$LAB" replay "$trace" --csv "$tmp/$name.csv" --owners $threads --designs shared,dashmap \
    --runs "$RUNS" --gap-scale 0 --thread-per-owner --timeline "$tmp/$name" 2>"$tmp/log" ||
    { cat "$tmp/log" >&2; exit 1; }
  for n in ${threads//,/ }; do
    for design in shared dashmap; do
      # replay columns: owners = 4, round = 7, cas_failures = 17, lock_waits = 18; model:
      # cas_failures = 10, lock_waits_8 = 16
      col=17 mcol=10
      [ "$design" = dashmap ] && col=18 mcol=16
      for fold in summary trivial; do
        counted=$(awk -F, -v d=$design -v f=$fold -v t="$n" -v r="$RUNS" -v c=$col \
          '$1==d && $2==f && $4==t && $7==r {print $c}' "$tmp/$name.csv")
        predicted=$("$LAB" model "$tmp/$name-$design-$fold-$n.saves" --as-recorded |
          awk -F, -v c=$mcol 'NR==2 {print $c}')
        echo "$name,$design,$fold,$n,$counted,$predicted" >>"$OUT/model-check.csv"
      done
    done
  done
done
column -s, -t "$OUT/model-check.csv"
for f in model-kernel model-spread64 model-owners model-check; do
  provenance "$OUT/$f.csv" "$COMMAND"
done

# The plot: per save, predicted cache-line transfers (packed and padded layouts), and per run,
# CAS failures and shard lock waits, against cores, for the kernel trace (window 100 ns).
{
  echo "set terminal svg size 900,420 dynamic font 'sans,12'; set output '$OUT/model.svg'"
  echo "set datafile separator ','; set logscale x 2; set grid; set key top left"
  echo "set multiplot layout 1,2 title 'contention model, kernel trace, recorded schedule (window 100 ns)'"
  echo "set title 'shared table: cache-line transfers per save'; set xlabel 'cores'"
  echo "plot '< grep \",100,packed,\" $OUT/model-kernel.csv' using 1:14 with linespoints title 'packed (today)', \
    '< grep \",100,padded,\" $OUT/model-kernel.csv' using 1:14 with linespoints title 'folds and arena metadata padded'"
  echo "set title 'events per kernel run'; set logscale y; set yrange [0.5:*]"
  echo "plot '< grep \",100,packed,\" $OUT/model-kernel.csv' using 1:(\$10+0.5) with linespoints title 'CAS failures (+0.5)', \
    '< grep \",100,packed,\" $OUT/model-kernel.csv' using 1:(\$15+0.5) with linespoints title 'dashmap waits, 4 x cores shards (+0.5)', \
    '< grep \",100,packed,\" $OUT/model-kernel.csv' using 1:(\$16+0.5) with linespoints title 'dashmap waits, 8 shards (+0.5)'"
  echo "unset multiplot"
} | gnuplot
echo "wrote $OUT/model-kernel.csv, $OUT/model-spread64.csv, $OUT/model-owners.csv," \
  "$OUT/model-check.csv, $OUT/model.svg"
