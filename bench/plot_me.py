#!/usr/bin/env python3
"""Plot `vidkern-bench me` results: time per frame vs search area, per backend.

    vidkern-bench me --csv me.csv ...          (or --json me.json)
    python3 bench/plot_me.py me.csv -o docs/me_bench.png

One panel per (source, picture size, shapes); x = candidates per axis 2R+1 (log),
y = ms per frame (log), one line per backend. Points estimated from a stripe of
macroblock rows ("(est. from k rows)" in the tables) are drawn hollow; the dashed grey
line is the O(n^2) model t(R0) * ((2R+1)/(2R0+1))^2 through each backend's first
point. Needs matplotlib.
"""
import argparse
import csv
import json
import math
import sys

STYLE = {  # backend -> (colour, marker)
    "c": ("#7f7f7f", "o"),
    "simd": ("#1f77b4", "s"),
    "threads": ("#2ca02c", "^"),
    "cuda": ("#d62728", "D"),
}


def load(path):
    """Rows as dicts with numeric fields; accepts the CSV or the JSON output."""
    rows = []
    if path.endswith(".json"):
        with open(path) as f:
            doc = json.load(f)
        meta = {k: doc.get(k, "") for k in ("date", "commit", "command")}
        meta["device"] = doc.get("device", {})
        for r in doc["results"]:
            if "ms_per_frame" not in r:
                continue
            rows.append({
                "source": r["source"], "width": r["width"], "height": r["height"],
                "shapes": r["shapes"], "range": r["range"], "backend": r["backend"],
                "threads": r.get("threads", 0), "ms": r["ms_per_frame"],
                "est": r.get("estimated_rows", 0)})
        return rows, meta
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if not r.get("ms_per_frame"):
                continue  # failed configuration
            rows.append({
                "source": r["source"], "width": int(r["width"]), "height": int(r["height"]),
                "shapes": r["shapes"], "range": int(r["range"]), "backend": r["backend"],
                "threads": int(r["threads"] or 0), "ms": float(r["ms_per_frame"]),
                "est": int(r["estimated_rows"] or 0)})
    return rows, {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", help="CSV or JSON written by `vidkern-bench me`")
    ap.add_argument("-o", "--output", default="docs/me_bench.png")
    ap.add_argument("--title", default=None)
    args = ap.parse_args()

    rows, meta = load(args.results)
    if not rows:
        sys.exit("plot_me.py: no measured configurations in " + args.results)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = []
    for r in rows:
        key = (r["source"], r["width"], r["height"], r["shapes"])
        if key not in panels:
            panels.append(key)
    ncol = min(3, len(panels))
    nrow = math.ceil(len(panels) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.2 * ncol, 4.0 * nrow), squeeze=False)
    for i, key in enumerate(panels):
        ax = axes[i // ncol][i % ncol]
        src, w, h, shapes = key
        for be in ["c", "simd", "threads", "cuda"]:
            pts = sorted((r["range"], r["ms"], r["est"], r["threads"]) for r in rows
                         if (r["source"], r["width"], r["height"], r["shapes"]) == key
                         and r["backend"] == be)
            if not pts:
                continue
            colour, marker = STYLE[be]
            x = [2 * p[0] + 1 for p in pts]
            y = [p[1] for p in pts]
            label = be + (" (%d threads)" % pts[0][3] if be == "threads" and pts[0][3] else "")
            ax.plot(x, y, "-", color=colour, label=label)
            for xi, (r_, ms, est, _) in zip(x, pts):
                ax.plot([xi], [ms], marker, color=colour,
                        markerfacecolor="none" if est else colour, markersize=6)
            # O(n^2) model through the first point
            ax.plot(x, [y[0] * (xi / x[0]) ** 2 for xi in x], "--", color="#bbbbbb", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ranges = sorted({r["range"] for r in rows
                         if (r["source"], r["width"], r["height"], r["shapes"]) == key})
        ax.set_xticks([2 * r + 1 for r in ranges])
        ax.set_xticklabels(["%d\n(R=%d)" % (2 * r + 1, r) for r in ranges], fontsize=7)
        ax.minorticks_off()
        ax.set_xlabel("candidates per axis 2R+1")
        ax.set_ylabel("ms per frame")
        ax.set_title("%s %dx%d, %s" % (src, w, h, shapes), fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    for j in range(len(panels), nrow * ncol):
        axes[j // ncol][j % ncol].axis("off")
    title = args.title or "vidkern full-search motion estimation: time per frame vs search area"
    sub = "hollow markers: estimated from a stripe of macroblock rows; dashed: O(n^2) model"
    if meta:
        dev = meta.get("device", {})
        sub = "%s | GPU %s | %s | %s\n%s" % (dev.get("cpu", ""), dev.get("gpu", ""),
                                             meta.get("date", ""), meta.get("commit", ""), sub)
    fig.suptitle(title + "\n" + sub, fontsize=9)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print("wrote", args.output)


if __name__ == "__main__":
    main()
