#!/usr/bin/env python3
"""Plot `vidkern-bench hevc` results: Table 1 bars and the stream sweep (Figure 3).

    vidkern-bench hevc --csv hevc.csv ...
    python3 bench/plot_hevc.py hevc.csv                  # -> docs/hevc_table1.png,
                                                         #    docs/hevc_streams.png
    python3 bench/plot_hevc.py hevc.csv --check          # parse and print only

hevc_table1.png: one group of bars per workload and direction, ms per frame on a log
axis: CPU c / simd / threads, GPU overall and kernel, cuBLAS overall and kernel (the
Table 1 cells the benchmark marks in its CSV: columns table1_overall, table1_kernel),
with the paper's Tesla K40c values hatched next to the DCI 4K forward groups.
hevc_streams.png: GPU overall (device events, solid) and end-to-end host time (dashed)
against the number of CUDA streams, one line per workload and direction.
Needs matplotlib (not for --check).
"""
import argparse
import csv
import os
import sys

T1_COLS = ["CPU c", "CPU simd", "CPU threads", "GPU overall", "GPU kernel", "cuBLAS overall",
           "cuBLAS kernel"]
COLOURS = ["#7f7f7f", "#1f77b4", "#2ca02c", "#d62728", "#ff9896", "#9467bd", "#c5b0d5"]
# The paper's Table 1 (K40c), ms per DCI 4K luma frame: CPU, GPU overall, GPU kernel,
# cuBLAS overall, cuBLAS kernel.
PAPER = {"4x4": [234.59, 5.9, 0.78, 117.24, 101.75], "32x32": [705.95, 8.77, 3.65, 19.25, 8.97]}
PAPER_COLS = ["CPU c", "GPU overall", "GPU kernel", "cuBLAS overall", "cuBLAS kernel"]


def num(s):
    return float(s) if s not in ("", None) else None


def load(path):
    """Table 1 cells {(workload, dir): {column: ms}}, the sweep {(workload, dir):
    [(streams, overall, e2e)]}, and the 4K workloads {(workload, dir): dist}."""
    t1, sweep, dci = {}, {}, {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["error"] or not r["ms_median"]:
                continue
            key = (r["workload"], r["direction"])
            impl = r["impl"]
            if r["width"] == "4096" and r["height"] == "2160" and r["dist"] in PAPER:
                dci[key] = r["dist"]
            if r["table1_overall"] == "1":
                col = {"c": "CPU c", "simd": "CPU simd", "threads": "CPU threads",
                       "cuda": "GPU overall", "cublas": "cuBLAS overall"}[impl]
                v = num(r["ms_median"]) if impl in ("c", "simd", "threads") else num(
                    r["device_total_ms"])
                if v is not None:
                    t1.setdefault(key, {})[col] = v
            if r["table1_kernel"] == "1":
                col = "GPU kernel" if impl == "cuda" else "cuBLAS kernel"
                v = num(r["kernel_only_ms"]) or num(r["kernel_ms"])
                if v is not None:
                    t1.setdefault(key, {})[col] = v
            if impl == "cuda" and r["sweep"] == "1":
                sweep.setdefault(key, []).append(
                    (int(r["streams"]), num(r["device_total_ms"]), num(r["ms_median"])))
    for v in sweep.values():
        v.sort()
    return t1, sweep, dci


def plot_table1(t1, dci, out, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = sorted(t1)
    width = 0.8 / len(T1_COLS)
    fig, ax = plt.subplots(figsize=(max(8, 1.8 * len(groups) + 2), 5))
    for g, key in enumerate(groups):
        for c, col in enumerate(T1_COLS):
            v = t1[key].get(col)
            if v is None:
                continue
            x = g + (c - len(T1_COLS) / 2 + 0.5) * width
            ax.bar(x, v, width * 0.9, color=COLOURS[c], label=col if g == 0 or col not in
                   ax.get_legend_handles_labels()[1] else None)
        if key in dci and key[1] == "fwd":
            # the paper's values, hatched, on a thin second row of bars
            for c, col in enumerate(PAPER_COLS):
                ci = T1_COLS.index(col)
                x = g + (ci - len(T1_COLS) / 2 + 0.5) * width
                ax.bar(x, PAPER[dci[key]][c], width * 0.35, fill=False, hatch="///",
                       edgecolor="black", linewidth=0.5,
                       label="paper (K40c)" if "paper (K40c)" not in
                       ax.get_legend_handles_labels()[1] else None)
    ax.set_yscale("log")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{w}\n{d}" for w, d in groups])
    ax.set_ylabel("ms per frame (log)")
    ax.set_title(title or "vidkern-bench hevc: Table 1 (Cobrnic et al. 2020) on this machine")
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_sweep(sweep, out, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, (key, pts) in enumerate(sorted(sweep.items())):
        colour = "C%d" % (i % 10)
        xs = [p[0] for p in pts]
        dev = [p[1] for p in pts]
        if all(v is not None for v in dev):
            ax.plot(xs, dev, "o-", color=colour, label=f"{key[0]} {key[1]}: GPU overall")
        ax.plot(xs, [p[2] for p in pts], "s--", color=colour, alpha=0.6,
                label=f"{key[0]} {key[1]}: end-to-end")
    ax.set_xlabel("CUDA streams")
    ax.set_ylabel("ms per frame")
    ax.set_yscale("log")
    ax.set_title(title or "vidkern-bench hevc: stream sweep (Figure 3 of Cobrnic et al.)")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", help="CSV written by `vidkern-bench hevc --csv`")
    ap.add_argument("--outdir", default="docs", help="folder of the PNGs (default docs)")
    ap.add_argument("--prefix", default="hevc_", help="file name prefix (default hevc_)")
    ap.add_argument("--title", default=None)
    ap.add_argument("--check", action="store_true", help="parse and print, no plots")
    a = ap.parse_args()
    t1, sweep, dci = load(a.results)
    if not t1:
        sys.exit("plot_hevc.py: no Table 1 values in %s" % a.results)
    for key in sorted(t1):
        print("%-16s %-4s " % key + "  ".join(
            "%s=%.4g" % (c, t1[key][c]) for c in T1_COLS if c in t1[key]))
    for key, pts in sorted(sweep.items()):
        print("sweep %s %s: " % key + " ".join(
            "%d:%s" % (s, "%.4g" % d if d is not None else "-") for s, d, _ in pts))
    if a.check:
        return
    os.makedirs(a.outdir, exist_ok=True)
    out1 = os.path.join(a.outdir, a.prefix + "table1.png")
    plot_table1(t1, dci, out1, a.title)
    print("wrote", out1)
    if sweep:
        out2 = os.path.join(a.outdir, a.prefix + "streams.png")
        plot_sweep(sweep, out2, a.title)
        print("wrote", out2)
    else:
        print("no stream sweep in the CSV (no cuda rows): %sstreams.png not written" % a.prefix)


if __name__ == "__main__":
    main()
