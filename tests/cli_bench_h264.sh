#!/bin/sh
# ctest cli_bench_h264: a tiny CPU-only run of `vidkern-bench h264` that checks the shape
# of its outputs (tables, CSV, JSON, markdown), --save / --load round trips, the option
# errors, that a reconstruction differing from the c backend fails the run, and (in CUDA
# builds) the cuda rows through the host emulation of the kernels.
#   cli_bench_h264.sh VIDKERN_BENCH [VIDEO_DIR]
set -u
VKB=$1
VIDEO=${2:-}
T=$(mktemp -d "${TMPDIR:-/tmp}/vidk_bench_h264.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
if [ -n "$VIDEO" ] && [ -d "$VIDEO" ]; then
    export VIDK_VIDEO_DIR="$VIDEO"
fi

fail() {
    echo "FAIL: $*" >&2
    trap - EXIT INT TERM
    echo "outputs kept in $T" >&2
    exit 1
}

# The smallest useful run: 3 modes x 2 frames of 64x48, the three CPU backends.
TINY="--sizes 64x48 --frames 2 --runs 2 --max-seconds 0.2"

# must_fail WHAT CMD...: exit status 1 and one "vidkern-bench h264: ..." line on stderr.
must_fail() {
    what=$1
    shift
    "$@" >"$T/stdout" 2>"$T/stderr"
    rc=$?
    [ $rc -eq 1 ] || fail "$what: exit $rc, expected 1 ($(cat "$T/stderr"))"
    grep -q '^vidkern-bench h264: ' "$T/stderr" || fail "$what: message not 'vidkern-bench h264: ...'"
    echo "ok: $what -> $(tail -1 "$T/stderr")"
}

# ---- help ----
"$VKB" h264 --help >"$T/help" || fail "--help exit status"
grep -q '^usage: vidkern-bench h264' "$T/help" || fail "--help text"
for o in --sizes --modes --backends --frames --source --save --load --csv --json --markdown --max-seconds; do
    grep -q -- "$o" "$T/help" || fail "--help does not mention $o"
done

# ---- a full tiny run with every output ----
"$VKB" h264 $TINY --backends c,simd,threads --quiet --csv "$T/a.csv" --json "$T/a.json" \
    --markdown "$T/a.md" --save "$T/wl" >"$T/out" 2>"$T/err" || fail "tiny run: $(cat "$T/err")"
[ ! -s "$T/err" ] || fail "--quiet run wrote to stderr: $(cat "$T/err")"
for title in 'Workloads and non-zero block ratio (Fig. 2)' 'Bytes per frame (KB)' \
    'Complete IDCT per frame (Fig. 5), ms' 'Kernel speed-up over scalar code per transform size (Fig. 4)' \
    'CPU DSP functions, ns per block (median)' 'Targets of issue 3'; do
    grep -qxF "$title" "$T/out" || fail "stdout lacks the table '$title'"
done
grep -q '^device: .* cores online' "$T/out" || fail "no device line"
grep -q '^date: .* commit: ' "$T/out" || fail "no date/commit line"
for m in intra qp22 qp37; do
    grep -q "^64x48  *$m  *2 " "$T/out" || fail "workload row 64x48 $m"
done
# Non-zero ratios are percentages in 0..100 and fall from intra to qp37.
nz() { awk -v m="$1" '$1 == "64x48" && $2 == m && NF >= 10 { sub("%", "", $8); print $8; exit }' "$T/out"; }
ni=$(nz intra)
n37=$(nz qp37)
[ -n "$ni" ] && [ -n "$n37" ] || fail "no non-zero ratios in the workload table"
awk -v a="$ni" -v b="$n37" 'BEGIN { exit !(a > b && a <= 100 && b >= 0) }' ||
    fail "non-zero ratio intra $ni% should exceed qp37 $n37%"
grep -q 'simd add4x4_idct vs x264' "$T/out" || fail "no per-block target"

# CSV: exact header, 3 modes x 3 classes of non-zero ratios, 3 modes x 3 backends x 4 timed rows.
head -1 "$T/a.csv" | grep -qx 'section,size,mode,backend,variant,class,value,ms,kernel_ms,h2d_ms,d2h_ms,total_ms,h2d_bytes,d2h_bytes,runs,mismatch,note' ||
    fail "CSV header: $(head -1 "$T/a.csv")"
[ "$(grep -c '^workload,64x48,[a-z0-9]*,,nonzero_ratio,' "$T/a.csv")" -eq 9 ] || fail "CSV non-zero rows"
[ "$(grep -c '^time,64x48,' "$T/a.csv")" -eq 36 ] || fail "CSV time rows: $(grep -c '^time,' "$T/a.csv")"
awk -F, 'NR > 1 { if (NF < 17) bad = 1 } END { exit bad }' "$T/a.csv" || fail "CSV rows with fewer than 17 fields"
awk -F, '$1 == "time" && ($8 == "" || $8 <= 0 || $16 != 0) { bad = 1 } END { exit bad }' "$T/a.csv" ||
    fail "CSV time rows need ms > 0 and mismatch 0"
grep -q '^micro,,,simd,idct_add_4x4,' "$T/a.csv" || fail "CSV micro rows"
grep -q '^target,' "$T/a.csv" || fail "CSV target rows"
# JSON parses and has the workloads.
if command -v python3 >/dev/null 2>&1; then
    python3 - "$T/a.json" <<'EOF' || fail "JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tool"] == "vidkern-bench h264" and d["mismatches"] == 0 and d["failures"] == 0
assert len(d["workloads"]) == 3, len(d["workloads"])
for w in d["workloads"]:
    assert w["width"] == 64 and w["height"] == 48 and w["frames"] == 2
    assert len(w["results"]) == 12 and all(r["done"] for r in w["results"])
EOF
fi
# Markdown for docs/PERFORMANCE.md: device, date, commit, command, tables.
grep -q '^# vidkern-bench h264' "$T/a.md" || fail "markdown title"
for k in Device Date Commit Command; do grep -q "^- $k: " "$T/a.md" || fail "markdown lacks $k"; done
grep -q '^## Complete IDCT per frame (Fig. 5), ms' "$T/a.md" || fail "markdown table"
grep -q '^| size | mode | c | simd | threads |' "$T/a.md" || fail "markdown table header"
ls "$T"/*.tmp >/dev/null 2>&1 && fail "left a .tmp file behind"

# ---- --save wrote replayable workloads; --load gives the same blocks and bytes ----
for m in intra qp22 qp37; do
    [ -s "$T/wl/64x48_$m.vkcf" ] && [ -s "$T/wl/64x48_$m.pred.y4m" ] || fail "--save: 64x48_$m missing"
done
"$VKB" h264 --load "$T/wl" --backends c,simd --runs 1 --max-seconds 0.1 --quiet \
    --csv "$T/b.csv" >"$T/out2" 2>"$T/err" || fail "--load: $(cat "$T/err")"
grep '^workload,.*,\(nonzero_ratio\|bytes_\)' "$T/a.csv" >"$T/wa"
grep '^workload,.*,\(nonzero_ratio\|bytes_\)' "$T/b.csv" >"$T/wb"
cmp -s "$T/wa" "$T/wb" || fail "--load differs from the saved run: $(diff "$T/wa" "$T/wb")"
# --modes filters loaded files named <size>_<mode>.vkcf.
"$VKB" h264 --load "$T/wl" --modes qp37 --backends c --runs 1 --quiet --csv "$T/c.csv" \
    >/dev/null 2>"$T/err" || fail "--load --modes: $(cat "$T/err")"
[ "$(grep -c '^workload,64x48,qp37,,nonzero_ratio' "$T/c.csv")" -eq 3 ] &&
    [ "$(grep -c '^workload,64x48,\(intra\|qp22\)' "$T/c.csv")" -eq 0 ] || fail "--load --modes qp37"
# A file without its predictions decodes onto flat grey (and still checks the bits).
mkdir "$T/own" && cp "$T/wl/64x48_qp22.vkcf" "$T/own/mydump.vkcf"
"$VKB" h264 --load "$T/own" --backends c,simd --runs 1 --quiet >"$T/out3" 2>"$T/err" ||
    fail "--load of a user file: $(cat "$T/err")"
grep -q '^64x48  *mydump ' "$T/out3" || fail "user file row: $(grep mydump "$T/out3")"

# ---- generated video ----
VIDK_VIDEO_DIR=/nonexistent "$VKB" h264 $TINY --source gen --modes qp22 --backends simd \
    --quiet >"$T/out4" 2>"$T/err" || fail "--source gen: $(cat "$T/err")"
grep -q '^64x48  *qp22 ' "$T/out4" || fail "--source gen row"

# ---- the cross-check can fail: a corrupted simd sample must give exit 1 ----
VIDK_BENCH_H264_FAULT=simd "$VKB" h264 $TINY --modes intra --backends c,simd --quiet \
    >"$T/out5" 2>"$T/err"
[ $? -eq 1 ] || fail "a corrupted simd reconstruction did not fail the run"
grep -q 'simd batch (all) on 64x48 intra differs from the c backend' "$T/err" || fail "mismatch message: $(cat "$T/err")"
echo "ok: corrupted output detected"

# ---- option errors ----
must_fail "unknown option" "$VKB" h264 --bogus
must_fail "bad size" "$VKB" h264 --sizes 10x10
must_fail "bad mode" "$VKB" h264 --modes qp30
must_fail "bad backend" "$VKB" h264 --backends gpu
must_fail "bad source" "$VKB" h264 --source camera
must_fail "bad frames" "$VKB" h264 --frames 0
mkdir "$T/empty"
must_fail "empty --load folder" "$VKB" h264 --load "$T/empty" --backends c --quiet
must_fail "missing --load folder" "$VKB" h264 --load "$T/nope" --backends c --quiet
printf 'VKCF264\nbroken' >"$T/empty/bad.vkcf"
must_fail "corrupt .vkcf" "$VKB" h264 --load "$T/empty" --backends c --quiet

# ---- CUDA builds: every Table-4 step through the host emulation, bits checked ----
if "$VKB" h264 --help | grep -q -- '--cuda-emu' &&
    "$VKB" h264 --sizes 32x32 --frames 1 --modes qp22 --backends c --runs 1 --quiet \
        --cuda-emu >/dev/null 2>"$T/err"; then
    "$VKB" h264 --sizes 48x32 --frames 2 --runs 1 --max-seconds 0.1 --backends c,simd \
        --cuda-emu --quiet --csv "$T/e.csv" >"$T/out6" 2>"$T/err" || fail "--cuda-emu: $(cat "$T/err")"
    for s in dense compact line larger coalesced sparse fused pipeline graphs host planes default no-overlap; do
        grep -q "^time,48x32,intra,cuda-emu,$s,all," "$T/e.csv" || fail "--cuda-emu: no $s row"
    done
    [ "$(grep -c '^time,48x32,[a-z0-9]*,cuda-emu,' "$T/e.csv")" -eq $((3 * (11 + 10 + 10 + 2))) ] ||
        fail "--cuda-emu rows: $(grep -c ',cuda-emu,' "$T/e.csv")"
    echo "ok: --cuda-emu (every step, bits equal to c)"
elif grep -q 'no CUDA backend' "$T/err" 2>/dev/null; then
    echo "skip: --cuda-emu (build without CUDA)"
else
    [ -s "$T/err" ] && fail "--cuda-emu probe: $(cat "$T/err")"
    echo "skip: --cuda-emu (a CUDA device is present: the real rows are the GPU test's job)"
fi

# ---- with a CUDA device: the real cuda rows (device stage times, throughput, bits) ----
"$VKB" h264 $TINY --backends c,cuda --gpu-contexts 2 --quiet --csv "$T/g.csv" \
    >"$T/out7" 2>"$T/err"
rc=$?
if grep -q 'backend cuda skipped' "$T/out7"; then
    # On the GPU machine (VIDK_REQUIRE_GPU=1) the real rows must run.
    [ "${VIDK_REQUIRE_GPU:-0}" = 1 ] && fail "real cuda rows skipped with VIDK_REQUIRE_GPU=1"
    echo "skip: real cuda rows (no CUDA device or build without CUDA)"
else
    [ $rc -eq 0 ] || fail "cuda run: exit $rc: $(cat "$T/err")"
    for s in dense compact line larger coalesced sparse fused pipeline graphs host planes; do
        # kernel_ms (column 9) comes from the CUDA events of the timing API.
        awk -F, -v s="$s" '$1 == "time" && $4 == "cuda" && $5 == s && $6 == "all" && $9 != "" { ok = 1 }
            END { exit !ok }' "$T/g.csv" || fail "cuda $s: no device-timed row"
    done
    grep -q '^time,64x48,qp22,cuda,throughput,all,,[0-9]' "$T/g.csv" || fail "cuda throughput row"
    grep -q '^time,64x48,qp22,cuda,throughput-legacy,all,,[0-9]' "$T/g.csv" || fail "cuda legacy throughput row"
    grep -q '^Table 3: dense baseline vs compacted' "$T/out7" || fail "no Table 3 with a GPU"
    echo "ok: real cuda rows (every step device-timed, throughput, bits equal to c)"
fi
echo "all cli_bench_h264 checks passed"
