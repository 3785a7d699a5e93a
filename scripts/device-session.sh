#!/usr/bin/env bash
# device-session.sh: one full call on the GPU machine, from a copy of the working tree.
#
#   here:   scripts/device-session.sh --prepare      (fills .devdata: the clips, x264's
#           Debian packages, the commit id; .devdata is git-ignored: name it in `carry`)
#   there:  bash scripts/device-session.sh           (OUT: the device tool's output folder)
#
# There, in order (each step's log in $OUT, a summary at the end, the kept streams and the
# long logs as tarballs; at most 8 files come back):
#   1. x264 from .devdata/deb (for vidkern-bench rd's peer), when present;
#   2. scripts/device-check.sh (build, ctest, the GPU tests under the sanitizers in
#      VIDK_SANITIZERS, default "memcheck racecheck", on VIDK_SANITIZE_TESTS, default
#      encode_cuda);
#   3. scripts/device-stream.sh with KEEP (FRAMES, default 120): the kept cuda streams come
#      back as keep.tgz, to be judged here by `scripts/device-stream.sh --judge`;
#   4. vidkern-bench rd on the clips against x264 ultrafast, superfast, veryfast, medium (CAVLC, then
#      with --cabac), and at 1080p (300 frames, QP 30) for the speed against x264;
#   5. vidkern-bench encode at 1080p (threads and cuda).
# Skip steps with STEPS (default "check stream rd speed encode").
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dd=$root/.devdata
if [ "${1:-}" = --prepare ]; then
    mkdir -p "$dd/video" "$dd/deb" || exit 1
    cp "$root"/../shared/video/*.y4m "$dd/video/" 2>/dev/null || echo "note: no ../shared/video"
    (cd "$dd/deb" && apt-get download libx264-dev libx264-164 >/dev/null 2>&1) ||
        echo "note: x264's packages not downloaded"
    git -C "$root" rev-parse --short HEAD >"$dd/headc"
    du -sh "$dd"
    exit 0
fi
L=${OUT:?OUT: the output folder}
B=${VIDK_DEVICE_BUILD:-/tmp/vidk-session-build}
steps=${STEPS:-check stream rd speed encode}
has() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }
cd "$root" || exit 1
[ -d "$dd/deb" ] && ls "$dd"/deb/*.deb >/dev/null 2>&1 && dpkg -i "$dd"/deb/*.deb >"$L/dpkg.txt" 2>&1
export VIDK_GIT_COMMIT=${VIDK_GIT_COMMIT:-$(cat "$dd/headc" 2>/dev/null || echo '?')}
export JOBS=${JOBS:-16} VIDK_DEVICE_BUILD=$B VIDK_VIDEO_DIR=${VIDK_VIDEO_DIR:-$dd/video}
export VIDK_SANITIZERS=${VIDK_SANITIZERS-memcheck racecheck}
export VIDK_SANITIZE_TESTS=${VIDK_SANITIZE_TESTS:-^(encode_cuda)$}
summary=$L/session.txt
: >"$summary"
if has check; then
    OUT=$L/check timeout 420 bash scripts/device-check.sh >"$L/check.txt" 2>&1
    echo "device-check exit $?" | tee -a "$summary"
    grep -E "RESULT|FAIL" "$L/check.txt" >>"$summary"
fi
if [ -x "$B/tools/vidkern" ] && has stream; then
    rm -rf /tmp/keep && mkdir -p /tmp/keep
    KEEP=/tmp/keep FRAMES=${FRAMES:-120} OUT=$L/stream timeout 300 \
        bash scripts/device-stream.sh "$B" "$VIDK_VIDEO_DIR" >"$L/stream.txt" 2>&1
    echo "device-stream exit $?" | tee -a "$summary"
    grep -cE "^same" "$L/stream.txt" | sed 's/^/rows same: /' >>"$summary"
    grep -E "DIFFER|FAIL" "$L/stream.txt" >>"$summary"
    tar czf "$L/keep.tgz" -C /tmp keep
fi
BE=$B/bench/vidkern-bench
if [ -x "$BE" ] && has rd; then
    for m in "" --cabac; do
        timeout 240 "$BE" rd --video "$VIDK_VIDEO_DIR" --presets ultrafast,superfast,veryfast,medium \
            --ranges 16 --x264-threads 16 $m >"$L/rd${m:+-cabac}.txt" 2>&1
        echo "rd $m exit $?" >>"$summary"
        grep -A3 "mean BD-rate" "$L/rd${m:+-cabac}.txt" >>"$summary"
    done
fi
if [ -x "$BE" ] && has speed; then
    timeout 150 "$BE" rd --video "$VIDK_VIDEO_DIR" --clips none --sizes 1080p --frames 300 \
        --qps 30 --ranges 16 --presets ultrafast,veryfast --x264-threads 16 >"$L/speed.txt" 2>&1
    echo "speed exit $?" >>"$summary"
    grep -A2 "frames/s (mean" "$L/speed.txt" >>"$summary"
fi
if [ -x "$BE" ] && has encode; then
    timeout 120 "$BE" encode --codecs h264 --sizes 1080p --ranges 16,32 --backends threads,cuda \
        --source real >"$L/encode.txt" 2>&1
    echo "encode exit $?" >>"$summary"
fi
(cd "$L" && tar czf logs.tgz --ignore-failed-read check stream rd*.txt speed.txt encode.txt \
    dpkg.txt 2>/dev/null
    rm -rf check stream rd*.txt speed.txt encode.txt dpkg.txt)
cat "$summary"
