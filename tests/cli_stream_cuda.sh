#!/bin/sh
# The H.264 stream of the cuda backend (CAVLC and CABAC on the device, src/cuda/stream.cu)
# against the threads backend's (= c's), byte for byte, through `vidkern encode -o`:
# generated HD video with several slices and the real clips, each through the four paths of
# the cuda encoder: the device coder (CABAC: the bins on the device, the arithmetic engine on
# the host, the default), CABAC's engine on the device too (VIDK_CABAC_ENGINE=device), the host
# fallback after a slot overflow (VIDK_STREAM_SLOT_BYTES=64) and the host writer
# (VIDK_STREAM_HOST=1). One PASS / FAIL line per case; exit 77 without a CUDA device.
#   cli_stream_cuda.sh VIDKERN VIDEO_DIR
B=$1
V=$2
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
if ! "$B" encode --size 64x48 --gen-frames 2 --backend cuda -o "$T/probe.264" >/dev/null 2>&1
then
    echo "cli_stream_cuda: no CUDA device, skipped"
    exit 77
fi
fail=0
run() { # NAME ARGS...: threads vs cuda on each path
    name=$1
    shift
    if ! "$B" encode "$@" --backend threads -o "$T/ref.264" >/dev/null 2>&1; then
        echo "FAIL $name: the threads encode failed"
        fail=1
        return
    fi
    for path in device engine slot64 host; do
        case $path in
        device) ev=VIDK_STREAM_CHECK=device ;; # no setting: the device coder (CABAC: its bins,
        # the arithmetic engine on the host)
        engine) ev=VIDK_CABAC_ENGINE=device ;; # CABAC's engine on the device too
        slot64) ev=VIDK_STREAM_SLOT_BYTES=64 ;;
        host) ev=VIDK_STREAM_HOST=1 ;;
        esac
        if env "$ev" "$B" encode "$@" --backend cuda -o "$T/gpu.264" >/dev/null 2>&1 &&
            cmp -s "$T/ref.264" "$T/gpu.264"; then
            echo "PASS $name [cuda stream path: $path] ($(wc -c <"$T/ref.264") bytes)"
        else
            echo "FAIL $name [cuda stream path: $path]"
            fail=1
        fi
    done
}
run "generated 1920x1080, 8 frames, qp 26, 4 slices, cavlc" --size 1920x1080 --gen-frames 8 \
    --qp 26 --slices 4 --keyint 4 --cavlc
run "generated 1280x720, 3 frames, qp 0, the defaults (cabac, 11 slices)" --size 1280x720 \
    --gen-frames 3 --qp 0
run "generated 352x288, 30 frames, qp 45, 18 slices, cavlc" --qp 45 --slices 18 --range 32 --cavlc
run "generated 1920x1080, 8 frames, qp 26, 17 slices, cabac" --size 1920x1080 --gen-frames 8 \
    --qp 26 --slices 17 --keyint 4 --cabac
run "generated 352x288, 30 frames, qp 40, 18 slices, cabac" --qp 40 --slices 18 --cabac
run "generated 640x480, 4 frames, qp 4, 1 slice, cabac" --size 640x480 --gen-frames 4 \
    --qp 4 --cabac
run "generated 1920x1080, 6 frames, qp 26, 4 slices, cavlc, i4x4 i8x8" --size 1920x1080 \
    --gen-frames 6 --qp 26 --slices 4 --keyint 3 --i4x4 --i8x8 --cavlc
run "generated 352x288, 12 frames, qp 8, 3 slices, cabac, i4x4" --gen-frames 12 --qp 8 \
    --slices 3 --keyint 4 --cabac --i4x4
run "generated 352x288, 12 frames, qp 36, cabac, i8x8" --gen-frames 12 --qp 36 --keyint 5 \
    --cabac --i8x8
run "generated 352x288, 12 frames, qp 30, 3 slices, cavlc, 2 B-frames" --gen-frames 12 \
    --qp 30 --slices 3 --keyint 7 --bframes 2 --b-adapt 0 --cavlc
run "generated 640x480, 9 frames, qp 24, cabac, i4x4 i8x8, 3 B-frames" --size 640x480 \
    --gen-frames 9 --qp 24 --bframes 3 --b-adapt 0 --cabac --i4x4 --i8x8
run "generated 352x288, 13 frames, qp 28, 2 slices, 3 B-frames, pyramid" --gen-frames 13 \
    --qp 28 --slices 2 --bframes 3 --b-adapt 0 --b-pyramid normal --cabac
for c in "basketballpass_416x240_50fps_100f.y4m --frames 30 --qp 30 --slices 3 --cavlc" \
    "basketballpass_416x240_50fps_100f.y4m --frames 20 --qp 27 --bframes 2 --b-adapt 0 --cabac" \
    "akiyo_176x144_30fps_30f.y4m --qp 30 --bframes 2 --i4x4 --i8x8 --cavlc" \
    "container_352x288_30fps_15f.y4m --qp 27 --bframes 3 --b-pyramid normal --cabac" \
    "cars_320x240_30fps_30f.y4m --qp 12 --cavlc" \
    "cars_320x240_30fps_30f.y4m --qp 20 --slices 5 --cabac" \
    "cars_320x240_30fps_30f.y4m --qp 24 --slices 2 --keyint 8 --cabac --i4x4 --i8x8" \
    "basketballpass_416x240_50fps_100f.y4m --frames 20 --qp 32 --keyint 6 --i4x4 --i8x8 --cavlc" \
    "basketballpass_416x240_50fps_100f.y4m --frames 20 --qp 27 --cabac" \
    "kristenandsara_1280x720_60fps_1f.y4m --qp 22 --slices 2 --cavlc" \
    "darkscene_1920x1080_24fps_1f.y4m --qp 34 --cavlc" \
    "darkscene_1920x1080_24fps_1f.y4m --qp 30"; do
    f=${c%% *}
    if [ -r "$V/$f" ]; then
        # shellcheck disable=SC2086
        run "$c" "$V/$f" ${c#* }
    else
        echo "cli_stream_cuda: $V/$f not readable, not run"
    fi
done
[ $fail = 0 ] && echo "cli_stream_cuda: all PASS" || echo "cli_stream_cuda: FAILURES"
exit $fail
