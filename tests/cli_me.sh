#!/bin/sh
# ctest cli_me_*: end-to-end tests of `vidkern me` and `vidkern-bench me`.
#   cli_me.sh VIDKERN CASE [VIDEO_DIR] [VIDKERN_BENCH]
# CASE: basic, backends, errors, real, png, bench (needs VIDKERN_BENCH). Exit 77 = skipped
# (ctest SKIP).
set -u
VK=$1
CASE=$2
VIDEO=${3:-}
VKB=${4:-}
T=$(mktemp -d "${TMPDIR:-/tmp}/vidk_cli_me.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

CLI_CMD=me
. "$(dirname "$0")/cli_lib.sh"

# mky4m W H FRAMES FILE: 8-bit 4:2:0 Y4M of random samples (odd sizes allowed).
mky4m() {
    cw=$((($1 + 1) / 2))
    ch=$((($2 + 1) / 2))
    n=$(($1 * $2 + 2 * cw * ch))
    {
        printf 'YUV4MPEG2 W%d H%d F25:1 Ip A0:0 C420jpeg\n' "$1" "$2"
        i=0
        while [ $i -lt "$3" ]; do
            printf 'FRAME\n'
            head -c $n /dev/urandom
            i=$((i + 1))
        done
    } >"$4"
}

case "$CASE" in
basic)
    # Generated input (no IN): 4 frames = 3 frame pairs, all H.264 shapes.
    "$VK" me --gen-size 64x48 --frames 4 --range 4 --shapes h264 --backend c --quiet \
        -o "$T/a.bin" >"$T/out" 2>"$T/err" || fail "me on generated video: $(cat "$T/err")"
    grep -q '^3 frame pairs of built-in generated video 64x48' "$T/out" || fail "summary: $(cat "$T/out")"
    grep -q 'backend c' "$T/out" || fail "summary lacks the backend"
    grep -q 'zero vectors' "$T/out" || fail "summary lacks the zero-vector share"
    [ -f "$T/a.bin" ] && [ ! -e "$T/a.bin.tmp" ] || fail "a.bin missing or a.bin.tmp left"
    # 64x48: 12 macroblocks x 41 partitions x 12 bytes x 3 frames + 64-byte header.
    size=$(wc -c <"$T/a.bin")
    [ "$size" -eq $((64 + 3 * 12 * 41 * 12)) ] || fail "a.bin has $size bytes"
    "$VK" me --read "$T/a.bin" >"$T/out" || fail "--read"
    grep -q '64x48 (4x3 macroblocks), 8-bit, R=4, lambda 0, 3 frames' "$T/out" || fail "read summary: $(cat "$T/out")"
    "$VK" me --read "$T/a.bin" -o "$T/a.csv" >/dev/null || fail "--read -o csv"
    [ "$(wc -l <"$T/a.csv")" -eq $((1 + 3 * 12 * 41)) ] || fail "csv rows"
    head -1 "$T/a.csv" | grep -qx 'frame,shape,bx,by,x,y,mvx,mvy,cost,sad' || fail "csv header"
    "$VK" me --read "$T/a.bin" -o "$T/b.bin" >/dev/null && cmp -s "$T/a.bin" "$T/b.bin" || fail "bin -> bin copy differs"
    "$VK" me --read "$T/a.bin" -o "$T/a.json" --json >"$T/sum.json" || fail "--read -o json"
    grep -q '"frame_count": 3' "$T/a.json" || fail "json frame_count"
    grep -q '"frames": 3' "$T/sum.json" || fail "--json summary of --read"
    # The JSON summary of a search; lambda and --search-area (128 -> R = 62).
    "$VK" me --gen-size 48x32 --frames 2 --search-area 20 --lambda 4 --backend simd --json \
        -o "$T/c.json" >"$T/sum.json" 2>"$T/err" || fail "--json: $(cat "$T/err")"
    grep -q '"range": 8,' "$T/sum.json" || fail "--search-area 20 should give R = 8: $(cat "$T/sum.json")"
    grep -q '"lambda": 4,' "$T/sum.json" && grep -q '"frames": 1,' "$T/sum.json" || fail "json summary"
    grep -q '"mean_sad_per_pixel"' "$T/sum.json" && grep -q '"zero_mv_share"' "$T/sum.json" || fail "json stats"
    "$VK" me --gen-size 48x32 --frames 2 --search-area 128 --json --backend c >"$T/sum.json" || fail "area 128"
    grep -q '"range": 62,' "$T/sum.json" || fail "--search-area 128 should give R = 62"
    # Raw input through stdin, and a .y4m IN against the same frames as --ref: every
    # vector must be (0,0) with SAD 0 (the zero vector wins every tie).
    n=$((40 * 24 * 3 / 2))
    head -c $((3 * n)) /dev/urandom >"$T/r.yuv"
    { printf 'YUV4MPEG2 W40 H24 F25:1 Ip A0:0 C420jpeg\n'
      for i in 0 1 2; do printf 'FRAME\n'; dd if="$T/r.yuv" bs=$n skip=$i count=1 2>/dev/null; done
    } >"$T/r.y4m"
    "$VK" me "$T/r.y4m" --range 5 --shapes 8x8 -o "$T/y.bin" --quiet >/dev/null || fail "y4m"
    "$VK" me - --input-size 40x24 --input-format yuv420p --range 5 --shapes 8x8 -o "$T/raw.bin" \
        --quiet <"$T/r.yuv" >/dev/null || fail "raw through stdin"
    cmp -s "$T/y.bin" "$T/raw.bin" || fail "raw stdin input differs from the same frames in Y4M"
    "$VK" me "$T/r.y4m" --ref "$T/r.y4m" --range 5 --shapes all --lambda 2 -o "$T/self.bin" --quiet >/dev/null || fail "self ref"
    "$VK" me --read "$T/self.bin" --json >"$T/self.json" || fail "read self"
    n0=$(grep -c '"mean_sad_per_pixel": 0.0000, "zero_mv_share": 1.0000' "$T/self.json")
    [ "$n0" -eq 9 ] || fail "searching frames against themselves must give zero vectors: $(cat "$T/self.json")"
    grep -q '"reference": "file"' "$T/self.json" || fail "reference flag"
    echo "ok: basic"
    ;;
backends)
    # Bit-identical fields on every backend: odd size, R 7, all shapes, lambda 3.
    mky4m 70 38 3 "$T/in.y4m"
    backends="c simd threads"
    "$VK" info --json | grep -q '"cuda"' && backends="$backends cuda"
    for b in $backends; do
        "$VK" me "$T/in.y4m" --range 7 --shapes all --lambda 3 --backend $b --quiet \
            -o "$T/$b.bin" >/dev/null 2>"$T/err" || fail "backend $b: $(cat "$T/err")"
        "$VK" me --gen-size 80x48 --frames 3 --range 9 --shapes h264 --backend $b --quiet \
            -o "$T/g$b.bin" >/dev/null 2>"$T/err" || fail "backend $b (gen): $(cat "$T/err")"
        "$VK" me "$T/in.y4m" --range 3 --cpumask 0 --backend $b --quiet -o "$T/m$b.bin" >/dev/null ||
            fail "backend $b --cpumask 0"
    done
    for b in $backends; do
        cmp -s "$T/c.bin" "$T/$b.bin" || fail "$b differs from c (random odd-size input)"
        cmp -s "$T/gc.bin" "$T/g$b.bin" || fail "$b differs from c (generated input)"
        cmp -s "$T/mc.bin" "$T/m$b.bin" || fail "$b --cpumask 0 differs from c"
        echo "ok: $b = c"
    done
    "$VK" me "$T/in.y4m" --range 7 --shapes all --lambda 3 --threads 3 --backend threads --quiet -o "$T/t3.bin" >/dev/null &&
        cmp -s "$T/c.bin" "$T/t3.bin" || fail "--threads 3 differs"
    ;;
errors)
    mky4m 48 32 3 "$T/a.y4m"
    mky4m 64 32 3 "$T/wide.y4m"
    mky4m 48 32 1 "$T/one.y4m"
    printf 'YUV4MPEG2 W48 H32 F25:1 Ip A0:0 C420jpeg\n' >"$T/empty.y4m"
    { printf 'YUV4MPEG2 W48 H32 F25:1 Ip A0:0 C420p10 XYSCSS=420P10\n'
      i=0; while [ $i -lt 2 ]; do printf 'FRAME\n'; head -c $((48 * 32 * 3)) /dev/zero; i=$((i + 1)); done
    } >"$T/ten.y4m"
    head -c $(( $(wc -c <"$T/a.y4m") - 100 )) "$T/a.y4m" >"$T/trunc.y4m"
    O=$T/out.bin
    must_fail "mismatched sizes" "$O" "$VK" me "$T/a.y4m" --ref "$T/wide.y4m" -o "$O"
    must_fail "mismatched formats" "$O" "$VK" me "$T/a.y4m" --ref "$T/ten.y4m" -o "$O"
    must_fail "range above max" "$O" "$VK" me "$T/a.y4m" --range 257 -o "$O"
    must_fail "negative range" "$O" "$VK" me "$T/a.y4m" --range -1 -o "$O"
    must_fail "search area too small" "$O" "$VK" me "$T/a.y4m" --search-area 2 -o "$O"
    must_fail "odd search area" "$O" "$VK" me "$T/a.y4m" --search-area 9 -o "$O"
    must_fail "search area too large" "$O" "$VK" me "$T/a.y4m" --search-area 600 -o "$O"
    must_fail "range and area" "$O" "$VK" me "$T/a.y4m" --range 4 --search-area 12 -o "$O"
    must_fail "unknown shape" "$O" "$VK" me "$T/a.y4m" --shapes 16x16,3x3 -o "$O"
    must_fail "lambda above max" "$O" "$VK" me "$T/a.y4m" --lambda 65536 -o "$O"
    must_fail "empty input" "$O" "$VK" me "$T/empty.y4m" -o "$O"
    must_fail "empty input with --ref" "$O" "$VK" me "$T/empty.y4m" --ref "$T/a.y4m" -o "$O"
    must_fail "one frame" "$O" "$VK" me "$T/one.y4m" -o "$O"
    must_fail "truncated input" "$O" "$VK" me "$T/trunc.y4m" -o "$O"
    must_fail "missing input" "$O" "$VK" me "$T/nope.y4m" -o "$O"
    must_fail "unwritable output" - "$VK" me "$T/a.y4m" -o "$T/no/such/dir/x.bin"
    grep -qF "vidkern me: cannot create '$T/no/such/dir/x.bin': No such file or directory" "$T/stderr" ||
        fail "unwritable output: message form"
    must_fail "unknown output extension" "$T/x.txt" "$VK" me "$T/a.y4m" -o "$T/x.txt"
    must_fail "unwritable png" - "$VK" me "$T/a.y4m" --png "$T/no/dir/f.png" -o "$O"
    must_fail "bad png pattern" "$O" "$VK" me "$T/a.y4m" --png "$T/f%s.png" -o "$O"
    must_fail "png frame beyond the end" "$O" "$VK" me "$T/a.y4m" --png "$T/f.png" --png-frame 5 -o "$O"
    must_fail "raw without size" "$O" "$VK" me "$T/x.yuv" -o "$O"
    must_fail "unknown pixel format" "$O" "$VK" me "$T/a.y4m" --input-size 48x32 --input-format foo -o "$O"
    must_fail "unknown option" "$O" "$VK" me "$T/a.y4m" --bogus 1 -o "$O"
    must_fail "picture below 16x16" "$O" "$VK" me --gen-size 8x8 --quiet -o "$O"
    printf 'VKMX' >"$T/bad.bin"
    head -c 60 /dev/zero >>"$T/bad.bin"
    must_fail "--read bad magic" "$T/bad.csv" "$VK" me --read "$T/bad.bin" -o "$T/bad.csv"
    "$VK" me --gen-size 32x32 --frames 2 -o "$T/g.bin" --quiet >/dev/null || fail "g.bin"
    head -c 100 "$T/g.bin" >"$T/gt.bin"
    must_fail "--read truncated" "$T/gt.csv" "$VK" me --read "$T/gt.bin" -o "$T/gt.csv"
    [ -f "$T/f.png" ] && fail "png left behind"
    echo "ok: errors"
    ;;
real)
    clip=$VIDEO/container_352x288_30fps_15f.y4m
    [ -n "$VIDEO" ] && [ -f "$clip" ] || { echo "no real clips: skipped"; exit 77; }
    for b in c threads; do
        "$VK" me "$clip" --frames 3 --range 8 --shapes h264 --backend $b --quiet \
            -o "$T/$b.bin" >"$T/$b.out" 2>"$T/err" || fail "$b on $clip: $(cat "$T/err")"
    done
    cmp -s "$T/c.bin" "$T/threads.bin" || fail "threads differs from c on the real clip"
    grep -q '^2 frame pairs of' "$T/c.out" || fail "summary: $(cat "$T/c.out")"
    # A clip against itself: zero vectors, SAD 0, for real content too.
    "$VK" me "$clip" --ref "$clip" --frames 2 --range 6 --shapes 16x16,4x4 -o "$T/self.bin" --quiet >/dev/null || fail "self"
    "$VK" me --read "$T/self.bin" --json | grep -c '"mean_sad_per_pixel": 0.0000, "zero_mv_share": 1.0000' |
        grep -qx 2 || fail "clip against itself must give zero vectors"
    # Slow motion (container): most 16x16 vectors are short, the mean SAD is moderate.
    echo "ok: real ($(sed -n 3p "$T/c.out"))"
    ;;
png)
    "$VK" me --gen-size 64x48 --frames 2 --png "$T/probe.png" --quiet >/dev/null 2>"$T/err"
    if [ $? -ne 0 ]; then
        grep -qi 'png' "$T/err" && grep -qiE 'support|not available|without' "$T/err" &&
            { echo "no PNG support: skipped"; exit 77; }
        fail "png: $(cat "$T/err")"
    fi
    sig=$(head -c 8 "$T/probe.png" | od -An -tx1 | tr -d ' \n')
    [ "$sig" = 89504e470d0a1a0a ] || fail "not a PNG: $sig"
    "$VK" me --gen-size 64x48 --frames 4 --shapes h264 --png "$T/f_%02d.png" --png-mode arrows \
        --png-shape 8x8 --quiet >/dev/null || fail "png sequence"
    for k in 00 01 02; do [ -s "$T/f_$k.png" ] || fail "f_$k.png missing"; done
    [ -e "$T/f_03.png" ] && fail "one picture too many"
    "$VK" me --gen-size 64x48 --frames 4 --png "$T/k.png" --png-frame 2 --png-norm 8 --quiet >/dev/null || fail "png-frame"
    [ -s "$T/k.png" ] || fail "k.png"
    "$VK" me --gen-size 64x48 --frames 3 -o "$T/a.bin" --quiet >/dev/null || fail "a.bin"
    "$VK" me --read "$T/a.bin" --png "$T/r.png" >/dev/null || fail "--read --png"
    [ -s "$T/r.png" ] || fail "r.png"
    echo "ok: png"
    ;;
bench)
    [ -n "$VKB" ] || { echo "no vidkern-bench: skipped"; exit 77; }
    "$VKB" me --sizes 64x48 --ranges 2,4 --shapes 16x16,h264 --frames 2 --runs 2 \
        --source gen --backends c,simd,threads --max-seconds 0 --quiet \
        --csv "$T/b.csv" --json "$T/b.json" --markdown "$T/b.md" >"$T/out" 2>"$T/err" ||
        fail "bench: $(cat "$T/err")"
    [ "$(wc -l <"$T/b.csv")" -eq 13 ] || fail "csv rows: $(wc -l <"$T/b.csv")"
    head -1 "$T/b.csv" | grep -q '^source,kind,width,height,shapes,range,area,backend' || fail "csv header"
    grep -q '"results": \[' "$T/b.json" && grep -q '"complexity": \[' "$T/b.json" || fail "json"
    grep -q '^- Commit: ' "$T/b.md" && grep -q '^- Command: `vidkern-bench me' "$T/b.md" || fail "markdown header"
    grep -q '^| source | size | shapes | R |' "$T/b.md" || fail "markdown table"
    grep -q 'complexity' "$T/out" || fail "complexity table"
    grep -q 'MISMATCH' "$T/out" && fail "backends disagree"
    # A budget too small for c: estimated from a stripe and labelled so.
    "$VKB" me --sizes 64x64 --ranges 16 --shapes 16x16 --frames 1 --runs 1 --source gen \
        --backends c --max-seconds 0.000001 --quiet --csv "$T/e.csv" >"$T/out" 2>"$T/err" ||
        fail "bench estimate: $(cat "$T/err")"
    grep -q '(est. from 1 rows)' "$T/out" || fail "estimate not labelled: $(cat "$T/out")"
    # Real clips (CIF = container + cars, other sizes = mosaic), when present.
    if [ -n "$VIDEO" ] && [ -f "$VIDEO/container_352x288_30fps_15f.y4m" ]; then
        "$VKB" me --sizes cif,96x64 --ranges 2 --shapes h264 --frames 2 --runs 1 \
            --video "$VIDEO" --backends c,simd --max-seconds 0 --quiet >"$T/out" 2>"$T/err" ||
            fail "bench on real clips: $(cat "$T/err")"
        grep -q '^container (real) *352x288' "$T/out" && grep -q '^cars (real) *320x240' "$T/out" &&
            grep -q '^mosaic (real) *96x64' "$T/out" || fail "real sources: $(cat "$T/out")"
        grep -q 'MISMATCH' "$T/out" && fail "backends disagree on real clips"
    fi
    # The GPU against the CPU, with the stage times, where there is a GPU.
    if "$VK" info --json | grep -q '"cuda"'; then
        "$VKB" me --sizes 128x96 --ranges 4,16 --shapes 16x16,h264,4x4 --frames 2 --runs 3 \
            --source gen --backends simd,cuda --max-seconds 0 --quiet --markdown "$T/g.md" \
            >"$T/out" 2>"$T/err" || fail "bench cuda: $(cat "$T/err") $(cat "$T/out")"
        grep -q '^## CUDA stages' "$T/g.md" || fail "no CUDA stage table"
    fi
    # The installed tool has no benchmarks: it points at vidkern-bench.
    "$VK" bench me --sizes 64x48 >"$T/out" 2>"$T/err" && fail "vidkern bench accepted"
    grep -q 'vidkern-bench' "$T/err" || fail "vidkern bench: no pointer to vidkern-bench: $(cat "$T/err")"
    must_fail_b() { "$VKB" me "$@" >/dev/null 2>&1 && fail "bench accepted $*"; return 0; }
    must_fail_b --sizes 10x10
    must_fail_b --ranges 300
    must_fail_b --shapes 3x3
    must_fail_b --backends foo
    must_fail_b --source camera
    echo "ok: bench"
    ;;
*)
    fail "unknown case"
    ;;
esac
exit 0
