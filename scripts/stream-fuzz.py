#!/usr/bin/env python3
"""Conformance fuzz of `vidkern encode -o` (as x264's tools/test_x264.py does): random
parameter combinations from a seed, each stream judged by FFmpeg (tests/stream_check.py:
FFmpeg silent, its frames equal to --recon bit for bit; the headers, slices, IDRs,
frame_num and POC read by stream_check's own parser), and on some cases a second backend
whose stream and recon must be the same bytes.

    scripts/stream-fuzz.py [--seed S] [--count N] [--time-limit SEC] [--first I]
                           [--vidkern PATH] [--backends c,simd,...] [--cross P]
                           [--clips DIR] [--keep DIR] [-v]

Case I of seed S depends on (S, I) only: `--seed S --first I --count 1` replays it; every
failure also prints its command lines (gen, encode, judge) to run by hand, and its files are
kept. Parameters: size even 16..400 in each axis (a third multiples of 16), 1..12 frames,
QP 0..51, keyint 0..5, R 0..40, --slices 1..4, the deblocking filter (the default) in half of
the cases and --no-deblock in the others, --cabac in half of the cases, --i4x4 and --i8x8 each in
half of the cases (each drawn apart, so that a seed's other parameters stay what they were before
it), --bframes 1..3 in 60% of the cases, adaptive or not in half of those and with --b-pyramid
normal in half of those with 2 or 3 (each drawn apart too), a backend among those
usable (cuda when a device is), a random `vidkern gen --seed` and frame rate; 15% of the cases code synthetic
pictures instead (8x8 regions of flat, noise, checkerboard and stripes; frames moved or
repeated), and with --clips a fifth code a window of a random real clip.

Exit status: 0 all passed; 1 any failure; 77 FFmpeg absent (a failure with
VIDK_REQUIRE_FFMPEG=1). CI runs `--count 40`; docs/TESTING.md gives the long run.
"""
import argparse
import glob
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECK = os.path.join(ROOT, "tests", "stream_check.py")
FPS = ["25/1", "30000/1001", "50/1", "24/1", "60/1", "15/1", "1/1", "120/1", "24000/1001",
       "60000/1001", "1000/1"]


def q(args):
    return " ".join(shlex.quote(str(a)) for a in args)


def run(args, **kw):
    return subprocess.run([str(a) for a in args], stdin=subprocess.DEVNULL,
                          capture_output=True, **kw)


def usable_backends(vk, wanted):
    out = []
    for b in wanted:
        r = run([vk, "encode", "--size", "16x16", "--gen-frames", "1", "--backend", b, "--quiet"])
        if r.returncode == 0:
            out.append(b)
        else:
            print(f"note: backend {b} not usable here: "
                  f"{r.stderr.decode(errors='replace').strip().splitlines()[-1:]}")
    return out


def clip_frames(path):
    """(width, height, frames) of an 8-bit 4:2:0 Y4M clip with plain FRAME lines."""
    with open(path, "rb") as f:
        line = f.readline()
    header = line.decode("ascii", "replace").split()
    w = int(next(t[1:] for t in header if t[0] == "W"))
    h = int(next(t[1:] for t in header if t[0] == "H"))
    hl = len(line)
    return w, h, (os.path.getsize(path) - hl) // (6 + w * h * 3 // 2)


def make_case(seed, i, backends, clips):
    rng = random.Random(f"{seed}:{i}")
    c = {
        "qp": rng.randint(0, 51),
        "keyint": rng.randint(0, 5),
        "range": rng.randint(0, 40),
        "slices": rng.randint(1, 4),
        "backend": rng.choice(backends),
        "cross": rng.random(),
        "other": rng.choice(backends),
        "deblock": random.Random(f"{seed}:{i}:deblock").random() < 0.5,
        "cabac": random.Random(f"{seed}:{i}:cabac").random() < 0.5,
        # Intra_4x4 and Intra_8x8 (drawn apart too)
        "i4x4": random.Random(f"{seed}:{i}:i4x4").random() < 0.5,
        "i8x8": random.Random(f"{seed}:{i}:i8x8").random() < 0.5,
        # B-frames, and reference ones (every backend)
        "bframes": random.Random(f"{seed}:{i}:bframes").choice((0, 0, 1, 2, 3)),
        "b_adapt": random.Random(f"{seed}:{i}:b_adapt").random() < 0.5,
        "b_pyramid": random.Random(f"{seed}:{i}:b_pyramid").random() < 0.5,
    }
    c["b_pyramid"] = c["b_pyramid"] and c["bframes"] >= 2
    kind = rng.random()
    if kind < 0.15:
        # Synthetic pictures: 8x8 regions of flat 0/255/grey, noise, checkerboards and
        # stripes, and whole frames of them moved or swapped (the extremes of every decision).
        w, h = 2 * rng.randint(8, 100), 2 * rng.randint(8, 100)
        c["size"] = f"{w}x{h}"
        c["frames"] = rng.randint(1, 12)
        c["pattern_seed"] = rng.randint(0, 2**32 - 1)
        c["fps"] = rng.choice(FPS)
    elif clips and kind < 0.35:
        path = rng.choice(clips)
        w, h, n = clip_frames(path)
        c["clip"] = path
        c["frames"] = rng.randint(1, min(12, n))
        c["size"] = f"{w}x{h}"
    else:
        if rng.random() < 1 / 3:
            w, h = 16 * rng.randint(1, 25), 16 * rng.randint(1, 25)
        else:
            w, h = 2 * rng.randint(8, 200), 2 * rng.randint(8, 200)
        c["size"] = f"{w}x{h}"
        c["frames"] = rng.randint(1, 12)
        c["gen_seed"] = rng.randint(0, 2**32 - 1)
        c["fps"] = rng.choice(FPS)
    return c


def write_pattern(path, c):
    rng = random.Random(c["pattern_seed"])
    w, h = (int(x) for x in c["size"].split("x"))
    cw, ch = w // 2, h // 2

    def plane(pw, ph, bs):
        out = bytearray(pw * ph)
        for by in range(0, ph, bs):
            for bx in range(0, pw, bs):
                k = rng.randrange(7)
                v = rng.randrange(256)
                for y in range(by, min(by + bs, ph)):
                    row = y * pw
                    for x in range(bx, min(bx + bs, pw)):
                        out[row + x] = (0, 255, v, rng.randrange(256), 255 * ((x + y) & 1),
                                        255 * ((x >> 1) & 1), v if (y & 2) else 255 - v)[k]
        return out

    frames = []
    with open(path, "wb") as f:
        num, den = c["fps"].split("/")
        f.write(f"YUV4MPEG2 W{w} H{h} F{num}:{den} Ip A1:1 C420jpeg\n".encode())
        for i in range(c["frames"]):
            r = rng.random()
            if frames and r < 0.3:  # the previous frame moved
                prev, dx, dy = frames[-1], rng.randint(-12, 12), rng.randint(-12, 12)
                y = bytearray(w * h)
                for yy in range(h):
                    sy = min(max(yy - dy, 0), h - 1)
                    for xx in range(w):
                        y[yy * w + xx] = prev[0][sy * w + min(max(xx - dx, 0), w - 1)]
                fr = (y, prev[1], prev[2])
            elif frames and r < 0.45:  # an earlier frame again
                fr = rng.choice(frames)
            else:
                bs = rng.choice((4, 8, 16))
                fr = (plane(w, h, bs), plane(cw, ch, bs // 2), plane(cw, ch, bs // 2))
            frames.append(fr)
            f.write(b"FRAME\n" + bytes(fr[0]) + bytes(fr[1]) + bytes(fr[2]))


def encode_args(vk, c, inp, backend, out, recon):
    return [vk, "encode", inp, "--frames", c["frames"], "--qp", c["qp"], "--keyint",
            c["keyint"], "--range", c["range"], "--slices", c["slices"], "--backend", backend,
            "-o", out, "--recon", recon, "--quiet"] + ([] if c["deblock"] else ["--no-deblock"]) + \
        (["--cabac"] if c["cabac"] else ["--cavlc"]) + (["--i4x4"] if c["i4x4"] else []) + \
        (["--i8x8"] if c["i8x8"] else []) + \
        (["--bframes", c["bframes"], "--b-adapt", int(c["b_adapt"])] if c["bframes"] else []) + \
        (["--b-pyramid", "normal"] if c["b_pyramid"] else [])


def run_case(vk, i, c, d, cross):
    """-> None, or (reason, [command lines])."""
    cmds = []
    if "clip" in c:
        inp = c["clip"]
    elif "pattern_seed" in c:
        inp = os.path.join(d, "in.y4m")
        cmds.append(["#", inp, "is synthetic (made by this script; kept with the case)"])
        write_pattern(inp, c)
    else:
        inp = os.path.join(d, "in.y4m")
        gen = [vk, "gen", "--size", c["size"], "--frames", c["frames"], "--seed", c["gen_seed"],
               "--fps", c["fps"], "-o", inp, "--quiet"]
        cmds.append(gen)
        r = run(gen)
        if r.returncode:
            return f"gen exit {r.returncode}: {r.stderr.decode(errors='replace').strip()}", cmds
    s, rec = os.path.join(d, "out.264"), os.path.join(d, "rec.y4m")
    enc = encode_args(vk, c, inp, c["backend"], s, rec)
    cmds.append(enc)
    r = run(enc)
    if r.returncode:
        return f"encode exit {r.returncode}: {r.stderr.decode(errors='replace').strip()}", cmds
    chk = [sys.executable, CHECK, "-q", "--strict", s, rec, "--expect-slices", c["slices"],
           "--expect-keyint", c["keyint"]] + (["--expect-deblock"] if c["deblock"] else []) + \
        (["--expect-cabac"] if c["cabac"] else []) + \
        (["--expect-bframes", c["bframes"]] if c["bframes"] else []) + \
        (["--expect-bpyramid"] if c["b_pyramid"] else [])
    cmds.append(chk)
    r = run(chk)
    if r.returncode:
        return "judge: " + (r.stderr + r.stdout).decode(errors="replace").strip(), cmds
    if c["cross"] < cross and c["other"] != c["backend"]:
        s2, rec2 = os.path.join(d, "out2.264"), os.path.join(d, "rec2.y4m")
        enc2 = encode_args(vk, c, inp, c["other"], s2, rec2)
        cmds.append(enc2)
        r = run(enc2)
        if r.returncode:
            return f"encode ({c['other']}) exit {r.returncode}: " \
                   f"{r.stderr.decode(errors='replace').strip()}", cmds
        cmds.append(["cmp", s, s2])
        with open(s, "rb") as a, open(s2, "rb") as b:
            if a.read() != b.read():
                return f"the {c['other']} stream differs from the {c['backend']} stream", cmds
        with open(rec, "rb") as a, open(rec2, "rb") as b:
            if a.read() != b.read():
                return f"the {c['other']} recon differs from the {c['backend']} recon", cmds
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=None, help="default: random (printed)")
    ap.add_argument("--count", type=int, default=100, help="cases (default 100)")
    ap.add_argument("--first", type=int, default=0, help="index of the first case (replay)")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="start no case after SEC seconds (0 = none)")
    ap.add_argument("--vidkern", default=os.environ.get(
        "VIDKERN", os.path.join(ROOT, "build", "tools", "vidkern")))
    ap.add_argument("--backends", default="c,simd,threads,cuda",
                    help="candidates (default c,simd,threads,cuda: the usable ones)")
    ap.add_argument("--cross", type=float, default=0.3,
                    help="share of cases also coded on a second backend (default 0.3)")
    ap.add_argument("--clips", default=None, help="folder of real Y4M clips to use too")
    ap.add_argument("--keep", default=None, help="folder for the files of failed cases")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    a = ap.parse_args()

    seed = a.seed if a.seed is not None else random.SystemRandom().randint(1, 2**31 - 1)
    if not shutil.which("ffmpeg") or not shutil.which("ffprobe"):
        if os.environ.get("VIDK_REQUIRE_FFMPEG", "0") not in ("", "0"):
            print("stream-fuzz: ffmpeg/ffprobe not found, and VIDK_REQUIRE_FFMPEG is set",
                  file=sys.stderr)
            return 1
        print("stream-fuzz: ffmpeg/ffprobe not found (install Debian's ffmpeg): skipped",
              file=sys.stderr)
        return 77
    vk = a.vidkern
    if not os.access(vk, os.X_OK):
        print(f"stream-fuzz: {vk}: not an executable (--vidkern PATH)", file=sys.stderr)
        return 1
    backends = usable_backends(vk, [b for b in a.backends.split(",") if b])
    if not backends:
        print("stream-fuzz: no usable backend", file=sys.stderr)
        return 1
    clips = sorted(glob.glob(os.path.join(a.clips, "*.y4m"))) if a.clips else []
    keep = a.keep or tempfile.mkdtemp(prefix="vidk_stream_fuzz.")
    os.makedirs(keep, exist_ok=True)
    print(f"stream-fuzz: seed {seed}, cases {a.first}..{a.first + a.count - 1}, backends "
          f"{','.join(backends)}, {len(clips)} clips (replay case I: {sys.argv[0]} --seed "
          f"{seed} --first I --count 1 --backends {','.join(backends)}"
          + (f" --clips {a.clips}" if a.clips else "") + ")", flush=True)

    t0 = time.monotonic()
    failures = done = 0
    for i in range(a.first, a.first + a.count):
        if a.time_limit and time.monotonic() - t0 > a.time_limit:
            print(f"stream-fuzz: time limit reached after {done} cases")
            break
        c = make_case(seed, i, backends, clips)
        d = os.path.join(keep, f"case{i}")
        os.makedirs(d, exist_ok=True)
        ts = time.monotonic()
        res = run_case(vk, i, c, d, a.cross)
        done += 1
        src = os.path.basename(c["clip"]) if "clip" in c else \
            "pattern" if "pattern_seed" in c else "gen"
        desc = (f"{src} {c['size']} "
                f"x{c['frames']} qp {c['qp']} keyint {c['keyint']} R {c['range']} slices "
                f"{c['slices']}{' deblock' if c['deblock'] else ''}"
                f"{' cabac' if c['cabac'] else ''}{' i4x4' if c['i4x4'] else ''}"
                f"{' i8x8' if c['i8x8'] else ''}"
                f"{' bframes ' + str(c['bframes']) if c['bframes'] else ''}"
                f"{' pyramid' if c['b_pyramid'] else ''} {c['backend']}")
        if res is None:
            shutil.rmtree(d, ignore_errors=True)
            if a.verbose:
                print(f"ok   case {i}: {desc} ({time.monotonic() - ts:.2f} s)", flush=True)
            continue
        failures += 1
        reason, cmds = res
        print(f"FAIL case {i}: {desc}\n  {reason}\n  files kept in {d}\n  replay: "
              f"{sys.argv[0]} --seed {seed} --first {i} --count 1 --vidkern {vk} "
              f"--backends {','.join(backends)}"
              + (f" --clips {a.clips}" if a.clips else "") + "\n  commands:", flush=True)
        for cmd in cmds:
            print("    " + q(cmd), flush=True)
    if not a.keep and failures == 0:
        shutil.rmtree(keep, ignore_errors=True)
    print(f"stream-fuzz: {done} cases, {failures} failed, {time.monotonic() - t0:.1f} s "
          f"(seed {seed})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
