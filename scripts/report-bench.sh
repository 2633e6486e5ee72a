#!/bin/sh
# Benchmark of `fsbench report`: 1,000 stored runs (copies of one real result with varied
# labels and nthreads) rendered into one page; prints the time and the page's size.
# Usage: scripts/report-bench.sh [FSBENCH] [N]
set -eu
bin=${1:-target/release/fsbench}
n=${2:-1000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" run fileserver -s nfiles=50 -s filesize=16k --duration 1 --interval 0.1 --repeat 3 \
  --dir "$dir" --json "$dir/seed.json" >/dev/null
python3 - "$dir" "$n" <<'PY'
import json, sys, random
d, n = sys.argv[1], int(sys.argv[2])
r = json.load(open(f"{d}/seed.json"))
random.seed(1)
for i in range(n):
    r["variables"]["nthreads"] = str(1 + i % 16)
    r["summary"]["ops_per_s"] *= random.uniform(0.95, 1.05)
    json.dump(r, open(f"{d}/run-{i:04}.json", "w"))
PY
start=$(date +%s.%N)
"$bin" report "$dir"/run-*.json -o "$dir/report.html"
end=$(date +%s.%N)
echo "runs: $n  seconds: $(echo "$end - $start" | bc)  bytes: $(stat -c %s "$dir/report.html")"
