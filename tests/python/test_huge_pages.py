"""The binding's memory for large outputs (torch/output_memory.h).

Huge pages: results are the same bits with the transparent-huge-page hint on (the default, or
LSTMOP_HUGE_PAGES=1) and off (LSTMOP_HUGE_PAGES=0), and, where the kernel honours
madvise(MADV_HUGEPAGE), a training step whose outputs of 8 MiB and more are fresh blocks (the
cache released first) page-faults far less with it; without the variable it is on. The block
cache: a training step after another reuses the dead outputs' blocks (far fewer page faults
than a step on fresh blocks, the same bits), the cache never holds more than the outputs held at
once, and release_cached_memory empties it; a loop that holds each call's outputs until the next
call returns (y = lstm(x)) does not fault them in again on every call (outputs of 64 KiB and
more come from the cache). Each setting runs in a fresh process (the variable is read once)."""
import json
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]

CHILD = r"""
import hashlib, json, resource, sys, torch
import lstmop
torch.manual_seed(0)
torch.set_num_threads(1)
# Saved tensors (1, 400, 400, 64) float32 = 39 MiB each: above the 8 MiB hint threshold and
# above glibc's largest mmap threshold (32 MiB), so each call's are fresh mappings.
m = lstmop.nn.LSTM(16, 64)
x = (torch.rand(400, 400, 16) * 2 - 1).requires_grad_()
forward_faults = []
def step():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    y, (h, c) = m(x)
    forward_faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    grads = torch.autograd.grad(y.sum() + h.sum(), [x] + list(m.parameters()))
    return [y, h, c] + list(grads)
out = step()  # warm-up: the library's scratch and the dead outputs' blocks are cached
del out
cached = lstmop.cached_memory_bytes()
if sys.argv[1] == "fresh":
    lstmop.release_cached_memory()
released = lstmop.cached_memory_bytes()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
out = step()
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
digest = hashlib.sha256(b"".join(t.detach().contiguous().numpy().tobytes() for t in out)).hexdigest()
print(json.dumps({"faults": faults, "forward_faults": forward_faults[-1], "digest": digest,
                  "cached": cached, "released": released}))
"""


def run_child(hint, blocks="fresh"):
    """hint: LSTMOP_HUGE_PAGES's value in the child, None: not set."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    env.pop("LSTMOP_HUGE_PAGES", None)
    if hint is not None:
        env["LSTMOP_HUGE_PAGES"] = hint
    result = subprocess.run([sys.executable, "-c", CHILD, blocks], env=env, capture_output=True,
                            text=True, timeout=300, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def thp_mode():
    try:
        text = pathlib.Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "absent"
    return text[text.index("[") + 1:text.index("]")]


def test_same_bits_with_and_without_the_hint_and_fewer_faults_with_it():
    on, off, default = run_child("1"), run_child("0"), run_child(None)
    assert on["digest"] == off["digest"] == default["digest"]
    mode = thp_mode()
    # The forward's: its outputs are all fresh blocks here (its scratch is small); the
    # backward's large scratch is the core's, which release_cached_memory frees too.
    print(f"THP mode {mode}: page faults of a training step's forward {on['forward_faults']} "
          f"with the hint, {off['forward_faults']} without, {default['forward_faults']} with "
          f"LSTMOP_HUGE_PAGES unset")
    if mode in ("madvise", "always"):
        # Without the hint (mode madvise) every 4 KiB page of the fresh outputs faults: the
        # eight 39 MiB outputs alone are 80k pages.
        assert off["forward_faults"] > 50000 or mode == "always"
        assert on["forward_faults"] < off["forward_faults"] / 4 or mode == "always"
        # On by default.
        assert default["forward_faults"] < off["forward_faults"] / 4 or mode == "always"
        # The backward's: mostly the core's scratch (d_gates and the like, 8 MiB and more),
        # which the plugin has advised too (src/common/workspace.h); its dx is 10 MiB.
        on_bwd, off_bwd = (r["faults"] - r["forward_faults"] for r in (default, off))
        print(f"page faults of the backward on fresh scratch: {on_bwd} by default, {off_bwd} "
              f"with LSTMOP_HUGE_PAGES=0")
        assert off_bwd > 30000 or mode == "always"
        assert on_bwd < off_bwd / 4 or mode == "always"
    else:
        # THP off in this kernel: the hint is a no-op, nothing to compare but the bits.
        assert on["forward_faults"] > 0


def test_a_step_after_a_step_reuses_the_dead_outputs_blocks():
    fresh, reused = run_child(None, "fresh"), run_child(None, "reuse")
    assert reused["digest"] == fresh["digest"]
    print(f"page faults of a training step: {fresh['faults']} on fresh blocks (and scratch), "
          f"{reused['faults']} reusing the previous step's; cached {fresh['cached'] >> 20} MiB")
    # The eight 39 MiB saved tensors and the output were cached when the first step's outputs
    # died, and released on request.
    assert fresh["cached"] >= 8 * 39 << 20
    assert fresh["released"] == 0 and reused["released"] == reused["cached"]
    # Fresh blocks and the released scratch (of 8 MiB and more: huge pages too) fault at least
    # once per 2 MiB huge page (per 4 KiB page without THP); reused ones not at all: what is left is torch's own
    # allocations.
    assert reused["faults"] < fresh["faults"] / 2
    assert reused["forward_faults"] <= fresh["forward_faults"]


def test_the_cache_holds_at_most_what_outputs_held_at_once():
    import torch
    import lstmop
    lstmop.release_cached_memory()
    torch.manual_seed(0)
    x = torch.rand(300, 100, 8)
    m = lstmop.nn.LSTM(8, 100)
    held = []
    with torch.no_grad():  # outputs only (no saved tensors)
        for _ in range(3):  # three calls' outputs alive together, then all dead
            held.append(m(x))
    peak = sum(t.numel() * t.element_size() for y, (h, c) in held for t in [y, h, c]
               if t.numel() * t.element_size() >= 64 << 10)
    del held
    assert 0 < lstmop.cached_memory_bytes() <= peak + 3 * (2 << 20)
    with torch.no_grad():
        y2, _ = m(x)  # reuses one of them: the same values as a fresh call's
        lstmop.release_cached_memory()
        assert lstmop.cached_memory_bytes() == 0
        y3, _ = m(x)
    assert torch.equal(y2, y3)


HOLDING_LOOP = r"""
import json, resource, torch
import lstmop
torch.manual_seed(0)
torch.set_num_threads(1)
m = lstmop.nn.LSTM(128, 128)
x = torch.rand(200, 8, 128)  # output (200, 8, 128) float32: 800 KiB, 200 pages
with torch.no_grad():
    y, _ = m(x)
    y, _ = m(x)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        y, _ = m(x)  # the previous y dies only once this call has returned
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(json.dumps({"faults": faults, "pages": y.numel() * 4 // 4096}))
"""


def test_a_loop_holding_the_previous_output_does_not_fault_it_in_again():
    # Without the cache, glibc grew its heap for each call's 800 KiB output and trimmed it when
    # the previous one died: every page of every output faulted again (about 200 a call).
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    result = subprocess.run([sys.executable, "-c", HOLDING_LOOP], env=env, capture_output=True,
                            text=True, timeout=300, check=True)
    counts = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"page faults of 20 calls holding the previous output: {counts['faults']} "
          f"(an output spans {counts['pages']} pages)")
    assert counts["faults"] < counts["pages"]


def test_many_small_outputs_held_at_once_are_not_all_kept():
    # 300 inference outputs of 100 KiB (below the 8 MiB hint threshold) alive at once, then all
    # dead: the cache keeps at most 256 such blocks (and 256 MiB of them), the rest goes back.
    import torch
    import lstmop
    lstmop.release_cached_memory()
    torch.manual_seed(0)
    m = lstmop.nn.LSTM(8, 128)
    x = torch.rand(200, 1, 8)
    with torch.no_grad():
        held = [m(x)[0] for _ in range(300)]
    block = held[0].numel() * held[0].element_size()  # 102400 bytes: 25 pages
    del held
    cached = lstmop.cached_memory_bytes()
    print(f"cached after 300 outputs of {block} bytes died: {cached} bytes")
    assert 0 < cached <= 256 * block
    lstmop.release_cached_memory()
    assert lstmop.cached_memory_bytes() == 0
