#!/bin/sh
# Render an HTML report to a PNG with headless Chromium, for a developer to look at.
# Usage: scripts/render-report.sh report.html out.png [WIDTHxHEIGHT]
set -eu
html=$1
png=$2
size=${3:-1400x3000}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "no chromium found (apt-get install chromium)" >&2; exit 1; }
abs=$(cd "$(dirname "$html")" && pwd)/$(basename "$html")
out=$(cd "$(dirname "$png")" && pwd)/$(basename "$png")
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --window-size="$(echo "$size" | tr x ,)" --screenshot="$out" "file://$abs" 2>/dev/null
echo "wrote $out"
