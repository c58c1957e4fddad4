"""Medians of ab.sh's rows: python3 medians.py FILE -> build, -j, wall, user, peak MiB, dedup, structs."""
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 11 or f[2] != "TIME":
        continue
    rows[(f[0], f[1])].append((float(f[3]), float(f[4]), int(f[6]) / 1024, float(f[8] or 0), float(f[10] or 0)))
for (b, j), v in sorted(rows.items(), key=lambda kv: (int(kv[0][1][1:]), kv[0][0])):
    med = [statistics.median(c) for c in zip(*v)]
    print(f"{b:9} {j:4} n={len(v)} wall {med[0]:.2f} user {med[1]:.2f} peak {med[2]:.1f} MiB "
          f"(min {min(x[2] for x in v):.1f}, max {max(x[2] for x in v):.1f}) dedup {med[3]:.3f} structs {med[4]:.3f}")
