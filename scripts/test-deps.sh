#!/usr/bin/env bash
# Installs the Debian packages the test suite drives for real (no mocks):
#   xvfb, dunst          - a display and a notification daemon for system.notify tests
#   xclip                - the other program that pastes what clipboard.write put there and copies what clipboard.read reads
#   sway, wl-clipboard   - a headless Wayland compositor and wl-copy/wl-paste for the clipboard's Wayland backend
#   dbus, dbus-bin, systemd (busctl, used by dunstctl) - private session buses; systemd's
#                          systemd-analyze also verifies the unit `clawmcp node service install` writes
#   groff-base           - renders `clawmcp man`'s pages in the man page tests
#   iproute2             - network namespaces for device.status network tests
#   e2fsprogs (chattr)   - immutable directories for permission tests run as root
#   procps               - ps/pgrep in process-tree tests
#   ffmpeg               - screen.record's and camera.*'s backend (x11grab, lavfi test sources,
#                          libx264); ffprobe checks their clips
#   cmake                - builds CTranslate2 (the ct2rs crate, feature `whisper`) for stt.transcribe
#   espeak-ng            - speaks the nonce sentences the stt.transcribe tests transcribe back
#   x11-xserver-utils    - xrandr --setmonitor, xrdb: monitors and a desktop scale on Xvfb
#   xdg-desktop-portal, xdg-desktop-portal-wlr, grim, pipewire, xdg-desktop-portal-gtk
#                        - screen.snapshot on Wayland: the Screenshot portal on sway headless; the
#                          wlr backend shoots with grim and will not start without a PipeWire
#                          daemon; the portal (1.15+) serves Screenshot only with an Access
#                          backend, which -gtk provides
# Idempotent: packages already present are skipped. Needs root (or sudo) and apt.
set -euo pipefail

packages=(xvfb xclip sway wl-clipboard dunst dbus dbus-bin systemd groff-base iproute2 e2fsprogs procps ffmpeg cmake espeak-ng x11-xserver-utils
  xdg-desktop-portal xdg-desktop-portal-wlr grim pipewire xdg-desktop-portal-gtk)

missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "test-deps: all present (${packages[*]})"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "test-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "test-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
