#!/usr/bin/python3
"""lstmop's LSTM benchmark: lstmop against torch.nn.LSTM and oneDNN's LSTM primitive.

    /usr/bin/python3 bench/lstm_bench.py                       # the suite S1..S7, 1 and 2 threads
    /usr/bin/python3 bench/lstm_bench.py --cases S2,S3 --threads 1 --reps 5
    /usr/bin/python3 bench/lstm_bench.py --shape T=100,B=64,I=512,H=512,L=2,bidir=1 --no-suite
    /usr/bin/python3 bench/lstm_bench.py --quick               # tiny shapes, 1 rep (the ctest)
    /usr/bin/python3 bench/lstm_bench.py --verify              # C++ peers == torch.nn.LSTM

Each (problem, mode, threads) starts every peer once, then runs them interleaved, one run of
each per round, rotating the order; the figure is the minimum over the rounds. Peers:
  lstmop      lstmop.nn.LSTM through the plugin (torch.ops.lstmop._lstm), in this process
  torch       torch.nn.LSTM (PackedSequence for variable length), in this process
  onednn      bench/onednn_lstm_peer: oneDNN's primitive, one per layer, padded
  lstmop_cpp  bench/lstmop_runner: lstmop's C++ API (when built; the lstmop column when the
              plugin is not importable)
  lstmop_noproj  with projections (S7): lstmop.nn.LSTM without them on the same H, I, T, B
              (its own FLOP count), the rate the projected LSTM is held to
Threads: torch.set_num_threads (the plugin follows it) and openblas_set_num_threads (torch's
float32 BLAS here), OMP_NUM_THREADS and omp_set_num_threads
for oneDNN, lstmop::set_num_threads for the runner. docs/performance.md explains the columns.
"""
import argparse
import os
import pathlib
import platform
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "python"))

import lstm_bench_problems as problems  # noqa: E402
import lstm_bench_report as report  # noqa: E402
from lstm_bench_peers import ModulePeer, SubprocessPeer, sgemm_rate  # noqa: E402


SETTLE_S = 0.25  # pause before each multi-thread run (measure())


def find_binary(explicit, name):
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for build in ("build-bench", "build"):
        candidate = REPO / build / "bench" / name
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def load_plugin():
    """lstmop.nn.LSTM, or (None, why not)."""
    try:
        import lstmop
        import lstmop.nn
        return lstmop.nn.LSTM, None
    except Exception as error:  # ImportError, or the .so failing to load
        return None, f"{type(error).__name__}: {error}"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="S1,S2,S3,S4,S5,S6,S7",
                    help="comma-separated suite cases (default: all)")
    ap.add_argument("--no-suite", action="store_true", help="only the --shape problems")
    ap.add_argument("--shape", action="append", default=[],
                    help="extra problem: T=..,B=..,I=..,H=..[,L=..][,bidir=1][,len=lo:hi][,P=..]"
                         "[,dtype=float32|bfloat16|float16][,name=..]; repeatable")
    ap.add_argument("--dtype", help="run every problem in this dtype instead of its own")
    ap.add_argument("--modes", default="infer,train")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=5, help="interleaved rounds (min is reported)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="what 1-thread rows compare: wall-clock, or each peer's process CPU "
                         "time (steadier on a shared machine); 2-thread rows always use wall")
    ap.add_argument("--peers", default="lstmop,torch,onednn,lstmop_cpp")
    ap.add_argument("--quick", action="store_true",
                    help="tiny shapes, 1 rep: checks the harness end to end")
    ap.add_argument("--accuracy", action="store_true",
                    help="print lstmop's and torch's errors against float64 on the same 16-bit "
                         "values (bfloat16, float16, float32 at bf16 precision) and exit")
    ap.add_argument("--verify", action="store_true",
                    help="check the C++ peers against torch.nn.LSTM (float64) and exit")
    ap.add_argument("--onednn-peer", help="path of onednn_lstm_peer (default: build*/bench/)")
    ap.add_argument("--lstmop-runner", help="path of lstmop_runner (default: build*/bench/)")
    ap.add_argument("--sgemm-probe", help="path of sgemm_probe (default: build*/bench/)")
    ap.add_argument("--sgemm-size", default="2048,2048,1024", help="m,n,k of the sgemm probe")
    ap.add_argument("--out", default=str(REPO / "out" / "bench"),
                    help="folder for results.csv and results.png")
    args = ap.parse_args(argv)
    if args.reps < 1:
        ap.error("--reps must be >= 1")
    return args


def select_problems(args):
    chosen = []
    if args.quick:
        chosen = problems.quick()
    elif not args.no_suite:
        wanted = [c.strip() for c in args.cases.split(",") if c.strip()]
        by_name = {p.name: p for p in problems.suite()}
        unknown = [c for c in wanted if c not in by_name]
        if unknown:
            raise SystemExit(f"--cases: unknown {unknown}; the suite is {sorted(by_name)}")
        chosen = [by_name[c] for c in wanted]
    for k, text in enumerate(args.shape):
        try:
            chosen.append(problems.parse_shape(text, k + 1))
        except ValueError as error:
            raise SystemExit(str(error))
    if args.dtype:
        if args.dtype not in problems.DTYPES:
            raise SystemExit(f"--dtype must be one of {problems.DTYPES}")
        for p in chosen:
            p.dtype = args.dtype
    if not chosen:
        raise SystemExit("nothing to run: give --cases or --shape")
    return chosen


def make_peers(names, problem, mode, threads, bins, plugin_class):
    peers = []
    if "lstmop" in names and plugin_class is not None:
        peers.append(ModulePeer("lstmop", plugin_class, problem, mode, threads))
        if problem.proj > 0:
            peers.append(ModulePeer("lstmop_noproj", plugin_class, problem.unprojected(), mode,
                                    threads))
    if "torch" in names:
        import torch
        peers.append(ModulePeer("torch", torch.nn.LSTM, problem, mode, threads))
    if "onednn" in names and bins["onednn"]:
        peers.append(SubprocessPeer("onednn", bins["onednn"], problem, mode, threads, padded=True))
    if "lstmop_cpp" in names and bins["runner"]:
        peers.append(SubprocessPeer("lstmop_cpp", bins["runner"], problem, mode, threads))
    return peers


def machine_description():
    """(The CPU's model name, the vector features lstmop's kernel choice reads and the caps
    in the environment; the bfloat16 products' form lstmop picks, from the same flags as
    kernels/cpu_features.h reads)."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model in ("", platform.machine()):
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
                    break
    except OSError:
        pass
    shown = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512_bf16", "avx512_fp16",
                         "amx_tile", "amx_bf16") if f in flags]
    caps = [f"{k}={os.environ[k]}" for k in ("LSTMOP_KERNEL_ISA", "LSTMOP_BF16_STEP",
                                             "DNNL_MAX_CPU_ISA") if k in os.environ]
    bf16 = os.environ.get("LSTMOP_BF16_STEP", "")
    if "avx512_bf16" not in flags or os.environ.get("LSTMOP_KERNEL_ISA") in ("scalar", "avx2"):
        form = "float32 FMAs (no AVX512-BF16 or capped)"
    elif bf16 == "matmul":
        form = "oneDNN matmul per step"
    elif bf16 != "fused" and {"amx_tile", "amx_bf16"} <= flags:
        form = ("lstmop's AMX tiles per step where H % 16 == 0 (else oneDNN matmul per step "
                "from batch 4)")
    else:
        form = "fused vdpbf16ps step"
    return (f"{model} [{' '.join(shown) or 'no AVX2'}]"
            f"{' (' + ' '.join(caps) + ')' if caps else ''}", form)


def one_core_for(threads):
    """The CPU a 1-thread row runs on: every peer of the row (this process and the subprocess
    peers, which inherit the affinity) on the same core, so each finds its caches as cold as the
    others do. Unpinned, a subprocess peer ran on the other core, whose private L2 nothing else
    touched between its runs, while the in-process peers shared theirs (S3 inference: the plugin
    1.33 ms unpinned, 0.99 ms pinned, the C++ peers unchanged). None: leave the affinity alone."""
    if threads != 1 or not hasattr(os, "sched_getaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    return allowed[-1] if len(allowed) > 1 else None


def measure(problem, mode, threads, reps, peers, clock, log):
    """Interleaved rounds; returns {peer: min ms on the chosen clock}, {peer: min wall ms},
    {peer: note}. The CPU clock is used for 1-thread runs only. 1-thread rows run pinned to
    one core (one_core_for)."""
    core = one_core_for(threads)
    if core is None:
        return _measure(problem, mode, threads, reps, peers, clock, log)
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    try:
        return _measure(problem, mode, threads, reps, peers, clock, log)
    finally:
        os.sched_setaffinity(0, allowed)


def _measure(problem, mode, threads, reps, peers, clock, log):
    best, best_wall, notes, running = {}, {}, {}, []
    for peer in peers:
        why_not = peer.start()
        if why_not:
            notes[peer.name] = why_not
        else:
            running.append(peer)
    times = {peer.name: [] for peer in running}
    for r in range(reps):
        shift = r % max(1, len(running))
        for peer in running[shift:] + running[:shift]:
            if threads > 1:
                # OpenMP workers of the previous peer (oneDNN's, torch's) spin for
                # a while after their last parallel region; on a 2-core machine that
                # takes a core from the next peer's first steps.
                time.sleep(SETTLE_S)
            times[peer.name].append(peer.run_once())
    use_cpu = clock == "cpu" and threads == 1
    for peer in running:
        peer.close()
        best_wall[peer.name] = min(w for w, _ in times[peer.name])
        best[peer.name] = min(c for _, c in times[peer.name]) if use_cpu else best_wall[peer.name]
    for peer in peers:
        if peer.info:
            log.write(f"    {peer.name}: {peer.info}\n")
    return best, best_wall, notes


def build_row(problem, mode, threads, best, best_wall, notes, sgemm, reps, one_thread_lstmop,
              clock):
    gflop = problem.flops(mode) / 1e9
    row = {"case": problem.name, "shape": problem.describe(), "dtype": problem.dtype,
           "mode": mode, "threads": threads, "gflop": round(gflop, 6),
           "sgemm_gflops": sgemm, "reps": reps,
           "clock": "cpu" if clock == "cpu" and threads == 1 else "wall"}
    # The lstmop column: the plugin, or the C++ runner when the plugin is not there.
    if "lstmop" not in best and "lstmop_cpp" in best:
        best = dict(best, lstmop=best["lstmop_cpp"])
        best_wall = dict(best_wall, lstmop=best_wall["lstmop_cpp"])
    for peer in report.PEERS:
        ms = best.get(peer)
        row[f"{peer}_ms"] = round(ms, 4) if ms is not None else None
        row[f"{peer}_wall_ms"] = round(best_wall[peer], 4) if peer in best_wall else None
        # lstmop_noproj computes the unprojected problem: its own FLOPs.
        peer_gflop = problem.unprojected().flops(mode) / 1e9 if peer == "lstmop_noproj" else gflop
        rate = peer_gflop / (ms / 1e3) if ms else None
        row[f"{peer}_gflops"] = round(rate, 2) if rate else None
        row[f"{peer}_pct_sgemm"] = round(100 * rate / sgemm, 1) if rate and sgemm else None
    lstmop_ms = best.get("lstmop")
    row["speedup_vs_torch"] = (round(best["torch"] / lstmop_ms, 3)
                               if lstmop_ms and best.get("torch") else None)
    row["speedup_vs_onednn"] = (round(best["onednn"] / lstmop_ms, 3)
                                if lstmop_ms and best.get("onednn") else None)
    targets = problems.TARGETS if threads == 1 else problems.TARGETS_2T if threads == 2 else {}
    target = targets.get((problem.name, mode))
    row["target_vs_torch"], row["target_vs_onednn"] = target if target else (None, None)
    row["met"] = None
    if target:
        # Every target the row has needs its peer's figure; a missing peer leaves "met" empty.
        checks = [(row["speedup_vs_torch"], target[0]), (row["speedup_vs_onednn"], target[1])]
        checks = [(got, want) for got, want in checks if want is not None]
        if all(got is not None for got, _ in checks):
            row["met"] = "yes" if all(got >= want for got, want in checks) else "no"
    row["scaling_2t"] = None
    if threads == 2 and lstmop_ms and one_thread_lstmop:
        row["scaling_2t"] = round(one_thread_lstmop / lstmop_ms, 3)
    row["notes"] = "; ".join(f"{k}: {v}" for k, v in sorted(notes.items()))
    return row


def main(argv):
    args = parse_args(argv)
    log = sys.stdout
    bins = {"onednn": find_binary(args.onednn_peer, "onednn_lstm_peer"),
            "runner": find_binary(args.lstmop_runner, "lstmop_runner"),
            "probe": find_binary(args.sgemm_probe, "sgemm_probe")}
    out_dir = pathlib.Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    if args.accuracy:
        plugin_class, plugin_why = load_plugin()
        if plugin_class is None:
            raise SystemExit(f"--accuracy needs the lstmop plugin: {plugin_why}")
        import lstm_bench_accuracy
        rows = lstm_bench_accuracy.print_accuracy(log=lambda line: print(line, file=log))
        with open(out_dir / "accuracy.csv", "w") as f:
            f.write("dtype,tensor,lstmop_error,torch_error,ratio\n")
            for label, name, ours, theirs, ratio, _ in rows:
                f.write(f"{label},{name},{ours},{'' if theirs is None else theirs},"
                        f"{'' if ratio is None else ratio}\n")
        print(f"wrote {out_dir / 'accuracy.csv'}", file=log)
        return 0

    if args.verify:
        import lstm_bench_verify
        peers = []
        if bins["onednn"]:
            peers.append(("onednn", bins["onednn"], "onednn"))
        if bins["runner"]:
            peers.append(("lstmop_cpp", bins["runner"], "lstmop"))
        if not peers:
            raise SystemExit("--verify: no C++ peer found (build onednn_lstm_peer)")
        return 1 if lstm_bench_verify.verify(peers, out_dir, log) else 0

    names = {n.strip() for n in args.peers.split(",")}
    plugin_class, plugin_why = load_plugin() if "lstmop" in names else (None, "not requested")
    chosen = select_problems(args)
    modes = [m.strip() for m in args.modes.split(",")]
    threads_list = [int(t) for t in args.threads.split(",")]
    reps = 1 if args.quick else args.reps
    sgemm_size = (256, 256, 256) if args.quick else tuple(int(v) for v in args.sgemm_size.split(","))

    machine, bf16_form = machine_description()
    log.write(f"machine: {machine}, {os.cpu_count()} cpus; python {platform.python_version()}; "
              f"lstmop's bfloat16 products: {bf16_form}\n")
    log.write(f"lstmop plugin: {'yes' if plugin_class else 'no (' + plugin_why + ')'}; "
              f"onednn peer: {bins['onednn']}; lstmop runner: {bins['runner']}; "
              f"sgemm probe: {bins['probe']}\n")
    sgemm = {}
    for threads in threads_list:
        sgemm[threads] = (sgemm_rate(bins["probe"], threads, sgemm_size, args.clock)
                          if bins["probe"] else None)
        log.write(f"dnnl_sgemm {sgemm_size} on {threads} thread(s): {sgemm[threads]} GFLOP/s\n")

    rows, failures = [], 0
    started = time.time()
    for problem in chosen:
        for mode in modes:
            one_thread_lstmop = None
            for threads in threads_list:
                log.write(f"{problem.name} {problem.describe()} {problem.dtype} {mode} "
                          f"{threads}t ...\n")
                log.flush()
                peers = make_peers(names, problem, mode, threads, bins, plugin_class)
                try:
                    best, best_wall, notes = measure(problem, mode, threads, reps, peers,
                                                     args.clock, log)
                except RuntimeError as error:
                    failures += 1
                    log.write(f"  FAILED: {error}\n")
                    for peer in peers:
                        try:
                            peer.close()
                        except Exception:
                            pass
                    continue
                row = build_row(problem, mode, threads, best, best_wall, notes, sgemm[threads],
                                reps, one_thread_lstmop, args.clock)
                if threads == 1:
                    one_thread_lstmop = row["lstmop_ms"]
                rows.append(row)
    log.write(f"\n{len(rows)} rows in {time.time() - started:.1f} s, min of {reps} round(s), "
              f"1-thread rows on the {args.clock} clock\n")
    report.print_table(rows, log)
    report.write_csv(rows, out_dir / "results.csv")
    if rows:
        report.write_chart(rows, out_dir / "results.png",
                           f"lstmop vs torch.nn.LSTM vs oneDNN LSTM primitive "
                           f"({os.cpu_count()} cpus, min of {reps})")
    log.write(f"wrote {out_dir / 'results.csv'} and {out_dir / 'results.png'}\n")
    if args.quick:
        failures += check_complete(rows, names, bins, plugin_class, out_dir, log)
    return 1 if failures else 0


def check_complete(rows, names, bins, plugin_class, out_dir, log):
    """--quick's self-check: every available peer timed every row (or said why it cannot),
    and the CSV and the chart were written. Returns the number of problems."""
    expected = {"torch": "torch" in names,
                "onednn": "onednn" in names and bins["onednn"] is not None,
                "lstmop": ("lstmop" in names and plugin_class is not None)
                or ("lstmop_cpp" in names and bins["runner"] is not None)}
    problems_found = []
    for r in rows:
        plugin = "lstmop" in names and plugin_class is not None
        if r["case"] == "Q4" and plugin and r["lstmop_noproj_ms"] is None:  # projections
            problems_found.append(f"{r['case']} {r['mode']} {r['threads']}t: no lstmop_noproj")
        for peer, wanted in expected.items():
            if wanted and r[f"{peer}_ms"] is None and f"{peer}: unsupported" not in r["notes"]:
                problems_found.append(f"{r['case']} {r['mode']} {r['threads']}t: no {peer} time")
    for name in ("results.csv", "results.png"):
        path = out_dir / name
        if not path.is_file() or path.stat().st_size == 0:
            problems_found.append(f"{path} missing or empty")
    if len(rows) == 0:
        problems_found.append("no rows")
    for p in problems_found:
        log.write(f"quick check: {p}\n")
    return len(problems_found)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
