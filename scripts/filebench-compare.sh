#!/bin/sh
# Filebench and fsbench side by side on one workload file, in alternating rounds, on a
# RAM-backed ext4 (an image in /dev/shm on a loop device), so that the file system, not
# the disk, is what both tools meet.
#
#   scripts/filebench-compare.sh FILEBENCH [ROUNDS] [SECONDS]
#
# FILEBENCH is a Filebench binary built from its source (it needs
# `echo 0 > /proc/sys/kernel/randomize_va_space`). Each variant of the shipped
# fileserver.f (2,000 files with 16 and 50 threads, and the shipped 10,000 with 50) runs
# ROUNDS times (default 2) for SECONDS (default 20) under each tool, alternating. Printed
# per run: the run's length, ops/s, creates - deletes, and mean ms/op of the main
# flowops, loops/s (statfile1's rate: one per loop) and creates - deletes per loop.
#
#   HOGS="0 50000 200000" scripts/filebench-compare.sh FILEBENCH [ROUNDS] [SECONDS]
#
# runs the shipped variant only, once per value H, with `flowop hog value=H` after
# statfile1 (the loop made slower without changing how long a created file stays open):
# the deletes a tool skips per loop against its loop rate, for both tools on one scale.
# Needs root (loop device, mount). Everything it makes is under one temporary directory
# and one mount point, both removed at the end.
set -eu
FB=${1:?usage: $0 FILEBENCH [ROUNDS] [SECONDS]}
ROUNDS=${2:-2}
SECS=${3:-20}
FSBENCH=${FSBENCH:-$(dirname "$0")/../target/release/fsbench}
[ -x "$FSBENCH" ] || { echo "build fsbench first: cargo build --release" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root (a loop device and a mount)" >&2; exit 2; }

WORK=$(mktemp -d /dev/shm/fbcmp.XXXXXX)
MNT="$WORK/mnt"
mkdir "$MNT"
truncate -s 3G "$WORK/img"
mkfs.ext4 -q -F "$WORK/img"
mount -o loop "$WORK/img" "$MNT"
cleanup() { umount "$MNT" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM

# Filebench's own fileserver.f, the text both tools run.
WL=${WORKLOAD:-$(dirname "$FB")/../share/filebench/workloads/fileserver.f}

variant() { # nfiles nthreads hog -> a workload file for both tools
    f="$WORK/fs-$1-$2-$3.f"
    sed -e "s|^set \$dir=.*|set \$dir=$MNT/d|" -e "s|^set \$nfiles=.*|set \$nfiles=$1|" \
        -e "s|^set \$nthreads=.*|set \$nthreads=$2|" -e "s|^set \$runtime=.*|set \$runtime=$SECS|" \
        "$WL" | awk -v h="$3" '{ print } /flowop statfile name=statfile1/ && h > 0 {
            print "    flowop hog name=hog1,value=" h }' >"$f"
    echo "$f"
}

fresh() { rm -rf "$MNT/d"; mkdir "$MNT/d"; sync; echo 3 >/proc/sys/vm/drop_caches; }

# Filebench's per-flowop lines: name ops ops/s mb/s ms/op ...
fb_row() { # output file, variant label
    out=$1
    t0=$(grep -m1 -o '^[0-9.]*: Running' "$out" | cut -d: -f1 || true)
    # The run ends where Filebench stops it early ("could not obtain a file"), or else
    # where it says how long the run took.
    t1=$(grep -E 'Run stopped early|Run took' "$out" | head -1 | cut -d: -f1 || true)
    awk -v label="$2" -v t0="${t0:-0}" -v t1="${t1:-0}" '
        $2 ~ /ops$/ && $3 ~ /ops\/s$/ { ops[$1] = $2 + 0; ms[$1] = $5 + 0; tot += $3 + 0 }
        /IO Summary/ { summary = 1 }
        END {
            d = ops["createfile1"] - ops["deletefile1"]; loops = ops["statfile1"]
            printf "%-9s filebench %6.1f s %9.0f ops/s  creates-deletes %6d  ms/op create %.3f read %.3f delete %.3f stat %.3f  loops/s %.0f  per loop %.4f%%%s\n",
                label, t1 - t0, tot, d, ms["createfile1"], ms["readfile1"], ms["deletefile1"],
                ms["statfile1"], (t1 > t0 ? loops / (t1 - t0) : 0), (loops > 0 ? 100 * d / loops : 0),
                (summary ? "" : "  (stopped early, no IO Summary)")
        }' "$out"
}

fs_row() { # json file, variant label
    python3 - "$1" "$2" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1]))
f = {x["name"]: x for x in v["flowops"]}
ops = sum(x["ops"] for x in v["flowops"])
ms = lambda n: f[n]["latency_us"]["mean"] / 1000
ended = " (fileset exhausted)" if "exhausted" in json.dumps(v.get("notes", "")) else ""
d = f["createfile1"]["ops"] - f["deletefile1"]["ops"]
loops = f["statfile1"]["ops"]
print("%-9s fsbench   %6.1f s %9.0f ops/s  creates-deletes %6d  ms/op create %.3f read %.3f delete %.3f stat %.3f  loops/s %.0f  per loop %.4f%%  skipped deletes %d%s" % (
    sys.argv[2], v["duration_s"], ops / v["duration_s"], d, ms("createfile1"),
    ms("readfile1"), ms("deletefile1"), ms("statfile1"), loops / v["duration_s"],
    100 * d / max(loops, 1), f["deletefile1"].get("skipped", 0), ended))
EOF
}

if [ -n "${HOGS:-}" ]; then
    VARIANTS=$(for h in $HOGS; do echo "10000:50:$h"; done)
else
    VARIANTS="2000:16:0 2000:50:0 10000:50:0"
fi
for v in $VARIANTS; do
    IFS=: read -r nf nt hog <<EOV
$v
EOV
    label="$nf/$nt"
    [ "$hog" = 0 ] || label="$label hog $hog"
    wl=$(variant "$nf" "$nt" "$hog")
    for r in $(seq "$ROUNDS"); do
        fresh
        "$FB" -f "$wl" >"$WORK/fb.out" 2>&1 || true
        fb_row "$WORK/fb.out" "$label"
        fresh
        "$FSBENCH" run "$wl" --dir "$MNT/d" -q --json "$WORK/fs.json" >/dev/null 2>&1 || true
        fs_row "$WORK/fs.json" "$label"
    done
done
