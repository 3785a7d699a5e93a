#!/usr/bin/env python3
"""Plot the coding loop's results: `vidkern encode --report` and `vidkern-bench encode --json`.

    vidkern encode clip.y4m --qp 27 --report q27.json
    vidkern encode clip.y4m --qp 35 --backend cuda --report q35.json
    vidkern-bench encode --json bench.json
    python3 bench/plot_encode.py q27.json q35.json bench.json      # PNGs into docs/

Any mix of files; each is recognised by its contents. Writes into --out-dir (default
docs/), names starting with --prefix (default "encode"):

  from --report files (one line / bar per file):
    encode_psnr.png    luma PSNR and estimated kbit per frame (intra frames marked)
    encode_stages.png  average time per stage of the inter frames, stacked bars
  from bench JSON:
    encode_bench_fps.png     frames/s per configuration, one bar per backend (log scale)
    encode_bench_stages.png  median time per stage, stacked bars per configuration and
                             backend
    (one panel per picture size in both)

A text summary of every input is printed too. matplotlib is needed for the PNGs only:
without it (or with --text) the summary is printed and nothing is written.
"""
import argparse
import json
import os
import sys

STAGES = ["upload", "me", "code", "stats", "download"]
STAGE_COLOURS = ["#9467bd", "#1f77b4", "#2ca02c", "#ff7f0e", "#d62728"]
BACKEND_COLOURS = {"c": "#7f7f7f", "simd": "#1f77b4", "threads": "#2ca02c", "cuda": "#d62728"}


def load(paths):
    """(reports, bench_docs): lists of (path, parsed JSON)."""
    reports, benches = [], []
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        if isinstance(doc, dict) and "per_frame" in doc:
            reports.append((p, doc))
        elif isinstance(doc, dict) and doc.get("benchmark") == "encode":
            benches.append((p, doc))
        else:
            sys.exit("plot_encode.py: %s is neither a `vidkern encode --report` nor a "
                     "`vidkern-bench encode --json` file" % p)
    return reports, benches


def report_label(doc):
    inp = os.path.basename(str(doc.get("input", "?")))
    if inp.startswith("built-in generated video"):
        inp = "generated"
    return "%s %s QP %d R %d, %s" % (inp, doc["codec"], doc["qp"], doc["range"], doc["backend"])


def inter_avg(doc, key):
    """Average over the inter frames (all frames when there are none)."""
    frames = [f for f in doc["per_frame"] if not f["intra"]] or doc["per_frame"]
    return sum(key(f) for f in frames) / len(frames)


def text_summary(reports, benches):
    for path, doc in reports:
        s = doc["summary"]
        print("%s: %s, %dx%d, %d frames: PSNR-Y %.3f dB (sequence %.3f), %.2f kbit/frame, "
              "%.3f ms/frame, %.1f frames/s" % (
                  path, report_label(doc), doc["width"], doc["height"], s["frames"],
                  s["psnr_avg"][0], s["psnr_sequence"][0], s["kbits_per_frame"],
                  s["total_ms_avg"], doc.get("frames_per_second", 0)))
    for path, doc in benches:
        print("%s: vidkern-bench encode, %s, GPU %s, %s, commit %s" % (
            path, doc["device"]["cpu"], doc["device"]["gpu"], doc["date"], doc["commit"]))
        for r in doc["results"]:
            if "fps" not in r:
                print("  %s %dx%d %s R=%d QP %d %s: failed: %s" % (
                    r["source"], r["width"], r["height"], r["codec"], r["range"], r["qp"],
                    r["backend"], r.get("error", "?")))
                continue
            print("  %s %dx%d %s R=%d QP %d %-8s %9.2f frames/s  PSNR-Y %.3f  %s" % (
                r["source"], r["width"], r["height"], r["codec"], r["range"], r["qp"],
                r["backend"], r["fps"], r["psnr"][0],
                "identical" if r["identical"] else "MISMATCH"))


def plot_reports(plt, reports, out):
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for path, doc in reports:
        fr = doc["per_frame"]
        x = [f["index"] for f in fr]
        line, = ax1.plot(x, [f["psnr"][0] for f in fr], "-", lw=1.2, label=report_label(doc))
        ax2.plot(x, [f["bits"] / 1e3 for f in fr], "-", lw=1.2, color=line.get_color())
        xi = [f["index"] for f in fr if f["intra"]]
        ax1.plot(xi, [f["psnr"][0] for f in fr if f["intra"]], "o", color=line.get_color(),
                 markersize=4)
        ax2.plot(xi, [f["bits"] / 1e3 for f in fr if f["intra"]], "o", color=line.get_color(),
                 markersize=4)
    ax1.set_ylabel("PSNR Y (dB)")
    ax2.set_ylabel("estimated kbit")
    ax2.set_yscale("log")
    ax2.set_xlabel("frame (dots: intra frames)")
    ax1.grid(True, alpha=0.3)
    ax2.grid(True, alpha=0.3)
    ax1.legend(fontsize=7)
    fig.suptitle("vidkern encode: quality and estimated bits per frame", fontsize=10)
    fig.tight_layout()
    name = out + "_psnr.png"
    fig.savefig(name, dpi=120)
    print("wrote", name)

    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(reports) + 3), 4.5))
    labels = [report_label(d).replace(" h264", "\nh264").replace(" hevc", "\nhevc")
              for _, d in reports]
    bottom = [0.0] * len(reports)
    for st, col in zip(STAGES, STAGE_COLOURS):
        v = [inter_avg(d, lambda f, st=st: f["stage_ms"][st]) for _, d in reports]
        ax.bar(range(len(reports)), v, bottom=bottom, color=col, label=st)
        bottom = [b + x for b, x in zip(bottom, v)]
    tot = [inter_avg(d, lambda f: f["total_ms"]) for _, d in reports]
    ax.plot(range(len(reports)), tot, "k_", markersize=20, label="send to receive")
    ax.set_xticks(range(len(reports)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("ms per inter frame (average)")
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title("vidkern encode: time per stage", fontsize=10)
    fig.tight_layout()
    name = out + "_stages.png"
    fig.savefig(name, dpi=120)
    print("wrote", name)


def bench_rows(benches):
    rows = []
    for _, doc in benches:
        rows += [r for r in doc["results"] if "fps" in r]
    return rows


def config_key(r):
    return (r["source"], r["width"], r["height"], r["codec"], r["range"], r["qp"])


def config_label(k):
    src, w, h, codec, rng, qp = k
    return "%s\n%dx%d %s\nR=%d QP %d" % (src.replace(" (real)", ""), w, h, codec, rng, qp)


def plot_bench(plt, benches, out):
    rows = bench_rows(benches)
    if not rows:
        print("plot_encode.py: no measured configurations in the bench files", file=sys.stderr)
        return
    configs = []
    for r in rows:
        if config_key(r) not in configs:
            configs.append(config_key(r))
    backends = [b for b in ["c", "simd", "threads", "cuda"] if any(r["backend"] == b for r in rows)]
    meta = benches[0][1]
    sub = "%s | GPU %s | %s | %s" % (meta["device"]["cpu"], meta["device"]["gpu"], meta["date"],
                                     meta["commit"])

    sizes = []
    for k in configs:
        if (k[1], k[2]) not in sizes:
            sizes.append((k[1], k[2]))
    width = 0.8 / len(backends)
    per_size = max(len([k for k in configs if (k[1], k[2]) == s]) for s in sizes)
    fig, axes = plt.subplots(len(sizes), 1, squeeze=False,
                             figsize=(min(18, 0.55 * per_size * len(backends) + 3),
                                      3.8 * len(sizes)))
    for ax, size in zip([a[0] for a in axes], sizes):
        cfg = [k for k in configs if (k[1], k[2]) == size]
        for j, be in enumerate(backends):
            xs, ys = [], []
            for i, k in enumerate(cfg):
                m = [r for r in rows if config_key(r) == k and r["backend"] == be]
                if m:
                    xs.append(i + (j - (len(backends) - 1) / 2) * width)
                    ys.append(m[0]["fps"])
            ax.bar(xs, ys, width, color=BACKEND_COLOURS.get(be, "#333333"), label=be)
            for x, y in zip(xs, ys):
                ax.text(x, y, "%.3g" % y, ha="center", va="bottom", fontsize=6)
        ax.set_yscale("log")
        ax.set_xticks(range(len(cfg)))
        ax.set_xticklabels([config_label(k) for k in cfg], fontsize=7)
        ax.set_ylabel("frames/s")
        ax.set_title("%dx%d: inter frames per second, steady state" % size, fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("vidkern-bench encode: throughput per backend\n" + sub, fontsize=9)
    fig.tight_layout()
    name = out + "_bench_fps.png"
    fig.savefig(name, dpi=120)
    print("wrote", name)

    fig, axes = plt.subplots(len(sizes), 1, squeeze=False,
                             figsize=(min(18, max(8, 0.35 * len(rows) / len(sizes) + 3)),
                                      3.8 * len(sizes)))
    for ax, (w, h) in zip([a[0] for a in axes], sizes):
        sel = [r for r in rows if (r["width"], r["height"]) == (w, h)]
        sel.sort(key=lambda r: (configs.index(config_key(r)), backends.index(r["backend"])))
        bottom = [0.0] * len(sel)
        for st, col in zip(STAGES, STAGE_COLOURS):
            v = [r["stage_ms"][st] for r in sel]
            ax.bar(range(len(sel)), v, bottom=bottom, color=col, label=st)
            bottom = [b + x for b, x in zip(bottom, v)]
        ax.set_xticks(range(len(sel)))
        ax.set_xticklabels(["%s %s R%d\n%s" % (r["source"].replace(" (real)", ""), r["codec"],
                                               r["range"], r["backend"]) for r in sel],
                           fontsize=6, rotation=90)
        ax.set_ylabel("median ms per inter frame")
        ax.set_title("%dx%d" % (w, h), fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7, ncol=5)
    fig.suptitle("vidkern-bench encode: time per stage (stacked)\n" + sub, fontsize=9)
    fig.tight_layout()
    name = out + "_bench_stages.png"
    fig.savefig(name, dpi=120)
    print("wrote", name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="--report JSON of `vidkern encode` and/or "
                                             "--json of `vidkern-bench encode`")
    ap.add_argument("--out-dir", default="docs", help="folder of the PNGs (default docs)")
    ap.add_argument("--prefix", default="encode", help="file name prefix (default encode)")
    ap.add_argument("--text", action="store_true", help="print the summary only, no PNGs")
    args = ap.parse_args()

    reports, benches = load(args.files)
    text_summary(reports, benches)
    if args.text:
        return 0
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_encode.py: matplotlib is not installed: no PNGs written "
              "(pip install matplotlib, or --text)", file=sys.stderr)
        return 2
    os.makedirs(args.out_dir, exist_ok=True)
    out = os.path.join(args.out_dir, args.prefix)
    if reports:
        plot_reports(plt, reports, out)
    if benches:
        plot_bench(plt, benches, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
