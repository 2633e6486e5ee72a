#!/usr/bin/env bash
# fio and fsbench in alternating rounds on the same job files, printing each job's IOPS
# and completion-latency p99 side by side (the medians over the rounds, then every round),
# from both tools' --output-format=json, with the machine's load average before and after,
# and what the verifying job checked.
# A benchmark, not a test: run it by hand. Needs fio (Debian: apt-get install fio).
#
#   cargo build --release
#   scripts/fio-bench.sh [DIR] [ROUNDS] [SECONDS]
set -euo pipefail
dir=${1:-/var/tmp}
rounds=${2:-3}
secs=${3:-4}
bin=${FSBENCH:-target/release/fsbench}
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 1; }
[ -x "$bin" ] || { echo "$bin not built (cargo build --release, or set FSBENCH)" >&2; exit 1; }
tmp=$(mktemp -d)
work="$dir/fio-bench.$$"
cleanup() { rm -rf "$tmp" "$work"; }
trap cleanup EXIT
mkdir -p "$work"
t="time_based=1\nruntime=$secs\nsize=256m\n"
job() { printf '%b' "[global]\ndirectory=$work\n[$1]\n$2" > "$tmp/$1.fio"; }
job psync-randread   "rw=randread\nbs=4k\nioengine=psync\n$t"
job psync-randwrite  "rw=randwrite\nbs=4k\nioengine=psync\n$t"
job libaio-qd16-read "rw=randread\nbs=4k\nioengine=libaio\niodepth=16\ndirect=1\n$t"
job uring-qd32-read  "rw=randread\nbs=4k\nioengine=io_uring\niodepth=32\ndirect=1\n$t"
job mmap-seqread     "rw=read\nbs=64k\nioengine=mmap\n$t"
job libaio-verify    "rw=randwrite\nbs=4k\nsize=64m\nioengine=libaio\niodepth=16\ndirect=1\nverify=crc32c\ndo_verify=1\n"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
for r in $(seq 1 "$rounds"); do
  for f in "$tmp"/*.fio; do
    n=$(basename "$f" .fio)
    (cd "$work" && fio --output-format=json --output="$tmp/$n.fio.$r.json" "$f" >/dev/null)
    rm -f "$work"/*
    "$bin" run "$f" --dir "$work" --quiet --output-format json > "$tmp/$n.fsbench.$r.json" 2>/dev/null
  done
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp" "$rounds" <<'EOF'
import json, os, sys, statistics
tmp, rounds = sys.argv[1], int(sys.argv[2])
jobs = sorted({f.split(".")[0] for f in os.listdir(tmp) if f.endswith(".json")})
def figures(path):
    j = json.load(open(path))["jobs"][0]
    out = []
    for d in ("read", "write"):
        x = j[d]
        if x["total_ios"]:
            p99 = x["clat_ns"].get("percentile", {}).get("99.000000", 0) / 1000
            out.append((d, x["iops"], p99))
    return out
rows = {}
for n in jobs:
    for tool in ("fio", "fsbench"):
        for r in range(1, rounds + 1):
            for d, iops, p99 in figures(f"{tmp}/{n}.{tool}.{r}.json"):
                rows.setdefault((n, d, tool), []).append((r, iops, p99))
print()
print("| job | dir | fio IOPS | fsbench IOPS | fsbench ÷ fio | fio p99 (us) | fsbench p99 (us) |")
print("|---|---|---|---|---|---|---|")
for n in jobs:
    for d in ("read", "write"):
        a, b = rows.get((n, d, "fio")), rows.get((n, d, "fsbench"))
        if not a or not b:
            continue
        ia, ib = statistics.median(x[1] for x in a), statistics.median(x[1] for x in b)
        pa, pb = statistics.median(x[2] for x in a), statistics.median(x[2] for x in b)
        print(f"| {n} | {d} | {ia:.0f} | {ib:.0f} | {ib / ia:.2f} | {pa:.1f} | {pb:.1f} |")
print()
print("| job | dir | round | fio IOPS | fsbench IOPS | fio p99 (us) | fsbench p99 (us) |")
print("|---|---|---|---|---|---|---|")
for n in jobs:
    for d in ("read", "write"):
        a, b = rows.get((n, d, "fio")), rows.get((n, d, "fsbench"))
        if not a or not b:
            continue
        for (r, ia, pa), (_, ib, pb) in zip(a, b):
            print(f"| {n} | {d} | {r} | {ia:.0f} | {ib:.0f} | {pa:.1f} | {pb:.1f} |")
# The verifying job: what fsbench says it checked, and the blocks fio read back.
print()
for n in jobs:
    for r in range(1, rounds + 1):
        v = json.load(open(f"{tmp}/{n}.fsbench.{r}.json"))["jobs"][0].get("verify")
        if v is None:
            continue
        f = json.load(open(f"{tmp}/{n}.fio.{r}.json"))["jobs"][0]
        bad = f", first bad {v['first_bad_file']} at {v['first_bad_offset']}" if v["mismatches"] else ""
        print(f"{n} round {r}: fsbench verify: {v['blocks_checked']} blocks checked, "
              f"{v['mismatches']} mismatches{bad}; fio read back {f['read']['total_ios']} blocks, "
              f"error {f['error']}")
EOF
