# The A/B behind README.md: BIN_DIR holds two release builds, d2b-base (the code of 712903f) and
# d2b-new (this run's final code); OUT_BTF is a scratch output. Rows: build, -j,
# "TIME wall user sys maxrss_KiB", the dedup phase and its struct phase (--stats), in seconds.
# VMLINUX and FLAGS (unquoted, word-split) choose another input: the 7.3 rows are this script
# with ROUNDS=3, JOBS="1 2", VMLINUX=~/.cache/dwarf2btf/images/7.3/vmlinux and the 7.3 flags of
# 7.3-ab.txt.provenance.txt; the module rows take FLAGS with --btf_base (module-ab.txt.provenance.txt).
BIN_DIR=${BIN_DIR:-/tmp}; OUT_BTF=${OUT_BTF:-$(mktemp)}; ROUNDS=${ROUNDS:-5}; JOBS=${JOBS:-"1 2 64"}
V=${VMLINUX:-~/.cache/dwarf2btf/vmlinux-6.1.0-57-cloud-amd64}
F=${FLAGS:---btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs}
for r in $(seq "$ROUNDS"); do for j in $JOBS; do for b in d2b-base d2b-new; do
 out=$( { /usr/bin/time -f "TIME %e %U %S %M" "$BIN_DIR/$b" -j$j $F --btf_encode_detached "$OUT_BTF" --stats $V; } 2>&1 )
 t=$(echo "$out" | grep '^TIME'); d=$(echo "$out" | grep '^dedup ' | awk '{print $2}'); s=$(echo "$out" | grep 'dedup phases (wall' | sed 's/.*structs \([0-9.]*\).*/\1/')
 echo "$b j$j $t dedup $d structs $s"
done; done; done
