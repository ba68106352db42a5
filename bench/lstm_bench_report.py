"""Rows of results -> the console table, the CSV and the PNG chart."""
import csv

PEERS = ("lstmop", "torch", "onednn", "lstmop_cpp", "lstmop_noproj")
SHORT_DTYPE = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}

COLUMNS = (["case", "shape", "dtype", "mode", "threads", "gflop", "sgemm_gflops"]
           + [f"{p}_{what}" for p in PEERS for what in ("ms", "wall_ms", "gflops", "pct_sgemm")]
           + ["speedup_vs_torch", "speedup_vs_onednn", "target_vs_torch", "target_vs_onednn",
              "met", "scaling_2t", "clock", "reps", "notes"])


def fmt(value, digits=2):
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def print_table(rows, out):
    header = ["case", "dtype", "mode", "thr", "lstmop ms", "torch ms", "onednn ms", "cpp ms",
              "lstmop GF/s", "torch GF/s", "onednn GF/s", "noproj GF/s", "%sgemm", "x torch",
              "x onednn", "met"]
    lines = [header]
    for r in rows:
        lines.append([r["case"], r["dtype"], r["mode"], str(r["threads"]),
                      fmt(r["lstmop_ms"], 3), fmt(r["torch_ms"], 3), fmt(r["onednn_ms"], 3),
                      fmt(r["lstmop_cpp_ms"], 3),
                      fmt(r["lstmop_gflops"], 1), fmt(r["torch_gflops"], 1),
                      fmt(r["onednn_gflops"], 1), fmt(r.get("lstmop_noproj_gflops"), 1),
                      fmt(r["lstmop_pct_sgemm"], 0),
                      fmt(r["speedup_vs_torch"]), fmt(r["speedup_vs_onednn"]), fmt(r["met"])])
    widths = [max(len(line[c]) for line in lines) for c in range(len(header))]
    for line in lines:
        out.write("  ".join(cell.rjust(w) for cell, w in zip(line, widths)) + "\n")
    for r in rows:
        if r["notes"]:
            out.write(f"  {r['case']} {r['dtype']} {r['mode']} {r['threads']}t: {r['notes']}\n")


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in COLUMNS})


def write_chart(rows, path, title):
    """GFLOP/s of every peer per case, one panel per mode, the sgemm rate as a marker."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [m for m in ("infer", "train") if any(r["mode"] == m for r in rows)]
    fig, axes = plt.subplots(1, len(modes), figsize=(7 * len(modes), 4.5), squeeze=False)
    colors = {"lstmop": "tab:green", "torch": "tab:orange", "onednn": "tab:blue",
              "lstmop_cpp": "tab:olive", "lstmop_noproj": "tab:gray"}
    for ax, mode in zip(axes[0], modes):
        sel = [r for r in rows if r["mode"] == mode]
        labels = [f"{r['case']}\n{SHORT_DTYPE[r['dtype']]} {r['threads']}t" for r in sel]
        peers = [p for p in PEERS if any(r[f"{p}_gflops"] is not None for r in sel)]
        width = 0.8 / max(1, len(peers))
        for k, peer in enumerate(peers):
            xs = [i + (k - (len(peers) - 1) / 2) * width for i in range(len(sel))]
            ys = [r[f"{peer}_gflops"] or 0.0 for r in sel]
            ax.bar(xs, ys, width, label=peer, color=colors[peer])
        # lstmop's speed-ups (vs torch / vs oneDNN) above each group.
        top = max([r[f"{p}_gflops"] or 0.0 for r in sel for p in peers]
                  + [r["sgemm_gflops"] or 0.0 for r in sel] + [1.0])
        for i, r in enumerate(sel):
            if r["speedup_vs_torch"] or r["speedup_vs_onednn"]:
                # Two lines, so that the labels of 12+ groups do not run into each other.
                ax.text(i, top * 1.04, f"x{fmt(r['speedup_vs_torch'])}\nx{fmt(r['speedup_vs_onednn'])}",
                        ha="center", fontsize=7)
        ax.set_ylim(0, top * 1.4)  # room for the labels and the legend
        ax.scatter(range(len(sel)), [r["sgemm_gflops"] or 0.0 for r in sel], marker="_",
                   s=400, color="black", label="dnnl_sgemm", zorder=3)
        ax.set_xticks(range(len(sel)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("GFLOP/s (useful GEMM FLOPs)")
        ax.set_title(f"{mode} (above each group: lstmop's speed-up vs torch, then vs oneDNN)",
                     fontsize=9)
        ax.legend(fontsize=7, ncol=3, loc="upper left")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def read_csv(path):
    """Rows written by write_csv, numbers back as numbers (empty = None)."""
    rows = []
    with open(path, newline="") as f:
        for raw in csv.DictReader(f):
            row = {}
            for key in COLUMNS:
                value = raw.get(key, "")
                if value == "":
                    row[key] = "" if key == "notes" else None
                    continue
                try:
                    row[key] = int(value) if key in ("threads", "reps") else float(value)
                except ValueError:
                    row[key] = value
            rows.append(row)
    return rows


def main(argv):
    """Merges results.csv files of several runs into one table and chart:
    lstm_bench_report.py OUT.png IN.csv [IN.csv ...] (also writes OUT.csv)."""
    import sys
    if len(argv) < 2:
        sys.stderr.write("usage: lstm_bench_report.py OUT.png IN.csv [IN.csv ...]\n")
        return 2
    rows = [r for path in argv[1:] for r in read_csv(path)]
    print_table(rows, sys.stdout)
    write_csv(rows, argv[0].rsplit(".", 1)[0] + ".csv")
    write_chart(rows, argv[0], "lstmop vs torch.nn.LSTM vs oneDNN LSTM primitive (merged runs)")
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
