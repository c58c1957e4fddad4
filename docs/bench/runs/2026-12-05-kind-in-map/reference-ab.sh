# The A/B of the reference vmlinux behind README.md: BIN_DIR holds the two release builds,
# d2b-new2 (ec873cb) and d2b-kim (ff8f2a8); OUT_BTF is a scratch output. Rows: build, -j,
# "TIME wall user sys maxrss_KB", the dedup phase and its struct phase (--stats), in seconds.
BIN_DIR=${BIN_DIR:-/tmp}; OUT_BTF=${OUT_BTF:-$(mktemp)}
V=~/.cache/dwarf2btf/vmlinux-6.1.0-57-cloud-amd64; F=--btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs
for r in 1 2 3 4 5; do for j in 1 2; do for b in d2b-new2 d2b-kim; do
 out=$( { /usr/bin/time -f "TIME %e %U %S %M" "$BIN_DIR/$b" -j$j $F --btf_encode_detached "$OUT_BTF" --stats $V; } 2>&1 )
 t=$(echo "$out" | grep '^TIME'); d=$(echo "$out" | grep '^dedup ' | awk '{print $2}'); s=$(echo "$out" | grep 'dedup phases (wall' | sed 's/.*structs \([0-9.]*\).*/\1/')
 echo "$b j$j $t dedup $d structs $s"
done; done; done
