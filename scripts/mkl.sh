#!/usr/bin/env bash
# Intel oneMKL for `cargo build --features whisper-mkl` (Whisper's matrix products in MKL instead
# of ruy: stt.transcribe as fast as faster-whisper, whose own CTranslate2 wheel uses MKL too).
# Takes three wheels from PyPI (mkl-static, mkl-include, intel-openmp, pinned by version and
# sha256), keeps only what the build links (MKL's ILP64 interface, its OpenMP threading layer and
# core, Intel's OpenMP runtime, the headers) and prints the two variables the build reads:
#
#   eval "$(bash scripts/mkl.sh)"            # MKLROOT and INTELROOT for this shell
#   cargo install --locked --path crates/cli --features whisper-mkl
#
# Usage: scripts/mkl.sh [DIR]   DIR default: ${XDG_CACHE_HOME:-~/.cache}/clawmcp/mkl-<version>
# Needs python3 with pip and the network for PyPI (about 300 MB down, 660 MB kept: mkl_core
# alone is most of it). x86_64 only. Run again: prints the variables of the directory it made.
# MKL is under the Intel Simplified Software License; a binary built with it contains MKL.
set -euo pipefail

VERSION=2026.2.0
# name sha256 (of the manylinux_2_28_x86_64 wheel PyPI serves for $VERSION)
WHEELS=(
  "mkl-static 090e439bf202b45579c75d2ba50ff7ead05752d553a06aba79c3ed2b5247921b"
  "mkl-include 889cc72057a1671fee1e9a8beb2fc4e0d222ba78c08b6d69584dae03fbec4822"
  "intel-openmp 2308a1a3e74718a9cd8cccf218c34d8cd80b43d3b89dfbb01b38dee205c50980"
)
DIR="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/clawmcp/mkl-$VERSION}"

die() { echo "mkl.sh: $*" >&2; exit 1; }
print_exports() { printf 'export MKLROOT=%q INTELROOT=%q\n' "$DIR" "$DIR"; }

if [[ -f "$DIR/.complete" ]]; then
  print_exports
  exit 0
fi
[[ "$(uname -m)" == x86_64 ]] || die "Intel oneMKL is x86_64 only; on $(uname -m) build with the default features (ruy)"
command -v python3 >/dev/null || die "python3 with pip is needed (Debian: apt-get install python3-pip)"
[[ ! -e "$DIR" ]] || die "$DIR exists but is incomplete (no .complete): remove it and run again"

mkdir -p "$(dirname "$DIR")"
STAGING="$(mktemp -d "$DIR.partial.XXXXXX")"
trap 'rm -rf -- "$STAGING"' EXIT
specs=()
for wheel in "${WHEELS[@]}"; do specs+=("${wheel%% *}==$VERSION"); done
echo "mkl.sh: downloading ${specs[*]} from PyPI" >&2
python3 -m pip download -q --no-deps --only-binary=:all: -d "$STAGING/wheels" "${specs[@]}" >&2 ||
  die "pip download failed (is PyPI reachable?)"

for wheel in "${WHEELS[@]}"; do
  name="${wheel%% *}" expected="${wheel##* }"
  file="$(find "$STAGING/wheels" -name "${name//-/_}-$VERSION-*.whl" -print -quit)"
  [[ -n "$file" ]] || die "pip did not fetch $name $VERSION"
  actual="$(sha256sum "$file" | cut -d' ' -f1)"
  [[ "$actual" == "$expected" ]] || die "$(basename "$file") has sha256 $actual, not the pinned $expected"
done

# Only the members the build links: lib/ (four archives) and include/ (every header).
python3 - "$STAGING" <<'PY'
import pathlib, shutil, sys, zipfile
staging = pathlib.Path(sys.argv[1])
keep_libs = {"libmkl_intel_ilp64.a", "libmkl_intel_thread.a", "libmkl_core.a", "libiomp5.a"}
for wheel in sorted((staging / "wheels").glob("*.whl")):
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            parts = pathlib.PurePosixPath(member.filename).parts
            # <name>-<version>.data/data/{lib,include}/...
            if len(parts) < 4 or parts[1] != "data" or member.is_dir() or ".." in parts:
                continue
            kind, rest = parts[2], parts[3:]
            if (kind == "lib" and len(rest) == 1 and rest[0] in keep_libs) or kind == "include":
                target = staging.joinpath(kind, *rest)
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as source, open(target, "wb") as out:
                    shutil.copyfileobj(source, out)
missing = keep_libs - {p.name for p in (staging / "lib").glob("*.a")}
if missing:
    sys.exit(f"mkl.sh: the wheels lack {sorted(missing)}")
PY
rm -rf -- "$STAGING/wheels"
touch "$STAGING/.complete"
mv -T -- "$STAGING" "$DIR"
trap - EXIT
echo "mkl.sh: oneMKL $VERSION in $DIR" >&2
print_exports
