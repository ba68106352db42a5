"""The README's main job, examples/train_charlm.py, in small runs (the demo runs it in full).

Each test runs the script as a user would (a subprocess, stdout a pipe, so progress comes as
lines instead of a bar) and checks what it promises: falling loss, a held-out loss, a sample,
a checkpoint that torch.nn.LSTM loads with the same held-out loss, and a side-by-side run
whose losses agree with torch.nn.LSTM's.
"""
import json
import os
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "examples" / "train_charlm.py"
SMALL = ["--steps", "30", "--batch-size", "16", "--embed", "16", "--hidden", "32",
         "--threads", "2", "--sample-lines", "2", "--compare-steps", "4"]


def run_script(*flags, check=True):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    done = subprocess.run([sys.executable, str(SCRIPT), *flags], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def number_after(label, text):
    match = re.search(re.escape(label) + r"\s*([0-9.e+-]+)", text)
    assert match, f"no '{label}' in:\n{text}"
    return float(match.group(1))


def test_main_job_end_to_end(tmp_path):
    ckpt = tmp_path / "charlm.pt"
    out = run_script(*SMALL, "--checkpoint", str(ckpt)).stdout

    # Progress lines (not a bar: stdout is not a terminal), ten of them, with tokens/s.
    progress = re.findall(r"step\s+(\d+)/30\s+loss ([0-9.]+)\s+(\d+) tokens/s", out)
    assert [int(p[0]) for p in progress] == list(range(3, 31, 3)), out
    assert all(int(p[2]) > 0 for p in progress)
    # The loss falls: the held-out loss after training is well below the one before
    # (ln 75 = 4.32 nats for a uniform guess), and so is the training loss.
    before = number_after("held-out loss before training:", out)
    after = number_after("held-out loss:", out)
    assert 4.0 < before < 4.6, out
    assert after < before - 0.5, out  # 4.38 -> 3.56 when written
    assert float(progress[-1][1]) < float(progress[0][1]) - 0.5, out
    # A sample of generated text, starting with the prompt.
    sample = re.findall(r"^  \| (.*)$", out, flags=re.M)
    assert len(sample) == 2 and sample[0].startswith("Anne"), out
    # The checkpoint line reports the torch.nn.LSTM reload.
    reloaded = number_after("loaded into a torch.nn.LSTM model: held-out loss", out)
    assert abs(reloaded - after) < 1e-4, out
    # The side-by-side run: both speeds and losses printed, and the losses agree (same model,
    # weights and batches; float32 rounding of two implementations apart).
    speeds = re.findall(r"^  (lstmop\.nn\.LSTM|torch\.nn\.LSTM)\s+([0-9,]+) tokens/s\s+loss "
                        r"([0-9.]+) -> ([0-9.]+)", out, flags=re.M)
    assert [s[0] for s in speeds] == ["lstmop.nn.LSTM", "torch.nn.LSTM"], out
    assert abs(float(speeds[0][3]) - float(speeds[1][3])) < 1e-3, out
    assert number_after("largest difference of a step's loss:", out) < 1e-4, out
    assert "x the speed of torch.nn.LSTM" in out
    assert re.search(r"total time: [0-9.]+ s", out)


def test_checkpoint_loads_into_torch_nn_lstm_without_lstmop(tmp_path):
    """A fresh Python that never imports lstmop loads the checkpoint into a torch.nn.LSTM model
    and gets the held-out loss that the lstmop.nn.LSTM model had when it was saved."""
    ckpt = tmp_path / "charlm.pt"
    run_script("--steps", "5", "--embed", "8", "--hidden", "24", "--layers", "2",
               "--dropout", "0.1", "--no-compare", "--sample-lines", "1",
               "--checkpoint", str(ckpt))
    probe = f"""
import json, sys, torch
sys.path.insert(0, {str(REPO / 'examples')!r})
from charlm import checkpoint
from charlm.corpus import Corpus, pack_batch
from charlm.model import mean_loss
model, ck = checkpoint.load_torch_model({str(ckpt)!r})
assert type(model.lstm) is torch.nn.LSTM
corpus = Corpus.from_file({str(REPO / 'data' / 'persuasion.txt')!r}, **{{
    k: v for k, v in ck["corpus_config"].items() if k != "held_out_fraction"}})
assert corpus.vocab == ck["vocab"]
batches = [pack_batch(corpus.held_out[k:k + 256], corpus.newline_id)
           for k in range(0, len(corpus.held_out), 256)]
print(json.dumps({{"loss": mean_loss(model, batches), "saved": ck["held_out_loss"],
                   "lstmop_imported": any(m.startswith("lstmop") for m in sys.modules),
                   "keys": sorted(ck["model_state"])}}))
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert not result["lstmop_imported"]
    assert "lstm.weight_ih_l1" in result["keys"] and "lstm.bias_hh_l0" in result["keys"]
    # float32: the two LSTMs' logits differ by rounding (~1e-6); the mean loss by less.
    assert abs(result["loss"] - result["saved"]) < 1e-5, result


def test_progress_bar_and_own_text(tmp_path):
    """--progress-bar on draws the tqdm bar with loss and tokens/s; --text trains on another
    file, cutting lines longer than --max-len into chunks."""
    text = tmp_path / "text.txt"
    text.write_text("the quick brown fox jumps over the lazy dog. " * 40 + "\n" +
                    "\n".join(f"line {k} of a small text" for k in range(60)) + "\n")
    done = run_script("--text", str(text), "--max-len", "50", "--steps", "6", "--hidden",
                      "16", "--embed", "8", "--batch-size", "8", "--progress-bar", "on",
                      "--no-compare", "--sample-lines", "1", "--checkpoint",
                      str(tmp_path / "c.pt"))
    assert re.search(r"train: 100%.*6/6.*loss [0-9.]+, [0-9,]+ tokens/s", done.stdout), done.stdout
    assert "vocabulary" in done.stdout and "held-out loss:" in done.stdout


def test_bad_flags_are_refused():
    done = run_script("--steps", "0", check=False)
    assert done.returncode == 2 and "--steps must be >= 1, got 0" in done.stderr
    done = run_script("--text", "/nonexistent/text.txt", check=False)
    assert done.returncode == 2 and "no such file: /nonexistent/text.txt" in done.stderr
