"""Training: the step, the loop with its progress report, and the whole main job.

One training step on a global batch of sequences (lists of id tensors):
  each data-parallel rank packs its shard of the batch into a PackedSequence, computes the
  summed cross entropy of its characters and scales it by world_size / (characters in the
  *global* batch); DDP then averages the ranks' gradients, which gives exactly the gradient of
  the global batch's mean loss (a plain per-rank mean would weight the ranks' characters
  unequally whenever their shards have different lengths).
Every rank draws the same global batches (same seed), so it knows the global character count
without communicating, and --ddp N trains the same model as one process would.
"""
import dataclasses
import math
import pathlib
import sys
import time

import torch
import torch.distributed as dist
from tqdm import tqdm

import lstmop.nn

from . import checkpoint as checkpoint_io
from .corpus import DEFAULT_TEXT, BatchStream, Corpus, pack_batch, shard
from .model import CharLM, loss_sum, mean_loss, sample

LSTM_CLASSES = {"lstmop": lstmop.nn.LSTM, "torch": torch.nn.LSTM}
DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclasses.dataclass
class TrainConfig:
    text: str = str(DEFAULT_TEXT)
    steps: int = 300
    batch_size: int = 32
    max_len: int = 128
    embed: int = 64
    hidden: int = 256
    layers: int = 1
    dropout: float = 0.0
    lr: float = 3e-3
    clip: float = 1.0
    seed: int = 1234
    threads: int = 2
    dtype: str = "float32"
    lstm: str = "lstmop"
    eval_batch_size: int = 256
    sample_lines: int = 6
    temperature: float = 0.7
    prompt: str = "Anne"
    checkpoint: str = "out/charlm.pt"
    compare: bool = True
    compare_steps: int = 20
    ddp: int = 1
    progress_bar: str = "auto"  # auto (a bar when stdout is a terminal), on, off


def say(*parts):
    print(*parts, flush=True)


def build_model(cfg, vocab_size, lstm_class):
    """The model with the initial weights of cfg.seed (the same on every rank and class)."""
    torch.manual_seed(cfg.seed)
    model = CharLM(vocab_size, cfg.embed, cfg.hidden, cfg.layers, cfg.dropout, lstm_class)
    return model.to(DTYPES[cfg.dtype])


def make_optimizer(cfg, model):
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    # Cosine decay from lr to lr/10 over the run.
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: 0.1 + 0.45 * (1.0 + math.cos(math.pi * min(step, cfg.steps)
                                                             / max(cfg.steps, 1))))
    return optimizer, schedule


def compute_gradients(model, batch, newline_id, rank=0, world_size=1):
    """Backward of this rank's share of the global batch's mean loss.

    Returns this rank's summed loss (a detached scalar) and the global character count. With
    DDP around the model, the gradients after this call are those of the global mean loss.
    """
    total_chars = sum(len(s) + 1 for s in batch)
    inputs, targets = pack_batch(shard(batch, rank, world_size), newline_id)
    summed, _ = loss_sum(model, inputs, targets)
    (summed * (world_size / total_chars)).backward()
    return summed.detach(), total_chars


def train_step(model, optimizer, schedule, batch, newline_id, clip, rank=0, world_size=1):
    """One optimiser step; returns the global batch's mean loss (nats per character)."""
    optimizer.zero_grad(set_to_none=True)
    summed, total_chars = compute_gradients(model, batch, newline_id, rank, world_size)
    if clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    schedule.step()
    if world_size > 1:
        summed = summed.clone()
        dist.all_reduce(summed)
    return float(summed) / total_chars


class Progress:
    """A tqdm bar (loss, tokens/s) on a terminal, else a progress line every tenth of the run."""

    def __init__(self, total_steps, enabled, mode):
        self.total = total_steps
        self.enabled = enabled
        use_bar = mode == "on" or (mode == "auto" and sys.stdout.isatty())
        self.bar = tqdm(total=total_steps, desc="train", unit="step", file=sys.stdout,
                        dynamic_ncols=True, disable=not (enabled and use_bar))
        self.every = max(1, total_steps // 10)
        self.recent = []

    def update(self, step, loss, tokens_per_s):
        self.recent = (self.recent + [loss])[-self.every:]
        shown = sum(self.recent) / len(self.recent)
        if not self.enabled:
            return
        if not self.bar.disable:
            self.bar.set_postfix_str(f"loss {shown:.3f}, {tokens_per_s:,.0f} tokens/s",
                                     refresh=False)
            self.bar.update(1)
        elif step % self.every == 0 or step == self.total:
            say(f"  step {step:>5}/{self.total}  loss {shown:.4f}  {tokens_per_s:8.0f} tokens/s")

    def close(self):
        self.bar.close()


def held_out_batches(corpus, batch_size):
    seqs = corpus.held_out
    return [pack_batch(seqs[k:k + batch_size], corpus.newline_id)
            for k in range(0, len(seqs), batch_size)]


def train(cfg, model, corpus, rank=0, world_size=1, log=True):
    """Runs cfg.steps steps. Returns (mean loss of the last tenth of steps, tokens/s)."""
    optimizer, schedule = make_optimizer(cfg, model)
    stream = BatchStream(corpus.train, cfg.batch_size, cfg.seed)
    progress = Progress(cfg.steps, enabled=log and rank == 0, mode=cfg.progress_bar)
    chars, seconds, losses = 0, 0.0, []
    for step in range(1, cfg.steps + 1):
        batch = stream.next_batch()
        start = time.perf_counter()
        loss = train_step(model, optimizer, schedule, batch, corpus.newline_id, cfg.clip,
                          rank, world_size)
        seconds += time.perf_counter() - start
        chars += corpus.characters(batch)
        losses.append(loss)
        progress.update(step, loss, chars / seconds)
    progress.close()
    tail = losses[-max(1, cfg.steps // 10):]
    return sum(tail) / len(tail), chars / max(seconds, 1e-9)


def describe(cfg, corpus, model, world_size):
    params = sum(p.numel() for p in model.parameters())
    path = pathlib.Path(cfg.text).resolve()
    try:
        path = path.relative_to(pathlib.Path.cwd())  # data/persuasion.txt from the repository
    except ValueError:
        pass
    train_chars = corpus.characters(corpus.train)
    say(f"text: {path} ({path.stat().st_size / 1024:.0f} KiB), vocabulary {len(corpus.vocab)}"
        f" characters, {len(corpus.train)} training lines ({train_chars:,} characters), "
        f"{len(corpus.held_out)} held-out lines")
    lstm_name = f"{type(model.lstm).__module__}.{type(model.lstm).__name__}"
    say(f"model: embedding {cfg.embed} -> {lstm_name}(hidden {cfg.hidden}, layers "
        f"{cfg.layers}) -> linear; {params:,} parameters, {cfg.dtype}")
    threads = f"{torch.get_num_threads()} threads"
    if world_size > 1:
        threads = f"{world_size} gloo processes x {threads}"
    epochs = cfg.steps * cfg.batch_size / len(corpus.train)
    say(f"training: {cfg.steps} steps of {cfg.batch_size} lines (PackedSequence, "
        f"{epochs:.2f} epochs), Adam lr {cfg.lr}, seed {cfg.seed}, {threads}")


def run(cfg, rank=0, world_size=1):
    """The main job in one process, or in rank `rank` of a data-parallel group."""
    torch.set_num_threads(max(1, cfg.threads))
    corpus = Corpus.from_file(cfg.text, max_len=cfg.max_len)
    model = build_model(cfg, len(corpus.vocab), LSTM_CLASSES[cfg.lstm])
    lead = rank == 0
    if lead:
        describe(cfg, corpus, model, world_size)
    trained = model
    if world_size > 1:
        trained = torch.nn.parallel.DistributedDataParallel(model)
    held = held_out_batches(corpus, cfg.eval_batch_size)
    if lead:
        say(f"held-out loss before training: {mean_loss(model, held):.4f} nats/char")

    train_loss, tokens_per_s = train(cfg, trained, corpus, rank, world_size)
    result = {"train_loss": train_loss, "tokens_per_s": tokens_per_s}
    if not lead:
        dist.barrier()
        return result

    held_loss = mean_loss(model, held)
    result["held_out_loss"] = held_loss
    say(f"trained {cfg.steps} steps: {tokens_per_s:,.0f} tokens/s with {cfg.lstm}, "
        f"training loss {train_loss:.4f} nats/char (mean of the last tenth of steps)")
    say(f"held-out loss: {held_loss:.4f} nats/char ({held_loss / math.log(2):.3f} bits/char, "
        f"perplexity {math.exp(held_loss):.2f})")
    say(f"sample (temperature {cfg.temperature}):")
    for line in sample(model, corpus, cfg.sample_lines, cfg.temperature, cfg.seed, cfg.prompt):
        say(f"  | {line}")

    path = checkpoint_io.save(cfg.checkpoint, model, corpus.vocab,
                              {"max_len": cfg.max_len, "held_out_fraction": 0.05},
                              cfg.steps, held_loss)
    torch_model, _ = checkpoint_io.load_torch_model(path)
    torch_model = torch_model.to(DTYPES[cfg.dtype])
    reloaded = mean_loss(torch_model, held)
    result["reloaded_held_out_loss"] = reloaded
    say(f"checkpoint: {path} (a state_dict); loaded into a torch.nn.LSTM model: held-out loss "
        f"{reloaded:.4f} (difference {abs(reloaded - held_loss):.1e})")
    if world_size > 1:
        dist.barrier()
    return result
