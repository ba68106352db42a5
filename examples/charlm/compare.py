"""The side-by-side run: the same model, weights and batches on lstmop.nn.LSTM and torch.nn.LSTM.

Both models start from the same initial weights (a state_dict copy) and take the same steps on
the same batches with the same optimiser. The steps alternate between the two (which one goes
first alternates too), so both see the same machine load: on a shared machine only the ratio
measured this way is meaningful.
"""
import time

import torch

import lstmop.nn

from .corpus import BatchStream
from .training import build_model, make_optimizer, say, train_step


def compare(cfg, corpus):
    steps = cfg.compare_steps
    runs = {}
    for name, lstm_class in (("lstmop.nn.LSTM", lstmop.nn.LSTM), ("torch.nn.LSTM", torch.nn.LSTM)):
        model = build_model(cfg, len(corpus.vocab), lstm_class)
        runs[name] = {"model": model, "optim": make_optimizer(cfg, model), "seconds": 0.0,
                      "losses": []}
    first = runs["lstmop.nn.LSTM"]["model"].state_dict()
    runs["torch.nn.LSTM"]["model"].load_state_dict(first)
    say(f"side-by-side: {steps} training steps of this model from the same weights on the same "
        f"batches, alternating lstmop.nn.LSTM and torch.nn.LSTM step by step")
    stream = BatchStream(corpus.train, cfg.batch_size, cfg.seed + 1)
    chars = 0
    names = list(runs)
    for step in range(steps):
        batch = stream.next_batch()
        chars += corpus.characters(batch)
        for name in (names if step % 2 == 0 else names[::-1]):
            run = runs[name]
            optimizer, schedule = run["optim"]
            start = time.perf_counter()
            loss = train_step(run["model"], optimizer, schedule, batch, corpus.newline_id,
                              cfg.clip)
            run["seconds"] += time.perf_counter() - start
            run["losses"].append(loss)
    tail = max(1, steps // 4)
    result = {}
    for name, run in runs.items():
        speed = chars / run["seconds"]
        last = sum(run["losses"][-tail:]) / tail
        result[name] = {"tokens_per_s": speed, "loss": last, "losses": run["losses"]}
        say(f"  {name:<15} {speed:10,.0f} tokens/s   loss {run['losses'][0]:.4f} -> {last:.4f}"
            f" (mean of the last {tail} steps)")
    a, b = result["lstmop.nn.LSTM"], result["torch.nn.LSTM"]
    gap = max(abs(x - y) for x, y in zip(a["losses"], b["losses"]))
    say(f"  lstmop.nn.LSTM runs at {a['tokens_per_s'] / b['tokens_per_s']:.2f}x the speed of "
        f"torch.nn.LSTM; largest difference of a step's loss: {gap:.1e}")
    return result
