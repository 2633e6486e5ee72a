#!/bin/bash
# Compare `fsbench scan` with GNU find on the same warm tree.
# Usage: scripts/bench-scan.sh [TREE] [RUNS] [FSBENCH]
# Creates TREE (default /tmp/fsb-tree: 20x10x10 dirs x 100 files = 202,220
# entries, sizes 0..5000 bytes) if it does not exist, warms the cache, then
# alternates the commands RUNS times and prints each median wall time.
set -euo pipefail
tree=${1:-/tmp/fsb-tree}
runs=${2:-7}
bin=${3:-${CARGO_TARGET_DIR:-target}/release/fsbench}
if [ ! -d "$tree" ]; then
    python3 - "$tree" <<'PY'
import os, random, sys
random.seed(1)
root = sys.argv[1]
exts = ['c', 'h', 'txt', 'rs', 'py', 'o', '', 'md', 'json', 'so']
for a in range(20):
    for b in range(10):
        for c in range(10):
            d = f"{root}/d{a}/e{b}/f{c}"
            os.makedirs(d, exist_ok=True)
            for i in range(100):
                e = random.choice(exts)
                with open(f"{d}/file{i}" + ("." + e if e else ""), 'wb') as f:
                    f.write(b'x' * random.choice([0, 10, 100, 1000, 3000, 5000]))
PY
fi
snap=$(mktemp)
trap 'rm -f "$snap"' EXIT
declare -A cmds=(
    [find]="find $tree -printf '%s %p\n' > /dev/null"
    [scan_devnull]="$bin scan $tree -o /dev/null > /dev/null"
    [scan_snapshot]="$bin scan $tree -o $snap > /dev/null"
    [scan_1thread]="$bin scan -j1 $tree -o $snap > /dev/null"
)
names=(find scan_devnull scan_snapshot scan_1thread)
entries=$(find "$tree" -mindepth 1 | wc -l)
for n in "${names[@]}"; do eval "${cmds[$n]}"; done   # warm up
declare -A times
for ((r = 0; r < runs; r++)); do
    for n in "${names[@]}"; do
        t0=$(date +%s%N); eval "${cmds[$n]}"; t1=$(date +%s%N)
        times[$n]+="$(( (t1 - t0) / 1000 )) "
    done
done
echo "tree: $tree ($entries entries), $runs runs each, $(nproc) cores"
for n in "${names[@]}"; do
    med=$(echo ${times[$n]} | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf "%-14s median %8.1f ms  %10.0f entries/s\n" "$n" "$(echo "$med/1000" | bc -l)" "$(echo "$entries/($med/1000000)" | bc -l)"
done
