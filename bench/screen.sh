#!/usr/bin/env bash
# Benchmark `screen.snapshot` at 1920x1080 against the capture floor and against what a user
# would run instead, side by side in one run. A script that reports numbers, not a test.
#
#   floor: crates/bench-floor's clawmcp-bench-x11grab, one process that connects, fetches the
#     root's pixels once (MIT-SHM, and the core GetImage) and exits: no encoding, no transport
#   ours: `clawmcp call screen.snapshot` against a running `clawmcp node` (a whole client
#     process per shot, HTTP, capture, encode, base64, the JSON answer), full size png and jpeg,
#     and the default (png kept under 1.15 megapixels)
#   alternatives: ImageMagick `import -window root`, `ffmpeg -f x11grab -frames:v 1`, `scrot`
#     (each writing a PNG, as a user would)
#   two scenes on a private Xvfb: "desktop" (flat panels and text, what screens mostly show)
#     and "photo" (a plasma fractal: PNG's worst case)
# Every command runs under hyperfine in one interleaved session per scene; the report gives
# mean and median, ours/floor and alternative/ours ratios, and the bytes each one wrote.
#
# Usage: bench/screen.sh [--runs N] [--write-results]
#   --runs           hyperfine runs per command (default 20)
#   --write-results  write bench/SCREEN_RESULTS.md from this run
# Needs hyperfine, Xvfb, ImageMagick, ffmpeg, scrot, python3 (Debian: hyperfine xvfb
# imagemagick ffmpeg scrot python3). Environment: CLAWMCP_BENCH_BIN / CLAWMCP_BENCH_X11GRAB_BIN
# (prebuilt release binaries; default: cargo build --release), CARGO_TARGET_DIR.
# Everything is private (Unix socket X server, loopback node) and stopped by PID.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
E2E_LOG_TAG=bench-screen
# shellcheck source-path=SCRIPTDIR source=../e2e/lib/common.sh
source "$ROOT/e2e/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=../e2e/lib/node_host.sh
source "$ROOT/e2e/lib/node_host.sh"
# shellcheck source-path=SCRIPTDIR source=../e2e/lib/xvfb.sh
source "$ROOT/e2e/lib/xvfb.sh"

RUNS=20 WRITE_RESULTS=0
COMMAND_LINE="bench/screen.sh $*"
e2e_parse_options "runs" "$@"
if ! [[ "$RUNS" =~ ^[0-9]+$ ]] || ((RUNS < 3 || RUNS > 200)); then
  e2e_die "--runs must be 3..200"
fi
for tool in hyperfine Xvfb convert display import ffmpeg scrot python3; do
  command -v "$tool" >/dev/null 2>&1 ||
    e2e_die "$tool not found (Debian: apt-get install hyperfine xvfb imagemagick ffmpeg scrot python3)"
done

if [[ -z "${CLAWMCP_BENCH_BIN:-}" || -z "${CLAWMCP_BENCH_X11GRAB_BIN:-}" ]]; then
  e2e_log "building clawmcp and clawmcp-bench-x11grab (release)"
  (cd "$ROOT" && cargo build --release -p clawmcp -p clawmcp-bench-floor) || e2e_die "release build failed"
fi
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN="${CLAWMCP_BENCH_BIN:-$TARGET/release/clawmcp}"
GRAB="${CLAWMCP_BENCH_X11GRAB_BIN:-$TARGET/release/clawmcp-bench-x11grab}"
[[ -x "$BIN" && -x "$GRAB" ]] || e2e_die "missing binary: $BIN or $GRAB"

TMP="$(mktemp -d /tmp/clawmcp-bench-screen.XXXXXX)"
DATA_DIR="$TMP/data"
mkdir -m 700 "$DATA_DIR"
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
  e2e_stop_node || true
  e2e_stop_xvfb
  rm -rf -- "$TMP"
}
trap cleanup EXIT

WIDTH=1920 HEIGHT=1080
e2e_start_xvfb "${WIDTH}x${HEIGHT}x24" "$TMP/xvfb.log" || e2e_die "no X server"
(umask 077 && printf '{"NodeScreenEnabled": true}\n' >"$DATA_DIR/settings.json")
e2e_start_node "$BIN" "$DATA_DIR" "$TMP/node.log" || e2e_die "clawmcp node did not start"

# The scenes, drawn with ImageMagick and set as the root window's background.
convert -size "${WIDTH}x${HEIGHT}" xc:'#2b2d31' \
  -fill '#f2f3f5' -draw 'rectangle 80,60 1180,1000' -fill '#1e1f22' -draw 'rectangle 1220,60 1840,1000' \
  -fill '#5865f2' -draw 'rectangle 80,60 1180,110' -font DejaVu-Sans -pointsize 15 -fill '#313338' \
  -annotate +100,160 "$(for i in $(seq 40); do printf 'line %02d: the quick brown fox jumps over the lazy dog 0123456789\\n' "$i"; done)" \
  -fill '#dbdee1' -annotate +1240,160 "$(for i in $(seq 40); do printf '%02d  ~/src/clawmcp $ cargo test -p clawmcp-node\\n' "$i"; done)" \
  -depth 8 "$TMP/desktop.png"
convert -size "${WIDTH}x${HEIGHT}" -seed 7 plasma:fractal -depth 8 "$TMP/photo.png"

printf '{"maxWidth":%d,"includePointer":false}\n' "$WIDTH" >"$TMP/png.json"
printf '{"maxWidth":%d,"includePointer":false,"format":"jpeg"}\n' "$WIDTH" >"$TMP/jpeg.json"
printf '{"includePointer":false}\n' >"$TMP/default.json"
CALL="$BIN call --url $NODE_HOST_URL --data-dir $DATA_DIR screen.snapshot --params"

for scene in desktop photo; do
  # `display` exits non-zero after setting the root even when it worked: check the pixels.
  display -window root "$TMP/$scene.png" 2>/dev/null || true
  import -window root "$TMP/check.png"
  [[ "$(convert "$TMP/check.png" -format '%[pixel:p{40,40}]' info:)" == \
    "$(convert "$TMP/$scene.png" -format '%[pixel:p{40,40}]' info:)" ]] ||
    e2e_die "the $scene scene is not on the screen"
  for mode in png jpeg default; do
    $CALL "@$TMP/$mode.json" >"$TMP/$scene-$mode.meta.json" || e2e_die "screen.snapshot ($mode) failed"
  done
  e2e_log "$scene: hyperfine, $RUNS runs per command"
  hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$TMP/$scene.hyperfine.json" \
    -n floor-shm "$GRAB shm" \
    -n floor-core "$GRAB core" \
    -n ours-png "$CALL @$TMP/png.json" \
    -n ours-jpeg "$CALL @$TMP/jpeg.json" \
    -n ours-default "$CALL @$TMP/default.json" \
    -n import "import -window root $TMP/$scene-import.png" \
    -n ffmpeg "ffmpeg -loglevel error -y -f x11grab -video_size ${WIDTH}x${HEIGHT} -i $DISPLAY -frames:v 1 $TMP/$scene-ffmpeg.png" \
    -n scrot "scrot -o $TMP/$scene-scrot.png" >"$TMP/$scene.hyperfine.txt"
done
grep 'screen captured' "$TMP/node.log" | tail -n 3 >&2 || true

report_args=(--tmp "$TMP" --runs "$RUNS" --command "$COMMAND_LINE" --size "${WIDTH}x${HEIGHT}")
((WRITE_RESULTS)) && report_args+=(--markdown "$HERE/SCREEN_RESULTS.md")
python3 "$HERE/screen_report.py" "${report_args[@]}"
if ((WRITE_RESULTS)); then bash "$HERE/results.sh"; fi
