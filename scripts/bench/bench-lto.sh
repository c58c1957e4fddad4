#!/usr/bin/env bash
# dwarf2btf against pahole on a clang LTO input, where pahole merges every CU into one (its
# answer to cross-CU references) and dwarf2btf imports each CU's foreign DIEs instead.
#
#   scripts/bench/bench-lto.sh [RUNS]        (PAHOLE=/path/to/pahole, default: the one on PATH)
#
# Generates a C library of 60 files sharing 1,500 struct types through one header (each file
# defines functions over a subset of them), links it with `clang -O2 -g -flto -fuse-ld=lld
# -shared` (about 12 MB of .debug_info, 430,000 DW_FORM_ref_addr references), encodes it with
# both tools in turn (-j2), checks that the two BTFs are equal (`dwarf2btf diff`), and prints
# wall, CPU and peak RSS medians with their ratios. Needs clang, lld, python3, GNU time
# (scripts/setup/install-test-deps.sh installs them).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-3}
pahole=${PAHOLE:-pahole}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release --quiet --manifest-path "$root/Cargo.toml"
d2b=$root/target/release/dwarf2btf

python3 - "$work" <<'EOF'
import random, sys
random.seed(1)
out, n = sys.argv[1], 1500
with open(f"{out}/big.h", "w") as h:
    for i in range(n):
        ptrs = "".join(f"struct s{random.randrange(i)} *p{k}; " for k in range(6)) if i else ""
        h.write(f"struct s{i} {{ int a; long b; {ptrs}unsigned int f1:3, f2:5; "
                f"char name[{8 + i % 16}]; void (*cb)(struct s{i} *, int); }};\n"
                f"typedef struct s{i} s{i}_t;\n")
for f in range(60):
    with open(f"{out}/f{f}.c", "w") as c:
        c.write('#include "big.h"\n')
        for i in range(f * 3, n, 7):
            c.write(f"__attribute__((noinline)) int fn_{f}_{i}(s{i}_t *p, int k) "
                    "{ return p->a + k + (int)p->b; }\n")
EOF
echo "building the LTO library (about a minute on 2 cores)..." >&2
clang -O2 -g -flto -fuse-ld=lld -shared -fPIC "$work"/f*.c -o "$work/lto.so"

# One run of a tool: "wall cpu peak_kib".
measure() {
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" >/dev/null 2>&1
    awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$work/time"
}

: >"$work/d2b.txt"
: >"$work/pahole.txt"
for _ in $(seq "$runs"); do
    measure "$d2b" -j2 --btf_encode_detached "$work/d2b.btf" "$work/lto.so" >>"$work/d2b.txt"
    measure "$pahole" -j2 --btf_encode_detached "$work/pahole.btf" "$work/lto.so" >>"$work/pahole.txt"
done
"$d2b" diff "$work/pahole.btf" "$work/d2b.btf" | tail -1

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
col() { cut -d' ' -f"$2" "$work/$1.txt" | median; }
paste -d' ' <(col d2b 1) <(col d2b 2) <(col d2b 3) <(col pahole 1) <(col pahole 2) <(col pahole 3) |
    awk '{ printf "%-10s %8s %8s %10s\n", "tool", "wall_s", "cpu_s", "peak_MiB"
           printf "%-10s %8.2f %8.2f %10.0f\n", "dwarf2btf", $1, $2, $3 / 1024
           printf "%-10s %8.2f %8.2f %10.0f\n", "pahole", $4, $5, $6 / 1024
           printf "%-10s %8.2f %8.2f %10.2f\n", "ratio", $1 / $4, $2 / $5, $3 / $6 }'
