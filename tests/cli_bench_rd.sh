#!/bin/sh
# ctest cli_bench_rd: `vidkern-bench rd` end to end on tiny inputs: the table of every
# encoder and QP, the BD-rate table, JSON (python3 -m json.tool), CSV for plot_rd.py,
# Markdown, --no-x264, option errors, a real clip looped back and forth, the fallback to
# generated video without clips. The x264 rows are checked only where vidkern-bench was
# built with libx264; otherwise the run must say "x264 absent" and show none.
#   cli_bench_rd.sh VIDKERN_BENCH [VIDEO_DIR]
set -u
VKB=$1
VIDEO=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/vidk_cli_bench_rd.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

fail() {
    echo "FAIL: $*" >&2
    trap - EXIT INT TERM
    echo "outputs kept in $T" >&2
    exit 1
}

have_py=0
command -v python3 >/dev/null 2>&1 && have_py=1

# ---- the tiny run: generated 64x48, 4 frames, 4 QPs, 2 ranges, 2 presets ----
"$VKB" rd --source gen --sizes 64x48 --frames 4 --qps 22,27,32,37 --ranges 4,8 \
    --presets ultrafast,superfast --backend threads --threads 2 --x264-threads 1 \
    --json "$T/r.json" --md "$T/r.md" --plot-dir "$T/plots" >"$T/out" 2>"$T/err" ||
    fail "tiny run: exit $? ($(cat "$T/err"))"
for f in r.json r.md plots/rd.csv; do
    [ -s "$T/$f" ] || fail "$f missing or empty"
done
ls "$T/plots" | grep -q tmp && fail "temporary file left in the plot folder"
grep -q '^vidkern-bench rd ' "$T/out" || fail "no title line"
grep -q '^date: .* commit: ' "$T/out" || fail "no date/commit line"
grep -q '^== generated 64x48: 64x48, 4 frames' "$T/out" || fail "no source heading"
grep -q '^encoder  *QP  *kbit/frame  *PSNR-Y  *PSNR-YUV  *frames/s' "$T/out" || fail "no table header"
# 2 ranges x 4 QPs of vidkern, each with numbers: kbit (maybe *), two PSNRs, frames/s
for r in 4 8; do
    for q in 22 27 32 37; do
        grep -Eq "^vidkern R$r +$q +[0-9.]+\*? +[0-9]+\.[0-9]+ +[0-9]+\.[0-9]+ +[0-9.]+ +1 +0$" "$T/out" ||
            fail "no vidkern R$r QP $q row"
    done
done
# Bits: the stream, or the estimate said so.
est=0
if grep -q 'vidkern R4  *22  *[0-9.]*\*' "$T/out"; then
    grep -q 'bits from the loop.s estimate (estimate: no stream)' "$T/out" || fail "estimate not said"
    est=1
else
    grep -q 'bits from the stream' "$T/out" || fail "bits source not said"
fi
if grep -q '^x264 absent' "$T/out" || grep -q '^note: x264 absent' "$T/out"; then
    x264=0
    echo "x264 absent in this build: checking that no x264 row is shown" >&2
    grep -Eq '^x264 [a-z]+ +[0-9]' "$T/out" && fail "x264 rows without x264"
    grep -q 'BD-rate (PSNR-Y)' "$T/out" && fail "a BD-rate table without x264"
else
    x264=1
    grep -q '^x264 0\.[0-9]*.*tune psnr, constant QP' "$T/out" || fail "no x264 settings line"
    grep -q '^  x264 ultrafast: 1 threads; cabac 0, deblock 0, ref 1, bframes 0,' "$T/out" || fail "x264 threads / tools not reported"
    for p in ultrafast superfast; do
        for q in 22 27 32 37; do
            grep -Eq "^x264 $p +$q +[0-9.]+ +[0-9]+\.[0-9]+ +[0-9]+\.[0-9]+ +[0-9.]+ +1 +[0-9]+$" "$T/out" ||
                fail "no x264 $p QP $q row"
        done
    done
    grep -q 'BD-rate (PSNR-Y) against x264: *ultrafast *superfast' "$T/out" || fail "no BD-rate header"
    grep -q 'BD-rate (PSNR-YUV) against x264: *ultrafast *superfast' "$T/out" || fail "no PSNR-YUV BD-rate header"
    if [ "$est" = 1 ]; then
        grep -q '^  vidkern R4 (estimate: no stream) ' "$T/out" || fail "BD-rate rows lack the estimate mark"
    fi
    for r in 4 8; do
        n=$(grep -E "^  vidkern R$r( \(estimate: no stream\))? +[-+][0-9]+\.[0-9]+% +[-+][0-9]+\.[0-9]+%$" "$T/out" | wc -l)
        [ "$n" -eq 2 ] || fail "BD-rate rows (PSNR-Y, PSNR-YUV) of R$r missing or not numbers"
    done
    grep -q '^== summary over 1 source(s)' "$T/out" || fail "no summary"
    grep -Eq "^  vidkern R4.* [-+][0-9.]+% \(1\)" "$T/out" || fail "summary lacks the source counts"
fi
grep -q 'frames/s (mean over the QPs):' "$T/out" || fail "no frames/s summary"

# JSON: parses, holds every point and the BD-rates
if [ "$have_py" = 1 ]; then
    python3 -m json.tool "$T/r.json" >/dev/null || fail "JSON does not parse"
    python3 - "$T/r.json" "$x264" <<'EOF' || fail "JSON contents"
import json, sys
d = json.load(open(sys.argv[1]))
x264 = sys.argv[2] == "1"
assert d["benchmark"] == "rd" and d["qps"] == [22, 27, 32, 37] and d["ranges"] == [4, 8]
assert d["x264"]["available"] == x264
s = d["sources"]
assert len(s) == 1 and s[0]["kind"] == "gen" and s[0]["width"] == 64 and s[0]["frames"] == 4
pts = s[0]["points"]
assert len([p for p in pts if p["encoder"] == "vidkern"]) == 8
assert len([p for p in pts if p["encoder"] == "x264"]) == (8 if x264 else 0)
for p in pts:
    assert p["kbits_per_frame"] > 0 and 15 < p["psnr_y"] < 100 and p["fps"] > 0, p
    assert abs(p["psnr_yuv"] - (6 * p["psnr_y"] + p["psnr_u"] + p["psnr_v"]) / 8) < 1e-4
bd = s[0]["bdrate"]
assert len(bd) == (4 if x264 else 0)
for b in bd:
    assert isinstance(b["percent"], float), b
assert len(d["summary"]["bdrate"]) == len(bd)
EOF
fi
# CSV: header, 8 or 16 rows
head -1 "$T/plots/rd.csv" | grep -qx 'source,width,height,frames,encoder,config,qp,kbits_per_frame,psnr_y,psnr_yuv,fps,bits' ||
    fail "CSV header: $(head -1 "$T/plots/rd.csv")"
rows=$(($(wc -l <"$T/plots/rd.csv") - 1))
[ "$rows" -eq $((8 + 8 * x264)) ] || fail "CSV has $rows rows"
grep -q '^# vidkern-bench rd' "$T/r.md" || fail "Markdown title"
grep -q '^| vidkern R4 | 22 |' "$T/r.md" || fail "Markdown table"
# The plot script reads the CSV: PNGs where matplotlib is installed, else the text summary.
if [ "$have_py" = 1 ]; then
    if python3 -c 'import matplotlib' 2>/dev/null; then
        python3 "$HERE/../bench/plot_rd.py" "$T/plots/rd.csv" --out-dir "$T/plots" >"$T/plot.out" 2>&1 ||
            fail "plot_rd.py: $(cat "$T/plot.out")"
        [ -s "$T/plots/rd_all.png" ] && [ -s "$T/plots/rd_generated_64x48.png" ] || fail "plot_rd.py wrote no PNG"
    else
        python3 "$HERE/../bench/plot_rd.py" "$T/plots/rd.csv" --text >"$T/plot.out" 2>&1 ||
            fail "plot_rd.py --text: $(cat "$T/plot.out")"
    fi
    grep -q '^generated 64x48:' "$T/plot.out" || fail "plot_rd.py summary"
fi

# ---- --no-x264: vidkern only ----
"$VKB" rd --source gen --sizes 32x32 --frames 2 --qps 30,35 --ranges 2 --no-x264 --quiet \
    >"$T/out2" 2>"$T/err2" || fail "--no-x264: exit $? ($(cat "$T/err2"))"
grep -Eq '^x264 [a-z]+ +[0-9]' "$T/out2" && fail "--no-x264 shows x264 rows"
grep -q 'BD-rate (PSNR-Y)' "$T/out2" && fail "--no-x264 shows a BD-rate table"
[ "$(grep -c '^vidkern R2 ' "$T/out2")" -eq 2 ] || fail "--no-x264: not 2 vidkern rows"

# ---- errors ----
expect_error() {
    name=$1
    shift
    "$VKB" rd "$@" >"$T/eo" 2>"$T/ee" && fail "$name: accepted"
    [ -s "$T/ee" ] || fail "$name: no message"
}
expect_error "QP twice" --source gen --sizes 32x32 --qps 22,22
expect_error "bad size" --source gen --sizes 33x32
expect_error "bad source" --source tv
expect_error "few frames" --source gen --sizes 32x32 --frames 1
expect_error "unknown option" --bogus
expect_error "no source" --clips none --sizes none --video "$T"
if [ "$x264" = 1 ]; then
    expect_error "bad preset" --source gen --sizes 32x32 --presets warpspeed
    grep -q 'warpspeed' "$T/ee" || fail "bad preset not named"
fi

# ---- no clips: generated video, said so ----
"$VKB" rd --video "$T/none" --sizes 32x32 --frames 2 --qps 30,35 --ranges 2 --no-x264 \
    >"$T/out3" 2>"$T/err3" || fail "no clips: exit $? ($(cat "$T/err3"))"
grep -q 'no real clips found' "$T/out3" || fail "no clips: not said"
grep -q '^== generated 32x32' "$T/out3" || fail "no clips: no generated source"

# ---- a real clip, looped back and forth; a 1-frame clip skipped ----
if [ -z "$VIDEO" ] || [ ! -f "$VIDEO/akiyo_176x144_30fps_30f.y4m" ]; then
    echo "SKIP: real clips not found (${VIDEO:-no folder}); the rest passed" >&2
    [ -n "${VIDK_REQUIRE_VIDEO:-}" ] && [ "${VIDK_REQUIRE_VIDEO}" != 0 ] && fail "clips required"
    exit 77
fi
"$VKB" rd --video "$VIDEO" --clips akiyo,darkscene --sizes none --frames 34 --qps 30,36 \
    --ranges 4 --presets ultrafast --x264-threads 2 --json "$T/c.json" >"$T/out4" 2>"$T/err4" ||
    fail "clip run: exit $? ($(cat "$T/err4"))"
grep -q '^== akiyo_176x144_30fps_30f.y4m: 176x144, 34 frames (30 read, played forwards then backwards), 30/1 fps' "$T/out4" ||
    fail "akiyo heading"
grep -q 'note: akiyo_176x144_30fps_30f.y4m has 30 frames: played forwards then backwards up to 34' "$T/out4" ||
    fail "loop note"
grep -q 'note: clip darkscene_1920x1080_24fps_1f.y4m skipped: 1 frame' "$T/out4" || fail "1-frame clip not skipped"
[ "$(grep -c '^vidkern R4 ' "$T/out4")" -eq 2 ] || fail "clip: not 2 vidkern rows"
if [ "$have_py" = 1 ]; then
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = d["sources"]
assert len(s) == 1 and s[0]["kind"] == "clip" and s[0]["frames_read"] == 30 and s[0]["looped"]
' "$T/c.json" || fail "clip JSON"
fi
echo "cli_bench_rd: all checks passed"
exit 0
