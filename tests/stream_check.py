#!/usr/bin/env python3
"""The judge of `vidkern encode -o`: FFmpeg decodes the stream, its frames must equal the
reconstruction (`--recon`) bit for bit, and FFmpeg must print nothing with `-v error`.

    stream_check.py STREAM RECON.y4m [--ffmpeg PATH] [--keep DEC.yuv] [--strict]
                    [--no-rate] [-q]

What it runs (and prints on a failure, to replay by hand):
    ffprobe -v error -f h264 -show_entries stream=... STREAM   (size and pixel format)
    ffmpeg -nostdin -v error -threads 1 -f h264 -i STREAM -map 0:v:0 -fps_mode passthrough
           -f rawvideo -pix_fmt yuv420p DEC.yuv
The decoded size (after the SPS cropping) must be the reconstruction's, the pixel format
8-bit 4:2:0 (yuv420p, or yuvj420p when the VUI says full range: then no -pix_fmt is given,
so that no range conversion happens), the frame rate FFmpeg reads from the VUI timing that
of the Y4M header's F tag (unless --no-rate), the frame count the same, and every sample
equal.
On a mismatch it prints the first differing frame, plane, x, y, both values and how many
samples of that plane differ. --strict adds `-err_detect +crccheck+bitstream+buffer+explode`
(FFmpeg's stricter checks; any error aborts the decode).

Exit status: 0 equal; 1 any difference, FFmpeg output on stderr, or an unreadable file;
2 usage; 77 FFmpeg not found (a failure instead when VIDK_REQUIRE_FFMPEG=1).
"""
import os
import shutil
from fractions import Fraction
import subprocess
import sys
import tempfile

PLANES = ("Y", "U", "V")


def die(msg, code=1):
    print("stream_check: " + msg, file=sys.stderr)
    sys.exit(code)


def find_tool(name, given):
    if given:
        return given if (os.path.isfile(given) or shutil.which(given)) else None
    env = os.environ.get("VIDK_" + name.upper())
    if env:
        return env
    return shutil.which(name)


def read_y4m(path):
    """-> (width, height, header line, list of frame payloads as memoryviews)."""
    with open(path, "rb") as f:
        data = f.read()
    nl = data.find(b"\n")
    if not data.startswith(b"YUV4MPEG2") or nl < 0:
        die(f"{path}: not a Y4M file")
    header = data[:nl].decode("ascii", "replace")
    w = h = None
    chroma = "420"
    rate = None
    for tag in header.split()[1:]:
        if tag[0] == "F" and ":" in tag:
            n, d = tag[1:].split(":", 1)
            rate = Fraction(int(n), int(d)) if int(d) else None
        elif tag[0] == "W":
            w = int(tag[1:])
        elif tag[0] == "H":
            h = int(tag[1:])
        elif tag[0] == "C":
            chroma = tag[1:]
    if not w or not h:
        die(f"{path}: no W/H in the header: {header}")
    if not chroma.startswith("420") or chroma.startswith("420p1"):
        die(f"{path}: colour space C{chroma}, only 8-bit 4:2:0 is compared")
    fsize = w * h + 2 * ((w + 1) // 2) * ((h + 1) // 2)
    frames = []
    pos = nl + 1
    mv = memoryview(data)
    while pos < len(data):
        if data[pos:pos + 5] != b"FRAME":
            die(f"{path}: frame {len(frames)}: no FRAME marker at byte {pos}")
        e = data.find(b"\n", pos)
        if e < 0:
            die(f"{path}: frame {len(frames)}: FRAME line not terminated")
        pos = e + 1
        if pos + fsize > len(data):
            die(f"{path}: frame {len(frames)} truncated ({len(data) - pos} of {fsize} bytes)")
        frames.append(mv[pos:pos + fsize])
        pos += fsize
    return w, h, rate, frames


def first_diff(a, b, w, h):
    """a, b: one frame each (equal length). -> (plane, x, y, va, vb, count in that plane)."""
    cw, ch = (w + 1) // 2, (h + 1) // 2
    off = 0
    for p, (pw, ph) in enumerate(((w, h), (cw, ch), (cw, ch))):
        n = pw * ph
        pa, pb = bytes(a[off:off + n]), bytes(b[off:off + n])
        if pa != pb:
            i = next(k for k in range(n) if pa[k] != pb[k])
            count = sum(1 for k in range(n) if pa[k] != pb[k])
            return PLANES[p], i % pw, i // pw, pa[i], pb[i], count, n
        off += n
    return None


def main(argv):
    args = []
    ffmpeg = keep = None
    strict = quiet = False
    check_rate = True
    it = iter(argv)
    for a in it:
        if a == "--ffmpeg":
            ffmpeg = next(it, None)
        elif a == "--keep":
            keep = next(it, None)
        elif a == "--strict":
            strict = True
        elif a == "--no-rate":
            check_rate = False
        elif a in ("-q", "--quiet"):
            quiet = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif a.startswith("-") and a != "-":
            die(f"unknown option {a}", 2)
        else:
            args.append(a)
    if len(args) != 2:
        die("usage: stream_check.py STREAM RECON.y4m [--ffmpeg PATH] [--keep DEC.yuv] "
            "[--strict] [--no-rate] [-q]", 2)
    stream, recon = args

    ff = find_tool("ffmpeg", ffmpeg)
    fp = find_tool("ffprobe", os.path.join(os.path.dirname(ff), "ffprobe") if ff and
                   os.path.dirname(ff) else None)
    if not ff or not fp:
        if os.environ.get("VIDK_REQUIRE_FFMPEG", "0") not in ("", "0"):
            die("ffmpeg/ffprobe not found, and VIDK_REQUIRE_FFMPEG is set", 1)
        die("ffmpeg/ffprobe not found (install Debian's ffmpeg): skipped", 77)

    if not os.path.isfile(stream) or os.path.getsize(stream) == 0:
        die(f"{stream}: missing or empty")
    w, h, rate, rframes = read_y4m(recon)

    # 1. Size and pixel format as FFmpeg sees them.
    probe = [fp, "-v", "error", "-f", "h264", "-select_streams", "v:0", "-show_entries",
             "stream=width,height,pix_fmt,profile,r_frame_rate", "-of", "default=noprint_wrappers=1", stream]
    r = subprocess.run(probe, stdin=subprocess.DEVNULL, capture_output=True)
    info = dict(l.split("=", 1) for l in r.stdout.decode("ascii", "replace").splitlines()
                if "=" in l)
    if r.returncode != 0 or r.stderr:
        die(f"{stream}: ffprobe exit {r.returncode}, its output (must be empty):\n    "
            + "\n    ".join(r.stderr.decode(errors="replace").strip().splitlines()[:20]) + "\n"
            f"  command: {' '.join(probe)}")
    pix = info.get("pix_fmt", "?")
    if pix not in ("yuv420p", "yuvj420p"):
        die(f"{stream}: decoded pixel format {pix}, expected yuv420p ({info})")
    if (info.get("width"), info.get("height")) != (str(w), str(h)):
        die(f"{stream}: decoded size {info.get('width')}x{info.get('height')}, "
            f"the reconstruction is {w}x{h} (SPS frame cropping?)")
    got = info.get("r_frame_rate", "0/0")
    if check_rate and rate is not None:
        n, d = (int(x) for x in got.split("/"))
        if not d or Fraction(n, d) != rate:
            die(f"{stream}: frame rate {got} (the VUI timing as FFmpeg reads it), the "
                f"reconstruction's Y4M header says {rate.numerator}/{rate.denominator}")

    # 2. Decode.
    tmp = None
    if keep:
        out = keep
    else:
        fd, tmp = tempfile.mkstemp(prefix="vidk_dec.", suffix=".yuv")
        os.close(fd)
        out = tmp
    cmd = [ff, "-nostdin", "-hide_banner", "-v", "error", "-threads", "1"]
    if strict:
        cmd += ["-err_detect", "+crccheck+bitstream+buffer+explode"]
    cmd += ["-f", "h264", "-i", stream, "-map", "0:v:0", "-fps_mode", "passthrough",
            "-f", "rawvideo"]
    if pix == "yuv420p":
        cmd += ["-pix_fmt", "yuv420p"]
    cmd += ["-y", out]
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True)
        with open(out, "rb") as f:
            dec = f.read()
    finally:
        if tmp:
            os.unlink(tmp)
    replay = "  command: " + " ".join(cmd[:-1] + [keep or "DEC.yuv"])
    err = (r.stderr + r.stdout).decode(errors="replace").strip()
    if r.returncode != 0 or err:
        lines = err.splitlines()
        shown = "\n    ".join(lines[:20]) + (f"\n    ... ({len(lines)} lines)" if
                                                len(lines) > 20 else "")
        die(f"{stream}: ffmpeg exit {r.returncode}, its output (must be empty):\n    {shown}\n"
            + replay)

    # 3. Compare.
    fsize = len(rframes[0]) if rframes else w * h * 3 // 2
    if len(dec) % fsize:
        die(f"{stream}: decoded {len(dec)} bytes, not a whole number of {w}x{h} frames\n"
            + replay)
    nd = len(dec) // fsize
    dmv = memoryview(dec)
    bad = 0
    first = None
    for i in range(min(nd, len(rframes))):
        a = rframes[i]
        b = dmv[i * fsize:(i + 1) * fsize]
        if a != b:
            bad += 1
            if first is None:
                first = (i, first_diff(a, b, w, h))
    if first is not None:
        i, (plane, x, y, va, vb, count, n) = first
        die(f"{stream}: MISMATCH: frame {i} plane {plane} x {x} y {y}: recon {va}, "
            f"decoded {vb} ({count} of {n} samples of that plane differ; {bad} of "
            f"{min(nd, len(rframes))} frames differ)\n" + replay)
    if nd != len(rframes):
        die(f"{stream}: ffmpeg decoded {nd} frames, the reconstruction has {len(rframes)} "
            f"(the first {min(nd, len(rframes))} are equal)\n" + replay)
    if not quiet:
        print(f"stream_check: {stream}: {nd} frames {w}x{h} ({info.get('profile', '?')}, "
              f"{pix}) equal to {os.path.basename(recon)}, ffmpeg silent")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
