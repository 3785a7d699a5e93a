#!/bin/sh
# End-to-end tests of `vidkern convert`: bad inputs (exit code 1 and a one-line message
# naming the file and the problem), pipes, round trips, real clips.
#
# usage: cli_io.sh VIDKERN CASE [VIDEO_DIR]      (ctest: cli_io_CASE)
# Inputs are made here with printf/head/dd, expected outputs too (not by vidkern).
set -u
V=$1
CASE=$2
VIDEO=${3:-}
T=$(mktemp -d "${TMPDIR:-/tmp}/vidk_cli_io.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

fail() {
    echo "FAIL [$CASE]: $*" >&2
    exit 1
}

# expect_fail WANT ARGS...: `vidkern convert ARGS` exits 1 with exactly one line on
# stderr, which contains WANT.
expect_fail() {
    want=$1
    shift
    "$V" convert "$@" >stdout.txt 2>stderr.txt
    rc=$?
    [ "$rc" -eq 1 ] || fail "exit code $rc (expected 1) for: convert $*; stderr: $(cat stderr.txt)"
    n=$(wc -l <stderr.txt)
    [ "$n" -eq 1 ] || fail "expected one line on stderr, got $n: $(cat stderr.txt)"
    grep -qF -- "$want" stderr.txt || fail "message '$(cat stderr.txt)' lacks '$want'"
    echo "ok ($*): $(cat stderr.txt)"
}

# expect_ok ARGS...: exit code 0.
expect_ok() {
    "$V" convert -q "$@" 2>stderr.txt
    rc=$?
    [ "$rc" -eq 0 ] || fail "exit code $rc for: convert $*: $(cat stderr.txt)"
}

size_of() { wc -c <"$1" | tr -d ' '; }

same() { cmp "$1" "$2" >/dev/null || fail "$1 and $2 differ"; }

# y4m_of HEADER RAWFILE FRAMEBYTES > out: the Y4M stream of a raw file, built by hand.
y4m_of() {
    printf '%s\n' "$1"
    total=$(size_of "$2")
    i=0
    while [ $((i * $3)) -lt "$total" ]; do
        printf 'FRAME\n'
        dd if="$2" bs="$3" skip="$i" count=1 2>/dev/null
        i=$((i + 1))
    done
}

HDR='YUV4MPEG2 W16 H16 F25:1 Ip A0:0 C420jpeg' # what vidkern writes for 16x16 8-bit 4:2:0
head -c 1152 /dev/urandom >p3.yuv                # 3 frames of 16x16 4:2:0 (384 bytes)
y4m_of "$HDR" p3.yuv 384 >p3.y4m

case "$CASE" in
help)
    "$V" convert --help >out.txt || fail "--help failed"
    grep -q "usage: vidkern convert IN OUT" out.txt || fail "no usage line"
    ;;
truncated)
    head -c $((${#HDR} + 1 + 6 + 384 + 6 + 100)) p3.y4m >cut.y4m
    expect_fail "cut.y4m: frame 1 truncated (got 100 of 384 bytes)" cut.y4m out.yuv
    # A file output appears only when the conversion succeeds: no file, no temporary.
    [ ! -e out.yuv ] || fail "a failed conversion left out.yuv"
    ls ./*.tmp* >/dev/null 2>&1 && fail "a failed conversion left a temporary file"
    # Written in place (stdout): the frames before the error, never part of a frame.
    expect_fail "cut.y4m: frame 1 truncated" cut.y4m - --output-format yuv
    [ "$(size_of stdout.txt)" -eq 384 ] || fail "stdout has $(size_of stdout.txt) bytes, not 384"
    expect_fail "cut.y4m: frame 1 truncated" cut.y4m -
    head -c $((${#HDR} + 1 + 6 + 384)) p3.y4m >one.y4m
    same stdout.txt one.y4m
    # An existing output is left as it was.
    printf 'old' >keep.yuv
    expect_fail "cut.y4m: frame 1 truncated" cut.y4m keep.yuv
    [ "$(cat keep.yuv)" = old ] || fail "a failed conversion changed keep.yuv"
    ;;
not_y4m)
    printf 'hello world\n' >hello.y4m
    expect_fail "hello.y4m: not a YUV4MPEG2 stream" hello.y4m out.yuv
    [ ! -e out.yuv ] || fail "an output was created for a bad input"
    head -c 5000 /dev/urandom | tr -d 'Y' >noise.y4m
    expect_fail "noise.y4m: not a YUV4MPEG2 stream" noise.y4m out.yuv
    ;;
empty)
    : >empty.y4m
    expect_fail "empty.y4m: empty input" empty.y4m out.yuv
    : >empty.yuv
    expect_fail "empty.yuv: empty input" empty.yuv out.y4m --input-size 16x16
    expect_fail "stdin: empty input" - out.yuv </dev/null
    ;;
bad_header)
    t() {
        printf '%s\n' "$1" >h.y4m
        head -c 390 /dev/zero >>h.y4m
        expect_fail "h.y4m: $2" h.y4m out.yuv
    }
    t 'YUV4MPEG2 H16 C420jpeg' "Y4M header has no W (width) tag"
    t 'YUV4MPEG2 W16' "Y4M header has no H (height) tag"
    t 'YUV4MPEG2 W0 H16' "bad width 'W0'"
    t 'YUV4MPEG2 W-16 H16' "bad width 'W-16'"
    t 'YUV4MPEG2 Wabc H16' "bad width 'Wabc'"
    t 'YUV4MPEG2 W99999999999999999999 H16' "bad width 'W99999999999999999999'"
    t 'YUV4MPEG2 W16385 H16' "bad width 'W16385' in Y4M header (expected W1..W16384)"
    t 'YUV4MPEG2 W16 H16385' "bad height 'H16385'"
    t 'YUV4MPEG2 W16 H16 C411' "unsupported chroma 'C411'"
    t 'YUV4MPEG2 W16 H16 Cfoo' "unsupported chroma 'Cfoo'"
    t 'YUV4MPEG2 W16 H16 F0:1' "bad frame rate 'F0:1'"
    t 'YUV4MPEG2 W16 H16 F30:0' "bad frame rate 'F30:0'"
    t 'YUV4MPEG2 W16 H16 A1:0' "bad aspect ratio 'A1:0'"
    t 'YUV4MPEG2 W16 H16 Iz' "bad interlacing 'Iz'"
    printf 'YUV4MPEG2 W16 H16 C420jpeg' >nonl.y4m
    expect_fail "nonl.y4m: Y4M header has no newline" nonl.y4m out.yuv
    { printf 'YUV4MPEG2 W16 H16 X'; head -c 3000 /dev/zero | tr '\000' a; printf '\n'; } >long.y4m
    expect_fail "long.y4m: Y4M header line too long" long.y4m out.yuv
    ;;
bad_frame)
    { printf '%s\nFRAMX\n' "$HDR"; head -c 384 /dev/zero; } >m.y4m
    expect_fail "m.y4m: frame 0: bad FRAME marker 'FRAMX'" m.y4m out.yuv
    { head -c $((${#HDR} + 1 + 6 + 384)) p3.y4m; printf 'GARBAGE'; } >g.y4m
    expect_fail "g.y4m: frame 1: bad FRAME marker 'G'" g.y4m - --output-format yuv
    [ "$(size_of stdout.txt)" -eq 384 ] || fail "the good frame was not written"
    { printf 'YUV4MPEG2 W2 H2 C420p10\nFRAME\n'; printf '\377\377'; head -c 10 /dev/zero; } >r.y4m
    expect_fail "r.y4m: frame 0: sample 65535 at plane 0 x 0 y 0 is above the 10-bit maximum" r.y4m out.yuv
    ;;
raw_partial)
    head -c $((384 * 2 + 192)) p3.yuv >part.yuv
    expect_fail "part.yuv: frame 2 truncated (got 192 of 384 bytes)" part.yuv out.y4m --input-size 16x16
    [ ! -e out.y4m ] || fail "a failed conversion left out.y4m"
    expect_fail "part.yuv: frame 2 truncated (got 192 of 384 bytes)" part.yuv - --input-size 16x16
    head -c $((${#HDR} + 1 + 2 * 390)) p3.y4m >two.y4m
    same stdout.txt two.y4m
    ;;
raw_options)
    expect_fail "p3.yuv: raw input needs --input-size WxH" p3.yuv out.y4m
    expect_fail "--input-size: '0x16' is not a size" p3.yuv out.y4m --input-size 0x16
    expect_fail "--input-size: '16' is not a size" p3.yuv out.y4m --input-size 16
    expect_fail "--input-format: unknown pixel format 'yuv411p'" p3.yuv out.y4m --input-size 16x16 --input-format yuv411p
    expect_fail "are for raw input, not .y4m" p3.y4m out.yuv --input-size 16x16
    ;;
usage)
    expect_fail "needs an input and an output" p3.y4m
    expect_fail "unknown option '--bogus'" p3.y4m out.yuv --bogus
    expect_fail "too many arguments" p3.y4m out.yuv extra
    expect_fail "out.mp4: cannot tell the output format" p3.y4m out.mp4
    expect_fail "--output-format: 'mp4' is not y4m or yuv" p3.y4m out.x --output-format mp4
    expect_fail "--frames: '0' is not an integer" p3.y4m out.yuv --frames 0
    expect_fail "--fps: '30/0' is not a frame rate" p3.y4m out.yuv --fps 30/0
    expect_fail "option --fps needs a value" p3.y4m out.yuv --fps
    expect_fail "'./p3.y4m' is the input file 'p3.y4m': refusing to overwrite it" p3.y4m ./p3.y4m --output-format y4m
    same p3.y4m p3.y4m
    expect_fail "missing.y4m: cannot open: No such file or directory" missing.y4m out.yuv
    expect_fail "vidkern convert: cannot create 'nodir/out.yuv': No such file or directory" p3.y4m nodir/out.yuv
    ;;
pipe_in)
    # Reading a pipe needs no seeking.
    cat p3.y4m | "$V" convert - out.yuv -q || fail "cat | vidkern convert - out.yuv failed"
    same out.yuv p3.yuv
    cat p3.yuv | "$V" convert - out.y4m --input-size 16x16 --input-format yuv420p -q || fail "raw pipe failed"
    same out.y4m p3.y4m
    head -c 1000 p3.y4m | "$V" convert - out.yuv 2>stderr.txt && fail "truncated pipe accepted"
    grep -qF "stdin: frame 2 truncated" stderr.txt || fail "message: $(cat stderr.txt)"
    ;;
pipe_out)
    "$V" convert p3.yuv - --input-size 16x16 -q >out.y4m || fail "convert to stdout failed"
    same out.y4m p3.y4m
    cat p3.y4m | "$V" convert - - --output-format yuv -q | cat >out.yuv || fail "pipe to pipe failed"
    same out.yuv p3.yuv
    ;;
roundtrip)
    for fmt in "gray 256" "yuv420p 384" "yuv422p 512" "yuv444p 768" "gray10le 512" \
        "yuv420p10le 768" "yuv422p12le 1024" "yuv444p16le 1536"; do
        set -- $fmt
        head -c $(($2 * 3)) /dev/urandom >in.yuv
        case $1 in *10le) tr -c '\000-\003' '\001' <in.yuv >t && mv t in.yuv ;; # 10-bit range
            *12le) tr -c '\000-\017' '\001' <in.yuv >t && mv t in.yuv ;; esac
        expect_ok in.yuv mid.y4m --input-size 16x16 --input-format "$1" --fps 30000/1001
        expect_ok mid.y4m out.yuv
        same in.yuv out.yuv
        expect_ok mid.y4m again.y4m
        same mid.y4m again.y4m
        head -n 1 mid.y4m | grep -q "^YUV4MPEG2 W16 H16 F30000:1001 Ip A0:0 C" || fail "header: $(head -1 mid.y4m)"
    done
    ;;
odd_size)
    # 17x9 4:2:0: chroma 9x5, 243 bytes a frame.
    head -c 486 /dev/urandom >odd.yuv
    expect_ok odd.yuv odd.y4m --input-size 17x9
    y4m_of 'YUV4MPEG2 W17 H9 F25:1 Ip A0:0 C420jpeg' odd.yuv 243 >want.y4m
    same odd.y4m want.y4m
    expect_ok odd.y4m back.yuv
    same back.yuv odd.yuv
    head -c 485 odd.yuv >odd_cut.yuv
    expect_fail "odd_cut.yuv: frame 1 truncated (got 242 of 243 bytes)" odd_cut.yuv x.y4m --input-size 17x9
    ;;
frames)
    expect_ok p3.y4m two.yuv --frames 2
    head -c 768 p3.yuv >want.yuv
    same two.yuv want.yuv
    ;;
write_error)
    [ -w /dev/full ] || { echo "no /dev/full: skipped"; exit 77; }
    expect_fail "/dev/full: write error: No space left on device" p3.y4m /dev/full --output-format yuv
    ;;
real_clip)
    clip="$VIDEO/akiyo_176x144_30fps_30f.y4m"
    [ -f "$clip" ] || { echo "no real clip at $clip: skipped"; [ "${VIDK_REQUIRE_VIDEO:-0}" = 0 ] && exit 77; exit 1; }
    # Y4M -> Y4M through pipes keeps the header's X fields: the same bytes.
    cat "$clip" | "$V" convert - - -q | cat >copy.y4m || fail "pipe copy failed"
    same copy.y4m "$clip"
    expect_ok "$clip" a.yuv
    [ "$(size_of a.yuv)" -eq $((30 * 38016)) ] || fail "a.yuv: $(size_of a.yuv) bytes"
    expect_ok a.yuv a.y4m --input-size 176x144 --fps 30/1
    expect_ok a.y4m b.yuv
    same a.yuv b.yuv
    # Cut inside frame 7: 7 frames out, then the error.
    hl=$(head -n 1 "$clip" | wc -c)
    head -c $((hl + 7 * 38022 + 1000)) "$clip" >cut.y4m
    expect_fail "cut.y4m: frame 7 truncated (got 994 of 38016 bytes)" cut.y4m c.yuv
    [ ! -e c.yuv ] || fail "a failed conversion left c.yuv"
    expect_fail "cut.y4m: frame 7 truncated (got 994 of 38016 bytes)" cut.y4m - --output-format yuv
    [ "$(size_of stdout.txt)" -eq $((7 * 38016)) ] || fail "stdout: $(size_of stdout.txt) bytes"
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "cli_io_$CASE: passed"
