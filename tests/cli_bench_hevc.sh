#!/bin/sh
# ctest cli_bench_hevc: `vidkern-bench hevc` end to end on tiny CPU-only workloads:
# output shape (text, CSV, JSON, Markdown), option errors, real clips when present, and
# the cross-check failing (exit 1) on an injected mismatch.
#   cli_bench_hevc.sh VIDKERN_BENCH [VIDEO_DIR]
set -u
VKB=$1
VIDEO=${2:-}
T=$(mktemp -d "${TMPDIR:-/tmp}/vidk_cli_bench_hevc.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

fail() {
    echo "FAIL: $*" >&2
    trap - EXIT INT TERM
    echo "outputs kept in $T" >&2
    exit 1
}

WL=64x32-4x4,64x32-32x32,64x48-mixed
COMMON="--workloads $WL --backends c,simd,threads --frames 2 --runs 2 --max-seconds 0.2"

# ---- shape: generated video, every output file ----
"$VKB" hevc $COMMON --source gen --csv "$T/r.csv" --json "$T/r.json" \
    --markdown "$T/r.md" >"$T/out" 2>"$T/err" || fail "tiny run: exit $? ($(cat "$T/err"))"
for f in r.csv r.json r.md; do
    [ -s "$T/$f" ] || fail "$f missing or empty"
    [ ! -e "$T/$f.tmp" ] || fail "$f.tmp left behind"
done
grep -q '^vidkern-bench hevc' "$T/out" || fail "no title line"
grep -q '^date: .* commit: ' "$T/out" || fail "no date/commit line"
grep -q '^Table 1 (ms per frame):' "$T/out" || fail "no Table 1"
grep -q '^paper 4x4 .*234.59' "$T/out" || fail "no paper row (4x4)"
grep -q '^paper 32x32 .*705.95' "$T/out" || fail "no paper row (32x32)"
# one Table 1 row per workload and direction, CPU columns measured
for w in 64x32-4x4 64x32-32x32 64x48-mixed; do
    for d in fwd inv; do
        n=$(grep -c "^$w  *$d  *[0-9]" "$T/out")
        [ "$n" -ge 1 ] || fail "Table 1 / details lack $w $d"
    done
done
grep -q '^targets of issue 4:' "$T/out" || fail "no targets"
[ "$(sed -n '/^targets of issue 4:/,$p' "$T/out" | grep -c '^  ')" -eq 10 ] || fail "not 10 targets"
grep -q 'GPU kernel, DCI 4K all-32x32 fwd <= 30 us *not run' "$T/out" || fail "4K target should be 'not run'"
grep -q 'MISMATCH' "$T/out" && fail "mismatch reported on a clean run"
grep -q '64x48-mixed *64x48 4:2:0' "$T/out" || fail "mixed workload is not 4:2:0"
grep -q '64x32-4x4 *64x32 4:0:0' "$T/out" || fail "fixed workload is not 4:0:0"
grep -q 'TBs/frame 4x4/8x8/16x16/32x32: 128 / 0 / 0 / 0' "$T/out" || fail "64x32 all-4x4 should have 128 TBs"
grep -q 'TBs/frame 4x4/8x8/16x16/32x32: 0 / 0 / 0 / 2' "$T/out" || fail "64x32 all-32x32 should have 2 TBs"

# CSV: fixed header, 40 fields per row, 3 workloads x 2 directions x 3 backends
head -1 "$T/r.csv" | grep -qx 'workload,width,height,chroma,dist,source,frames,direction,impl,variant,tc,streams,sweep,threads,runs,ms_median,ms_min,device_total_ms,h2d_ms,kernel_ms,d2h_ms,kernel_only_ms,h2d_bytes,d2h_bytes,kernel_bytes,h2d_gbps,d2h_gbps,kernel_gbps,hbm_ratio,pcie_h2d_ratio,pcie_d2h_ratio,launches,checked_frames,mismatch_values,mismatch_tbs,max_abs_diff,mismatch,table1_overall,table1_kernel,error' ||
    fail "CSV header: $(head -1 "$T/r.csv")"
[ "$(wc -l <"$T/r.csv")" -eq 19 ] || fail "CSV has $(wc -l <"$T/r.csv") lines, expected 19"
awk -F, '{ if (NF != 40) bad = 1 } END { exit bad }' "$T/r.csv" || fail "CSV rows without 40 fields"
# every row checked 2 frames, none mismatched, none failed
awk -F, 'NR > 1 && ($33 != 2 || $37 != 0 || $40 != "") { bad = 1 } END { exit bad }' "$T/r.csv" ||
    fail "CSV: a row not checked on 2 frames, mismatched or failed"
# the Table 1 role marks exactly the 3 CPU columns of each workload and direction
[ "$(awk -F, 'NR > 1 && $38 == 1' "$T/r.csv" | wc -l)" -eq 18 ] || fail "CSV table1_overall marks"

# JSON: valid, with the sections the plot script and docs use
if command -v python3 >/dev/null 2>&1; then
    python3 - "$T/r.json" <<'EOF' || fail "JSON content"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["benchmark"] == "hevc"
assert len(j["workloads"]) == 3 and all(w["built"] for w in j["workloads"])
assert len(j["results"]) == 18, len(j["results"])
assert all(r["mismatch"] is False and r["checked_frames"] == 2 for r in j["results"])
assert len(j["table1"]) == 6 and all(t["cpu_c"] > 0 and t["gpu_kernel"] is None for t in j["table1"])
assert len(j["targets"]) == 10
assert j["paper_table1"]["32x32"][0] == 705.95
EOF
else
    grep -q '"benchmark": "hevc"' "$T/r.json" || fail "JSON"
fi

# Markdown for docs/PERFORMANCE.md: device, date, commit, command, the tables
for p in '^# vidkern-bench hevc' '^- Device: ' '^- Date: ' '^- Commit: ' '^- Command: `vidkern-bench hevc' \
    '^## Table 1' '^| 64x32-4x4 | fwd | [0-9]' '^## Targets of issue 4' '^## All configurations'; do
    grep -q "$p" "$T/r.md" || fail "markdown lacks '$p'"
done

# ---- option errors: exit 1, one message line ----
bad() {
    what=$1
    shift
    "$VKB" hevc "$@" >"$T/o" 2>"$T/e"
    rc=$?
    [ $rc -eq 1 ] || fail "$what: exit $rc, expected 1"
    [ "$(wc -l <"$T/e")" -eq 1 ] && grep -q '^vidkern-bench hevc: ' "$T/e" || fail "$what: stderr: $(cat "$T/e")"
    echo "ok: $what -> $(cat "$T/e")"
}
bad "bad workload" --workloads 4k-5x5
bad "bad size" --workloads 100x30-4x4
bad "bad streams" --streams 0-9
bad "bad direction" --direction sideways
bad "bad backend" --backends gpu
bad "unknown option" --frobnicate 1
bad "bad frames" --frames 0

# ---- the cross-check can fail: an injected difference must give exit 1 ----
VIDK_BENCH_HEVC_INJECT=simd "$VKB" hevc --workloads 64x32-mixed --backends c,simd --frames 2 \
    --runs 1 --source gen --quiet >"$T/out" 2>"$T/err"
[ $? -eq 1 ] || fail "injected mismatch: exit status not 1"
grep -q 'MISMATCH' "$T/out" || fail "injected mismatch not reported"
grep -q 'differ from the c backend' "$T/err" || fail "injected mismatch: no error message"

# ---- cuda configurations through the host emulation (builds with CUDA only) ----
"$VKB" hevc --workloads 64x48-mixed,64x32-4x4 --backends c,cuda --frames 2 --runs 1 \
    --streams 1,3 --source gen --cuda-emu --csv "$T/e.csv" >"$T/out" 2>"$T/err"
rc=$?
if grep -q 'needs a build with CUDA' "$T/err"; then
    echo "no CUDA in this build: emulation case skipped"
else
    [ $rc -eq 0 ] || fail "cuda emulation: exit $rc ($(cat "$T/err"))"
    # per workload and direction: c + cuda default, device, tc=off, tc=on, streams=1, 3
    [ "$(wc -l <"$T/e.csv")" -eq $((1 + 2 * 2 * 7)) ] || fail "emulation CSV rows: $(wc -l <"$T/e.csv")"
    awk -F, 'NR > 1 && $9 == "cuda" && ($33 != 2 || $37 != 0 || $40 != "") { bad = 1 } END { exit bad }' \
        "$T/e.csv" || fail "emulated cuda rows not checked, mismatched or failed"
    for v in default device tc=off tc=on streams=1 streams=3; do
        grep -q "^64x48-mixed *fwd *cuda *$v " "$T/out" || fail "emulation: no cuda $v row"
    done
    grep -q '^64x48-mixed *inv *( *[0-9.]*) *( *[0-9.]*)$' "$T/out" || fail "emulation: no sweep row"
    VIDK_BENCH_HEVC_INJECT=cuda "$VKB" hevc --workloads 64x32-4x4 --backends c,cuda --frames 1 \
        --runs 1 --streams none --tc none --source gen --cuda-emu --quiet >"$T/out" 2>"$T/err"
    [ $? -eq 1 ] && grep -q 'MISMATCH' "$T/out" || fail "injected cuda mismatch not caught"
fi

# ---- real clips (mosaic) when present ----
if [ -n "$VIDEO" ] && ls "$VIDEO"/*.y4m >/dev/null 2>&1; then
    "$VKB" hevc $COMMON --source real --video "$VIDEO" --direction fwd --quiet \
        >"$T/out" 2>"$T/err" || fail "real clips: $(cat "$T/err")"
    grep -q 'source: mosaic of' "$T/out" || fail "real clips: source is not the mosaic"
else
    echo "no real clips: real-video case skipped"; [ "${VIDK_REQUIRE_VIDEO:-0}" = 0 ] && exit 77; exit 1
fi
echo "cli_bench_hevc: all passed"
