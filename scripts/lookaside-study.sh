#!/usr/bin/env bash
# The lookaside study at small scale: `fsbench build --src` over a source tree served by
# `fsbench remote` at the four network presets, with no lookaside tree, with one holding
# half of the files unchanged, and with one identical to the server's; the build's elapsed
# time and the bytes fetched for each. Needs root (FUSE).
#
#   scripts/lookaside-study.sh [FILES] [FILE_BYTES] [WORKDIR]
set -euo pipefail
files=${1:-30}
size=${2:-4096}
work=${3:-/dev/shm/fsbench-lookaside-study}
bin=${FSBENCH:-target/release/fsbench}
rm -rf "$work"
mkdir -p "$work/srv" "$work/same" "$work/half" "$work/mnt" "$work/out"
trap '"$bin" remote remove la-study >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
for i in $(seq "$files"); do
  head -c "$size" /dev/urandom | base64 -w 76 | head -c "$size" > "$work/srv/f$i.c"
done
for i in $(seq 5); do head -c 1024 /dev/urandom | base64 -w 76 | head -c 1024 > "$work/srv/h$i.h"; done
cp "$work"/srv/* "$work/same/"
cp "$work"/srv/* "$work/half/"
# Half of the lookaside files differ (a newer version of the tree on the server).
for i in $(seq 1 2 "$files"); do echo "// changed" >> "$work/half/f$i.c"; done
printf '%-8s %-10s %10s %12s %8s\n' preset lookaside build_s fetched_B hits
for preset in 100mbit 10mbit 1mbit 100kbit; do
  for la in none half same; do
    args=(remote create la-study --server "$work/srv" --mount "$work/mnt" --preset "$preset")
    [ "$la" = none ] || args+=(--lookaside "$work/$la")
    "$bin" "${args[@]}" >/dev/null
    "$bin" build --src "$work/mnt" --dir "$work/out" -j 1 --cpu-ms 0 --json "$work/b.json" >/dev/null 2>&1
    "$bin" remote stats la-study --json > "$work/s.json"
    "$bin" remote remove la-study >/dev/null
    python3 - "$preset" "$la" "$work/b.json" "$work/s.json" <<'PY'
import json, sys
preset, la, b, s = sys.argv[1:5]
b = json.load(open(b)); s = json.load(open(s))
def find(d, *keys):
    for k in keys:
        for path in [k]:
            if path in d: return d[path]
    for v in d.values():
        if isinstance(v, dict):
            r = find(v, *keys)
            if r is not None: return r
    return None
fetched = find(s, "bytes_fetched", "fetched_bytes")
hits = find(s, "lookaside_hits")
print("%-8s %-10s %10.3f %12s %8s" % (preset, la, b["duration_s"], fetched, hits))
PY
  done
done
