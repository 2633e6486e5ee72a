#!/usr/bin/env bash
# One rank under mpirun against the plain run: fsbench's multi-client layer should cost
# (almost) nothing. Alternates the two, ROUNDS times each, on the same workload and
# directory, and prints each pair's ops/s and the median ratio (goal: >= 0.97).
#
#   cargo build --release --features mpi
#   scripts/bench-mpi-one-rank.sh [ROUNDS] [DIR] [-- extra run arguments]
set -euo pipefail
rounds=${1:-5}
dir=${2:-/dev/shm}
shift $(( $# > 2 ? 2 : $# )) || true
[ "${1:-}" = "--" ] && shift
extra=("$@")
[ ${#extra[@]} -gt 0 ] || extra=(-s nfiles=2000 -s nthreads=2 --duration 5)
bin=${FSBENCH:-target/release/fsbench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ops() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["ops_per_s"])' "$1"; }
ratios=()
for i in $(seq "$rounds"); do
  "$bin" run fileserver --dir "$dir" --quiet --json "$tmp/plain.json" "${extra[@]}" 2>/dev/null >/dev/null
  mpirun --allow-run-as-root --bind-to none -np 1 "$bin" run fileserver --dir "$dir" --quiet --json "$tmp/mpi.json" "${extra[@]}" 2>/dev/null >/dev/null
  p=$(ops "$tmp/plain.json"); m=$(ops "$tmp/mpi.json")
  r=$(python3 -c "print($m/$p)")
  ratios+=("$r")
  printf 'round %d: plain %.0f ops/s, mpirun -np 1 %.0f ops/s, ratio %.3f\n' "$i" "$p" "$m" "$r"
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{a[NR]=$1} END {printf "median ratio %.3f over %d rounds\n", a[int((NR+1)/2)], NR}'
