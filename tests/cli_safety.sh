#!/bin/sh
# ctest cli_safety_*: command-line conventions and safety of every vidkern command, each
# tried as a new user would (options as x264 / ffmpeg users write them, outputs that are
# not plain files, outputs naming an input, hostile Y4M headers).
#   cli_safety.sh VIDKERN CASE
# CASE: opt_equals unknown_last threads_cap out_devnull out_fifo out_symlink out_is_input
#       me_fail_no_png huge_header interlaced recon_tags cannot_create
set -u
VK=$1
CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/vidk_cli_safety.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
cd "$T" || exit 1

CLI_CMD=none
. "$HERE/cli_lib.sh"

# fails_with CMD WANT ARGS...: `vidkern CMD ARGS` exits 1 with one line on stderr,
# "vidkern CMD: ..." containing WANT.
fails_with() {
    CLI_CMD=$1
    want=$2
    shift 2
    must_fail "$CLI_CMD $*" - "$VK" "$CLI_CMD" "$@"
    grep -qF -- "$want" "$T/stderr" || fail "$CLI_CMD $*: message lacks '$want'"
}

# no_temp: no temporary output file anywhere under $T.
no_temp() {
    left=$(find "$T" -name '*.tmp*' | head -n 1)
    [ -z "$left" ] || fail "temporary file left behind: $left"
}

same() { cmp "$1" "$2" >/dev/null 2>&1 || fail "$1 and $2 differ"; }

# A reader of a FIFO that gives up if no writer comes (no hang when a command fails early).
TO=""
command -v timeout >/dev/null && TO="timeout 60"

# PNG output is optional (libpng).
HAVE_PNG=1
"$VK" gen --size 32x32 --frames 2 -q -o - | "$VK" me - --png - -q >/dev/null 2>&1 || HAVE_PNG=0

# Small inputs: 64x64 8-bit 4:2:0, 3 frames (6144 bytes a frame).
"$VK" gen --size 64x64 --frames 3 -o a.y4m -q || fail "gen a.y4m"
HL=$(head -n 1 a.y4m | wc -c)

case "$CASE" in
opt_equals)
    # --opt=value is the same as --opt value, for every command.
    "$VK" gen --size=48x32 --frames=2 --seed=7 --output=e.y4m -q || fail "gen --opt=value"
    "$VK" gen --size 48x32 --frames 2 --seed 7 --output s.y4m -q || fail "gen --opt value"
    same e.y4m s.y4m
    "$VK" convert a.y4m e.yuv --frames=2 -q || fail "convert --frames=2"
    [ "$(wc -c <e.yuv)" -eq 12288 ] || fail "convert --frames=2 wrote $(wc -c <e.yuv) bytes"
    "$VK" encode a.y4m --qp=36 --range=4 --backend=c --recon=e_rec.y4m -q >/dev/null ||
        fail "encode --opt=value"
    "$VK" encode a.y4m --qp 36 --range 4 --backend c --recon s_rec.y4m -q >/dev/null ||
        fail "encode --opt value"
    same e_rec.y4m s_rec.y4m
    "$VK" me a.y4m --range=4 --shapes=8x8,16x16 --backend=c --output=e.csv -q >/dev/null ||
        fail "me --opt=value"
    "$VK" me a.y4m --range 4 --shapes 8x8,16x16 --backend c --output s.csv -q >/dev/null ||
        fail "me --opt value"
    same e.csv s.csv
    head -c 64 /dev/urandom >blk.bin
    "$VK" xform --codec=h264 --qp=20 <blk.bin >e.out || fail "xform --codec=h264 --qp=20"
    "$VK" xform --codec h264 --qp 20 <blk.bin >s.out || fail "xform --codec h264 --qp 20"
    same e.out s.out
    "$VK" info --backend=c --cpumask=0 >/dev/null || fail "info --backend=c"
    # A flag given a value is not silently taken.
    fails_with info "unknown option '--json=1'" --json=1
    fails_with encode "--qp: '' is not an integer" a.y4m --qp=
    ;;
unknown_last)
    # An unknown option is reported as unknown, also as the last argument.
    fails_with info "unknown option '--bogus'" --bogus
    fails_with gen "unknown option '--bogus'" -o x.y4m --bogus
    fails_with convert "unknown option '--bogus'" a.y4m x.yuv --bogus
    fails_with encode "unknown option '--bogus'" a.y4m --bogus
    fails_with encode "unknown option '--bogus'" --bogus
    fails_with me "unknown option '--bogus'" a.y4m --bogus
    fails_with me "unknown option '--bogus'" --bogus
    fails_with xform "unknown option '--bogus'" --codec h264 --qp 20 --bogus
    fails_with xform "unknown option '--bogus'" --codec hevc --size 4 --qp 20 --bogus
    # A known option without its value still says so.
    fails_with encode "option --qp needs a value" a.y4m --qp
    fails_with me "option --range needs a value" a.y4m --range
    ;;
threads_cap)
    # Above the library's limit: lowered to 1024 with a note, and the run goes on.
    "$VK" encode --size 32x32 --gen-frames 2 --backend c --threads 5000 -q \
        >out.txt 2>err.txt || fail "--threads 5000 refused: $(cat err.txt)"
    grep -qF "vidkern encode: note: --threads 5000 is above the library's limit: using 1024" \
        err.txt || fail "no note: $(cat err.txt)"
    "$VK" info --threads=100000 >/dev/null 2>err.txt || fail "info --threads=100000 failed"
    grep -qF "using 1024" err.txt || fail "info: no note: $(cat err.txt)"
    # Within the limit: no note.
    "$VK" encode --size 32x32 --gen-frames 2 --backend c --threads 2 -q >out.txt 2>err.txt ||
        fail "--threads 2"
    [ ! -s err.txt ] || fail "--threads 2 printed: $(cat err.txt)"
    fails_with encode "--threads: '-1' is not an integer" --threads -1
    "$VK" encode --help | grep -q "more than 1024 is lowered to 1024" || fail "--help"
    ;;
out_devnull)
    # /dev/null is written in place (never replaced through a temporary file + rename).
    [ -c /dev/null ] || fail "/dev/null is not a character device"
    "$VK" gen --size 32x32 --frames 2 -o /dev/null -q || fail "gen -o /dev/null"
    "$VK" convert a.y4m /dev/null --output-format yuv -q || fail "convert to /dev/null"
    "$VK" encode a.y4m --backend c --recon /dev/null --report /dev/null -q >/dev/null ||
        fail "encode --recon /dev/null --report /dev/null"
    [ -c /dev/null ] || fail "/dev/null was replaced"
    ;;
out_fifo)
    # A FIFO output is written in place: the reader gets the stream, the FIFO stays.
    command -v mkfifo >/dev/null || { echo "no mkfifo: skipped"; exit 77; }
    "$VK" gen --size 32x32 --frames 2 -o ref.y4m -q || fail "gen"
    mkfifo f.y4m || fail "mkfifo"
    $TO cat f.y4m >got.y4m &
    "$VK" gen --size 32x32 --frames 2 -o f.y4m -q || fail "gen -o FIFO"
    wait
    [ -p f.y4m ] || fail "f.y4m is no longer a FIFO"
    same got.y4m ref.y4m
    $TO cat f.y4m >got_rec.y4m &
    "$VK" encode a.y4m --backend c --recon f.y4m -q >/dev/null || fail "encode --recon FIFO"
    wait
    "$VK" encode a.y4m --backend c --recon ref_rec.y4m -q >/dev/null || fail "encode --recon"
    same got_rec.y4m ref_rec.y4m
    mkfifo f.csv || fail "mkfifo"
    $TO cat f.csv >got.csv &
    "$VK" me a.y4m --backend c --range 4 -o f.csv -q >/dev/null || fail "me -o FIFO"
    wait
    "$VK" me a.y4m --backend c --range 4 -o ref.csv -q >/dev/null || fail "me -o"
    same got.csv ref.csv
    [ -p f.y4m ] && [ -p f.csv ] || fail "a FIFO was replaced"
    # A .bin needs a regular file (refused before the FIFO is opened: no hang).
    mkfifo f.bin || fail "mkfifo"
    fails_with me "f.bin: a .bin output must be a regular file" a.y4m -o f.bin
    no_temp
    ;;
out_symlink)
    # An output that is a symbolic link is written through: the link stays a link.
    "$VK" gen --size 32x32 --frames 2 -o ref.y4m -q || fail "gen"
    ln -s target.y4m link.y4m || fail "ln -s"
    printf 'old' >target.y4m
    "$VK" gen --size 32x32 --frames 2 -o link.y4m -q || fail "gen -o link"
    [ -L link.y4m ] || fail "link.y4m is no longer a symbolic link"
    [ "$(readlink link.y4m)" = target.y4m ] || fail "link.y4m points to $(readlink link.y4m)"
    same target.y4m ref.y4m
    # A dangling link: its target is created.
    ln -s new.yuv dangling.yuv || fail "ln -s"
    "$VK" convert ref.y4m dangling.yuv -q || fail "convert to a dangling link"
    [ -L dangling.yuv ] && [ -f new.yuv ] || fail "dangling.yuv: target not created"
    "$VK" encode a.y4m --backend c --recon link.y4m -q >/dev/null || fail "encode --recon link"
    [ -L link.y4m ] || fail "encode replaced the link"
    ln -s mv_target.csv mv.csv || fail "ln -s"
    "$VK" me a.y4m --backend c --range 4 -o mv.csv -q >/dev/null || fail "me -o link"
    [ -L mv.csv ] && [ -s mv_target.csv ] || fail "me replaced the link"
    no_temp
    ;;
out_is_input)
    # An output naming an input (also through a link or - redirections) is refused for
    # every command, and the input is untouched.
    cp a.y4m keep.y4m
    ln -s a.y4m alias.y4m
    fails_with convert "'a.y4m' is the input file 'a.y4m'" a.y4m a.y4m
    fails_with convert "'./alias.y4m' is the input file 'a.y4m'" a.y4m ./alias.y4m
    CLI_CMD=convert
    must_fail "convert - a.y4m <a.y4m" - sh -c "'$VK' convert - a.y4m <a.y4m"
    must_fail "convert - - <a.y4m >>a.y4m" - sh -c "'$VK' convert - - <a.y4m >>a.y4m"
    grep -qF "stdout is the input file stdin" "$T/stderr" || fail "message: $(cat "$T/stderr")"
    fails_with encode "--recon 'a.y4m' is the input file 'a.y4m'" a.y4m --recon a.y4m
    fails_with encode "--recon 'alias.y4m' is the input file 'a.y4m'" a.y4m --recon alias.y4m
    fails_with encode "--report 'a.y4m' is the input file 'a.y4m'" a.y4m --report a.y4m
    if [ $HAVE_PNG = 1 ]; then
        fails_with me "--png 'a.y4m' is the input file 'a.y4m'" a.y4m --png a.y4m
        cp a.y4m r.y4m
        fails_with me "--png 'r.y4m' is the input file 'r.y4m'" a.y4m --ref r.y4m --png r.y4m
    fi
    "$VK" me a.y4m --backend c --range 4 -o mv.bin -q >/dev/null || fail "me -o mv.bin"
    cp mv.bin mv_keep.bin
    fails_with me "-o 'mv.bin' is the input file 'mv.bin'" --read mv.bin -o mv.bin
    same mv.bin mv_keep.bin
    head -c 64 /dev/zero >blk.bin
    CLI_CMD=xform
    must_fail "xform <blk.bin >>blk.bin" - sh -c "'$VK' xform --codec h264 --qp 20 <blk.bin >>blk.bin"
    [ "$(wc -c <blk.bin)" -eq 64 ] || fail "blk.bin changed"
    # Two outputs of one run naming the same file.
    fails_with encode "--recon 'x.json' and --report 'x.json' are the same file" a.y4m --recon x.json --report x.json
    fails_with me "-o 'x.csv' and --png 'x.csv' are the same file" a.y4m -o x.csv --png x.csv
    same a.y4m keep.y4m
    ;;
me_fail_no_png)
    [ $HAVE_PNG = 1 ] || { echo "built without libpng: skipped"; exit 77; }
    # A failed `me` leaves no picture behind (none of a numbered series either), and an
    # existing picture keeps its contents.
    head -c $((HL + 2 * 6150 + 100)) a.y4m >cut.y4m # frame 2 truncated, after pair 0
    fails_with me "cut.y4m: frame 2 truncated" cut.y4m --backend c --png p.png
    [ ! -e p.png ] || fail "a failed me left p.png"
    fails_with me "cut.y4m: frame 2 truncated" cut.y4m --backend c --png 'q_%02d.png' -o mv.csv
    ls q_* mv.csv >/dev/null 2>&1 && fail "a failed me left q_*.png or mv.csv"
    printf 'old' >old.png
    fails_with me "cut.y4m: frame 2 truncated" cut.y4m --backend c --png old.png
    [ "$(cat old.png)" = old ] || fail "a failed me changed old.png"
    # The same run on the whole file writes them.
    "$VK" me a.y4m --backend c --png 'q_%02d.png' -q >/dev/null || fail "me --png"
    [ -s q_00.png ] && [ -s q_01.png ] || fail "pictures missing"
    no_temp
    ;;
huge_header)
    # A 1 KB file announcing 16384x16384 fails at once, before any picture is allocated:
    # within 2 s and under a 1 GB address-space limit (one such frame is 384 MiB).
    { printf 'YUV4MPEG2 W16384 H16384 F25:1 C420jpeg\nFRAME\n'; head -c 994 /dev/zero; } >huge.y4m
    lim=""
    if (ulimit -v 1048576 && "$VK" --version) >/dev/null 2>&1; then
        lim="ulimit -v 1048576;"
    else
        echo "note: ulimit -v unusable here (sanitizer build?): time only"
    fi
    for c in encode me convert; do
        out=""
        [ $c = convert ] && out=x.yuv
        CLI_CMD=$c
        t0=$(date +%s%N)
        must_fail "$c huge.y4m" - sh -c "$lim exec '$VK' $c huge.y4m $out"
        t1=$(date +%s%N)
        grep -qF "huge.y4m: the Y4M header announces 16384x16384 4:2:0 8-bit frames of 402653190 bytes, but only 1000 bytes follow it" \
            "$T/stderr" || fail "$c: message: $(cat "$T/stderr")"
        ms=$(((t1 - t0) / 1000000))
        [ "$ms" -lt 2000 ] || fail "$c took $ms ms"
    done
    # The same through stdin from the file.
    CLI_CMD=encode
    must_fail "encode - <huge.y4m" - sh -c "$lim exec '$VK' encode - <huge.y4m"
    # A frame over the 512 MiB limit is refused even from a pipe.
    CLI_CMD=me
    must_fail "me - (16-bit 4:4:4)" - sh -c "printf 'YUV4MPEG2 W16384 H16384 C444p16\nFRAME\n' | { $lim exec '$VK' me -; }"
    grep -qF "are over the limit of 512 MiB a frame" "$T/stderr" || fail "message: $(cat "$T/stderr")"
    # Raw input too.
    head -c 1000 /dev/zero >huge.yuv
    fails_with convert "raw 16384x16384 4:2:0 8-bit frames are 402653184 bytes, but the file has only 1000" \
        huge.yuv x.y4m --input-size 16384x16384
    ;;
interlaced)
    # Interlaced input (It, Ib, Im) is refused by the commands that process pictures,
    # unless --assume-progressive; convert copies it with its tag.
    for il in t b m; do
        { printf 'YUV4MPEG2 W64 H64 F25:1 I%s A0:0 C420jpeg\n' $il; tail -c +$((HL + 1)) a.y4m; } >i$il.y4m
        fails_with encode "i$il.y4m: interlaced input (I$il" i$il.y4m
        fails_with me "i$il.y4m: interlaced input (I$il" i$il.y4m
        grep -qF "pass --assume-progressive" "$T/stderr" || fail "no hint"
    done
    "$VK" encode it.y4m --assume-progressive --backend c --recon rec.y4m -q >/dev/null ||
        fail "encode --assume-progressive"
    [ "$(head -n 1 rec.y4m)" = "YUV4MPEG2 W64 H64 F25:1 It A0:0 C420jpeg" ] || fail "recon header"
    "$VK" me ib.y4m --assume-progressive --backend c -q >/dev/null || fail "me --assume-progressive"
    "$VK" convert im.y4m copy.y4m -q || fail "convert interlaced"
    same copy.y4m im.y4m
    # I? (unknown) and Ip are progressive.
    { printf 'YUV4MPEG2 W64 H64 I?\n'; tail -c +$((HL + 1)) a.y4m; } >iq.y4m
    "$VK" encode iq.y4m --backend c -q >/dev/null || fail "I? refused"
    "$VK" encode --help | grep -q -- "--assume-progressive" || fail "encode --help"
    "$VK" me --help | grep -q -- "--assume-progressive" || fail "me --help"
    ;;
recon_tags)
    # A written Y4M header has the source's tags, no others; X fields are kept.
    t() {
        { printf '%s\n' "$1"; tail -c +$((HL + 1)) a.y4m; } >src.y4m
        "$VK" encode src.y4m --backend c --recon rec.y4m -q >/dev/null || fail "encode: $1"
        [ "$(head -n 1 rec.y4m)" = "$1" ] || fail "recon header '$(head -n 1 rec.y4m)', source '$1'"
        "$VK" convert src.y4m conv.y4m -q || fail "convert: $1"
        same conv.y4m src.y4m
    }
    t 'YUV4MPEG2 W64 H64'
    t 'YUV4MPEG2 W64 H64 F30:1'
    t 'YUV4MPEG2 W64 H64 F30000:1001 A1:1'
    t 'YUV4MPEG2 W64 H64 C420mpeg2 XCOLORRANGE=LIMITED'
    t 'YUV4MPEG2 W64 H64 F25:1 Ip A0:0 C420jpeg'
    t 'YUV4MPEG2 W64 H64 F50:1 Ip A16:15 C420paldv XYSCSS=420PALDV'
    # convert --fps sets F even where the source had none.
    { printf 'YUV4MPEG2 W64 H64\n'; tail -c +$((HL + 1)) a.y4m; } >src.y4m
    "$VK" convert src.y4m fps.y4m --fps 25 -q || fail "convert --fps"
    [ "$(head -n 1 fps.y4m)" = "YUV4MPEG2 W64 H64 F25:1" ] || fail "--fps: $(head -n 1 fps.y4m)"
    ;;
cannot_create)
    # One form: "vidkern CMD: cannot create 'PATH': <reason>", the user's path, no
    # temporary name, nothing left behind.
    w="No such file or directory"
    fails_with gen "vidkern gen: cannot create 'nodir/x.y4m': $w" --size 32x32 -o nodir/x.y4m
    fails_with convert "vidkern convert: cannot create 'nodir/x.yuv': $w" a.y4m nodir/x.yuv
    fails_with encode "vidkern encode: cannot create 'nodir/r.y4m': $w" a.y4m --recon nodir/r.y4m
    fails_with encode "vidkern encode: cannot create 'nodir/r.json': $w" a.y4m --report nodir/r.json
    fails_with me "vidkern me: cannot create 'nodir/m.csv': $w" a.y4m -o nodir/m.csv
    if [ $HAVE_PNG = 1 ]; then
        fails_with encode "vidkern encode: cannot create 'nodir/sub': $w" a.y4m --png-dir nodir/sub
        fails_with me "vidkern me: cannot create 'nodir/m.png': $w" a.y4m --png nodir/m.png
    fi
    "$VK" me a.y4m --backend c --range 4 -o mv.bin -q >/dev/null || fail "me -o mv.bin"
    fails_with me "vidkern me: cannot create 'nodir/m.json': $w" --read mv.bin -o nodir/m.json
    # A file in the way of a folder.
    : >file
    fails_with gen "vidkern gen: cannot create 'file/x.y4m': Not a directory" -o file/x.y4m
    grep -q '\.tmp' "$T/stderr" && fail "message names a temporary file"
    no_temp
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "cli_safety_$CASE: passed"
