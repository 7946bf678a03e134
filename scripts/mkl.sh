#!/usr/bin/env bash
# Intel oneMKL for `cargo build --features whisper-mkl` (Whisper's matrix products in MKL instead
# of ruy: stt.transcribe as fast as faster-whisper, whose own CTranslate2 wheel uses MKL too).
# Takes two wheels from PyPI (mkl-static and mkl-include, pinned by version and sha256), keeps only
# what the build links (MKL's ILP64 interface, its GNU OpenMP threading layer and its core, the
# headers), writes the Cargo configuration that links them, and prints MKLROOT for the build:
#
#   eval "$(bash scripts/mkl.sh)"            # MKLROOT for this shell
#   cargo install --locked --path crates/cli --features whisper-mkl --config "$MKLROOT/cargo-config.toml"
#
# Why a Cargo configuration: ct2rs finds MKL through intel-onemkl-prebuild (`links = "mkl"`), whose
# build script can link MKL's Intel OpenMP layer or its sequential one but not its GNU OpenMP layer.
# Intel's OpenMP runtime (libiomp5) can deadlock a process that forks while a parallel region runs
# (its pthread_atfork handler waits for a lock the region holds; the node forks ffmpeg, parecord
# and system.run children while a transcription may run), and sequential MKL is a third slower
# than ruy. GNU's libgomp has no such handler, and CTranslate2 built with OPENMP_RUNTIME=COMP (what
# faster-whisper's own wheel ships) uses it; `cargo-config.toml` overrides that build script with
# the three archives of this layout (Cargo's `[target.<triple>.mkl]` links override).
#
# Usage: scripts/mkl.sh [DIR]   DIR default: ${XDG_CACHE_HOME:-~/.cache}/clawmcp/mkl-<version>
# Needs python3 with pip and the network for PyPI (about 300 MB down, 660 MB kept: mkl_core
# alone is most of it). x86_64 only. Run again: prints the variable of the directory it made.
# MKL is under the Intel Simplified Software License; a binary built with it contains MKL, and
# needs GNU's OpenMP runtime at run time (libgomp.so.1: Debian's libgomp1, installed with gcc).
set -euo pipefail

VERSION=2026.2.0
# name sha256 (of the manylinux_2_28_x86_64 wheel PyPI serves for $VERSION)
WHEELS=(
  "mkl-static 090e439bf202b45579c75d2ba50ff7ead05752d553a06aba79c3ed2b5247921b"
  "mkl-include 889cc72057a1671fee1e9a8beb2fc4e0d222ba78c08b6d69584dae03fbec4822"
)
DIR="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/clawmcp/mkl-$VERSION}"

die() { echo "mkl.sh: $*" >&2; exit 1; }
print_exports() { printf 'export MKLROOT=%q\n' "$DIR"; }

if [[ -f "$DIR/.complete" ]]; then
  [[ -f "$DIR/cargo-config.toml" ]] ||
    die "$DIR is an older layout (Intel OpenMP, no cargo-config.toml): remove it and run again"
  print_exports
  exit 0
fi
[[ "$(uname -m)" == x86_64 ]] || die "Intel oneMKL is x86_64 only; on $(uname -m) build with the default features (ruy)"
command -v python3 >/dev/null || die "python3 with pip is needed (Debian: apt-get install python3-pip)"
[[ ! -e "$DIR" ]] || die "$DIR exists but is incomplete (no .complete): remove it and run again"

mkdir -p "$(dirname "$DIR")"
DIR="$(cd "$(dirname "$DIR")" && pwd)/$(basename "$DIR")" # absolute: cargo-config.toml names it
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

# Only the members the build links: lib/ (three archives) and include/ (every header).
python3 - "$STAGING" <<'PY'
import pathlib, shutil, sys, zipfile
staging = pathlib.Path(sys.argv[1])
keep_libs = {"libmkl_intel_ilp64.a", "libmkl_gnu_thread.a", "libmkl_core.a"}
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
# The links override (see the top): the paths are where the directory will be after the rename.
toml_string() { local s="${1//\\/\\\\}"; printf '"%s"' "${s//\"/\\\"}"; }
cat >"$STAGING/cargo-config.toml" <<TOML
# Written by scripts/mkl.sh: link Intel oneMKL $VERSION from this directory with its GNU OpenMP
# threading layer, in place of intel-onemkl-prebuild's build script (links = "mkl").
[target.x86_64-unknown-linux-gnu.mkl]
rustc-link-search = [$(toml_string "$DIR/lib")]
rustc-link-lib = ["static=mkl_intel_ilp64", "static=mkl_gnu_thread", "static=mkl_core"]
root = $(toml_string "$DIR")
include_path = $(toml_string "$DIR/include")
library_path = $(toml_string "$DIR/lib")
TOML
touch "$STAGING/.complete"
mv -T -- "$STAGING" "$DIR"
trap - EXIT
echo "mkl.sh: oneMKL $VERSION in $DIR" >&2
print_exports
