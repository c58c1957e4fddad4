"""Medians of reference-ab.sh's rows: python3 medians.py FILE -> build, -j, rounds, wall,
user, sys, user + sys, peak MiB, dedup, structs (seconds unless named)."""
import collections, statistics, sys

rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 11 or f[2] != "TIME":
        continue
    wall, user, system, rss = map(float, f[3:7])
    rows[(f[0], f[1])].append((wall, user, system, user + system, rss / 1024, float(f[8]), float(f[10])))
print("build -j rounds | wall user sys cpu peak_MiB dedup structs (medians)")
for (b, j), v in sorted(rows.items(), key=lambda kv: (int(kv[0][1][1:]), kv[0][0])):
    print(b, j, len(v), "|", " ".join("%.3f" % statistics.median(c) for c in zip(*v)))
