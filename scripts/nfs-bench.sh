#!/usr/bin/env bash
# fsbench over NFS (libnfs, ioengine=nfs) against libnfs's own nfs-cp, in alternating
# rounds: a 200 MiB sequential write and read in 1 MiB requests each way, each round's
# MB/s (10^6 B/s) and the medians, with the machine's load (uptime) before and after.
# nfs-cp's time includes starting, mounting and the local side of the copy (/dev/shm).
# A benchmark, not a test: run it by hand against a server you started, e.g.
#
#   cargo build --release
#   url=$(fsbench nfs create bench --dir /var/tmp/nfsbench)   # NFSv3, its ports in the URL
#   scripts/nfs-bench.sh "$url" [ROUNDS]
#   fsbench nfs remove bench
#
# Needs libnfs-utils (nfs-cp). The files it writes on the export (nfs-bench.PID.*) are
# fsbench's run directories (removed by fsbench) and nfs-cp's copies, one a round, which
# nfs-cp cannot delete: remove EXPORT/nfs-bench.PID.cp* by hand afterwards (the script
# prints their names).
set -euo pipefail
url=${1:?usage: nfs-bench.sh NFS-URL [ROUNDS]}
rounds=${2:-3}
bin=${FSBENCH:-target/release/fsbench}
command -v nfs-cp >/dev/null || { echo "nfs-cp is not installed (libnfs-utils)" >&2; exit 1; }
[ -x "$bin" ] || { echo "$bin not built (cargo build --release, or set FSBENCH)" >&2; exit 1; }
base=${url%%\?*}
args=${url#"$base"}
tmp=$(mktemp -d)
local_file=/dev/shm/nfs-bench.$$
back=/dev/shm/nfs-bench.$$.back
cleanup() { rm -rf "$tmp" "$local_file" "$back"; }
trap cleanup EXIT
head -c $((200 << 20)) /dev/urandom > "$local_file"
job() { printf '[%s]\nioengine=nfs\nnfs_url=%s\nrw=%s\nbs=1m\nsize=200m\n' "$1" "$url" "$2" > "$tmp/$1.fio"; }
job seqwrite write
job seqread read
echo "load before: $(uptime)"
for r in $(seq 1 "$rounds"); do
  for j in seqwrite seqread; do
    "$bin" run "$tmp/$j.fio" --quiet --output-format json > "$tmp/$j.fsbench.$r.json" 2>/dev/null
  done
  remote_file="$base/nfs-bench.$$.cp$r$args"
  rm -f "$back"
  t0=$(date +%s.%N); nfs-cp "$local_file" "$remote_file" >/dev/null; t1=$(date +%s.%N)
  nfs-cp "$remote_file" "$back" >/dev/null; t2=$(date +%s.%N)
  cmp -s "$local_file" "$back" || { echo "round $r: nfs-cp read back other bytes" >&2; exit 1; }
  echo "$t0 $t1 $t2" > "$tmp/nfscp.$r"
done
echo "load after:  $(uptime)"
echo "nfs-cp's copies on the export: nfs-bench.$$.cp1 .. cp$rounds (nfs-cp cannot delete: remove them by hand)"
python3 - "$tmp" "$rounds" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
mb = 200 * 2**20 / 1e6
rows = {"fsbench write": [], "fsbench read": [], "nfs-cp write": [], "nfs-cp read": []}
for r in range(1, rounds + 1):
    for j, side, name in (("seqwrite", "write", "fsbench write"), ("seqread", "read", "fsbench read")):
        d = json.load(open(f"{tmp}/{j}.fsbench.{r}.json"))
        rows[name].append(d["jobs"][0][side]["bw_bytes"] / 1e6)
    t0, t1, t2 = map(float, open(f"{tmp}/nfscp.{r}").read().split())
    rows["nfs-cp write"].append(mb / (t1 - t0))
    rows["nfs-cp read"].append(mb / (t2 - t1))
print(f"{'':14} {'median MB/s':>12}  rounds")
for k, v in rows.items():
    print(f"{k:14} {statistics.median(v):12.0f}  " + " ".join(f"{x:.0f}" for x in v))
PY
