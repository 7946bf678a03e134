#!/usr/bin/env bash
# Runs every cargo-fuzz target for a bounded time: what CI runs (`bash fuzz/run.sh 45`), and the
# way to run them longer by hand (`bash fuzz/run.sh 3600 jsonrpc`). See fuzz/README.md.
#
#   bash fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]      (default: 45 s, every target)
#
# - cargo-fuzz is installed (pinned, --locked) only if it is missing.
# - The stable toolchain is used with RUSTC_BOOTSTRAP=1: cargo-fuzz needs nightly-only flags
#   (-Z sanitizer options, sancov passes), and this machine has no nightly.
# - Built once for all targets, without AddressSanitizer (-s none): the workspace denies
#   unsafe code, so ASan would only watch dependencies, at twice the build time and half the
#   speed. Run with FUZZ_SANITIZER=address for that.
# - Debug assertions and overflow checks are on (cargo-fuzz's default): an overflow is a crash.
# - Each target starts from its committed seeds (fuzz/corpus/<target>, read only) plus what
#   earlier runs on this machine found (fuzz/target/corpus/<target>, where new inputs go).
# - FUZZ_TARGET_DIR moves fuzz/target (build, logs, work corpus, crash files) elsewhere.
# - A crash fails the run and prints the input (base64) and how to reproduce and minimise it.
set -euo pipefail

FUZZ_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CARGO_FUZZ_VERSION=0.13.2
SECONDS_PER_TARGET="${1:-45}"
shift || true
SANITIZER="${FUZZ_SANITIZER:-none}"
TARGET_DIR="${FUZZ_TARGET_DIR:-$FUZZ_DIR/target}"
export RUSTC_BOOTSTRAP=1

cd "$FUZZ_DIR"
phase_start=$SECONDS
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz $CARGO_FUZZ_VERSION (cargo install --locked)"
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi
echo "$(cargo fuzz --version) ready in $((SECONDS - phase_start)) s"

TARGETS=("$@")
[[ ${#TARGETS[@]} -gt 0 ]] || mapfile -t TARGETS < <(cargo fuzz list)
[[ ${#TARGETS[@]} -gt 0 ]] || { echo "no fuzz targets in $FUZZ_DIR/Cargo.toml" >&2; exit 1; }

phase_start=$SECONDS
mkdir -p "$TARGET_DIR"
# One build for every target (cargo fuzz build takes one target or none, meaning all).
# --target-dir keeps these artifacts (other RUSTFLAGS) out of the workspace's target dir.
build_only=()
[[ ${#TARGETS[@]} -eq 1 ]] && build_only=("${TARGETS[0]}")
if ! cargo fuzz build --sanitizer "$SANITIZER" --target-dir "$TARGET_DIR" "${build_only[@]}" \
  >"$TARGET_DIR/build.log" 2>&1; then
  tail -n 60 "$TARGET_DIR/build.log" >&2
  echo "cargo fuzz build failed (log: $TARGET_DIR/build.log)" >&2
  exit 1
fi
echo "built ${TARGETS[*]} in $((SECONDS - phase_start)) s"

for target in "${TARGETS[@]}"; do
  phase_start=$SECONDS
  work_corpus="$TARGET_DIR/corpus/$target"
  artifacts="$TARGET_DIR/artifacts/$target/"
  mkdir -p "$work_corpus" "$artifacts"
  log="$TARGET_DIR/$target.log"
  # -timeout: one input taking 10 s is a hang, reported as a crash.
  if cargo fuzz run --sanitizer "$SANITIZER" --target-dir "$TARGET_DIR" "$target" \
    "$work_corpus" "$FUZZ_DIR/corpus/$target" -- \
    -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -artifact_prefix="$artifacts" -print_final_stats=1 \
    >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "$target: ${runs:-?} inputs in $((SECONDS - phase_start)) s, no crash"
  else
    echo "$target: CRASH (log: $log)" >&2
    grep -E -A12 'panicked at|ERROR: libFuzzer|SUMMARY' "$log" | head -n 40 >&2 || tail -n 40 "$log" >&2
    for crash in "$artifacts"*; do
      [[ -f $crash ]] || continue
      echo "input $crash, base64 (decode with: base64 -d > crash):" >&2
      head -c 8192 "$crash" | base64 -w 0 >&2
      echo >&2
    done
    echo "reproduce: cargo fuzz run -s $SANITIZER $target <file>; minimise: cargo fuzz tmin -s $SANITIZER $target <file>" >&2
    exit 1
  fi
done
