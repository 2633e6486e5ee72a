#!/usr/bin/env bash
# Evidence for simulated disks (docs/disk.md), measured with fsbench itself:
#
#  1. sched: the scheduler ("deceptive idleness") study by read(2) and by mmap:
#     `fsbench run schedseq` (two threads, each reading its own file
#     sequentially in 64 KiB requests) on ext4 on a simulated HDD, under
#     mq-deadline, kyber, none and bfq (low_latency 1 and 0), for each
#     read-ahead size in READ_AHEAD_KB, page cache dropped before each run
#     (--cold). Prints per-reader MB/s.
#  2. age: one file read once sequentially on a fresh ext4 and, after
#     `fsbench age`, the same file (same name, size, workload) laid out again
#     on the aged ext4 of the same simulated disk; MB/s and layout scores.
#
#   sudo scripts/disk-evidence.sh                 # both parts, ~10 minutes
#   PARTS=sched READ_AHEAD_KB=128 sudo -E scripts/disk-evidence.sh
#
# Needs root, /dev/fuse, loop devices, mkfs.ext4 and jq. Every simulated disk
# it creates is removed on exit, also on failure or Ctrl-C.
set -euo pipefail

# ---- parameters -------------------------------------------------------------
FSBENCH=${FSBENCH:-target/release/fsbench}
MODEL=${MODEL:-hdd}                      # simulated drive preset
PARTS=${PARTS:-"sched age"}              # which parts to run
# part 1: scheduler study
SCHED_DISK_SIZE=${SCHED_DISK_SIZE:-2G}
SCHED_FILESIZE=${SCHED_FILESIZE:-384m}   # per reader; large enough that no reader wraps around
SCHED_DURATION=${SCHED_DURATION:-4}      # seconds per run
SCHEDULERS=${SCHEDULERS:-"mq-deadline kyber none bfq:1 bfq:0"}
READ_AHEAD_KB=${READ_AHEAD_KB:-"128 2560"} # 128: the classic default; 2560: this kernel's choice for the loop device
# part 2: aging study
AGE_DISK_SIZE=${AGE_DISK_SIZE:-512M}
AGE_FILL=${AGE_FILL:-0.8}
AGE_OPS=${AGE_OPS:-20000}                # churn operations after reaching AGE_FILL
AGE_SEED=${AGE_SEED:-1}
AGE_FILESIZE=${AGE_FILESIZE:-64m}        # the file read on the fresh and on the aged ext4
AGE_IOSIZE=${AGE_IOSIZE:-1m}
AGE_READ_AHEAD_KB=${AGE_READ_AHEAD_KB:-128}
OUT=${OUT:-$(mktemp -d /tmp/fsbench-evidence.XXXXXX)} # JSON results land here
# -----------------------------------------------------------------------------

HERE=$(cd "$(dirname "$0")" && pwd)
SEQREAD=$HERE/seqread-once.f
mkdir -p "$OUT"
DISKS=()
MNTS=()

cleanup() {
    local d m
    for d in "${DISKS[@]}"; do
        "$FSBENCH" disk remove "$d" >/dev/null 2>&1 || echo "warning: could not remove disk $d" >&2
    done
    for m in "${MNTS[@]}"; do
        mountpoint -q "$m" && umount -l "$m"
        rmdir "$m" 2>/dev/null || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

new_disk() { # new_disk NAME SIZE -> sets DEV, MNT
    MNT=$(mktemp -d /tmp/fsbench-evidence-mnt.XXXXXX)
    MNTS+=("$MNT")
    DISKS+=("$1")
    DEV=$("$FSBENCH" disk create "$1" --model "$MODEL" --size "$2" --mkfs ext4 --mount "$MNT" 2>>"$OUT/disk-create.txt")
}

set_sched() { # set_sched QUEUE mq-deadline|kyber|none|bfq:LOWLAT
    echo "${2%%:*}" >"$1/scheduler"
    if [[ $2 == bfq:* ]]; then echo "${2#bfq:}" >"$1/iosched/low_latency"; fi
}

mbs() { # mbs JSON FLOWOP: MB/s of a flowop (10^6 B/s)
    jq -r --arg f "$2" '.duration_s as $d | .flowops[] | select(.name == $f) | .bytes / 1e6 / $d | . * 10 | round / 10' "$1"
}

bytes() { jq -r --arg f "$2" '.flowops[] | select(.name == $f) | .bytes' "$1"; }

sched_part() {
    new_disk "evidence-sched-$$" "$SCHED_DISK_SIZE"
    local q=/sys/block/${DEV#/dev/}/queue limit ra cfg mode j
    limit=$(numfmt --from=iec "${SCHED_FILESIZE^^}")
    # Lay the two files out once (reuse keeps them in $MNT/fsbench-schedseq/).
    "$FSBENCH" run schedseq --dir "$MNT" -s filesize="$SCHED_FILESIZE" --duration 0.1 -q >/dev/null
    echo "## 1. scheduler study: schedseq, two readers x $SCHED_FILESIZE, 64 KiB requests, ${SCHED_DURATION} s per run, cold cache"
    echo "# model $MODEL, ext4 on $DEV ($SCHED_DISK_SIZE)"
    printf '%-20s %6s %12s %12s %12s %12s\n' scheduler ra_kb read:r1 read:r2 mmap:r1 mmap:r2
    for ra in $READ_AHEAD_KB; do
        echo "$ra" >"$q/read_ahead_kb"
        for cfg in $SCHEDULERS; do
            set_sched "$q" "$cfg"
            local row=()
            for mode in false true; do
                j=$OUT/schedseq-$cfg-ra$ra-mmap$mode.json
                "$FSBENCH" run schedseq --dir "$MNT" -s filesize="$SCHED_FILESIZE" -s usemmap=$mode \
                    --duration "$SCHED_DURATION" --cold -q --json "$j" >/dev/null
                for f in read1 read2; do
                    # A reader that wrapped around re-read cached pages: mark it.
                    if (($(bytes "$j" $f) > limit)); then row+=("$(mbs "$j" $f)*"); else row+=("$(mbs "$j" $f)"); fi
                done
            done
            printf '%-20s %6s %12s %12s %12s %12s\n' "${cfg/bfq:/bfq low_latency=}" "$ra" "${row[@]}"
        done
    done
    echo "# (* = the reader wrapped around its file: partly cached)"
    "$FSBENCH" disk stats "evidence-sched-$$" >"$OUT/sched-disk-stats.txt"
    echo
}

seqread() { # seqread LABEL: one cold sequential pass over the file; prints MB/s
    local j=$OUT/seqread-$1.json
    "$FSBENCH" run "$SEQREAD" --dir "$MNT" -s filesize="$AGE_FILESIZE" -s iosize="$AGE_IOSIZE" \
        --cold -q --json "$j" >/dev/null
    mbs "$j" seqread
}

layout_of() { # layout_of DIR LABEL: "score extents"
    local j=$OUT/layout-$2.json
    "$FSBENCH" layout "$1" --sync --json "$j" >/dev/null
    if command -v filefrag >/dev/null && [[ $2 == *file ]]; then
        find "$1" -type f ! -name '.fsbench*' -exec filefrag -v {} + >"$OUT/filefrag-$2.txt"
    fi
    jq -r '"\(.score * 10000 | round / 10000) \(.files) \(.extents)"' "$j"
}

age_part() {
    local name=evidence-age-$$ fresh aged lf la agedpop t0 t1
    new_disk "$name" "$AGE_DISK_SIZE"
    echo "$AGE_READ_AHEAD_KB" >"/sys/block/${DEV#/dev/}/queue/read_ahead_kb"
    echo mq-deadline >"/sys/block/${DEV#/dev/}/queue/scheduler"
    echo "## 2. aging study: one $AGE_FILESIZE file read once sequentially ($AGE_IOSIZE reads, cold cache)"
    echo "# model $MODEL, ext4 on $DEV ($AGE_DISK_SIZE), read-ahead $AGE_READ_AHEAD_KB KiB, mq-deadline"
    fresh=$(seqread fresh)
    lf=$(layout_of "$MNT"/fsbench-seqread-once/seqfile "fresh-file")
    # Start over on the same disk: delete the file, age, lay the same file out again.
    rm -rf "$MNT"/fsbench-seqread-once
    t0=$(date +%s)
    "$FSBENCH" age "$MNT" --fill "$AGE_FILL" --seed "$AGE_SEED" --ops "$AGE_OPS" \
        --json "$OUT/age.json" >"$OUT/age.txt" 2>"$OUT/age.log"
    t1=$(date +%s)
    echo "# aged in $((t1 - t0)) s: $(jq -r '"\(.ops) ops, \(.live_files) live files, fullness \(.fullness_end * 1000 | round / 10)%"' "$OUT/age.json")"
    agedpop=$(layout_of "$MNT"/fsbench-aged "aged-population")
    aged=$(seqread aged)
    la=$(layout_of "$MNT"/fsbench-seqread-once/seqfile "aged-file")
    printf '%-34s %8s %8s %8s %8s\n' "" MB/s score files extents
    printf '%-34s %8s %8s %8s %8s\n' "fresh ext4: the file" "$fresh" $lf
    printf '%-34s %8s %8s %8s %8s\n' "aged ext4: the file" "$aged" $la
    printf '%-34s %8s %8s %8s %8s\n' "aged ext4: the aged population" "" $agedpop
    "$FSBENCH" disk stats "$name" >"$OUT/age-disk-stats.txt"
    echo
}

for p in $PARTS; do
    case $p in
    sched) sched_part ;;
    age) age_part ;;
    *) echo "unknown part $p" >&2; exit 2 ;;
    esac
done
echo "# JSON results and disk statistics in $OUT"
