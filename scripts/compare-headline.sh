#!/usr/bin/env bash
# compare-headline.sh: the four headline figures of docs/PERFORMANCE.md for two source
# trees side by side, on the GPU machine, in one call.
#
#   scripts/compare-headline.sh BASE_TREE [VIDEO_DIR]
#
# BASE_TREE is an exported source tree of the base commit (e.g. `git archive 1d20832 |
# tar -x -C .devdata/base`); the other tree is this checkout. Both are built for sm_90
# (VIDK_CUDA_ARCH) in their own build folders, then each benchmark runs for the base and
# for HEAD, alternating, so that both see the same machine state:
#   encode 1080p R 32 (H.264 and HEVC, cuda, real mosaic), frames/s
#   ME 41 partitions 1080p R 64 (cuda, sequence mode), ms
#   HEVC DCI 4K all-4x4 forward kernel (one launch), us
#   H.264 1080p intra inverse throughput (cuda), ms/frame
# Logs go to $OUT (or ./compare-logs). The benchmarks are `vidkern bench X` in trees
# that have it and `vidkern-bench X` in trees that have that program.
set -u -o pipefail
base=$(cd "${1:?usage: compare-headline.sh BASE_TREE [VIDEO_DIR]}" && pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
video=${2:-$root/.devdata/video}
logs=${OUT:-$root/compare-logs}
arch=${VIDK_CUDA_ARCH:-90}
jobs=$(nproc 2>/dev/null || echo 4)
mkdir -p "$logs"

build_tree() { # TREE BUILD NAME
    cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" \
        -DVIDK_BUILD_TESTS=OFF -DVIDK_GIT_COMMIT="$3" >"$logs/build-$3.log" 2>&1 &&
        cmake --build "$2" -j "$jobs" >>"$logs/build-$3.log" 2>&1
}
bench_cmd() { # BUILD -> the benchmark command prefix
    if [ -x "$1/bench/vidkern-bench" ]; then echo "$1/bench/vidkern-bench"
    else echo "$1/tools/vidkern bench"; fi
}
build_tree "$base" "$root/build-base" base || { tail -n 30 "$logs/build-base.log"; exit 1; }
build_tree "$root" "$root/build-head" head || { tail -n 30 "$logs/build-head.log"; exit 1; }

declare -A B=([base]=$(bench_cmd "$root/build-base") [head]=$(bench_cmd "$root/build-head"))
for round in 1 2; do
    for t in base head; do
        b=${B[$t]}
        $b encode --sizes 1080p --ranges 32 --backends cuda --source real --video "$video" \
            --md "$logs/encode-$t-$round.md" >"$logs/encode-$t-$round.log" 2>&1
        $b me --sizes 1080p --ranges 64 --shapes h264 --backends cuda --runs 7 --frames 3 \
            --video "$video" --markdown "$logs/me-$t-$round.md" >"$logs/me-$t-$round.log" 2>&1
        $b hevc --workloads 4k-4x4 --direction fwd --backends cuda --streams 1 \
            --video "$video" --markdown "$logs/hevc-$t-$round.md" \
            >"$logs/hevc-$t-$round.log" 2>&1
        $b h264 --sizes 1080p --modes intra --backends cuda --video "$video" \
            --markdown "$logs/h264-$t-$round.md" >"$logs/h264-$t-$round.log" 2>&1
        echo "round $round $t: exit codes done"
    done
done
# One table: tree, round and the four figures (read from the Markdown reports).
col() { # FILE HEADER-REGEX COLUMN-NAME ROW-REGEX: the named column of the first matching row
    awk -F'|' -v hre="$2" -v name="$3" -v rre="$4" '
        $0 ~ hre && !c { for (i = 1; i <= NF; i++) { h = $i; gsub(/^ +| +$/, "", h); if (h == name) c = i }; next }
        c && $0 ~ rre { v = $c; gsub(/ /, "", v); print v; exit }' "$1" 2>/dev/null
}
{
    printf '%-5s %-5s %12s %12s %14s %16s %16s\n' tree round enc264_fps enc265_fps me41_seq_ms hevc4x4_kern_ms h264intra_tput_ms
    for round in 1 2; do for t in base head; do
        printf '%-5s %-5s %12s %12s %14s %16s %16s\n' "$t" "$round" \
            "$(col "$logs/encode-$t-$round.md" 'frames/s' 'frames/s' '\\| h264 .*\\| cuda ')" \
            "$(col "$logs/encode-$t-$round.md" 'frames/s' 'frames/s' '\\| hevc .*\\| cuda ')" \
            "$(col "$logs/me-$t-$round.md" 'ms/frame' 'ms/frame' '\\| cuda-seq ')" \
            "$(col "$logs/hevc-$t-$round.md" 'GPU kernel vs' 'GPU kernel' '^\\| 4k-4x4 ')" \
            "$(col "$logs/h264-$t-$round.md" 'cuda tput' 'cuda tput' '^\\| 1080p ')"
    done; done
} | tee "$logs/headline.txt"
echo "logs in $logs"
