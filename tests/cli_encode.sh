#!/bin/sh
# ctest cli_encode_*: end-to-end tests of `vidkern encode` and `vidkern-bench encode`.
#   cli_encode.sh VIDKERN CASE [VIDEO_DIR] [VIDKERN_BENCH]
# CASE: main, help, real, pipe, report, png, backends, errors, bench (needs VIDKERN_BENCH).
# Exit 77 = skipped (ctest SKIP). CPU backends only (CI has no GPU).
set -u
VK=$1
CASE=$2
VIDEO=${3:-}
VKB=${4:-}
T=$(mktemp -d "${TMPDIR:-/tmp}/vidk_cli_encode.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

CLI_CMD=encode
. "$(dirname "$0")/cli_lib.sh"

# y4m_check FILE W H FRAMES: an 8-bit 4:2:0 Y4M of that size with exactly FRAMES frames
# (header line, then FRAMES x ("FRAME\n" + W*H*3/2 bytes)).
y4m_check() {
    head -c 9 "$1" | grep -q '^YUV4MPEG2' || fail "$1: not a Y4M stream"
    head -n 1 "$1" | grep -q " W$2 H$3 " || fail "$1: header is not ${2}x$3: $(head -n 1 "$1")"
    hl=$(head -n 1 "$1" | wc -c)
    want=$((hl + $4 * (6 + $2 * $3 * 3 / 2)))
    got=$(wc -c <"$1")
    [ "$got" -eq "$want" ] || fail "$1: $got bytes, expected $want ($4 frames of ${2}x$3)"
}

# json_ok FILE: parses as JSON (python3 when present, else a shape check).
json_ok() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -m json.tool "$1" >/dev/null || fail "$1 is not valid JSON"
    else
        head -c 1 "$1" | grep -q '{' && tail -c 2 "$1" | grep -q '}' || fail "$1: not a JSON object"
    fi
}

case "$CASE" in
main)
    # The README's main job: no input, the built-in generated video, default everything.
    "$VK" encode >"$T/out" 2>"$T/err" || fail "vidkern encode: $(cat "$T/err")"
    grep -q '^vidkern encode: 30 frames of built-in generated video 352x288' "$T/out" ||
        fail "summary head: $(cat "$T/out")"
    for k in backend coding size frames PSNR bits levels partitions 'stage ms' time PCIe; do
        grep -q "^  $k " "$T/out" || fail "summary lacks '$k': $(cat "$T/out")"
    done
    grep -q '^  coding *h264, QP 30 (lambda [0-9]*), R 16, keyint 0, deblocking$' "$T/out" ||
        fail "defaults"
    grep -q '(1 intra, 29 inter)' "$T/out" || fail "frame kinds: $(cat "$T/out")"
    grep -q 'no input given' "$T/err" || fail "no note about the generated input"
    # A plausible quality at QP 30 (PSNR Y between 30 and 50 dB).
    psnr=$(sed -n 's/^  PSNR *Y \([0-9]*\)\..*/\1/p' "$T/out" | head -1)
    [ "$psnr" -ge 30 ] && [ "$psnr" -le 50 ] || fail "PSNR Y $psnr dB out of range"
    # With -o the defaults are CABAC and --slices auto: one slice below 720p, one per 4
    # macroblock rows from 720p on (said in the summary and the report); --cavlc: 1 slice.
    "$VK" encode --gen-frames 2 -o "$T/d.264" --backend simd >"$T/out" 2>"$T/err" ||
        fail "-o: $(cat "$T/err")"
    grep -q '^  coding *h264, .*, deblocking, CABAC$' "$T/out" || fail "CABAC default: $(cat "$T/out")"
    grep -q '^  slices ' "$T/out" && fail "352x288: one slice, no slices line"
    "$VK" encode --size 1280x720 --gen-frames 1 -o "$T/d.264" --backend simd --quiet \
        --report "$T/d.json" 2>"$T/err" || fail "720p: $(cat "$T/err")"
    grep -q '"slices": 11,' "$T/d.json" && grep -q '"cabac": 1,' "$T/d.json" ||
        fail "720p: auto slices 11, CABAC: $(grep -E '"(slices|cabac)"' "$T/d.json")"
    "$VK" encode --size 1280x720 --gen-frames 1 -o "$T/d.264" --backend simd --slices auto \
        >"$T/out" 2>"$T/err" || fail "--slices auto: $(cat "$T/err")"
    grep -q '^  slices *11 per picture$' "$T/out" || fail "720p slices line: $(cat "$T/out")"
    "$VK" encode --size 1280x720 --gen-frames 1 -o "$T/d.264" --backend simd --cavlc --quiet \
        --report "$T/d.json" 2>"$T/err" || fail "--cavlc: $(cat "$T/err")"
    grep -q '"slices": 1,' "$T/d.json" && grep -q '"cabac": 0,' "$T/d.json" ||
        fail "720p --cavlc: 1 slice, CAVLC: $(grep -E '"(slices|cabac)"' "$T/d.json")"
    echo "ok: main ($(grep '^  PSNR' "$T/out" | head -1 | sed 's/^ *//'))"
    ;;
help)
    "$VK" encode --help >"$T/h" || fail "--help"
    for o in --codec --qp --range --keyint --frames --recon --report --png-dir --verbose \
        --size --gen-frames --input-size --input-format --backend --threads --cpumask \
        --device --json --quiet --deblock --no-deblock --cabac --cavlc --bframes --b-adapt \
        --b-pyramid --preset --slices; do
        grep -q -- "$o" "$T/h" || fail "--help does not document $o"
    done
    "$VK" --help | grep -q '^  encode ' || fail "encode not in the command list"
    "$VK" --help | grep -q '^  bench ' && fail "bench is still a command of vidkern"
    echo "ok: help"
    ;;
real)
    clip=$VIDEO/akiyo_176x144_30fps_30f.y4m
    [ -n "$VIDEO" ] && [ -f "$clip" ] || { echo "no real clips: skipped"; exit 77; }
    "$VK" encode "$clip" --frames 5 --recon "$T/r.y4m" --backend simd --quiet >"$T/out" \
        2>"$T/err" || fail "encode $clip: $(cat "$T/err")"
    y4m_check "$T/r.y4m" 176 144 5
    [ ! -e "$T/r.y4m.tmp" ] || fail "r.y4m.tmp left behind"
    grep -q '^vidkern encode: 5 frames of .*akiyo' "$T/out" || fail "summary: $(cat "$T/out")"
    grep -q '^  recon  *.*r.y4m$' "$T/out" || fail "summary does not name the recon"
    # The header (frame rate etc.) is the source's.
    [ "$(head -n 1 "$T/r.y4m")" = "$(head -n 1 "$clip")" ] || fail "header differs from the source"
    # HEVC, an intra period, another QP; the reconstruction is close to the source
    # (checked through the PSNR the summary prints).
    "$VK" encode "$clip" --frames 4 --codec hevc --qp 22 --keyint 2 --range 8 --json \
        --recon "$T/h.y4m" --backend threads >"$T/h.json" 2>"$T/err" || fail "hevc: $(cat "$T/err")"
    y4m_check "$T/h.y4m" 176 144 4
    json_ok "$T/h.json"
    grep -q '"intra_frames": 2,' "$T/h.json" || fail "keyint 2 over 4 frames: 2 intra frames"
    grep -q '"codec": "hevc"' "$T/h.json" || fail "codec"
    cmp -s "$T/r.y4m" "$T/h.y4m" && fail "h264 QP 30 and hevc QP 22 gave the same recon"
    # --preset veryfast: CABAC, Intra_4x4 and _8x8, 3 adaptive B-frames with the pyramid (akiyo
    # is still: B frames come); the options given with it win (--bframes 0 --cavlc).
    "$VK" encode "$clip" --frames 9 --preset veryfast -o "$T/v.264" --range 8 --backend simd \
        >"$T/v.out" 2>"$T/err" || fail "--preset veryfast: $(cat "$T/err")"
    grep -q '^  coding .*, 3 B-frames (adaptive) (pyramid), deblocking, Intra_4x4, Intra_8x8, CABAC$' \
        "$T/v.out" || fail "--preset veryfast: $(grep coding "$T/v.out")"
    grep -q 'of them B)' "$T/v.out" || fail "--preset veryfast: no B frame"
    "$VK" encode "$clip" --frames 3 --preset veryfast --bframes 0 --cavlc -o "$T/v.264" \
        --range 8 --backend simd >"$T/v.out" 2>"$T/err" || fail "--preset + options: $(cat "$T/err")"
    grep -q '^  coding .*R 8, keyint 0, deblocking, Intra_4x4, Intra_8x8, CAVLC$' "$T/v.out" ||
        fail "--preset veryfast --bframes 0 --cavlc: $(grep coding "$T/v.out")"
    "$VK" encode "$clip" --frames 3 --preset ultrafast -o "$T/v.264" --range 8 --backend simd \
        >"$T/v.out" 2>"$T/err" || fail "--preset ultrafast: $(cat "$T/err")"
    grep -q '^  coding .*R 8, keyint 0, deblocking, CAVLC$' "$T/v.out" ||
        fail "--preset ultrafast: $(grep coding "$T/v.out")"
    # Two fixed B-frames over 7 frames: I B B P B B P, four B frames said in the summary, the
    # report's count and its frames.
    "$VK" encode "$clip" --frames 7 --bframes 2 --b-adapt 0 --range 8 --backend threads -v \
        >"$T/b.out" 2>"$T/err" || fail "bframes: $(cat "$T/err")"
    grep -q '(1 intra, 6 inter, 4 of them B)' "$T/b.out" || fail "B count: $(cat "$T/b.out")"
    # -v: a line per frame in coding order, its type
    [ "$(grep -o '^frame *[0-9]* [IPB]' "$T/b.out" | awk '{ printf "%s%s ", $2, $3 }')" = \
        "0I 3P 1B 2B 6P 4B 5B " ] || fail "-v frame types: $(grep '^frame' "$T/b.out")"
    "$VK" encode "$clip" --frames 7 --bframes 2 --b-adapt 0 --range 8 --backend threads \
        --quiet --report "$T/b.json" 2>"$T/err" || fail "bframes report: $(cat "$T/err")"
    json_ok "$T/b.json"
    grep -q '"b_frames": 4,' "$T/b.json" || fail "JSON b_frames"
    [ "$(grep -o '"index": [0-9]*, "intra": [01], "bframe": 1' "$T/b.json" |
        sed 's/"index": \([0-9]*\).*/\1/' | tr '\n' ' ')" = "1 2 4 5 " ] ||
        fail "JSON frames' bframe: $(grep -o '"index": [0-9]*, "intra": [01], "bframe": [01]' "$T/b.json")"
    echo "ok: real"
    ;;
pipe)
    # Y4M through stdin, the reconstruction to stdout: human output on stderr.
    "$VK" gen --size 64x48 --frames 4 -o "$T/g.y4m" --quiet || fail "gen"
    "$VK" encode - --recon - --range 4 --backend simd <"$T/g.y4m" >"$T/r.y4m" 2>"$T/err" ||
        fail "stdin -> stdout: $(cat "$T/err")"
    y4m_check "$T/r.y4m" 64 48 4
    grep -q '^vidkern encode: 4 frames of stdin' "$T/err" || fail "summary not on stderr: $(cat "$T/err")"
    grep -q '^  recon  *stdout$' "$T/err" || fail "summary does not say stdout"
    # The same through files gives the same bytes.
    "$VK" encode "$T/g.y4m" --recon "$T/f.y4m" --range 4 --backend simd --quiet >/dev/null ||
        fail "file"
    cmp -s "$T/r.y4m" "$T/f.y4m" || fail "pipe and file outputs differ"
    # --frames limits, raw input through stdin.
    "$VK" encode - --recon - --frames 2 --range 4 --quiet <"$T/g.y4m" >"$T/two.y4m" 2>/dev/null ||
        fail "--frames"
    y4m_check "$T/two.y4m" 64 48 2
    "$VK" convert "$T/g.y4m" "$T/g.yuv" >/dev/null 2>&1 || fail "convert"
    "$VK" encode - --input-size 64x48 --recon "$T/raw.y4m" --range 4 --backend simd --quiet \
        <"$T/g.yuv" >/dev/null 2>"$T/err" || fail "raw stdin: $(cat "$T/err")"
    y4m_check "$T/raw.y4m" 64 48 4
    # Same samples: the same reconstruction (only the header's tags may differ).
    tail -c $((4 * (6 + 64 * 48 * 3 / 2))) "$T/raw.y4m" >"$T/a"
    tail -c $((4 * (6 + 64 * 48 * 3 / 2))) "$T/f.y4m" >"$T/b"
    cmp -s "$T/a" "$T/b" || fail "raw and Y4M input of the same frames differ"
    echo "ok: pipe"
    ;;
report)
    "$VK" encode --size 96x64 --gen-frames 5 --range 8 --keyint 3 --backend simd --quiet \
        --report "$T/r.json" --json >"$T/s.json" 2>"$T/err" || fail "--report: $(cat "$T/err")"
    json_ok "$T/r.json"
    json_ok "$T/s.json"
    [ ! -e "$T/r.json.tmp" ] || fail "r.json.tmp left behind"
    if command -v python3 >/dev/null 2>&1; then
        python3 - "$T/r.json" "$T/s.json" <<'EOF' || fail "report contents"
import json, sys
r = json.load(open(sys.argv[1]))
s = json.load(open(sys.argv[2]))
assert r["width"] == 96 and r["height"] == 64 and r["codec"] == "h264", r
assert r["range"] == 8 and r["keyint"] == 3 and r["qp"] == 30, r
f = r["per_frame"]
assert len(f) == 5, len(f)
keys = ["index", "intra", "qp", "sse", "psnr", "nnz", "bits_mode", "bits_mv", "bits_level",
        "bits", "parts", "stage_ms", "total_ms", "h2d_bytes", "d2h_bytes"]
for i, x in enumerate(f):
    for k in keys:
        assert k in x, (i, k)
    assert x["index"] == i
    assert x["intra"] == (1 if i % 3 == 0 else 0), (i, x["intra"])
    assert x["bits"] == x["bits_mode"] + x["bits_mv"] + x["bits_level"]
    assert set(x["stage_ms"]) == {"upload", "me", "code", "stats", "download", "stream"}
    assert set(x["parts"]) == {"intra", "32x32", "16x16", "16x8", "8x16", "8x8"}
sm = r["summary"]
assert sm["frames"] == 5 and sm["intra_frames"] == 2, sm
assert sm["bits"] == sum(x["bits"] for x in f)
assert sm["sse"] == [sum(x["sse"][p] for x in f) for p in range(3)]
assert "per_frame" not in s and s["summary"] == sm, "--json summary differs from the report"
print("report ok:", len(f), "frames")
EOF
    else
        grep -q '"per_frame": \[' "$T/r.json" || fail "no per_frame array"
        [ "$(grep -c '"total_ms":' "$T/r.json")" -eq 5 ] || fail "per_frame entries"
    fi
    echo "ok: report"
    ;;
png)
    "$VK" encode --size 64x48 --gen-frames 3 --range 4 --png-dir "$T/p" --quiet >/dev/null \
        2>"$T/err"
    if [ $? -ne 0 ]; then
        grep -qi 'png' "$T/err" && grep -qiE 'not available|without' "$T/err" &&
            { echo "no PNG support: skipped"; exit 77; }
        fail "png: $(cat "$T/err")"
    fi
    for k in 0000 0001 0002; do
        for kind in mv energy; do
            f="$T/p/${kind}_$k.png"
            [ -s "$f" ] || fail "$f missing"
            sig=$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')
            [ "$sig" = 89504e470d0a1a0a ] || fail "$f is not a PNG: $sig"
            # IHDR: width and height of the source picture.
            wh=$(head -c 24 "$f" | tail -c 8 | od -An -tx1 | tr -d ' \n')
            [ "$wh" = 0000004000000030 ] || fail "$f is not 64x48: $wh"
        done
    done
    [ -e "$T/p/mv_0003.png" ] && fail "one picture too many"
    ls -a "$T/p" | grep -q probe && fail "probe file left in the folder"
    # The folder must be a folder.
    : >"$T/file"
    must_fail "png-dir is a file" - "$VK" encode --size 64x48 --gen-frames 2 --png-dir "$T/file"
    echo "ok: png"
    ;;
backends)
    # Bit-identical reconstruction and statistics on c, simd and threads, both codecs,
    # a size that is not a multiple of the unit (edge extension), intra period 2.
    "$VK" gen --size 72x40 --frames 4 -o "$T/g.y4m" --quiet || fail "gen"
    for codec in h264 hevc; do
        for b in c simd threads; do
            "$VK" encode "$T/g.y4m" --codec $codec --range 6 --keyint 2 --qp 27 --backend $b \
                --recon "$T/$codec-$b.y4m" --json >"$T/$codec-$b.json" 2>"$T/err" ||
                fail "$codec $b: $(cat "$T/err")"
            grep -E '"(sse|bits|nnz_per_frame|parts|psnr_avg)"' "$T/$codec-$b.json" \
                >"$T/$codec-$b.stats"
            [ -s "$T/$codec-$b.stats" ] || fail "no statistics in --json"
        done
        "$VK" encode "$T/g.y4m" --codec $codec --range 6 --keyint 2 --qp 27 --backend simd \
            --cpumask 0 --recon "$T/$codec-m0.y4m" --quiet >/dev/null || fail "--cpumask 0"
        "$VK" encode "$T/g.y4m" --codec $codec --range 6 --keyint 2 --qp 27 --backend threads \
            --threads 3 --recon "$T/$codec-t3.y4m" --quiet >/dev/null || fail "--threads 3"
        for b in simd threads m0 t3; do
            cmp -s "$T/$codec-c.y4m" "$T/$codec-$b.y4m" || fail "$codec: $b recon differs from c"
        done
        for b in simd threads; do
            cmp -s "$T/$codec-c.stats" "$T/$codec-$b.stats" ||
                fail "$codec: $b statistics differ from c"
        done
        echo "ok: $codec: simd, threads, --cpumask 0, --threads 3 = c"
    done
    ;;
errors)
    "$VK" gen --size 64x48 --frames 2 -o "$T/ok.y4m" --quiet || fail "gen"
    "$VK" gen --size 64x48 --frames 2 --bitdepth 10 -o "$T/ten.y4m" --quiet || fail "gen 10"
    "$VK" gen --size 64x48 --frames 2 --chroma 444 -o "$T/444.y4m" --quiet || fail "gen 444"
    "$VK" gen --size 64x48 --frames 2 --chroma 400 -o "$T/400.y4m" --quiet || fail "gen 400"
    "$VK" gen --size 63x48 --frames 2 -o "$T/odd.y4m" --quiet || fail "gen odd"
    "$VK" gen --size 64x14 --frames 2 -o "$T/small.y4m" --quiet || fail "gen small"
    printf 'this is not a y4m file\n' >"$T/text.y4m"
    printf 'YUV4MPEG2 W64 H48 F25:1 Ip A0:0 C420jpeg\n' >"$T/empty.y4m"
    head -c 3000 "$T/ok.y4m" >"$T/trunc.y4m"
    O=$T/out.y4m
    must_fail "not a Y4M file" "$O" "$VK" encode "$T/text.y4m" --recon "$O"
    must_fail "10-bit input" "$O" "$VK" encode "$T/ten.y4m" --recon "$O"
    must_fail "4:4:4 input" "$O" "$VK" encode "$T/444.y4m" --recon "$O"
    must_fail "4:0:0 input" "$O" "$VK" encode "$T/400.y4m" --recon "$O"
    must_fail "odd width" "$O" "$VK" encode "$T/odd.y4m" --recon "$O"
    must_fail "height below 16" "$O" "$VK" encode "$T/small.y4m" --recon "$O"
    must_fail "odd generated size" "$O" "$VK" encode --size 63x40 --recon "$O"
    must_fail "empty input" "$O" "$VK" encode "$T/empty.y4m" --recon "$O"
    must_fail "truncated input" "$O" "$VK" encode "$T/trunc.y4m" --recon "$O"
    must_fail "missing input" "$O" "$VK" encode "$T/nope.y4m" --recon "$O"
    must_fail "qp above 51" "$O" "$VK" encode "$T/ok.y4m" --qp 52 --recon "$O"
    must_fail "negative qp" "$O" "$VK" encode "$T/ok.y4m" --qp -1 --recon "$O"
    must_fail "qp not a number" "$O" "$VK" encode "$T/ok.y4m" --qp high --recon "$O"
    must_fail "range above max" "$O" "$VK" encode "$T/ok.y4m" --range 257 --recon "$O"
    must_fail "unknown codec" "$O" "$VK" encode "$T/ok.y4m" --codec vp9 --recon "$O"
    must_fail "unknown B-pyramid" "$O" "$VK" encode "$T/ok.y4m" --bframes 2 --b-pyramid all --recon "$O"
    must_fail "unknown preset" "$O" "$VK" encode "$T/ok.y4m" --preset medium --recon "$O"
    grep -q "preset: 'medium' is not ultrafast, superfast or veryfast" "$T/stderr" ||
        fail "unknown preset: no message naming the presets"
    must_fail "unknown option" "$O" "$VK" encode "$T/ok.y4m" --bogus 1 --recon "$O"
    must_fail "missing value" - "$VK" encode "$T/ok.y4m" --qp
    must_fail "two inputs" "$O" "$VK" encode "$T/ok.y4m" "$T/ok.y4m" --recon "$O"
    must_fail "--size with an input" "$O" "$VK" encode "$T/ok.y4m" --size 64x48 --recon "$O"
    head -c $((64 * 48 * 3 * 2)) /dev/zero >"$T/r444.yuv"
    must_fail "raw 4:4:4" "$O" "$VK" encode "$T/r444.yuv" --input-size 64x48 --input-format yuv444p --recon "$O"
    must_fail "raw without size" "$O" "$VK" encode "$T/x.yuv" --recon "$O"
    must_fail "json and recon on stdout" - "$VK" encode "$T/ok.y4m" --json --recon -
    must_fail "unwritable recon" - "$VK" encode "$T/ok.y4m" --recon "$T/no/dir/r.y4m"
    grep -qF "vidkern encode: cannot create '$T/no/dir/r.y4m': No such file or directory" "$T/stderr" ||
        fail "unwritable recon: message form"
    must_fail "unwritable report" "$O" "$VK" encode "$T/ok.y4m" --report "$T/no/dir/r.json" --recon "$O"
    must_fail "unknown backend" "$O" "$VK" encode "$T/ok.y4m" --backend gpu --recon "$O"
    echo "ok: errors"
    ;;
bench)
    [ -n "$VKB" ] || { echo "no vidkern-bench: skipped"; exit 77; }
    "$VKB" --help | grep -q '^  encode ' || fail "encode not in the vidkern-bench list"
    "$VKB" encode --help | grep -q -- '--quick' || fail "vidkern-bench encode --help"
    "$VKB" encode --quick --backends c,simd,threads --qp 26,34 --quiet --json "$T/b.json" \
        --md "$T/b.md" >"$T/out" 2>"$T/err" || fail "bench --quick: $(cat "$T/err")"
    grep -q '^check: all 3 backends gave bit-identical results' "$T/out" || fail "no check line: $(cat "$T/out")"
    grep -q 'MISMATCH' "$T/out" && fail "backends disagree"
    grep -q '^source  *size  *codec' "$T/out" || fail "table header"
    # 2 codecs x 2 ranges x 2 QPs x 3 backends per source, one or two sources.
    rows=$(grep -c '^\(generated\|mosaic (real)\) ' "$T/out")
    [ "$rows" -eq 24 ] || [ "$rows" -eq 48 ] || fail "$rows result rows"
    json_ok "$T/b.json"
    grep -q '"all_identical": true' "$T/b.json" || fail "json all_identical"
    grep -q '"benchmark": "encode"' "$T/b.json" || fail "json"
    grep -q '^# vidkern-bench encode' "$T/b.md" && grep -q '^| source | size | codec |' "$T/b.md" ||
        fail "markdown"
    grep -q '^- command: `vidkern-bench encode' "$T/b.md" || fail "markdown command"
    # The H.264 tools: 2 fixed B-frames over 5 frames (I0 P3 B1 B2 P4: 2 B frames in the timed
    # pass), CABAC, Intra_4x4; the backends still equal.
    "$VKB" encode --quick --backends c,simd --codecs h264 --ranges 4 --frames 5 --bframes 2 \
        --b-adapt 0 --cabac --i4x4 --quiet --json "$T/bb.json" >"$T/out" 2>"$T/err" ||
        fail "bench --bframes: $(cat "$T/err")"
    json_ok "$T/bb.json"
    grep -q '"b_frames": 2,' "$T/bb.json" || fail "bench --bframes: no B frame counted"
    grep -q '"all_identical": true' "$T/bb.json" || fail "bench --bframes: backends differ"
    grep -q '"bframes": 2,' "$T/bb.json" && grep -q '"i4x4": 1,' "$T/bb.json" ||
        fail "bench --bframes: parameters not in the JSON"
    # The check can fail: a corrupted hash must give exit 1 and MISMATCH.
    VIDK_BENCH_ENCODE_INJECT=simd "$VKB" encode --quick --backends c,simd --codecs h264 \
        --ranges 4 --source gen --quiet >"$T/out" 2>"$T/err"
    [ $? -eq 1 ] || fail "an injected mismatch must fail the run"
    grep -q 'MISMATCH vs c' "$T/out" || fail "mismatch not shown: $(cat "$T/out")"
    # --encoders: N encoders at once give the same stream as one; the check can fail.
    "$VKB" encode --quick --backends simd,threads --codecs h264,hevc --ranges 4 --encoders 3 \
        --encoder-frames 7 --quiet --json "$T/e.json" >"$T/out" 2>"$T/err" || fail "bench --encoders: $(cat "$T/err")"
    grep -q '^3 encoders at once (each its own context and host thread), 7 frames each' "$T/out" ||
        fail "no --encoders section: $(cat "$T/out")"
    # (the ratio may have several digits before the point: a 7-frame single run on a busy
    # machine can be ten times slower than the three at once)
    rows=$(grep -c '^\(generated\|mosaic (real)\) .* [0-9][0-9]*\.[0-9][0-9] same$' "$T/out")
    [ "$rows" -eq 4 ] || [ "$rows" -eq 8 ] || fail "--encoders: $rows 'same' rows"
    json_ok "$T/e.json"
    grep -q '"encoders": 3, "encoder_frames": 7, "fps_one_encoder": [0-9]' "$T/e.json" || fail "json encoders"
    VIDK_BENCH_ENCODE_INJECT=encoders "$VKB" encode --quick --backends simd --codecs h264 \
        --ranges 4 --source gen --encoders 2 --encoder-frames 3 --quiet >"$T/out" 2>"$T/err"
    [ $? -eq 1 ] || fail "an injected --encoders difference must fail the run"
    grep -q ' DIFFER$' "$T/out" && grep -q 'the 2 encoders at once gave different streams' "$T/err" ||
        fail "--encoders difference not shown: $(cat "$T/out" "$T/err")"
    must_fail_b() { "$VKB" encode "$@" >/dev/null 2>&1 && fail "bench accepted $*"; return 0; }
    must_fail_b --sizes 10x10
    must_fail_b --sizes 63x48
    must_fail_b --ranges 300
    must_fail_b --qp 60
    must_fail_b --codecs vp9
    must_fail_b --backends foo
    must_fail_b --source camera
    must_fail_b --frames 1
    must_fail_b --outputs pixels
    must_fail_b --encoders 1
    must_fail_b --encoders 9
    must_fail_b --encoder-frames 1
    echo "ok: bench"
    ;;
*)
    fail "unknown case"
    ;;
esac
exit 0
