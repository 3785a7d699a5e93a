#!/usr/bin/env bash
# device-stream.sh: the H.264 stream on the GPU machine, after a build (device-check.sh).
#
#   scripts/device-stream.sh BUILD CLIPDIR
#
# 1. cuda against threads: the same stream bytes for a covering set of parameters (sizes
#    that are not multiples of 16, QP 0 .. 51, keyints, ranges, slices, the real clips and a
#    1080p mosaic), also with the host entropy coder (VIDK_STREAM_HOST=1) where the build
#    has the device one; prints "same" or "DIFFER" per row and exits 1 on any difference;
# 2. FFmpeg's decode against --recon when ffmpeg is installed (tests/stream_check.py);
# 3. whole-file timings of `vidkern encode -o` on a 300-frame 1080p mosaic, from a file (R 16,
#    32, 16 with --no-deblock, 16 with --i4x4 --i8x8, 16 with --cabac and 17 slices, 16 with --cabac, 17 slices, --i4x4 --i8x8;
#    16 with --cabac, 17 slices, --i4x4 --i8x8 and 2 B-frames, fixed and adaptive;
#    all-intra: 60 frames --keyint 1, with and without I_NxN, cuda only)
#    and from stdin (R 16), cuda
#    and threads (host wall clock,
#    stages, host loop split).
#
# With KEEP=DIR, each cuda stream of step 1 is kept as DIR/sNN.264 beside DIR/sNN.md5 (the
# MD5 of its reconstruction's samples, Y4M headers left out), so that FFmpeg on another
# machine judges the GPU's own streams: `scripts/device-stream.sh --judge DIR` decodes each
# with `ffmpeg -v error` (which must print nothing) and compares the MD5s.
#
# Environment: OUT (logs; default BUILD/logs), FRAMES (default 300), KEEP.
set -u -o pipefail
# The MD5 of a Y4M file's frame samples (what `ffmpeg -f rawvideo` of the same frames gives).
y4m_md5() {
    python3 -c '
import hashlib, sys
d = open(sys.argv[1], "rb").read()
i = d.index(b"\n") + 1
tags = {t[:1]: t[1:] for t in d[:i].split()[1:]}
n = int(tags[b"W"]) * int(tags[b"H"]) * 3 // 2  # the 8-bit 4:2:0 of vidkern encode --recon
h = hashlib.md5()
while i < len(d):
    i = d.index(b"\n", i) + 1
    h.update(d[i:i + n])
    i += n
print(h.hexdigest())' "$1"
}
if [ "${1:-}" = --judge ]; then
    dir=${2:?usage: device-stream.sh --judge DIR}
    bad=0 n=0 e=$(mktemp)
    for s in "$dir"/s*.264; do
        want=$(cat "${s%.264}.md5")
        got=$(ffmpeg -nostdin -v error -threads 1 -f h264 -i "$s" -f rawvideo -pix_fmt yuv420p \
            -fps_mode passthrough - 2>"$e" | md5sum | cut -d' ' -f1)
        r=same
        [ "$got" = "$want" ] || { r=DIFFER; bad=1; }
        [ -s "$e" ] && { r="$r FFMPEG-PRINTED"; bad=1; cat "$e"; }
        n=$((n + 1))
        echo "$r  $(basename "$s")  $(cat "${s%.264}.args" 2>/dev/null)"
    done
    echo "judged $n cuda streams: $([ $bad = 0 ] && echo 'all decode to their reconstruction' || echo FAILED)"
    exit $bad
fi
build=${1:?usage: device-stream.sh BUILD CLIPDIR}
clips=${2:?usage: device-stream.sh BUILD CLIPDIR}
out=${OUT:-$build/logs}
frames=${FRAMES:-300}
mkdir -p "$out"
V=$build/tools/vidkern
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0

python3 "$(dirname "$0")/mosaic-y4m.py" "$clips/basketballpass_416x240_50fps_100f.y4m" 1920 1080 \
    "$frames" "$tmp/m1080.y4m" || exit 1

echo "== cuda against threads (stream bytes)"
while IFS= read -r args; do
    [ -n "$args" ] || continue
    # shellcheck disable=SC2086
    "$V" encode $args -o "$tmp/c.264" --recon "$tmp/c.y4m" --backend cuda --quiet \
        >/dev/null 2>"$tmp/e" || { cat "$tmp/e"; bad=1; }
    # shellcheck disable=SC2086
    "$V" encode $args -o "$tmp/t.264" --backend threads --quiet >/dev/null 2>"$tmp/e" ||
        { cat "$tmp/e"; bad=1; }
    # shellcheck disable=SC2086
    VIDK_STREAM_HOST=1 "$V" encode $args -o "$tmp/h.264" --backend cuda --quiet >/dev/null \
        2>"$tmp/e" || { cat "$tmp/e"; bad=1; }
    r=same
    cmp -s "$tmp/c.264" "$tmp/t.264" || { r=DIFFER; bad=1; }
    cmp -s "$tmp/h.264" "$tmp/t.264" || { r="$r DIFFER(host)"; bad=1; }
    if command -v ffmpeg >/dev/null; then
        python3 tests/stream_check.py "$tmp/c.264" "$tmp/c.y4m" >"$tmp/j" 2>&1 ||
            { r="$r FFMPEG-FAIL"; bad=1; cat "$tmp/j"; }
    fi
    if [ -n "${KEEP:-}" ]; then
        nk=$(printf 's%02d' "${nk:-0}")
        mkdir -p "$KEEP" && cp "$tmp/c.264" "$KEEP/$nk.264" && y4m_md5 "$tmp/c.y4m" >"$KEEP/$nk.md5"
        echo "$args" | sed "s|$tmp/||; s|$clips/||" >"$KEEP/$nk.args"
        nk=$((10#${nk#s} + 1))
    fi
    echo "$r  $(stat -c %s "$tmp/c.264") bytes  $args"
done <<EOF
--size 176x100 --gen-frames 6 --qp 22 --range 8 --slices 3 --cavlc
--size 200x120 --gen-frames 8 --qp 0 --keyint 3 --range 6 --cavlc
--size 18x18 --gen-frames 4 --qp 51 --cavlc
--size 1918x1080 --gen-frames 3 --qp 37 --range 4 --slices 4 --cavlc
$clips/akiyo_176x144_30fps_30f.y4m --qp 1 --range 0 --cavlc
$clips/cars_320x240_30fps_30f.y4m --qp 32 --range 32 --slices 4 --keyint 10 --cavlc
$clips/container_352x288_30fps_15f.y4m --qp 22 --range 4 --keyint 1 --cavlc
$clips/basketballpass_416x240_50fps_100f.y4m --qp 27 --range 64 --cavlc
$clips/kristenandsara_1280x720_60fps_1f.y4m --qp 30 --cavlc
$tmp/m1080.y4m --frames 40 --qp 30 --range 16 --keyint 30 --cavlc
--size 18x18 --gen-frames 4 --qp 51 --no-deblock --cavlc
--size 1918x1080 --gen-frames 3 --qp 37 --range 4 --slices 4 --no-deblock --cavlc
$clips/cars_320x240_30fps_30f.y4m --qp 32 --range 32 --slices 4 --keyint 10 --no-deblock --cavlc
$clips/basketballpass_416x240_50fps_100f.y4m --qp 40 --range 16 --no-deblock --cavlc
$tmp/m1080.y4m --frames 40 --qp 30 --range 16 --keyint 30 --no-deblock --cavlc
--size 176x100 --gen-frames 6 --qp 22 --range 8 --slices 3 --cabac
$clips/cars_320x240_30fps_30f.y4m --qp 32 --range 32 --slices 4 --keyint 10 --cabac
$tmp/m1080.y4m --frames 20 --qp 30 --range 16 --keyint 10 --slices 17 --cabac
--size 176x100 --gen-frames 6 --qp 22 --range 8 --slices 3 --i4x4 --i8x8 --cavlc
--size 18x18 --gen-frames 4 --qp 51 --keyint 1 --i4x4 --i8x8 --cabac
$clips/cars_320x240_30fps_30f.y4m --qp 32 --range 32 --slices 4 --keyint 10 --i4x4 --cabac
$clips/container_352x288_30fps_15f.y4m --qp 22 --range 4 --keyint 1 --i8x8 --cavlc
$clips/basketballpass_416x240_50fps_100f.y4m --qp 27 --range 16 --keyint 5 --i4x4 --i8x8 --cabac
$tmp/m1080.y4m --frames 20 --qp 30 --range 16 --keyint 10 --slices 4 --i4x4 --i8x8 --cavlc
--size 176x100 --gen-frames 9 --qp 22 --range 8 --slices 3 --bframes 2 --b-adapt 0 --cavlc
--size 200x120 --gen-frames 11 --qp 30 --keyint 7 --bframes 3 --b-adapt 0 --cabac --i4x4 --i8x8
$clips/akiyo_176x144_30fps_30f.y4m --qp 27 --bframes 2 --cabac --i4x4 --i8x8
$clips/cars_320x240_30fps_30f.y4m --qp 32 --slices 4 --keyint 10 --bframes 1 --b-adapt 0 --no-deblock --cavlc
$clips/basketballpass_416x240_50fps_100f.y4m --frames 30 --qp 27 --bframes 2 --b-adapt 0 --cabac
$tmp/m1080.y4m --frames 20 --qp 30 --range 16 --keyint 10 --bframes 2 --b-adapt 0 --cabac --i4x4 --i8x8
--size 200x120 --gen-frames 13 --qp 28 --range 8 --slices 3 --bframes 3 --b-adapt 0 --b-pyramid normal --cabac
$clips/container_352x288_30fps_15f.y4m --qp 27 --bframes 3 --b-pyramid normal --cabac --i4x4 --i8x8
$clips/cars_320x240_30fps_30f.y4m --qp 35 --keyint 9 --bframes 2 --b-adapt 0 --b-pyramid normal --i8x8 --cavlc
$tmp/m1080.y4m --frames 20 --qp 30 --range 16 --bframes 3 --b-pyramid normal --cabac --slices 17 --i4x4 --i8x8
$tmp/m1080.y4m --frames 20 --qp 30 --range 16 --keyint 10
EOF

echo "== whole file: vidkern encode -o, 1080p mosaic, $frames frames, QP 30"
for be in cuda threads; do
    for r in "16 --cavlc" "32 --cavlc" "16 --no-deblock --cavlc" "16 --i4x4 --i8x8 --cavlc" 16 \
        "16 --cabac --slices 17" "16 --cabac --slices 1" \
        "16 --cabac --slices 17 --i4x4 --i8x8" "16 --cabac --slices 17 --i4x4 --i8x8 --bframes 2 --b-adapt 0" \
        "16 --cabac --slices 17 --i4x4 --i8x8 --bframes 2" \
        "16 --cabac --slices 17 --i4x4 --i8x8 --bframes 3 --b-pyramid normal"; do
        # shellcheck disable=SC2086
        "$V" encode "$tmp/m1080.y4m" -o "$tmp/o.264" --range $r --qp 30 --backend "$be" \
            --quiet 2>&1 | grep -E "stream |stage|time |host " | sed "s/^/$be R$r file: /"
    done
done
for r in "" "--i4x4" "--i4x4 --i8x8"; do # all-intra: the intra wavefront's cost, cuda
    # shellcheck disable=SC2086
    "$V" encode "$tmp/m1080.y4m" --frames 60 --keyint 1 -o "$tmp/o.264" --qp 30 $r \
        --backend cuda --quiet 2>&1 | grep -E "stream |stage|time " | sed "s/^/cuda keyint 1 $r: /"
done
"$V" encode - -o "$tmp/o.264" --range 16 --qp 30 --backend cuda --quiet <"$tmp/m1080.y4m" 2>&1 |
    grep -E "time |host " | sed "s/^/cuda R16 stdin: /"
cat "$tmp/m1080.y4m" | "$V" encode - -o - --range 16 --qp 30 --backend cuda --quiet \
    2>"$tmp/e" >"$tmp/p.264"
grep -E "time |host " "$tmp/e" | sed "s/^/cuda R16 pipe in, pipe out: /"
exit $bad
