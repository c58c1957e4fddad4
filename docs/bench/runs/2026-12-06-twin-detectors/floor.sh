# Alternating rounds at -j2 on the reference: dwarf2btf plain (wall, CPU), dwarf2btf --stats
# (its dedup phase's wall and CPU), pahole 1.32 (wall, CPU).
F="--lang_exclude=rust --btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs"
V=~/.cache/dwarf2btf/vmlinux-6.1.0-57-cloud-amd64
P=~/.cache/dwarf2btf/pahole-1.32/pahole
B=${BIN:-target/release/dwarf2btf}
for r in $(seq ${ROUNDS:-5}); do
  /usr/bin/time -f "plain %e %U %S" $B $F -j2 --btf_encode_detached /tmp/floor-o.btf $V 2>&1 | grep '^plain'
  $B $F -j2 --stats --btf_encode_detached /tmp/floor-o.btf $V 2>&1 | awk '/^dedup /{print "stats-dedup", $2, $3}'
  /usr/bin/time -f "pahole %e %U %S" $P -J -j2 $F --btf_encode_detached /tmp/floor-p.btf $V 2>&1 | grep '^pahole'
done
