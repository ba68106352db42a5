"""Data-parallel training of the character LM (examples/charlm) with torch.distributed.

Two gloo processes on 127.0.0.1 run DistributedDataParallel around a model built on
lstmop.nn.LSTM; after one step their gradients must equal those of one process on the
combined batch.

Tolerance (float64): both sides compute the same sums of the same per-character terms, only
grouped differently (each rank sums its own characters, gloo adds the two ranks' sums, and
the GEMMs inside the LSTM backward block the batch differently), so they differ by rounding
alone: about (number of summed terms) x 2^-53 relative to the sum of the terms' magnitudes.
With ~500 characters and gradients of order 1e-1, that is ~1e-14; the tests allow 1e-12
absolute + 1e-10 relative. A real mistake is far larger: normalising each rank's loss by its
own character count (the naive per-rank mean) changes the gradients by ~1e-3 here, which
test_naive_per_rank_mean_is_detected checks the tolerance catches.
"""
import pathlib
import subprocess
import sys

import pytest
import torch

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

import lstmop.nn  # noqa: E402
from charlm import distributed  # noqa: E402
from charlm.corpus import Corpus, pack_batch, shard  # noqa: E402
from charlm.model import loss_sum  # noqa: E402
from charlm.training import TrainConfig, build_model, compute_gradients  # noqa: E402

ATOL, RTOL = 1e-12, 1e-10
CFG = TrainConfig(embed=6, hidden=12, layers=2, dtype="float64", seed=7)


def _corpus():
    return Corpus.from_file(REPO / "data" / "persuasion.txt")


def _batch(corpus):
    """Eight lines whose two shards (rank::2) hold different numbers of characters."""
    batch = corpus.train[100:108]
    counts = [sum(len(s) + 1 for s in shard(batch, r, 2)) for r in range(2)]
    assert counts[0] != counts[1], counts  # else the loss scaling would not be exercised
    return batch


def _grads(model):
    return {name: p.grad.detach().clone() for name, p in model.named_parameters()}


def _ddp_worker(rank, world_size, out_dir):
    torch.set_num_threads(1)
    corpus = _corpus()
    model = build_model(CFG, len(corpus.vocab), lstmop.nn.LSTM)
    assert isinstance(model.lstm, lstmop.nn.LSTM)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    compute_gradients(ddp, _batch(corpus), corpus.newline_id, rank, world_size)
    torch.save(_grads(model), pathlib.Path(out_dir) / f"grads{rank}.pt")


def _single_process_grads(corpus, batch):
    model = build_model(CFG, len(corpus.vocab), lstmop.nn.LSTM)
    compute_gradients(model, batch, corpus.newline_id)
    return _grads(model)


def _assert_grads_close(actual, expected):
    assert actual.keys() == expected.keys()
    for name in expected:
        torch.testing.assert_close(actual[name], expected[name], atol=ATOL, rtol=RTOL,
                                   msg=lambda m: f"{name}: {m}")


def test_two_gloo_processes_give_the_gradients_of_the_combined_batch(tmp_path):
    corpus = _corpus()
    expected = _single_process_grads(corpus, _batch(corpus))
    distributed.spawn(_ddp_worker, 2, str(tmp_path))
    rank0 = torch.load(tmp_path / "grads0.pt")
    rank1 = torch.load(tmp_path / "grads1.pt")
    for name in rank0:  # the all-reduce leaves the same bits on every rank
        assert torch.equal(rank0[name], rank1[name]), name
    # Every parameter got a gradient, and not a trivial one.
    assert all(g.abs().max() > 1e-6 for g in expected.values())
    _assert_grads_close(rank0, expected)


def test_naive_per_rank_mean_is_detected():
    """Each rank's mean loss, averaged by DDP, is not the combined batch's mean: the
    tolerance above must tell them apart (computed in one process, as DDP would average)."""
    corpus = _corpus()
    batch = _batch(corpus)
    expected = _single_process_grads(corpus, batch)
    model = build_model(CFG, len(corpus.vocab), lstmop.nn.LSTM)
    for rank in range(2):
        inputs, targets = pack_batch(shard(batch, rank, 2), corpus.newline_id)
        summed, count = loss_sum(model, inputs, targets)
        (summed / count / 2).backward()
    naive = _grads(model)
    worst = max(float((naive[k] - expected[k]).abs().max()) for k in expected)
    assert worst > 1e3 * ATOL, worst
    with pytest.raises(AssertionError):
        _assert_grads_close(naive, expected)


def _train(tmp_path, name, *flags, launcher=()):
    ckpt = tmp_path / f"{name}.pt"
    cmd = [sys.executable, *launcher, str(EXAMPLES / "train_charlm.py"), "--steps", "3",
           "--batch-size",
           "6", "--embed", "8", "--hidden", "16", "--layers", "2", "--dtype", "float64",
           "--threads", "2", "--no-compare", "--sample-lines", "1", "--checkpoint", str(ckpt),
           *flags]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return torch.load(ckpt), done.stdout


def test_script_ddp_trains_the_same_model_as_one_process(tmp_path):
    """examples/train_charlm.py --ddp 2: after 3 steps the weights equal one process's."""
    single, _ = _train(tmp_path, "single")
    parallel, out = _train(tmp_path, "ddp", "--ddp", "2")
    assert "2 gloo processes x 1 threads" in out, out
    _assert_same_weights(parallel, single)
    # Training moved the weights (so the comparison above compares trained weights).
    first = build_model(TrainConfig(embed=8, hidden=16, layers=2, dtype="float64"),
                        len(_corpus().vocab), torch.nn.LSTM).state_dict()
    moved = max(float((single["model_state"][k] - first[k]).abs().max()) for k in first)
    assert moved > 1e-4, moved


def test_script_under_torchrun_trains_the_same_model_as_one_process(tmp_path):
    """The same under torchrun (2 processes on this host): the script joins its group."""
    single, _ = _train(tmp_path, "single")
    # --redirects 1 --tee 1: Debian's torch 1.13 under Python 3.11 cannot parse torchrun's
    # default "--redirects 0" (its Std.from_str returns None for 0); 1 = stdout to the console.
    launcher = ("-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                "--redirects", "1", "--tee", "1")
    parallel, out = _train(tmp_path, "torchrun", launcher=launcher)
    assert "2 gloo processes x 1 threads" in out, out
    _assert_same_weights(parallel, single)


def _assert_same_weights(parallel, single):
    # Adam steps from gradients equal to rounding (see the tolerance above): the weights after
    # 3 steps agree to ~1e-15 relative; allowed: 1e-10 absolute + 1e-8 relative.
    assert parallel["step"] == single["step"] == 3
    for name, value in single["model_state"].items():
        torch.testing.assert_close(parallel["model_state"][name], value, atol=1e-10, rtol=1e-8,
                                   msg=lambda m: f"{name}: {m}")
