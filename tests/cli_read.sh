#!/bin/sh
# ctest cli_read_*: how `vidkern encode` reads its source does not change what it writes.
# A regular file is read at the frames' offsets by --read-threads threads (default 3), a
# pipe in order by one: every way gives the same stream and --recon bytes, the same
# --frames limit, and the same error (message and exit status) for a bad or cut file.
#   cli_read.sh VIDKERN CASE
# CASE: same (threads 1/2/3/16, stdin from the file, a pipe, FRAME lines with parameters at
#       frames 0, 4, the last and all, raw input, --frames), faults (a frame cut in the
#       middle or in its FRAME marker, a bad marker, parameters and then a cut, --frames
#       stopping before the cut). Needs python3 (to edit the files), else exit 77 (SKIP).
set -u
VK=$1
CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/vidk_cli_read.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

CLI_CMD=encode
. "$HERE/cli_lib.sh"

if ! command -v python3 >/dev/null 2>&1; then
    echo "SKIP: python3 not found (it edits the test files)" >&2
    exit 77
fi

W=64
H=48
N=30
FB=$((W * H * 3 / 2))
"$VK" gen --size ${W}x${H} --frames $N -o "$T/in.y4m" --quiet || fail "gen"
HL=$(head -n 1 "$T/in.y4m" | wc -c)

# edit IN OUT PARAMS_AT PARAMS CUT_AT_BYTE BAD_MARKER_AT: rewrites the FRAME lines (frame
# PARAMS_AT, or every frame for -2, gets "FRAME PARAMS"; frame BAD_MARKER_AT "FRAMX"),
# then keeps only the first CUT_AT_BYTE bytes (-1: all).
edit() {
    python3 - "$@" "$HL" "$FB" "$N" <<'PYEOF' || fail "python3 edit $*"
import sys
src, dst, pat, params, cut, bad, hl, fb, n = sys.argv[1:]
pat, cut, bad, hl, fb, n = int(pat), int(cut), int(bad), int(hl), int(fb), int(n)
d = open(src, "rb").read()
out = bytearray(d[:hl])
for k in range(n):
    o = hl + k * (6 + fb)
    assert d[o:o + 6] == b"FRAME\n"
    line = b"FRAME\n"
    if k == pat or pat == -2:
        line = b"FRAME " + params.encode() + b"\n"
    if k == bad:
        line = b"FRAMX\n"
    out += line + d[o + 6:o + 6 + fb]
if cut >= 0:
    out = out[:cut]
open(dst, "wb").write(out)
PYEOF
}

# enc NAME INPUT ARGS...: encode into $T/NAME.264 and $T/NAME.rec.y4m (input "-" reads
# stdin as given to the function).
enc() {
    name=$1
    shift
    "$VK" encode "$@" -o "$T/$name.264" --recon "$T/$name.rec.y4m" --range 4 --quiet \
        >/dev/null 2>"$T/$name.err" || fail "$name: exit $?: $(cat "$T/$name.err")"
}
same() { # same REF NAME: the stream and the recon of NAME equal REF's
    cmp -s "$T/$1.264" "$T/$2.264" || fail "$2: the stream differs from $1's"
    cmp -s "$T/$1.rec.y4m" "$T/$2.rec.y4m" || fail "$2: the recon differs from $1's"
    echo "ok: $2 = $1"
}
frames_of() { python3 -c "import sys; print(open(sys.argv[1], 'rb').read().count(b'FRAME\n'))" "$1"; }

case "$CASE" in
same)
    enc ref "$T/in.y4m" --read-threads 1
    [ "$(frames_of "$T/ref.rec.y4m")" -eq $N ] || fail "ref: not $N frames"
    for t in 2 3 16; do
        enc t$t "$T/in.y4m" --read-threads $t
        same ref t$t
    done
    enc default "$T/in.y4m"
    same ref default
    enc stdin - <"$T/in.y4m"
    same ref stdin
    cat "$T/in.y4m" | enc pipe -
    same ref pipe
    for spec in "0 Ip" "4 Ib" "$((N - 1)) XA=1" "-2 Ip"; do
        set -- $spec
        edit "$T/in.y4m" "$T/p.y4m" "$1" "$2" -1 -1
        enc "params$1" "$T/p.y4m" --read-threads 3
        cmp -s "$T/ref.264" "$T/params$1.264" ||
            fail "FRAME parameters at frame $1: the stream differs"
        echo "ok: FRAME parameters at frame $1: the same stream"
    done
    # Raw input: the same pictures, the same stream.
    python3 -c "
import sys
d = open(sys.argv[1], 'rb').read()[$HL:]
open(sys.argv[2], 'wb').write(b''.join(d[k * ($FB + 6) + 6:(k + 1) * ($FB + 6)] for k in range($N)))
" "$T/in.y4m" "$T/in.yuv" || fail "raw"
    for t in 1 3; do
        "$VK" encode "$T/in.yuv" --input-size ${W}x${H} --read-threads $t -o "$T/raw$t.264" \
            --range 4 --quiet >/dev/null || fail "raw input, $t threads"
        cmp -s "$T/ref.264" "$T/raw$t.264" || fail "raw input, $t threads: the stream differs"
    done
    echo "ok: raw input: the same stream"
    # --frames: the first frames, whatever the threads.
    enc f7ref "$T/in.y4m" --read-threads 1 --frames 7
    [ "$(frames_of "$T/f7ref.rec.y4m")" -eq 7 ] || fail "--frames 7: not 7 frames"
    for t in 2 3 16; do
        enc f7t$t "$T/in.y4m" --read-threads $t --frames 7
        same f7ref f7t$t
    done
    cat "$T/in.y4m" | enc f7pipe - --frames 7
    same f7ref f7pipe
    ;;
faults)
    # fault WHAT WANT FILE: every way of reading fails with the same message (naming the
    # file, or stdin), containing WANT.
    fault() {
        fw=$1
        fwant=$2
        ff=$3
        ref=
        for t in 1 2 3 16; do
            must_fail "$fw, $t threads" "$T/o.264" "$VK" encode "$ff" --read-threads $t \
                -o "$T/o.264" --range 4
            grep -qF "$fwant" "$T/stderr" || fail "$fw: '$fwant' not in $(cat "$T/stderr")"
            [ -z "$ref" ] && ref=$(cat "$T/stderr")
            [ "$ref" = "$(cat "$T/stderr")" ] ||
                fail "$fw, $t threads: '$(cat "$T/stderr")', 1 thread: '$ref'"
        done
        must_fail "$fw, stdin" "$T/o.264" sh -c "'$VK' encode - -o '$T/o.264' --range 4 <'$ff'"
        [ "$(sed "s|$ff|stdin|" <<REF
$ref
REF
)" = "$(cat "$T/stderr")" ] || fail "$fw, stdin: '$(cat "$T/stderr")', file: '$ref'"
        must_fail "$fw, pipe" "$T/o.264" sh -c "cat '$ff' | '$VK' encode - -o '$T/o.264' --range 4"
        [ "$(sed "s|$ff|stdin|" <<REF
$ref
REF
)" = "$(cat "$T/stderr")" ] || fail "$fw, pipe: '$(cat "$T/stderr")', file: '$ref'"
    }
    F1=$((HL + 20 * (6 + FB)))
    edit "$T/in.y4m" "$T/cut.y4m" -1 "" $((F1 + 6 + 1000)) -1
    fault "frame 20 cut" "frame 20 truncated (got 1000 of $FB bytes)" "$T/cut.y4m"
    edit "$T/in.y4m" "$T/cutm.y4m" -1 "" $((F1 + 3)) -1
    fault "cut in frame 20's marker" "frame 20 truncated (input ends inside the FRAME marker)" \
        "$T/cutm.y4m"
    edit "$T/in.y4m" "$T/bad.y4m" -1 "" -1 12
    fault "bad marker at frame 12" "frame 12: bad FRAME marker 'FRAMX'" "$T/bad.y4m"
    edit "$T/in.y4m" "$T/pcut.y4m" 5 "Ip" $((F1 + 3 + 6 + 500)) -1
    fault "parameters at frame 5, then frame 20 cut" "frame 20 truncated (got 500 of $FB bytes)" \
        "$T/pcut.y4m"
    # --frames 20 stops before the cut frame: no error, the first 20 frames.
    enc c20ref "$T/in.y4m" --read-threads 1 --frames 20
    for t in 1 3 16; do
        enc c20t$t "$T/cut.y4m" --read-threads $t --frames 20
        same c20ref c20t$t
    done
    enc c20stdin - --frames 20 <"$T/cut.y4m"
    same c20ref c20stdin
    ;;
*)
    fail "unknown case $CASE"
    ;;
esac
echo "ok: $CASE"
