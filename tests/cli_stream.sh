#!/bin/sh
# ctest cli_stream_*: the H.264 stream of `vidkern encode -o OUT.264` judged by FFmpeg
# (issue 13 item 5): FFmpeg decodes every stream with `-v error` printing nothing and its
# frames equal `--recon` bit for bit (tests/stream_check.py), and every backend writes the
# same bytes (cmp). Also `-o -`, and the output faults of item 8.
#   cli_stream.sh VIDKERN CASE [VIDEO_DIR]
# CASE: gen (generated video: QP 0 1 22 37 51, keyint 1 3 0, R 0 4 32 64, --slices 1 4,
#       sizes 176x100 18x18 1918x1080 and others), grid (every QP x keyint at 176x100),
#       extreme (flat, noise, checkerboards),
#       clips (every clip of VIDEO_DIR), long (frame_num / POC wrap around), stdout (-o -,
#       the forms of -o, the report's stream bytes), faults.
# Backends c, simd, threads; cuda too when a CUDA device is usable (required with
# VIDK_REQUIRE_GPU=1). Exit 77 = skipped (ctest SKIP): FFmpeg absent (a failure with
# VIDK_REQUIRE_FFMPEG=1, as CI sets), clips missing (a failure with VIDK_REQUIRE_VIDEO=1).
set -u
VK=$1
CASE=$2
VIDEO=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/vidk_cli_stream.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

CLI_CMD=encode
. "$HERE/cli_lib.sh"

req() { v=$(eval "echo \${$1:-0}"); [ -n "$v" ] && [ "$v" != 0 ]; }

# VIDK_STREAM_SMALL=1 (set by CMake in sanitizer and Debug builds, where the c backend's
# full search is 20x slower): R 64 and 32 become 16 and 8, and 5 frames of each clip.
R64=64
R32=32
CLIP_FRAMES=20
if req VIDK_STREAM_SMALL; then
    R64=16
    R32=8
    CLIP_FRAMES=5
    echo "note: VIDK_STREAM_SMALL: R 64 -> $R64, R 32 -> $R32, $CLIP_FRAMES frames of each clip"
fi

# ---- prerequisites: the judge, the stream writer ----
if ! command -v ffmpeg >/dev/null 2>&1 || ! command -v ffprobe >/dev/null 2>&1 ||
    ! command -v python3 >/dev/null 2>&1; then
    req VIDK_REQUIRE_FFMPEG &&
        fail "ffmpeg, ffprobe or python3 not found, and VIDK_REQUIRE_FFMPEG is set"
    echo "SKIP: ffmpeg, ffprobe or python3 not found (install Debian's ffmpeg and python3;" \
        "CI sets VIDK_REQUIRE_FFMPEG=1): the streams cannot be judged" >&2
    exit 77
fi
"$VK" encode --help 2>/dev/null | grep -q -- '-o, --output' ||
    fail "'vidkern encode --help' documents no -o, --output (the stream writer)"

# The CPU backends always; cuda when a device is usable.
BACKENDS="c simd threads"
if "$VK" encode --size 16x16 --gen-frames 1 --backend cuda --quiet >/dev/null 2>"$T/cuda.err"; then
    BACKENDS="$BACKENDS cuda"
elif req VIDK_REQUIRE_GPU; then
    fail "--backend cuda is not usable, and VIDK_REQUIRE_GPU is set: $(cat "$T/cuda.err")"
else
    echo "note: no usable CUDA device: the cuda rows are left out"
fi

# judge STREAM RECON [stream_check options]: FFmpeg silent (--strict: with its stricter
# error detection), its frames equal to RECON, and the syntax checks of the options
# (--expect-slices N, --expect-keyint K).
judge() {
    python3 "$HERE/stream_check.py" -q --strict "$@" >"$T/judge" 2>&1 ||
        fail "FFmpeg's decode of $1 is not $2:
$(cat "$T/judge")"
}

# expect ARGS...: the stream_check options for the encode options ARGS (--slices, --keyint;
# the defaults 1 (auto below 720p) and 0; --fps: the stream's rate, not the recon header's;
# the deblocking filter unless --no-deblock; CABAC unless --cavlc).
expect() {
    es=
    eh=0
    ek=0
    er=
    ed=--expect-deblock
    ec=--expect-cabac
    eb=
    ep=
    while [ $# -gt 0 ]; do
        case $1 in
        --bframes) [ "$2" != 0 ] && eb="--expect-bframes $2" ;;
        --b-pyramid) [ "$2" != none ] && ep=--expect-bpyramid ;;
        --slices) es=$2 ;;
        --size) eh=${2#*x} ;;
        --keyint) ek=$2 ;;
        --fps) er="--rate $2" ;;
        --deblock) ed=--expect-deblock ;;
        --no-deblock) ed= ;;
        --cabac) ec=--expect-cabac ;;
        --cavlc) ec= ;;
        esac
        shift
    done
    # --slices auto (vidk_enc_slices): with CABAC one per 4 macroblock rows from 45 rows on
    if [ -z "$es" ]; then
        es=1
        [ -n "$ec" ] && [ $(((eh + 15) / 16)) -ge 45 ] && es=$(((eh + 15) / 16 / 4))
    fi
    echo "--expect-slices $es --expect-keyint $ek $er $ed $ec $eb $ep"
}

# row NAME ARGS...: `vidkern encode ARGS -o NAME.B.264 --recon NAME.B.y4m --backend B` for
# every backend B; the first stream judged, every other backend's stream and recon equal to
# the first's. The replay command is printed on a failure.
row() {
    name=$1
    shift
    first=
    for b in $BACKENDS; do
        s=$T/$name.$b.264
        r=$T/$name.$b.y4m
        "$VK" encode "$@" --backend "$b" -o "$s" --recon "$r" --quiet >"$T/out" 2>"$T/err" ||
            fail "$name: exit $?: $(cat "$T/err")
  replay: $VK encode $* --backend $b -o $s --recon $r"
        [ -s "$s" ] || fail "$name: $b: no stream written"
        if [ -z "$first" ]; then
            # shellcheck disable=SC2046
            judge "$s" "$r" $(expect "$@")
            first=$b
        else
            cmp "$T/$name.$first.264" "$s" >"$T/cmp" 2>&1 ||
                fail "$name: the $b stream differs from the $first stream: $(cat "$T/cmp")
  replay: $VK encode $* --backend $b -o $s --recon $r"
            cmp -s "$T/$name.$first.y4m" "$r" || fail "$name: $b recon differs from $first"
        fi
    done
    bytes=$(wc -c <"$T/$name.$first.264")
    rm -f "$T/$name".*
    echo "ok: $name: $* ($bytes bytes; $BACKENDS identical; FFmpeg = recon)"
}

case "$CASE" in
gen)
    # A covering set of the generated video: every value of issue 13 item 5 at least once,
    # in varied combinations (sizes not a multiple of 16, one macroblock row, 4 slices on a
    # picture of 4 macroblocks, slices not aligned to rows).
    row g176_a --size 176x100 --gen-frames 8 --qp 22 --keyint 3 --range 4 --slices 1 --cabac
    row g176_b --size 176x100 --gen-frames 6 --qp 0 --keyint 0 --range $R32 --slices 4 --no-deblock --cavlc
    row g176_c --size 176x100 --gen-frames 5 --qp 51 --keyint 1 --range $R64 --slices 4
    row g176_d --size 176x100 --gen-frames 6 --qp 37 --keyint 0 --range 0 --slices 1 --no-deblock --cavlc
    row g18_a --size 18x18 --gen-frames 6 --qp 1 --keyint 3 --range 4 --slices 4 --cabac
    row g18_b --size 18x18 --gen-frames 6 --qp 37 --keyint 0 --range $R64 --slices 1 --no-deblock --cavlc
    row g18_c --size 18x18 --gen-frames 3 --qp 51 --keyint 1 --range 0 --slices 1 --cavlc
    row g18_d --size 18x18 --gen-frames 4 --qp 0 --keyint 0 --range $R32 --slices 4 --no-deblock --cavlc
    row g1080_a --size 1918x1080 --gen-frames 3 --qp 37 --keyint 0 --range 4 --slices 4
    row g1080_b --size 1918x1080 --gen-frames 2 --qp 22 --keyint 1 --range 0 --slices 1 --no-deblock --cavlc
    # the defaults at 1080p: CABAC, --slices auto (17)
    row g1080_c --size 1920x1080 --gen-frames 2 --qp 37 --range 4
    row g64 --size 64x48 --gen-frames 10 --qp 1 --keyint 3 --range $R32 --slices 4 --no-deblock --cavlc
    row g240 --size 240x16 --gen-frames 6 --qp 30 --keyint 0 --range $R64 --slices 4 --cabac
    row g16 --size 16x16 --gen-frames 5 --qp 22 --keyint 0 --range 4 --slices 4 --cavlc
    row g98 --size 98x50 --gen-frames 7 --qp 51 --keyint 3 --range $R32 --slices 4 --no-deblock
    # The defaults (352x288, QP 30, R 16, keyint 0, one slice); a frame rate of --fps.
    row gdef --gen-frames 8
    row gfps --size 48x32 --gen-frames 4 --fps 30000/1001 --keyint 2 --slices 2 --cavlc
    # The deblocking filter (on by default; --no-deblock on about half of the rows above):
    # FFmpeg's frames are the loop's filtered reconstruction (every bS, the 8x8 transform's
    # edges, intra macroblock edges, slice edges, QPs where alpha is 0 and where tC0 is
    # largest), with --deblock given too.
    row gdb_a --size 176x100 --gen-frames 8 --qp 22 --keyint 3 --range 4 --slices 3 --deblock --cabac
    row gdb_b --size 98x50 --gen-frames 6 --qp 51 --keyint 0 --range $R32 --deblock --cavlc
    row gdb_c --size 64x48 --gen-frames 6 --qp 10 --keyint 2 --range 4 --slices 2 --deblock
    row gdb_d --gen-frames 6 --qp 30 --deblock --cavlc
    # Intra_4x4 (--i4x4) and Intra_8x8 (--i8x8), apart and together: every mode and its
    # prediction from the neighbours (slices, the picture's edges, sizes not a multiple of
    # 16), CAVLC and CABAC, filtered or not.
    row gi4_a --size 176x100 --gen-frames 6 --qp 22 --keyint 1 --range 4 --slices 3 --i4x4 --cavlc
    row gi4_b --size 176x100 --gen-frames 6 --qp 30 --keyint 2 --range 4 --slices 1 --i4x4 --cabac
    row gi4_c --size 18x18 --gen-frames 4 --qp 0 --keyint 1 --range 4 --slices 2 --i4x4
    row gi4_d --size 98x50 --gen-frames 4 --qp 51 --keyint 1 --range 4 --slices 4 --i4x4 --no-deblock --cavlc
    row gi4_e --size 64x48 --gen-frames 4 --qp 1 --keyint 3 --range 4 --slices 1 --i4x4 --no-deblock --cabac
    row gi8_a --size 176x100 --gen-frames 6 --qp 22 --keyint 1 --range 4 --slices 3 --i8x8 --cavlc
    row gi8_b --size 176x100 --gen-frames 6 --qp 30 --keyint 2 --range 4 --slices 1 --i8x8
    row gi8_c --size 18x18 --gen-frames 4 --qp 0 --keyint 1 --range 4 --slices 2 --i4x4 --i8x8 --cabac
    row gi8_d --size 98x50 --gen-frames 4 --qp 44 --keyint 1 --range 4 --slices 4 --i4x4 --i8x8 --cavlc
    row gi8_e --size 64x48 --gen-frames 4 --qp 1 --keyint 3 --range 4 --slices 1 --i8x8 --no-deblock --cavlc
    # B-frames (--bframes 1..3; CPU backends): every macroblock type of a B slice (list 0,
    # list 1, both, direct and B_Skip, intra), an IDR cutting a group short, the end of the
    # input making the last frame P, CAVLC and CABAC, slices, deblocked or not.
    # (--b-adapt 0: the fixed pattern, B frames whatever the motion; gb_e and the clips
    # adaptive)
    row gb_a --size 176x100 --gen-frames 9 --qp 26 --range 8 --bframes 2 --b-adapt 0 --cavlc
    row gb_b --size 176x100 --gen-frames 10 --qp 30 --keyint 4 --range 4 --slices 3 --bframes 3 --b-adapt 0
    row gb_c --size 64x48 --gen-frames 7 --qp 1 --range 4 --bframes 1 --no-deblock --cabac --b-adapt 0
    row gb_d --size 98x50 --gen-frames 8 --qp 51 --keyint 5 --range $R32 --slices 2 --bframes 2 --i4x4 --b-adapt 0 --cavlc
    row gb_e --size 18x18 --gen-frames 6 --qp 37 --range 4 --bframes 3 --no-deblock --cavlc
    # reference B frames (--b-pyramid normal): the run's middle B frame coded
    # first and referenced by the others, the P frame after it reordering list 0
    row gbp_a --size 176x100 --gen-frames 13 --qp 28 --range 8 --slices 3 --bframes 3 --b-adapt 0 --b-pyramid normal
    row gbp_b --size 98x50 --gen-frames 11 --qp 40 --keyint 7 --range 4 --bframes 2 --i4x4 --b-adapt 0 --b-pyramid normal --cavlc
    row gbp_c --size 64x48 --gen-frames 9 --qp 20 --range 4 --bframes 3 --no-deblock --i8x8 --b-pyramid normal --cavlc
    ;;
grid)
    # Every QP of the issue with every keyint, R and --slices rotating, on a size that is
    # not a multiple of 16 (a 15-row grid of 176x100, 6 frames: 2 IDRs with keyint 3).
    i=0
    for qp in 0 1 22 37 51; do
        for k in 1 3 0; do
            r=$(echo "0 4 $R32 $R64" | cut -d ' ' -f $((i % 4 + 1)))
            sl=$((i % 2 * 3 + 1))
            db=$([ $((i % 3)) = 0 ] && echo --no-deblock)
            ec=$([ $((i % 2)) = 0 ] && echo --cavlc)
            i4=$([ $((i % 3)) = 1 ] && echo --i4x4)
            [ $((i % 5)) = 2 ] && i4="$i4 --i8x8"
            # shellcheck disable=SC2086
            row "grid$i" --size 176x100 --gen-frames 6 --qp $qp --keyint $k --range "$r" \
                --slices $sl $db $ec $i4
            i=$((i + 1))
        done
    done
    ;;
extreme)
    # Pictures the generator never makes: flat 0 and 255, noise, checkerboards, stripes, a
    # sequence of them (the largest residuals and levels CAVLC codes, level_prefix escapes,
    # every intra and inter decision at its extremes), at QP 0, 1, 26 and 51.
    python3 - "$T/x.y4m" <<'EOF' || fail "python3: the extreme pictures"
import random, sys
r = random.Random(13)
w, h = 48, 34
n = w * h + 2 * (w // 2) * (h // 2)
pats = [lambda i: 0, lambda i: 255, lambda i: r.randrange(256),
        lambda i: 255 * ((i % w + i // w) & 1), lambda i: r.choice((0, 255)), lambda i: 0,
        lambda i: 255 * ((i // 4) & 1), lambda i: 255 * ((i // w // 3) & 1)]
with open(sys.argv[1], "wb") as f:
    f.write(f"YUV4MPEG2 W{w} H{h} F24:1 Ip A1:1 C420jpeg\n".encode())
    for p in pats + pats[::-1]:
        f.write(b"FRAME\n" + bytes(p(i) for i in range(n)))
EOF
    row x0 "$T/x.y4m" --qp 0 --keyint 0 --range 8 --slices 1 --cabac
    row x1 "$T/x.y4m" --qp 1 --keyint 5 --range $R32 --slices 3 --no-deblock --cavlc
    row x26 "$T/x.y4m" --qp 26 --keyint 0 --range 4 --slices 2
    row x51 "$T/x.y4m" --qp 51 --keyint 3 --range 0 --slices 1 --no-deblock --cavlc
    row xi4_0 "$T/x.y4m" --qp 0 --keyint 1 --range 4 --slices 2 --i4x4 --cavlc
    row xi4_26 "$T/x.y4m" --qp 26 --keyint 1 --range 4 --slices 1 --i4x4 --cabac
    row xi8_1 "$T/x.y4m" --qp 1 --keyint 1 --range 4 --slices 2 --i4x4 --i8x8
    row xi8_40 "$T/x.y4m" --qp 40 --keyint 1 --range 4 --slices 1 --i8x8 --cavlc
    # The extreme frame rates of --fps (the VUI timing; FFmpeg's own reading is rounded
    # there, stream_check then reads the SPS).
    row xfast "$T/x.y4m" --frames 3 --fps 1000000 --slices 2 --cavlc
    row xslow "$T/x.y4m" --frames 3 --fps 1/1000000 --keyint 2 --cavlc
    ;;
clips)
    [ -n "$VIDEO" ] && ls "$VIDEO"/*.y4m >/dev/null 2>&1 || {
        req VIDK_REQUIRE_VIDEO && fail "no clips in '$VIDEO', and VIDK_REQUIRE_VIDEO is set"
        echo "SKIP: no real clips in '$VIDEO' (-DVIDK_SHARED_VIDEO=DIR)" >&2
        exit 77
    }
    # Every clip, its first 20 frames (5 in a small run), the parameters rotating over the clips (the 1-frame
    # 720p / 1080p clips are intra only: R does not matter there).
    i=0
    for clip in "$VIDEO"/*.y4m; do
        case $((i % 6)) in
        0) p="--qp 22 --keyint 0 --range $R64 --slices 1 --cabac --i4x4 --i8x8" ;;
        1) p="--qp 37 --keyint 3 --range $R32 --slices 4 --i4x4 --bframes 2 --b-adapt 0 --cavlc" ;;
        2) p="--qp 0 --keyint 1 --range 4 --slices 4" ;;
        3) p="--qp 51 --keyint 0 --range 16 --slices 4 --bframes 3 --cabac --b-pyramid normal" ;;
        4) p="--qp 1 --keyint 3 --range 4 --slices 4 --cabac --i4x4 --i8x8" ;;
        *) p="--qp 30 --keyint 0 --range 8 --slices 1 --no-deblock --i8x8 --cavlc" ;;
        esac
        # shellcheck disable=SC2086
        row "clip$i" "$clip" --frames $CLIP_FRAMES $p
        i=$((i + 1))
    done
    ;;
long)
    # frame_num and the picture order count over a long sequence (they wrap around), one
    # IDR and a long P run, then IDRs in the middle (idr_pic_id changes between them).
    row long_p --size 32x32 --gen-frames 300 --qp 30 --keyint 0 --range 4 --slices 1 --cabac
    row long_i --size 18x18 --gen-frames 300 --qp 30 --keyint 97 --range 4 --slices 2 --no-deblock --cavlc
    # with B-frames: POC LSBs (8 bits) and frame_num wrap with non-reference pictures between
    row long_b --size 32x32 --gen-frames 300 --qp 30 --keyint 0 --range 4 --bframes 2 --b-adapt 0
    # and with reference B pictures (frame_num counts them; the P pictures' list modification)
    row long_bp --size 32x32 --gen-frames 300 --qp 30 --keyint 0 --range 4 --bframes 3 --b-adapt 0 --b-pyramid normal --cavlc
    # Where the SPS allows more than 300 frames before frame_num or the POC LSBs wrap, a
    # sequence long enough to wrap both (16x16 pictures, no search: a few seconds).
    "$VK" encode --size 16x16 --gen-frames 2 -o "$T/i.264" --recon "$T/i.y4m" --quiet \
        >/dev/null 2>"$T/err" || fail "16x16: $(cat "$T/err")"
    sps=$(python3 "$HERE/stream_check.py" -q --info --expect-deblock --expect-cabac "$T/i.264" "$T/i.y4m") ||
        fail "sps: $sps"
    echo "$sps"
    lfn=$(echo "$sps" | sed -n 's/.*log2_max_frame_num=\([0-9]*\).*/\1/p')
    lpoc=$(echo "$sps" | sed -n 's/.*log2_max_poc_lsb=\([0-9]*\).*/\1/p')
    [ -n "$lfn" ] || fail "no log2_max_frame_num in: $sps"
    need=$((1 << lfn))
    # POC type 0: the LSBs advance by 2 a frame (or 1): wrap after 2^lpoc frames at most.
    [ -n "$lpoc" ] && [ $((1 << lpoc)) -gt $need ] && need=$((1 << lpoc))
    need=$((need + 20))
    if [ $need -gt 300 ]; then
        [ $need -le 140000 ] || fail "MaxFrameNum / MaxPicOrderCntLsb too large to test: $sps"
        row long_wrap --size 16x16 --gen-frames $need --qp 40 --keyint 0 --range 0 --cavlc
    fi
    ;;
stdout)
    # -o - writes the same bytes as -o FILE; so do --output F and --output=F, from a file
    # and from stdin; with -o - the human output does not go to stdout.
    "$VK" gen --size 96x64 --frames 6 -o "$T/g.y4m" --quiet || fail "gen"
    set -- --qp 27 --keyint 3 --range 8 --slices 4 --backend simd
    "$VK" encode "$T/g.y4m" "$@" -o "$T/f.264" --recon "$T/f.y4m" --quiet >/dev/null 2>"$T/err" ||
        fail "-o FILE: $(cat "$T/err")"
    # shellcheck disable=SC2046
    judge "$T/f.264" "$T/f.y4m" $(expect "$@")
    "$VK" encode "$T/g.y4m" "$@" -o - >"$T/s.264" 2>"$T/err" || fail "-o -: $(cat "$T/err")"
    cmp "$T/f.264" "$T/s.264" || fail "-o - and -o FILE differ"
    grep -q '^vidkern encode: 6 frames' "$T/err" || fail "-o -: no summary on stderr: $(cat "$T/err")"
    "$VK" encode - "$@" -o - <"$T/g.y4m" >"$T/p.264" 2>/dev/null || fail "stdin -> -o -"
    cmp "$T/f.264" "$T/p.264" || fail "stdin to -o - differs from -o FILE"
    "$VK" encode "$T/g.y4m" "$@" --output "$T/o.264" --quiet >/dev/null || fail "--output F"
    cmp "$T/f.264" "$T/o.264" || fail "--output F differs"
    "$VK" encode "$T/g.y4m" "$@" --output="$T/e.264" --quiet >/dev/null || fail "--output=F"
    cmp "$T/f.264" "$T/e.264" || fail "--output=F differs"
    cat "$T/g.y4m" | "$VK" encode - "$@" -o - --recon "$T/pr.y4m" --quiet 2>"$T/err" | cat >"$T/pp.264" ||
        fail "pipe to pipe"
    cmp "$T/f.264" "$T/pp.264" || fail "pipe to pipe differs"
    cmp "$T/f.y4m" "$T/pr.y4m" || fail "recon beside -o - differs"
    ls "$T"/*.tmp* >/dev/null 2>&1 && fail "a temporary file left behind"
    # The report's stream bytes (issue 13 item 3): each frame's is the size of its access
    # unit in the stream, the summary's the file's.
    "$VK" encode "$T/g.y4m" "$@" -o "$T/r.264" --recon "$T/r.y4m" --report "$T/r.json" \
        --quiet >/dev/null 2>"$T/err" || fail "--report: $(cat "$T/err")"
    python3 "$HERE/stream_check.py" -q --info --expect-deblock --expect-cabac "$T/r.264" "$T/r.y4m" >"$T/info" 2>&1 ||
        fail "$(cat "$T/info")"
    python3 - "$T/r.json" "$T/info" "$T/r.264" <<'EOF' || fail "report stream bytes"
import json, os, sys
r = json.load(open(sys.argv[1]))
au = [int(x) for l in open(sys.argv[2]) if l.startswith("au_bytes:") for x in l.split()[1:]]
per = [f["stream_bytes"] for f in r["per_frame"]]
size = os.path.getsize(sys.argv[3])
assert per == au, f"per_frame stream_bytes {per}, access units in the stream {au}"
assert r["summary"]["stream_bytes"] == size, (r["summary"]["stream_bytes"], size)
print("report ok: stream_bytes per frame", per, "=", size, "bytes")
EOF
    echo "ok: stdout: -o -, --output F, --output=F, stdin, pipes: the same bytes"
    ;;
faults)
    "$VK" gen --size 64x48 --frames 3 -o "$T/ok.y4m" --quiet || fail "gen"
    hl=$(head -n 1 "$T/ok.y4m" | wc -c)
    head -c $((hl + 6 + 64 * 48 * 3 / 2 + 6 + 1000)) "$T/ok.y4m" >"$T/trunc.y4m"
    O=$T/out.264
    # A failing run leaves no stream (and no temporary file) behind ...
    must_fail "truncated input" "$O" "$VK" encode "$T/trunc.y4m" -o "$O"
    must_fail "truncated stdin" "$O" sh -c "'$VK' encode - -o '$O' <'$T/trunc.y4m'"
    # ... also when it fails late (frame 20 of 30 cut: the reader thread, frames in flight).
    "$VK" gen --size 64x48 --frames 30 -o "$T/long.y4m" --quiet || fail "gen"
    head -c $((hl + 20 * (6 + 64 * 48 * 3 / 2) + 100)) "$T/long.y4m" >"$T/cut20.y4m"
    must_fail "input cut in frame 20" "$O" "$VK" encode "$T/cut20.y4m" -o "$O" --recon "$T/r20.y4m"
    [ ! -e "$T/r20.y4m" ] || fail "input cut in frame 20: left the recon behind"
    must_fail "input cut in frame 20, -o -" - sh -c "'$VK' encode - -o - <'$T/cut20.y4m'"
    must_fail "qp out of range" "$O" "$VK" encode "$T/ok.y4m" --qp 52 -o "$O"
    must_fail "slices 0" "$O" "$VK" encode "$T/ok.y4m" --slices 0 -o "$O"
    must_fail "hevc stream" "$O" "$VK" encode "$T/ok.y4m" --codec hevc -o "$O"
    must_fail "missing folder" - "$VK" encode "$T/ok.y4m" -o "$T/no/dir/out.264"
    grep -qF "'$T/no/dir/out.264'" "$T/stderr" || fail "missing folder: the message does not name the file"
    # ... and an older file of that name stays as it was.
    echo old >"$O"
    "$VK" encode "$T/trunc.y4m" -o "$O" --quiet >/dev/null 2>&1 && fail "truncated input accepted"
    [ "$(cat "$O")" = old ] || fail "a failing run changed the existing $O"
    rm -f "$O"
    # An output naming the input (directly, through a link), or another output.
    cp "$T/ok.y4m" "$T/keep.y4m"
    ln -s "$T/ok.y4m" "$T/alias.264"
    must_fail "-o the input" - "$VK" encode "$T/ok.y4m" -o "$T/ok.y4m"
    grep -q 'is the input file' "$T/stderr" || fail "-o the input: message: $(cat "$T/stderr")"
    must_fail "-o a link to the input" - "$VK" encode "$T/ok.y4m" -o "$T/alias.264"
    cmp -s "$T/ok.y4m" "$T/keep.y4m" || fail "the input was changed"
    must_fail "-o and --recon the same file" "$O" "$VK" encode "$T/ok.y4m" -o "$O" --recon "$O"
    must_fail "-o - and --recon -" - "$VK" encode "$T/ok.y4m" -o - --recon -
    # A full disk: exit 1 and a clear message.
    if [ -w /dev/full ]; then
        must_fail "-o /dev/full" - "$VK" encode "$T/ok.y4m" -o /dev/full
        grep -qi 'space' "$T/stderr" || fail "-o /dev/full: message: $(cat "$T/stderr")"
    else
        echo "note: no /dev/full here: that check is left out"
    fi
    # A closed pipe: a stream far larger than a pipe's buffer (QP 0), the reader gone after
    # 10 bytes: exit 1 with a message (not killed by SIGPIPE, not 0).
    { "$VK" encode --size 352x288 --gen-frames 10 --qp 0 --backend simd -o - 2>"$T/perr"
      echo $? >"$T/prc"; } | head -c 10 >"$T/head"
    rc=$(cat "$T/prc")
    [ "$(wc -c <"$T/head")" -eq 10 ] || fail "closed pipe: the reader did not get 10 bytes"
    [ "$rc" -eq 1 ] || fail "closed pipe: exit $rc, expected 1 (141 = killed by SIGPIPE): $(cat "$T/perr")"
    grep -qiE '^vidkern encode: .*(pipe|write|stdout)' "$T/perr" ||
        fail "closed pipe: no 'vidkern encode: ...' message about the write: $(cat "$T/perr")"
    echo "ok: closed pipe -> $(grep '^vidkern encode: ' "$T/perr" | tail -n 1)"
    ;;
*)
    fail "unknown case"
    ;;
esac
exit 0
