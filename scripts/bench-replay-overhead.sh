#!/usr/bin/env bash
# Replay overhead: a 4 KiB random pread loop (a raw C program) recorded with `fsbench trace
# record` and replayed `--mode afap`, against the program run on its own for as long as the
# replay took (short runs are slower: page tables and caches warm up, so the lengths must
# match): the replay's read rate over the program's (goal: >= 0.9). Rounds alternate the two
# on the same 64 MiB tmpfs file.
#
#   cargo build --release
#   scripts/bench-replay-overhead.sh RAWPREAD.c [SECONDS_RECORDED] [DIR]
#
# RAWPREAD.c: a loop `pread(fd, buf, 4096, random 4 KiB-aligned offset)` for N seconds that
# prints "... = N ops/s"; usage `rawpread FILE [SECONDS]`.
set -euo pipefail
src=${1:?give the C source of the raw pread loop}
secs=${2:-5}
dir=${3:-/dev/shm}
bin=${FSBENCH:-target/release/fsbench}
work=$(mktemp -d "$dir/fsbench-replay-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/rawpread" "$src"
mkdir "$work/root" "$work/replay"
head -c 64M /dev/urandom > "$work/root/data"
rate() { sed -n 's/.* = \([0-9]*\) ops\/s.*/\1/p'; }
"$bin" trace record -o "$work/t.trace" --root "$work/root" -- "$work/rawpread" "$work/root/data" "$secs" >/dev/null
for i in 1 2 3 4 5; do
  "$bin" trace replay "$work/t.trace" --dir "$work/replay" --mode afap --json "$work/r.json" >/dev/null 2>&1
  rep=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print([f for f in r["flowops"] if f["name"]=="read"][0]["ops_per_s"])' "$work/r.json")
  took=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["figures"]["replay_s"])' "$work/r.json")
  orig=$("$work/rawpread" "$work/root/data" "$took" | rate)
  calls=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print([f for f in r["flowops"] if f["name"]=="read"][0]["ops"])' "$work/r.json")
  printf 'round %d: afap replay of %s reads in %.3f s: %.0f reads/s; the program alone for as long: %s reads/s; ratio %.3f\n' "$i" "$calls" "$took" "$rep" "$orig" "$(python3 -c "print($rep/$orig)")"
done
