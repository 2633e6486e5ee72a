#!/usr/bin/env bash
# fsbench and fio side by side on the same job files: operation and byte counts of
# count-bounded jobs (which must be equal), and IOPS and completion-latency percentiles of
# a time-based one (alternating the two tools ROUNDS times), and, as root, direct=1 jobs
# on an ext4 image the script makes in its temporary directory, loop-mounts and removes at
# the end. Prints Markdown tables for docs/fio.md. Needs fio (Debian: apt-get install fio).
#
#   cargo build --release
#   scripts/fio-compare.sh [DIR] [ROUNDS]
set -euo pipefail
dir=${1:-/var/tmp}
rounds=${2:-3}
bin=${FSBENCH:-target/release/fsbench}
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 1; }
tmp=$(mktemp -d)
mnt=""
cleanup() {
  # Only what this script made: its mount of its own image, then its directories.
  if [ -n "$mnt" ] && mountpoint -q "$mnt"; then umount "$mnt"; fi
  rm -rf "$tmp" "$dir"/fio-compare.*
}
trap cleanup EXIT
job() { printf '%b' "$2" > "$tmp/$1.fio"; }
job seqread   '[seqread]\nrw=read\nbs=4k\nsize=64m\nioengine=psync\n'
job seqwrite  '[seqwrite]\nrw=write\nbs=4k\nsize=64m\nioengine=psync\n'
job randread  '[randread]\nrw=randread\nbs=4k\nsize=64m\nioengine=psync\n'
job randwrite '[randwrite]\nrw=randwrite\nbs=4k\nsize=64m\nioengine=psync\n'
job seq1m     '[seq1m]\nrw=read\nbs=1m\nsize=256m\nioengine=psync\n'
job randrw    '[randrw]\nrw=randrw\nrwmixread=70\nbs=4k\nsize=64m\nioengine=psync\n'
job fsync32   '[fsync32]\nrw=write\nbs=4k\nsize=16m\nfsync=32\nioengine=psync\n'
job numjobs4  '[global]\nbs=4k\nsize=16m\nioengine=psync\n[numjobs4]\nrw=randread\nnumjobs=4\ngroup_reporting\n'
job bssplit   '[bssplit]\nrw=randwrite\nbssplit=4k/50:64k/50\nsize=64m\nioengine=psync\n'
job loops     '[loops]\nrw=read:4k\nbs=4k\nsize=16m\nloops=2\nioengine=psync\n'
counts() { # file -> "read_ios/read_bytes write_ios/write_bytes syncs" per job, summed
  python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
t = [0, 0, 0, 0, 0]
for j in r["jobs"]:
    t[0] += j["read"]["total_ios"]; t[1] += j["read"]["io_bytes"]
    t[2] += j["write"]["total_ios"]; t[3] += j["write"]["io_bytes"]
    t[4] += j["sync"].get("total_ios", 0)
print(f"{t[0]} / {t[1]} | {t[2]} / {t[3]} | {t[4]}")
EOF
}
echo "| job | fio: reads / bytes | writes / bytes | fsyncs | fsbench: reads / bytes | writes / bytes | fsyncs |"
echo "|---|---|---|---|---|---|---|"
for f in "$tmp"/*.fio; do
  n=$(basename "$f" .fio)
  mkdir -p "$dir/fio-compare.fio"
  (cd "$dir/fio-compare.fio" && fio --output-format=json --output="$tmp/$n.fio.json" "$f" >/dev/null)
  rm -rf "$dir/fio-compare.fio"
  "$bin" run "$f" --dir "$dir" --quiet --output-format json > "$tmp/$n.fsb.json" 2>/dev/null
  echo "| $n | $(counts "$tmp/$n.fio.json") | $(counts "$tmp/$n.fsb.json") |"
done
job timed '[timed]\nrw=randread\nbs=4k\nsize=256m\ntime_based\nruntime=10\nioengine=psync\n'
lat() {
  python3 - "$1" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]["read"]
p = j["clat_ns"]["percentile"]
print(f"{j['iops']:.0f} | {p['50.000000']/1000:.1f} | {p['99.000000']/1000:.1f} | {p['99.900000']/1000:.1f}")
EOF
}
echo
echo "| round | tool | IOPS | clat p50 (us) | p99 (us) | p99.9 (us) |"
echo "|---|---|---|---|---|---|"
for i in $(seq "$rounds"); do
  mkdir -p "$dir/fio-compare.fio"
  (cd "$dir/fio-compare.fio" && fio --output-format=json --output="$tmp/t.fio.json" "$tmp/timed.fio" >/dev/null)
  rm -rf "$dir/fio-compare.fio"
  echo "| $i | fio | $(lat "$tmp/t.fio.json") |"
  "$bin" run "$tmp/timed.fio" --dir "$dir" --quiet --output-format json > "$tmp/t.fsb.json" 2>/dev/null
  echo "| $i | fsbench | $(lat "$tmp/t.fsb.json") |"
done

# direct=1 on a loop-mounted image (root only): the image is a file in this script's
# temporary directory, formatted and mounted here, unmounted and removed at the end.
if [ "$(id -u)" != 0 ]; then
  echo
  echo "(direct=1 on an image skipped: needs root for the loop mount)"
  exit 0
fi
truncate -s 1G "$tmp/image.ext4"
mkfs.ext4 -q -F "$tmp/image.ext4"
mkdir "$tmp/mnt"
mount -o loop "$tmp/image.ext4" "$tmp/mnt"
mnt=$tmp/mnt
job drandread  '[drandread]\nrw=randread\nbs=4k\nsize=64m\ndirect=1\nioengine=psync\n'
job drandwrite '[drandwrite]\nrw=randwrite\nbs=4k\nsize=64m\ndirect=1\nioengine=psync\n'
job dseqread   '[dseqread]\nrw=read\nbs=1m\nsize=256m\ndirect=1\nioengine=psync\n'
job during32   '[during32]\nrw=randread\nbs=4k\nsize=64m\ndirect=1\nioengine=io_uring\niodepth=32\n'
perf() { # file -> "ios / bytes | IOPS | clat p50 / p99 (us)" of the job's one direction
  python3 - "$1" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
d = j["read"] if j["read"]["total_ios"] else j["write"]
p = d["clat_ns"]["percentile"]
print(f"{d['total_ios']} / {d['io_bytes']} | {d['iops']:.0f} | {p['50.000000']/1000:.1f} / {p['99.000000']/1000:.1f}")
EOF
}
echo
echo "| job (direct=1, ext4 on a loop device) | tool | I/Os / bytes | IOPS | clat p50 / p99 (us) |"
echo "|---|---|---|---|---|"
for n in drandread drandwrite dseqread during32; do
  mkdir -p "$mnt/fio"
  (cd "$mnt/fio" && fio --output-format=json --output="$tmp/$n.fio.json" "$tmp/$n.fio" >/dev/null)
  rm -rf "$mnt/fio"
  echo "| $n | fio | $(perf "$tmp/$n.fio.json") |"
  "$bin" run "$tmp/$n.fio" --dir "$mnt" --quiet --output-format json > "$tmp/$n.fsb.json" 2>/dev/null
  echo "| | fsbench | $(perf "$tmp/$n.fsb.json") |"
done
