#!/usr/bin/env python3
"""Trains a character-level LSTM language model with lstmop.nn.LSTM (the README's main job).

    PYTHONPATH=python /usr/bin/python3 examples/train_charlm.py [flags]

Reads a text (default: data/persuasion.txt, Jane Austen's "Persuasion"), trains on batches of
its lines as PackedSequences (variable lengths), shows a progress bar with the loss and
tokens/s, prints the held-out loss and a sample, saves a checkpoint that a torch.nn.LSTM model
loads, and runs the same model side by side on torch.nn.LSTM. --ddp N trains data-parallel in
N gloo processes (or run it under torchrun). See --help for the flags.
"""
import argparse
import dataclasses
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from charlm import distributed  # noqa: E402
from charlm.training import DTYPES, LSTM_CLASSES, TrainConfig  # noqa: E402


def parse_args(argv):
    d = TrainConfig()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--text", default=d.text, help="UTF-8 text file to train on")
    p.add_argument("--steps", type=int, default=d.steps, help="training steps")
    p.add_argument("--batch-size", type=int, default=d.batch_size, help="lines per step")
    p.add_argument("--max-len", type=int, default=d.max_len,
                   help="longer lines are cut into chunks of this many characters")
    p.add_argument("--embed", type=int, default=d.embed, help="character embedding size")
    p.add_argument("--hidden", type=int, default=d.hidden, help="LSTM hidden size")
    p.add_argument("--layers", type=int, default=d.layers, help="LSTM layers")
    p.add_argument("--dropout", type=float, default=d.dropout,
                   help="dropout between LSTM layers (with --layers > 1)")
    p.add_argument("--lr", type=float, default=d.lr, help="Adam learning rate (cosine decay)")
    p.add_argument("--clip", type=float, default=d.clip, help="gradient norm clip (0: none)")
    p.add_argument("--seed", type=int, default=d.seed, help="seed of weights, batches, sample")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="threads in all (divided among --ddp processes)")
    p.add_argument("--dtype", choices=sorted(DTYPES), default=d.dtype)
    p.add_argument("--lstm", choices=sorted(LSTM_CLASSES), default=d.lstm,
                   help="LSTM module the main run trains with")
    p.add_argument("--sample-lines", type=int, default=d.sample_lines)
    p.add_argument("--temperature", type=float, default=d.temperature)
    p.add_argument("--prompt", default=d.prompt, help="start of the first sampled line")
    p.add_argument("--checkpoint", default=d.checkpoint, help="where the checkpoint goes")
    p.add_argument("--compare-steps", type=int, default=d.compare_steps,
                   help="steps of the side-by-side run with torch.nn.LSTM")
    p.add_argument("--no-compare", action="store_true", help="skip the side-by-side run")
    p.add_argument("--ddp", type=int, default=d.ddp, metavar="N",
                   help="train data-parallel in N gloo processes on 127.0.0.1")
    p.add_argument("--progress-bar", choices=["auto", "on", "off"], default=d.progress_bar,
                   help="auto: a tqdm bar when stdout is a terminal, else progress lines")
    args = p.parse_args(argv)
    for name in ("steps", "batch_size", "max_len", "embed", "hidden", "layers", "threads", "ddp"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not 0.0 <= args.dropout < 1.0:
        p.error(f"--dropout must be in [0, 1), got {args.dropout}")
    if not pathlib.Path(args.text).is_file():
        p.error(f"--text: no such file: {args.text}")
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    values = {k: v for k, v in vars(args).items() if k in fields}
    return TrainConfig(**values, compare=not args.no_compare and args.compare_steps > 0)


def _rank_main(rank, world_size, cfg):
    from charlm.training import run
    run(dataclasses.replace(cfg, threads=max(1, cfg.threads // world_size)), rank, world_size)


def main(argv=None):
    cfg = parse_args(sys.argv[1:] if argv is None else argv)
    start = time.perf_counter()
    if distributed.launched_by_torchrun():
        distributed.run_under_torchrun(_rank_main, cfg)
        return 0
    if cfg.ddp > 1:
        print(f"data-parallel: {cfg.ddp} gloo processes on {distributed.LOOPBACK}, "
              f"DistributedDataParallel around the lstmop.nn.LSTM model", flush=True)
        distributed.spawn(_rank_main, cfg.ddp, cfg)
        if cfg.compare:
            print("(the side-by-side run with torch.nn.LSTM is single-process: run without "
                  "--ddp for it)", flush=True)
    else:
        from charlm.compare import compare
        from charlm.corpus import Corpus
        from charlm.training import run
        run(cfg)
        if cfg.compare:
            compare(cfg, Corpus.from_file(cfg.text, max_len=cfg.max_len))
    print(f"total time: {time.perf_counter() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
