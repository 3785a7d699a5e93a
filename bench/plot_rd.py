#!/usr/bin/env python3
"""Plot the rate-distortion curves of `vidkern-bench rd --plot-dir DIR` (DIR/rd.csv).

    vidkern-bench rd --plot-dir rd
    python3 bench/plot_rd.py rd/rd.csv                 # PNGs into docs/

Writes into --out-dir (default docs/), names starting with --prefix (default "rd"):

    rd_<source>.png   PSNR-Y against kbit per frame (log scale) of every encoder
                      configuration of one source: vidkern solid, x264 dashed; the QP
                      next to the first vidkern curve's points
    rd_all.png        the same for every source, one panel each

A text summary (the points, and the BD-rate of each vidkern range against each x264
preset when the script can compute it: the pchip method of bench/bdrate.c, needs SciPy)
is printed too. matplotlib is needed for the PNGs only: without it (or with --text) the
summary is printed and nothing is written.
"""
import argparse
import csv
import math
import os
import re
import sys

VIDKERN_COLOURS = ["#d62728", "#ff7f0e", "#8c564b", "#e377c2"]
X264_COLOURS = ["#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#7f7f7f", "#bcbd22"]


def load(path):
    """{source: {(encoder, config): [row, ...] sorted by QP}} in file order."""
    out = {}
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    need = {"source", "encoder", "config", "qp", "kbits_per_frame", "psnr_y", "psnr_yuv",
            "fps", "bits"}
    if rows and not need <= set(rows[0]):
        sys.exit("plot_rd.py: %s is not the rd.csv of `vidkern-bench rd --plot-dir`" % path)
    for r in rows:
        for k in ("qp",):
            r[k] = int(r[k])
        for k in ("kbits_per_frame", "psnr_y", "psnr_yuv", "fps"):
            r[k] = float(r[k])
        out.setdefault(r["source"], {}).setdefault((r["encoder"], r["config"]), []).append(r)
    for curves in out.values():
        for pts in curves.values():
            pts.sort(key=lambda r: r["qp"])
    return out


def label(key, pts):
    enc, cfg = key
    est = " (estimate: no stream)" if any(p["bits"] == "estimate" for p in pts) else ""
    return ("vidkern %s%s" % (cfg, est)) if enc == "vidkern" else ("x264 %s" % cfg)


def bd_rate(ref, test):
    """BD-rate (%) of test against ref, pchip on (PSNR-Y, log10 rate); None without SciPy."""
    try:
        from scipy.interpolate import PchipInterpolator
    except ImportError:
        return None
    def curve(pts):
        p = sorted((r["psnr_y"], math.log10(r["kbits_per_frame"])) for r in pts)
        return [a for a, _ in p], [b for _, b in p]
    xr, yr = curve(ref)
    xt, yt = curve(test)
    if len(xr) < 2 or len(xt) < 2:
        return None
    lo, hi = max(xr[0], xt[0]), min(xr[-1], xt[-1])
    if hi <= lo:
        return None
    try:
        ir = PchipInterpolator(xr, yr).integrate(lo, hi)
        it = PchipInterpolator(xt, yt).integrate(lo, hi)
    except ValueError:
        return None
    return (10 ** ((it - ir) / (hi - lo)) - 1) * 100


def text_summary(data):
    for src, curves in data.items():
        print("%s:" % src)
        for key, pts in curves.items():
            print("  %-36s %s" % (label(key, pts), "  ".join(
                "QP %d %.3f kbit %.3f dB %.0f f/s" % (p["qp"], p["kbits_per_frame"], p["psnr_y"],
                                                     p["fps"]) for p in pts)))
        for vk, vp in curves.items():
            if vk[0] != "vidkern":
                continue
            for xk, xp in curves.items():
                if xk[0] != "x264":
                    continue
                bd = bd_rate(xp, vp)
                if bd is not None:
                    print("  BD-rate (PSNR-Y) %s vs %s: %+.2f%%" % (label(vk, vp), label(xk, xp),
                                                                    bd))


def draw(ax, src, curves):
    nv = nx = 0
    for key, pts in curves.items():
        x = [p["kbits_per_frame"] for p in pts]
        y = [p["psnr_y"] for p in pts]
        if key[0] == "vidkern":
            col = VIDKERN_COLOURS[nv % len(VIDKERN_COLOURS)]
            nv += 1
            ax.plot(x, y, "o-", color=col, lw=1.6, markersize=4, label=label(key, pts))
            for p in pts if nv == 1 else []:  # the QPs once: the curves lie close
                ax.annotate("%d" % p["qp"], (p["kbits_per_frame"], p["psnr_y"]), fontsize=6,
                            xytext=(3, -8), textcoords="offset points", color=col)
        else:
            col = X264_COLOURS[nx % len(X264_COLOURS)]
            nx += 1
            ax.plot(x, y, "s--", color=col, lw=1.2, markersize=3, label=label(key, pts))
    w = next(iter(curves.values()))[0]
    ax.set_xscale("log")
    from matplotlib.ticker import FormatStrFormatter
    ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(FormatStrFormatter("%g"))
    ax.tick_params(axis="x", which="minor", labelsize=6)
    ax.set_xlabel("kbit per frame")
    ax.set_ylabel("PSNR-Y (dB)")
    ax.set_title("%s (%sx%s, %s frames)" % (src, w["width"], w["height"], w["frames"]),
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def slug(s):
    s = re.sub(r"\.y4m$", "", s)
    return re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_").lower()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="rd.csv written by `vidkern-bench rd --plot-dir DIR`")
    ap.add_argument("--out-dir", default="docs", help="folder of the PNGs (default docs)")
    ap.add_argument("--prefix", default="rd", help="file name prefix (default rd)")
    ap.add_argument("--text", action="store_true", help="print the summary only, no PNGs")
    args = ap.parse_args()

    data = load(args.csv)
    if not data:
        sys.exit("plot_rd.py: %s has no points" % args.csv)
    text_summary(data)
    if args.text:
        return 0
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_rd.py: matplotlib is not installed: no PNGs written "
              "(pip install matplotlib, or --text)", file=sys.stderr)
        return 2
    os.makedirs(args.out_dir, exist_ok=True)
    out = os.path.join(args.out_dir, args.prefix)
    for src, curves in data.items():
        fig, ax = plt.subplots(figsize=(7, 5))
        draw(ax, src, curves)
        fig.suptitle("vidkern-bench rd: vidkern against x264", fontsize=10)
        fig.tight_layout()
        name = "%s_%s.png" % (out, slug(src))
        fig.savefig(name, dpi=120)
        plt.close(fig)
        print("wrote", name)
    n = len(data)
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, squeeze=False, figsize=(6 * cols, 4.5 * rows))
    for ax, (src, curves) in zip([a for r in axes for a in r], data.items()):
        draw(ax, src, curves)
    for ax in [a for r in axes for a in r][n:]:
        ax.axis("off")
    fig.suptitle("vidkern-bench rd: PSNR-Y against kbit per frame, every source", fontsize=11)
    fig.tight_layout()
    name = out + "_all.png"
    fig.savefig(name, dpi=110)
    plt.close(fig)
    print("wrote", name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
