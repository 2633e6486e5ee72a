#!/usr/bin/env bash
# Reply lateness of the simulated disk server under CPU load: for each number of CPU hogs in
# HOGS, a fresh simulated HDD with ext4 is created, HOGS busy loops are started, one thread
# does random 4 KiB O_DIRECT reads of a file on it for SECONDS, and the server's statistics
# give the mean and p99 of its reply lateness (time past the modelled completion) and the
# mean modelled service time, as the run records them. Prints one table row per hog count.
# FSBENCH_DISK_REALTIME=0 measures the server without real-time scheduling and mlockall.
#
#   sudo scripts/disk-lateness.sh                 # hogs 0, 2, 8; ~1 minute
#   HOGS="0 8" SECONDS_PER_RUN=20 sudo -E scripts/disk-lateness.sh
#
# Needs root, /dev/fuse, loop devices, mkfs.ext4 and jq. Disks and hogs are removed on exit.
set -euo pipefail
FSBENCH=${FSBENCH:-target/release/fsbench}
HOGS=${HOGS:-"0 2 8"}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
NAME=lateness$$
MNT=$(mktemp -d /tmp/fsbench-lateness.XXXXXX)
hog_pids=()
cleanup() {
    for p in "${hog_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    "$FSBENCH" disk remove "$NAME" >/dev/null 2>&1 || true
    rmdir "$MNT" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
WL=$(mktemp /tmp/fsbench-lateness.XXXXXX.f)
OUT=$(mktemp /tmp/fsbench-lateness.XXXXXX.json)
cat >"$WL" <<'F'
define file name=data,path=/tmp,size=64m,prealloc
define process name=p { thread name=t { flowop read name=rand4k,filename=data,iosize=4k,random,directio } }
F
printf '%-5s %10s %10s %14s %12s %12s  %s\n' hogs requests service_us late_mean_us late_p99_us late_pct server
for h in $HOGS; do
    "$FSBENCH" disk create "$NAME" --size 1G --mkfs ext4 --mount "$MNT" >/dev/null 2>&1
    hog_pids=()
    for ((i = 0; i < h; i++)); do
        (while :; do :; done) &
        hog_pids+=($!)
    done
    "$FSBENCH" run "$WL" --dir "$MNT" --duration "$SECONDS_PER_RUN" -q --json "$OUT" >/dev/null 2>&1
    for p in "${hog_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    hog_pids=()
    # The run records the server's lateness during it as a note.
    note=$(jq -r '.notes[] | select(startswith("simulated disk"))' "$OUT")
    echo "$note" | sed -E 's/.*: ([0-9]+) requests.*service ([0-9.]+) us, reply lateness mean ([0-9.]+) us, p99 ([0-9.]+) us \(([0-9.]+)%.*server (.*), memory (.*)$/\1 \2 \3 \4 \5% \6|\7/' |
        awk -v h="$h" '{printf "%-5s %10s %10s %14s %12s %12s  ", h, $1, $2, $3, $4, $5; $1=$2=$3=$4=$5=""; sub(/^ +/, ""); print}'
    "$FSBENCH" disk remove "$NAME" >/dev/null 2>&1
done
rm -f "$WL" "$OUT"
