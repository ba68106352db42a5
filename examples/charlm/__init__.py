"""charlm: a character-level LSTM language model trained with lstmop.nn.LSTM.

The command-line entry point is examples/train_charlm.py. The modules:
  corpus       the text, its vocabulary, lines cut into sequences, batches as PackedSequences
  model        the model (embedding -> LSTM -> linear), its loss and text sampling
  training     the training loop, progress reporting and the held-out loss
  compare      the side-by-side run against torch.nn.LSTM
  checkpoint   saving a checkpoint and loading it into a torch.nn.LSTM-based model
  distributed  data-parallel training with torch.distributed (gloo) and DDP

Only `training`, `compare` and `distributed` import lstmop; `model`, `corpus` and
`checkpoint` need nothing but torch, so a checkpoint loads where lstmop is not installed.
"""
