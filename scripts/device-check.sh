#!/usr/bin/env bash
# device-check.sh: everything to run on the GPU machine, in one call.
#
#   scripts/device-check.sh [CMD ...]
#
# 1. nvidia-smi and the toolchain (nvcc, cmake, compute-sanitizer) are recorded;
# 2. configure with CUDA (-DCMAKE_CUDA_ARCHITECTURES=${VIDK_CUDA_ARCH:-90}) and build;
# 3. `vidkern info` must list a CUDA device;
# 4. the whole ctest suite must pass, and every test labelled `gpu` (and `cuda`) must
#    pass without skipping (VIDK_REQUIRE_GPU=1 also turns their skip into a failure);
# 5. every `gpu` test runs under compute-sanitizer memcheck (with leak check), racecheck,
#    synccheck and initcheck, and must report no error;
# 6. each CMD (a shell command, e.g. a benchmark: '"$BUILD"/bench/vidkern-bench me') runs
#    afterwards from the repository root, with BUILD (the build folder) and OUT (the log
#    folder) in its environment.
#
# Logs go to $OUT when set (the device tool's output folder), else <build>/logs; a summary
# table is printed at the end and written to summary.txt as the steps finish. Exit status
# 0 only when every step passed.
#
# Environment: OUT, VIDK_DEVICE_BUILD (build folder, default build-device),
# VIDK_CUDA_ARCH (default 90), VIDK_SANITIZERS (default "memcheck racecheck synccheck
# initcheck"; empty: none), VIDK_SANITIZE_TESTS (an extended regex: only the GPU tests whose
# names match run under the sanitizers; default all), VIDK_SANITIZER_TIMEOUT (seconds per run, default 420: racecheck of hevc_cuda takes ~340 s on an H100),
# VIDK_GIT_COMMIT (commit id for the reports, before the copy's .git: the device tool's copy
# of the tree can carry an older one; device-session.sh sets it from .devdata/headc), VIDK_CMAKE_ARGS
# (extra configure arguments), VIDK_VIDEO_DIR (real clips; default: the first of ../shared/video, shared/video,
# .devdata/video holding .y4m files), JOBS (default: all cores).
set -u -o pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${VIDK_DEVICE_BUILD:-$root/build-device}
logs=${OUT:-$build/logs}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
arch=${VIDK_CUDA_ARCH:-90}
sanitizers=${VIDK_SANITIZERS-memcheck racecheck synccheck initcheck}
san_timeout=${VIDK_SANITIZER_TIMEOUT:-420}
mkdir -p "$logs" || exit 1
summary=$logs/summary.txt
: >"$summary"

names=() states=() secs=() where=()
failed=0
# record NAME STATE SECONDS LOG-OR-NOTE
record() {
    names+=("$1") states+=("$2") secs+=("$3") where+=("$4")
    [ "$2" = FAIL ] && failed=1
    printf '%-34s %-5s %6s  %s\n' "$1" "$2" "$3" "$4" >>"$summary"
    printf '== %-31s %-5s %6ss  %s\n' "$1" "$2" "$3" "$4"
}
# run NAME LOGFILE CMD...: PASS when CMD exits 0; the output goes to LOGFILE.
run() {
    local name=$1 log=$2 t0=$SECONDS rc
    shift 2
    "$@" >"$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then record "$name" PASS $((SECONDS - t0)) "$log"; else
        record "$name" FAIL $((SECONDS - t0)) "$log (exit $rc)"; tail -n 25 "$log"; fi
    return $rc
}
finish() {
    echo
    echo "device-check summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), commit ${VIDK_GIT_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')})"
    printf '%-34s %-5s %7s  %s\n' STEP STATE SECONDS "LOG / NOTE"
    for i in "${!names[@]}"; do
        printf '%-34s %-5s %7s  %s\n' "${names[$i]}" "${states[$i]}" "${secs[$i]}" "${where[$i]}"
    done
    if [ $failed -eq 0 ]; then echo "RESULT: PASS"; else echo "RESULT: FAIL"; fi
    exit $failed
}

# ---- toolchain -----------------------------------------------------------------------
for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    if [ -n "$d" ] && [ -x "$d/bin/nvcc" ] && ! command -v nvcc >/dev/null 2>&1; then
        export PATH="$d/bin:$PATH"
    fi
    if [ -n "$d" ] && [ -x "$d/bin/compute-sanitizer" ] && ! command -v compute-sanitizer >/dev/null 2>&1; then
        export PATH="$d/bin:$PATH"
    fi
done
[ -x /usr/local/cuda/compute-sanitizer/compute-sanitizer ] && ! command -v compute-sanitizer >/dev/null 2>&1 &&
    export PATH="/usr/local/cuda/compute-sanitizer:$PATH"
{
    echo "host: $(uname -a)"; echo "cores: $jobs"
    for t in nvcc cmake ninja compute-sanitizer cuobjdump; do
        printf '%s: ' "$t"; command -v "$t" || echo "(not found)"
    done
    nvcc --version 2>&1 | tail -n 2; cmake --version 2>&1 | head -n 1
    compute-sanitizer --version 2>&1 | tail -n 1
} >"$logs/toolchain.txt" 2>&1
record toolchain INFO 0 "$logs/toolchain.txt"

t0=$SECONDS
if nvidia-smi >"$logs/nvidia-smi.txt" 2>&1; then
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap \
        --format=csv >>"$logs/nvidia-smi.txt" 2>&1
    record nvidia-smi PASS $((SECONDS - t0)) "$(grep -v '^index' "$logs/nvidia-smi.txt" | tail -n 1)"
else
    record nvidia-smi FAIL $((SECONDS - t0)) "$logs/nvidia-smi.txt (no driver/GPU?)"
fi

# ---- real clips --------------------------------------------------------------------
if [ -z "${VIDK_VIDEO_DIR:-}" ]; then
    for d in "$root/../shared/video" "$root/shared/video" "$root/.devdata/video"; do
        if ls "$d"/*.y4m >/dev/null 2>&1; then
            VIDK_VIDEO_DIR=$(cd "$d" && pwd)
            export VIDK_VIDEO_DIR
            break
        fi
    done
fi
if [ -n "${VIDK_VIDEO_DIR:-}" ]; then
    record "real video" INFO 0 "$VIDK_VIDEO_DIR ($(find "$VIDK_VIDEO_DIR" -maxdepth 1 -name '*.y4m' | wc -l) clips)"
else
    record "real video" INFO 0 "none found: GPU tests use synthetic pictures only"
fi

# ---- configure + build ---------------------------------------------------------------
gen=()
command -v ninja >/dev/null 2>&1 && [ ! -f "$build/Makefile" ] && gen=(-G Ninja)
run configure "$logs/configure.log" cmake -S "$root" -B "$build" "${gen[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DVIDK_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" \
    -DVIDK_BUILD_TESTS=ON -DVIDK_BUILD_TOOLS=ON -DVIDK_BUILD_BENCH=ON -DVIDK_SANITIZE=OFF \
    ${VIDK_VIDEO_DIR:+-DVIDK_SHARED_VIDEO="$VIDK_VIDEO_DIR"} \
    ${VIDK_GIT_COMMIT:+-DVIDK_GIT_COMMIT="$VIDK_GIT_COMMIT"} ${VIDK_CMAKE_ARGS:-} || finish
if ! grep -q '^#define VIDK_HAVE_CUDA 1' "$build/config.h" 2>/dev/null; then
    record "cuda enabled" FAIL 0 "config.h has no VIDK_HAVE_CUDA 1 (nvcc not found?)"
    finish
fi
run build "$logs/build.log" cmake --build "$build" -j "$jobs" || finish
nwarn=$(grep -c -i 'warning' "$logs/build.log")
record "build warnings" "$([ "$nwarn" -eq 0 ] && echo PASS || echo WARN)" 0 "$nwarn line(s) with 'warning' in build.log"

# ---- vidkern info --------------------------------------------------------------------
vk=$build/tools/vidkern
t0=$SECONDS
{ "$vk" info && "$vk" info --json; } >"$logs/vidkern-info.txt" 2>&1
if grep -q '^cuda 0:' "$logs/vidkern-info.txt"; then
    record "vidkern info" PASS $((SECONDS - t0)) "$(grep '^cuda 0:' "$logs/vidkern-info.txt")"
else
    record "vidkern info" FAIL $((SECONDS - t0)) "$logs/vidkern-info.txt: no CUDA device listed"
fi

# SASS of the library: a count of the packed-byte SAD instruction, for the record.
if command -v cuobjdump >/dev/null 2>&1 && [ -f "$build/libvidkern.a" ]; then
    cuobjdump -sass "$build/libvidkern.a" >"$logs/sass.txt" 2>&1
    record "sass" INFO 0 "$logs/sass.txt: $(grep -c VABSDIFF4 "$logs/sass.txt") VABSDIFF4"
fi

# ---- ctest -----------------------------------------------------------------------------
export VIDK_REQUIRE_GPU=1
# With clips here, a test whose real-clip part cannot run fails instead of skipping.
[ -n "${VIDK_VIDEO_DIR:-}" ] && export VIDK_REQUIRE_VIDEO=1
ctest --test-dir "$build" -N -L gpu >"$logs/gpu-tests.txt" 2>&1
mapfile -t gpu_tests < <(sed -n 's/^ *Test *#[0-9]*: *\([^ ]*\).*$/\1/p' "$logs/gpu-tests.txt")
if [ ${#gpu_tests[@]} -eq 0 ] || ! printf '%s\n' "${gpu_tests[@]}" | grep -qx cuda; then
    record "gpu tests found" FAIL 0 "${gpu_tests[*]:-none} (test 'cuda' must be labelled gpu)"
else
    record "gpu tests found" PASS 0 "${gpu_tests[*]}"
fi
run ctest "$logs/ctest.log" ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900
# A skip is not a failure for ctest: look at each GPU test's own result line.
for t in "${gpu_tests[@]}"; do
    line=$(grep -E "Test +#[0-9]+: $t( |\$)" "$logs/ctest.log" | tail -n 1)
    if echo "$line" | grep -q 'Passed'; then record "ctest $t" PASS 0 "passed, not skipped"
    else record "ctest $t" FAIL 0 "${line:-no result line} (must pass, not skip)"; fi
done
nskip=$(grep -c -E '\*\*\*Skipped|Not Run' "$logs/ctest.log")
[ "$nskip" -gt 0 ] && record "ctest skips" INFO 0 "$nskip test(s) skipped or not run: see ctest.log"

# ---- compute-sanitizer ------------------------------------------------------------------
# Each GPU test's command and working directory, from ctest's JSON (python3) or -N -V.
gpu_cmds=()
if command -v python3 >/dev/null 2>&1; then
    mapfile -t gpu_cmds < <(ctest --test-dir "$build" --show-only=json-v1 -L gpu 2>/dev/null |
        python3 -c '
import json, shlex, sys
for t in json.load(sys.stdin).get("tests", []):
    wd = next((p["value"] for p in t.get("properties", []) if p["name"] == "WORKING_DIRECTORY"), ".")
    print(t["name"] + "\t" + wd + "\t" + shlex.join(t.get("command", [])))')
else
    mapfile -t gpu_cmds < <(ctest --test-dir "$build" -N -V -L gpu 2>/dev/null | awk '
        /Test command:/ { sub(/^[0-9]+: Test command: /, ""); cmd = $0 }
        /Working Directory:/ { sub(/^[0-9]+: Working Directory: /, ""); wd = $0 }
        /^ *Test *#[0-9]+:/ { print $3 "\t" wd "\t" cmd }')
fi
if [ -n "$sanitizers" ] && ! command -v compute-sanitizer >/dev/null 2>&1; then
    record "compute-sanitizer" FAIL 0 "not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)"
    sanitizers=""
fi
for entry in "${gpu_cmds[@]}"; do
    IFS=$'\t' read -r tname twd tcmd <<<"$entry"
    [ -n "$tcmd" ] || { record "sanitize $tname" FAIL 0 "no command found"; continue; }
    if [ -n "${VIDK_SANITIZE_TESTS:-}" ] && ! echo "$tname" | grep -qxE "$VIDK_SANITIZE_TESTS"; then
        record "sanitize $tname" INFO 0 "not selected (VIDK_SANITIZE_TESTS)"
        continue
    fi
    for tool in $sanitizers; do
        log="$logs/sanitizer-$tname-$tool.log"
        extra=()
        [ "$tool" = memcheck ] && extra=(--leak-check full)
        t0=$SECONDS
        (cd "$twd" && eval "VIDK_UNDER_SANITIZER=1 timeout $san_timeout compute-sanitizer \
            --tool $tool ${extra[*]} --error-exitcode 86 --print-limit 50 $tcmd") >"$log" 2>&1
        rc=$?
        summ=$(grep -E '(ERROR|RACECHECK) SUMMARY' "$log" | tail -n 1 | sed 's/^=* *//')
        if [ $rc -eq 0 ] && [ -n "$summ" ] && ! echo "$summ" | grep -qE '(SUMMARY: [1-9]|\([1-9][0-9]* error)'; then
            record "sanitize $tname $tool" PASS $((SECONDS - t0)) "$summ"
        else
            record "sanitize $tname $tool" FAIL $((SECONDS - t0)) "$log (exit $rc; ${summ:-no summary})"
            tail -n 30 "$log"
        fi
    done
done

# ---- extra commands ---------------------------------------------------------------------
export BUILD=$build OUT=$logs
i=0
for cmd in "$@"; do
    i=$((i + 1))
    run "extra $i: ${cmd:0:24}" "$logs/extra-$i.log" bash -c "cd '$root' && $cmd"
    echo "---- extra $i: $cmd (last lines; full log $logs/extra-$i.log)"
    tail -n 40 "$logs/extra-$i.log"
done

finish
