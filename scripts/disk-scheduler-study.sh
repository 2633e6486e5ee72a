#!/usr/bin/env bash
# Reproduce the scheduler ("deceptive idleness") study's headline on a
# simulated HDD: two processes each read their own file sequentially with
# 64 KiB O_DIRECT reads, under each I/O scheduler, plus one reader alone.
#
#   sudo scripts/disk-scheduler-study.sh            # 100 MiB files, model hdd
#   SIZE_MB=50 MODEL=hdd-cheetah36lp scripts/disk-scheduler-study.sh
#
# Prints one line per configuration: the time until both readers are done.
# Needs root, FUSE, loop devices, mkfs.ext4 and dd.
set -euo pipefail

FSBENCH=${FSBENCH:-target/release/fsbench}
SIZE_MB=${SIZE_MB:-100}
MODEL=${MODEL:-hdd}
DISK_SIZE=${DISK_SIZE:-2G}
NAME=${NAME:-sched-study-$$}
MNT=$(mktemp -d /tmp/fsbench-sched.XXXXXX)

cleanup() {
    "$FSBENCH" disk remove "$NAME" >/dev/null 2>&1 || true
    rmdir "$MNT" 2>/dev/null || true
}
trap cleanup EXIT

DEV=$("$FSBENCH" disk create "$NAME" --model "$MODEL" --size "$DISK_SIZE" \
    --mkfs ext4 --mount "$MNT")
Q=/sys/block/${DEV#/dev/}/queue

for f in a b; do
    dd if=/dev/zero of="$MNT/$f" bs=1M count="$SIZE_MB" oflag=direct status=none
done
sync
if command -v filefrag >/dev/null; then
    for f in a b; do
        echo "# $f: $(filefrag "$MNT/$f" | sed 's/.*: //'), first block $(filefrag -v "$MNT/$f" | awk '/^ *0:/{print $4; exit}')"
    done
fi

now() { date +%s.%N; }

readers() { # readers FILE... : time until all have read their file
    echo 3 > /proc/sys/vm/drop_caches
    local t0 t1 pids=()
    t0=$(now)
    for f in "$@"; do
        dd if="$MNT/$f" of=/dev/null bs=64K iflag=direct status=none &
        pids+=($!)
    done
    wait "${pids[@]}"
    t1=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}

echo "# model $MODEL, two readers of $SIZE_MB MiB each, 64 KiB O_DIRECT reads, ext4 on $DEV"
printf '%-22s %8s\n' configuration seconds
for cfg in mq-deadline none kyber bfq:1 bfq:0 alone; do
    case $cfg in
    alone)
        echo mq-deadline > "$Q/scheduler"
        printf '%-22s %8.2f\n' "one reader alone" "$(readers a)"
        ;;
    bfq:*)
        echo bfq > "$Q/scheduler"
        echo "${cfg#bfq:}" > "$Q/iosched/low_latency"
        printf '%-22s %8.2f\n' "bfq low_latency=${cfg#bfq:}" "$(readers a b)"
        ;;
    *)
        echo "$cfg" > "$Q/scheduler"
        printf '%-22s %8.2f\n' "$cfg" "$(readers a b)"
        ;;
    esac
done
echo
"$FSBENCH" disk stats "$NAME"
