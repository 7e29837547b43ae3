#!/bin/bash
# A bundle at the entry limit: 200 000 entries (400 dirs of 498 small
# files, paths of 80 to 90 bytes) are bundled and verified, and one entry
# more is refused by bundle create before it writes anything: no output
# file and no temporary file are left. The same for a tree of 34 000
# entries with paths of 4000 bytes, whose manifest would pass the
# 128 MiB that readers take: refused from the paths alone, before a file
# is hashed (a sparse 60 GiB file among them does not slow it down).
. "$(dirname "$0")/lib.sh"

t_init bundlebig
t_require_exec "$FATELF"
t_require_tool python3

python3 - <<'PY' || { echo "Bail out! cannot make the tree"; exit 99; }
import os
os.mkdir('tree')
for d in range(400):
    dp = 'tree/dir-%03d-with-a-longish-name/subdirectory-of-files' % d
    os.makedirs(dp)
    for f in range(498):
        with open(dp + '/file-%05d-with-a-rather-long-name.txt' % f, 'w') as fh:
            fh.write('x%d\n' % f)
PY
mkdir out

s=$(date +%s.%N)
check "create bundles 200000 entries" \
	"$FATELF" bundle create -o out/big.fatbundle --name big --version 1 --compression zstd tree
e=$(date +%s.%N)
echo "# create: $(echo "$e - $s" | bc) s"
s=$e
run "$FATELF" bundle verify out/big.fatbundle
e=$(date +%s.%N)
echo "# verify: $(echo "$e - $s" | bc) s"
check_eq "verify accepts the 200000-entry bundle" 0 "$RC"
check_match "verify counts 200000 entries" '200000 entries' "$RUN_OUT"

echo y > tree/one-more
rm -f out/big.fatbundle
check_exit 1 "create refuses 200001 entries" \
	"$FATELF" bundle create -o out/big.fatbundle --name big --version 1 tree
check_match "... naming the limit" 'more than 200000 entries' "$RUN_ERR"
check_eq "... and leaves nothing in the output directory" "" "$(ls -A out)"

rm -rf tree
python3 - <<'PY' || { echo "Bail out! cannot make the long tree"; exit 99; }
import os
d = 'long'
for i in range(15):
    d += '/' + ('%02d' % i) * 125
os.makedirs(d)
for f in range(34000):
    with open(d + '/' + ('%06d' % f) + 'f' * 234, 'w') as fh:
        pass
PY
# A sparse 60 GiB file beside them: hashing it would take minutes; the
# paths alone already say the manifest is too big.
truncate -s 60G long/sparse
s=$(date +%s.%N)
check_exit 1 "create refuses a manifest past 128 MiB" \
	timeout 20 "$FATELF" bundle create -o out/long.fatbundle --name long --version 1 long
e=$(date +%s.%N)
echo "# refused in $(echo "$e - $s" | bc) s"
check_match "... naming the limit and the size" 'would be at least [0-9]+ bytes, the limit is 134217728' "$RUN_ERR"
check_eq "... and leaves nothing in the output directory" "" "$(ls -A out)"

t_done
