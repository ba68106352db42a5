#!/usr/bin/env bash
# The main job (the README's first command): installs what is missing and builds (scripts/
# build.sh), then trains a character-level LSTM language model with lstmop.nn.LSTM on
# data/persuasion.txt: progress with loss and tokens/s, held-out loss, a sample, a checkpoint
# in out/charlm.pt that torch.nn.LSTM loads, and a side-by-side run against torch.nn.LSTM.
# Extra arguments go to examples/train_charlm.py (see `bash scripts/demo.sh --help`), e.g.
#   bash scripts/demo.sh --steps 2000 --hidden 512 --layers 2 --dropout 0.2
#   bash scripts/demo.sh --ddp 2                  # data-parallel, 2 gloo processes
#   bash scripts/demo.sh --text my.txt --threads 4
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
exec /usr/bin/python3 examples/train_charlm.py "$@"
