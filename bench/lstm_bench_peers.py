"""The implementations the benchmark times, behind one interface:

    peer.start() -> None or a reason it cannot run this problem ("unsupported: ...")
    peer.run_once() -> (wall ms, CPU ms) of one inference, or one training step; CPU time
                       is the whole process's (all threads)
    peer.close()

torch.nn.LSTM and lstmop.nn.LSTM (the plugin) run in this process on the same weights and
inputs; the C++ peers (onednn_lstm_peer, lstmop_runner) run as subprocesses speaking the
--serve protocol of bench/bench_case.h, so their runs interleave with the in-process ones.
"""
import ctypes
import os
import subprocess
import time

import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _blas_thread_setters():
    """openblas_set_num_threads of every OpenBLAS this process has loaded. Debian's torch does
    its float32 matmuls in OpenBLAS (libblas.so.3), whose thread pool torch.set_num_threads does
    not size: left alone it starts one thread per CPU, so a "1-thread" torch run would use two
    cores (measured: ~1.4x its CPU time)."""
    setters = []
    for name in (None, "libblas.so.3", "libopenblas.so.0"):
        try:
            setters.append(ctypes.CDLL(name).openblas_set_num_threads)
        except (OSError, AttributeError):
            pass
    return setters


_BLAS_SETTERS = _blas_thread_setters()


def set_threads(threads):
    """Thread count for everything in this process: torch (the plugin follows it) and BLAS.
    Only when it changes: torch.set_num_threads restarts torch's OpenMP pool, whose workers
    then spin for tens of milliseconds; called before every run it took a core from the
    run that followed (measured: lstmop's 2-thread S2 inference 21 -> 49 ms)."""
    global _THREADS_SET
    if _THREADS_SET == threads:
        return
    torch.set_num_threads(threads)
    for setter in _BLAS_SETTERS:
        setter(threads)
    if _THREADS_SET is not None:
        # The workers of the previous setting spin before they sleep: measured, a 1-thread row
        # right after a 2-thread one (--threads 1,2, 3 rounds) ran its in-process peers at
        # half speed, the CPU clock counting the spinning thread (S3 inference: the plugin
        # 1.34-1.47 ms and torch 10.8 ms, against 0.55-0.63 and 5.5 alone). Let them settle.
        time.sleep(0.5)
    _THREADS_SET = threads


_THREADS_SET = None


class ModulePeer:
    """torch.nn.LSTM or a drop-in class (lstmop.nn.LSTM): forward, or forward + full backward
    (gradients of the input and every parameter for a random output gradient)."""

    def __init__(self, name, module_class, problem, mode, threads):
        self.name, self.module_class = name, module_class
        self.problem, self.mode, self.threads = problem, mode, threads
        self.info = ""

    def start(self, warm_up=True):
        p = self.problem
        set_threads(self.threads)
        torch.manual_seed(p.seed)
        dtype = TORCH_DTYPES[p.dtype]
        try:
            reference = torch.nn.LSTM(p.I, p.H, p.layers, bidirectional=p.bidirectional,
                                      proj_size=p.proj)
            module = self.module_class(p.I, p.H, p.layers, bidirectional=p.bidirectional,
                                       proj_size=p.proj)
            module.load_state_dict(reference.state_dict())  # every module peer: same weights
            self.module = module.to(dtype)
            x = (torch.rand(p.T, p.B, p.I) * 2 - 1).to(dtype)
            lengths = p.lengths()
            if lengths is None:
                self.input = x.requires_grad_(self.mode == "train")
                self.input_leaf = self.input
            else:
                packed = pack_padded_sequence(x, torch.tensor(lengths), enforce_sorted=True)
                self.input_leaf = packed.data.detach().requires_grad_(self.mode == "train")
                self.input = PackedSequence(self.input_leaf, packed.batch_sizes)
            self.params = list(self.module.parameters())
            self.grad_y = None
            if warm_up:
                self.run_once()  # warm-up, and the first run can fail on an unsupported dtype
        except RuntimeError as error:  # e.g. "addmm_impl_cpu_" not implemented for 'Half'
            return f"unsupported: {str(error).splitlines()[0][:160]}"
        return None

    def _output(self, result):
        out = result[0]
        return out.data if isinstance(out, PackedSequence) else out

    def run_once(self):
        set_threads(self.threads)
        # lstmop's float32 precision for this problem (the other peers have none to set).
        precision = getattr(self.problem, "fp32_precision", "ieee")
        settings = None
        if self.name == "lstmop" and precision != "ieee":
            import lstmop
            settings = lstmop
            settings.set_fp32_precision(precision)
        try:
            cpu_start = time.process_time()
            start = time.perf_counter()
            if self.mode == "infer":
                with torch.no_grad():
                    self.module(self.input)
            else:
                y = self._output(self.module(self.input))
                if self.grad_y is None:
                    self.grad_y = torch.rand_like(y) * 2 - 1
                torch.autograd.grad(y, [self.input_leaf] + self.params, self.grad_y)
            wall = time.perf_counter() - start
            cpu = time.process_time() - cpu_start
        finally:
            if settings is not None:
                settings.set_fp32_precision("ieee")
        return wall * 1e3, cpu * 1e3

    def close(self):
        self.module = self.input = self.input_leaf = self.params = self.grad_y = None


class SubprocessPeer:
    """A C++ peer binary in --serve mode (one process per problem, mode and thread count)."""

    def __init__(self, name, binary, problem, mode, threads, padded=False):
        self.name, self.binary = name, binary
        self.problem, self.mode, self.threads, self.padded = problem, mode, threads, padded
        self.process = None
        self.info = ""

    def start(self):
        env = dict(os.environ, OMP_NUM_THREADS=str(self.threads))
        args = [self.binary] + self.problem.peer_args(self.padded) + [
            "--mode", self.mode, "--threads", str(self.threads), "--serve"]
        precision = getattr(self.problem, "fp32_precision", "ieee")
        if self.name == "lstmop_cpp" and precision != "ieee":
            args += ["--fp32-precision", precision]
        self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=env)
        line = self.process.stdout.readline().strip()
        if line.startswith("ready"):
            self.info = line[len("ready"):].strip()
            return None
        self.process.wait()
        stderr = self.process.stderr.read().strip()
        self.process = None
        if line.startswith("unsupported:"):
            return line
        raise RuntimeError(f"{self.name}: {' '.join(args)} failed: {line} {stderr}")

    def run_once(self):
        self.process.stdin.write("run 1\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline().split()
        if len(line) != 4 or line[0] != "times" or line[2] != "cpu":
            raise RuntimeError(f"{self.name}: unexpected answer {line!r}: "
                               f"{self.process.stderr.read()}")
        return float(line[1]), float(line[3])

    def close(self):
        if self.process is not None:
            self.process.stdin.write("quit\n")
            self.process.stdin.flush()
            self.process.wait(timeout=60)
            self.process = None


def sgemm_rate(probe, threads, size, clock="wall"):
    """GFLOP/s of dnnl_sgemm on (m, n, k) = size, min over reps, from bench/sgemm_probe; on the
    CPU clock for 1 thread when clock == "cpu" (like the LSTM rows)."""
    m, n, k = size
    out = subprocess.run([probe, "--threads", str(threads), "--m", str(m), "--n", str(n),
                          "--k", str(k), "--reps", "5"], check=True, capture_output=True,
                         text=True, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    fields = dict(item.split("=") for item in out.stdout.split()[1:])
    return float(fields["cpu_gflops" if clock == "cpu" and threads == 1 else "gflops"])
