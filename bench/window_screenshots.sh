#!/usr/bin/env bash
# The whole window as a person sees it on a real X server with a window manager, at one screen size:
# normal, presenter (F5) and dark (Ctrl+T), driven by xdotool (Xvfb + openbox + xdotool + ImageMagick import).
#   bash bench/window_screenshots.sh 1280x720 assets/screenshots
#   bash bench/window_screenshots.sh 1920x1080 assets/screenshots
# writes window_<size>_normal.png, window_<size>_presenter.png, window_<size>_dark.png (the view-by-view
# pictures come from python bench/readme_screenshots.py). The frame shown: two barriers on, three steps more.
set -u
SIZE=${1:-1280x720}; OUT=${2:-assets/screenshots}
W=${SIZE%x*}; H=${SIZE#*x}
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && PY=.venv/bin/python
mkdir -p "$OUT"
DFILE=$(mktemp)
exec 3>"$DFILE"
Xvfb -displayfd 3 -screen 0 "${W}x${H}x24" -nolisten tcp >/dev/null 2>&1 &
XPID=$!
for _ in $(seq 100); do [ -s "$DFILE" ] && break; sleep 0.2; done
export DISPLAY=":$(cat "$DFILE")"
openbox >/dev/null 2>&1 &
OPID=$!
sleep 1
PYTHONPATH=$PWD "$PY" -m gpuviz >"$OUT/.window_screenshots_$SIZE.log" 2>&1 &
APID=$!
WID=
for _ in $(seq 300); do
  WID=$(xdotool search --onlyvisible --name gpuviz 2>/dev/null | tail -1); [ -n "$WID" ] && break
  kill -0 "$APID" 2>/dev/null || { cat "$OUT/.window_screenshots_$SIZE.log" >&2; kill "$OPID" "$XPID"; exit 1; }
  sleep 0.5
done
xdotool search --sync --name gpuviz windowactivate --sync >/dev/null 2>&1
sleep "${SETTLE:-5}"
# the whole screen, less the window manager's title bar
xdotool windowmove --sync "$WID" 0 0; sleep 1
TOP=$(xwininfo -id "$WID" | awk '/Absolute upper-left Y/ {print $4}')
xdotool windowsize --sync "$WID" "$W" $((H - TOP)); xdotool windowmove --sync "$WID" 0 0
key() { xdotool key --window "$WID" "$@"; sleep "${PAUSE:-3}"; }
for k in Down Down Right Right Right; do key "$k"; done
import -window root "$OUT/window_${SIZE}_normal.png"
key F5; sleep "${SETTLE:-5}"
import -window root "$OUT/window_${SIZE}_presenter.png"
key F5; sleep "${SETTLE:-5}"
key ctrl+t; sleep 2
import -window root "$OUT/window_${SIZE}_dark.png"
kill "$APID"; sleep 1; kill "$OPID" "$XPID" 2>/dev/null
wait "$APID" "$OPID" "$XPID" 2>/dev/null
rm -f "$DFILE" "$OUT/.window_screenshots_$SIZE.log"
