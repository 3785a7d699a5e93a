#!/usr/bin/env python3
"""Plot `vidkern-bench h264` results: the figures of Wang et al. 2013 on this machine.

    vidkern-bench h264 --csv h264.csv ...
    python3 bench/plot_h264.py h264.csv -o docs          # writes docs/h264_*.png

Figures (one bar group per workload "size mode"; see docs/BENCH_H264.md):
  h264_nonzero.png   Fig. 2: non-zero block ratio per mode, 4x4 / 8x8 / all
  h264_table3.png    Table 3: kernel, H2D and D2H ms of the dense baseline vs compacted
  h264_steps.png     Table 4: kernel ms per GPU optimisation step, 4x4 and 8x8 panels
  h264_kernel.png    Fig. 4: kernel speed-up over c (scalar) per transform size
  h264_complete.png  Fig. 5: complete IDCT speed-up over c: simd, threads, GPU without
                     and with overlap, GPU pipelined throughput
  h264_bytes.png     bytes per frame: dense / compacted / sparse (model) and measured PCIe
Figures whose data the run did not produce (no GPU rows, say) are skipped with a
message. --check parses and prints the series instead of plotting (no matplotlib needed).
"""
import argparse
import csv
import math
import os
import sys

STEPS = ["compact", "line", "larger", "coalesced", "sparse", "fused", "pipeline", "graphs"]
COLOURS = ["#7f7f7f", "#1f77b4", "#2ca02c", "#ff7f0e", "#d62728", "#9467bd", "#8c564b",
           "#e377c2", "#17becf"]


def num(s):
    try:
        v = float(s)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def load(path):
    """Workload stats, timed rows (section 'time') and micro rows of the CSV."""
    work, times = {}, []
    with open(path, newline="") as f:
        rd = csv.DictReader(f)
        need = {"section", "size", "mode", "backend", "variant", "class", "value", "ms",
                "kernel_ms", "h2d_ms", "d2h_ms", "h2d_bytes", "d2h_bytes"}
        if not need <= set(rd.fieldnames or []):
            sys.exit("%s: not a `vidkern-bench h264 --csv` file" % path)
        for r in rd:
            key = (r["size"], r["mode"])
            if r["section"] == "workload":
                w = work.setdefault(key, {})
                w[(r["variant"], r["class"])] = num(r["value"])
            elif r["section"] == "time" and num(r["ms"]) is not None:
                times.append({
                    "wl": key, "backend": r["backend"], "variant": r["variant"],
                    "class": r["class"], "ms": num(r["ms"]), "kernel": num(r["kernel_ms"]),
                    "h2d": num(r["h2d_ms"]), "d2h": num(r["d2h_ms"]),
                    "bytes": (num(r["h2d_bytes"]) or 0) + (num(r["d2h_bytes"]) or 0)
                    if num(r["h2d_bytes"]) is not None else None})
    order = list(work.keys())
    for t in times:
        if t["wl"] not in order:
            order.append(t["wl"])
    return order, work, times


def find(times, wl, backend, variant, cls="all"):
    for t in times:
        if t["wl"] == wl and t["variant"] == variant and t["class"] == cls and \
                (t["backend"] == backend or (backend == "gpu" and t["backend"].startswith("cuda"))):
            return t
    return None


def label(wl):
    return "%s\n%s" % wl


def series(order, work, times):
    """Every figure's data: {figure: (group labels, {series name: [values]})}."""
    figs = {}
    # "cuda", or "cuda-emu" for the host emulation (whose times mean nothing).
    gpu = next((t["backend"] for t in times if t["backend"].startswith("cuda")), "cuda")
    figs["nonzero"] = ([label(w) for w in order], {
        c: [100 * (work.get(w, {}).get(("nonzero_ratio", c)) or 0) for w in order]
        for c in ("4x4", "8x8", "all")})
    t3 = {}
    for part in ("kernel", "h2d", "d2h"):
        for v, name in (("dense", "baseline"), ("compact", "compacted")):
            vals = [(find(times, w, "gpu", v) or {}).get(part) for w in order]
            if any(x is not None for x in vals):
                t3["%s %s %s" % (gpu, name, part)] = vals
    figs["table3"] = ([label(w) for w in order], t3)
    for cls in ("4x4", "8x8"):
        st = {}
        for s in STEPS:
            vals = [(find(times, w, "gpu", s, cls) or {}).get("kernel") for w in order]
            if any(x is not None for x in vals):
                st[s] = vals
        figs["steps_" + cls] = ([label(w) for w in order], st)
    kern = {}
    for cls in ("4x4", "8x8"):
        c = [find(times, w, "c", "batch", cls) for w in order]
        for be in ("simd", "threads", "gpu"):
            vals = []
            for i, w in enumerate(order):
                x = find(times, w, be, "fused" if be == "gpu" else "batch", cls)
                t = x and (x["kernel"] if be == "gpu" else x["ms"])
                vals.append(c[i]["ms"] / t if c[i] and t else None)
            if any(v is not None for v in vals):
                kern["%s %s" % (be if be != "gpu" else gpu + " kernel", cls)] = vals
    figs["kernel"] = ([label(w) for w in order], kern)
    comp = {}
    for name, be, v in (("simd", "simd", "batch"), ("threads", "threads", "batch"),
                        (gpu + " no overlap", "gpu", "no-overlap"),
                        (gpu + " overlap", "gpu", "default"),
                        (gpu + " pipelined", "gpu", "throughput")):
        vals = []
        for w in order:
            c, x = find(times, w, "c", "batch"), find(times, w, be, v)
            vals.append(c["ms"] / x["ms"] if c and x and x["ms"] else None)
        if any(v is not None for v in vals):
            comp[name] = vals
    figs["complete"] = ([label(w) for w in order], comp)
    by = {}
    for v in ("dense", "compacted", "sparse"):
        by[v + " (model)"] = [(work.get(w, {}).get(("bytes_" + v, "all")) or 0) / 1e3 for w in order]
    for v in ("dense", "compact", "sparse", "fused"):
        vals = [((find(times, w, "gpu", v) or {}).get("bytes") or 0) / 1e3 or None for w in order]
        if any(x is not None for x in vals):
            by[v + " PCIe " + gpu] = vals
    figs["bytes"] = ([label(w) for w in order], by)
    return figs


def bars(ax, groups, data, ylabel, log=False, unity=False):
    names = list(data)
    width = 0.8 / max(1, len(names))
    for i, n in enumerate(names):
        xs = [g + (i - (len(names) - 1) / 2) * width for g in range(len(groups))]
        ys = [v if v is not None else 0 for v in data[n]]
        ax.bar(xs, ys, width, label=n, color=COLOURS[i % len(COLOURS)])
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, fontsize=8)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    if unity:  # speed-up 1 = as fast as c
        ax.axhline(1.0, color="black", linewidth=0.8)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", help="CSV written by `vidkern-bench h264 --csv`")
    ap.add_argument("-o", "--outdir", default="docs")
    ap.add_argument("--prefix", default="h264_")
    ap.add_argument("--title", default=None, help="suptitle (e.g. the GPU and date)")
    ap.add_argument("--check", action="store_true", help="print the series, do not plot")
    a = ap.parse_args()
    order, work, times = load(a.results)
    if not order:
        sys.exit("%s: no workload in the file" % a.results)
    figs = series(order, work, times)
    if a.check:
        for k, (groups, data) in figs.items():
            print("%s: %d groups, series %s" % (k, len(groups), ", ".join(data) or "(none)"))
            for n, vals in data.items():
                print("  %-22s %s" % (n, " ".join("-" if v is None else "%.4g" % v for v in vals)))
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def save(name, fig):
        path = os.path.join(a.outdir, a.prefix + name + ".png")
        if a.title:
            fig.suptitle(a.title, fontsize=9)
        fig.tight_layout()
        fig.savefig(path, dpi=130)
        plt.close(fig)
        print("wrote", path)

    os.makedirs(a.outdir, exist_ok=True)
    wide = max(6.0, 1.3 * len(order))
    specs = [("nonzero", "non-zero blocks, % (Fig. 2)", False),
             ("table3", "ms per frame (Table 3)", True),
             ("kernel", "kernel speed-up over c (Fig. 4)", True),
             ("complete", "complete IDCT speed-up over c (Fig. 5)", True),
             ("bytes", "KB per frame", True)]
    for name, ylabel, log in specs:
        groups, data = figs[name]
        if not data:
            print("skipped %s: no data in this run" % name)
            continue
        fig, ax = plt.subplots(figsize=(wide, 4))
        bars(ax, groups, data, ylabel, log, unity=name in ("kernel", "complete"))
        save(name, fig)
    if figs["steps_4x4"][1] or figs["steps_8x8"][1]:
        fig, axs = plt.subplots(1, 2, figsize=(2 * wide, 4))
        for ax, cls in zip(axs, ("4x4", "8x8")):
            groups, data = figs["steps_" + cls]
            if data:
                bars(ax, groups, data, "kernel ms per frame, %s (Table 4)" % cls, True)
        save("steps", fig)
    else:
        print("skipped steps: no GPU rows in this run")


if __name__ == "__main__":
    main()
