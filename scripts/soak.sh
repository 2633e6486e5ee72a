#!/usr/bin/env bash
# Memory soak: run a workload for a long time and print fsbench's resident memory (VmRSS)
# every INTERVAL seconds, then the growth after the first minute. A run's memory should be
# flat once every thread's histograms have met the run's range of latencies (about a minute).
#
#   scripts/soak.sh                           # fileserver for one hour, RSS every 30 s
#   DURATION=180 INTERVAL=10 scripts/soak.sh  # a three-minute check
#   WORKLOAD=varmail DIR=/mnt/test scripts/soak.sh
set -euo pipefail
FSBENCH=${FSBENCH:-target/release/fsbench}
WORKLOAD=${WORKLOAD:-fileserver}
DURATION=${DURATION:-3600}
INTERVAL=${INTERVAL:-30}
DIR=${DIR:-${TMPDIR:-/tmp}}
OUT=$(mktemp /tmp/fsbench-soak.XXXXXX.json)
"$FSBENCH" run "$WORKLOAD" --dir "$DIR" --duration "$DURATION" -q --json "$OUT" ${SET:+-s "$SET"} >/dev/null &
pid=$!
trap 'kill -INT $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -f "$OUT"' EXIT
start=$(date +%s)
first_minute=""
printf '%8s %10s\n' t_s rss_mb
# Sample while the measured run goes on (not the clean-up after it).
while kill -0 "$pid" 2>/dev/null && [ $(($(date +%s) - start + INTERVAL)) -le "$DURATION" ]; do
    sleep "$INTERVAL"
    rss=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status 2>/dev/null || true)
    [ -n "$rss" ] || break
    t=$(($(date +%s) - start))
    printf '%8d %10.1f\n' "$t" "$(echo "$rss / 1024" | bc -l)"
    if [ -z "$first_minute" ] && [ "$t" -ge 60 ]; then first_minute=$rss; fi
    last=$rss
done
wait "$pid" || true
if [ -n "$first_minute" ]; then
    printf 'RSS after the first minute: %.1f MB, at the last sample: %.1f MB (%+.1f MB)\n' \
        "$(echo "$first_minute / 1024" | bc -l)" "$(echo "$last / 1024" | bc -l)" \
        "$(echo "($last - $first_minute) / 1024" | bc -l)"
fi
