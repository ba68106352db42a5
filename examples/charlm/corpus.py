"""The text, its vocabulary, and batches of variable-length sequences.

A sequence is one non-blank line of the text (a line longer than max_len is cut into chunks of
at most max_len characters). The model reads "\\n" + line and predicts line + "\\n": every
character of the line is predicted, and so is the line's end. The held-out part is the last
lines of the text (the end of the book), never seen in training.
"""
import pathlib

import torch
from torch.nn.utils.rnn import PackedSequence, pack_sequence

NEWLINE = "\n"
DEFAULT_TEXT = pathlib.Path(__file__).resolve().parents[2] / "data" / "persuasion.txt"


class Corpus:
    """Vocabulary and the train / held-out sequences of one text, as int64 id tensors."""

    def __init__(self, text, max_len=128, held_out_fraction=0.05):
        if max_len < 1:
            raise ValueError(f"max_len must be >= 1, got {max_len}")
        if not 0.0 < held_out_fraction < 1.0:
            raise ValueError(f"held_out_fraction must be in (0, 1), got {held_out_fraction}")
        pieces = []
        for line in text.splitlines():
            line = line.rstrip()
            if not line.strip():
                continue
            pieces.extend(line[k:k + max_len] for k in range(0, len(line), max_len))
        if len(pieces) < 2:
            raise ValueError(f"the text has {len(pieces)} non-blank lines; need at least 2")
        self.vocab = "".join(sorted(set("".join(pieces)) | {NEWLINE}))
        self.index = {ch: k for k, ch in enumerate(self.vocab)}
        held = max(1, int(len(pieces) * held_out_fraction))
        self.train = [self.encode(p) for p in pieces[:-held]]
        self.held_out = [self.encode(p) for p in pieces[-held:]]

    @classmethod
    def from_file(cls, path, **kwargs):
        path = pathlib.Path(path)
        return cls(path.read_text(encoding="utf-8"), **kwargs)

    @property
    def newline_id(self):
        return self.index[NEWLINE]

    def encode(self, line):
        return torch.tensor([self.index[ch] for ch in line], dtype=torch.int64)

    def decode(self, ids):
        return "".join(self.vocab[int(k)] for k in ids)

    def characters(self, sequences):
        """Predicted characters in these sequences: each line's characters plus its end."""
        return sum(len(s) + 1 for s in sequences)


def pack_batch(sequences, newline_id):
    """Packs a list of id sequences (lengths n_b) into (inputs, targets) PackedSequences.

    inputs[b] = [newline] + seq_b and targets[b] = seq_b + [newline], both of length n_b + 1.
    Both are packed as one (n_b + 1, 2) tensor per sequence, so their rows are in the same
    (time-major, sorted by length) order by construction: data is (sum(n_b + 1),) each.
    """
    newline = torch.tensor([newline_id], dtype=torch.int64)
    pairs = [torch.stack([torch.cat([newline, s]), torch.cat([s, newline])], dim=1)
             for s in sequences]
    packed = pack_sequence(pairs, enforce_sorted=False)
    inputs = PackedSequence(packed.data[:, 0].contiguous(), packed.batch_sizes,
                            packed.sorted_indices, packed.unsorted_indices)
    targets = PackedSequence(packed.data[:, 1].contiguous(), packed.batch_sizes,
                             packed.sorted_indices, packed.unsorted_indices)
    return inputs, targets


class BatchStream:
    """An endless, reproducible stream of batches of training sequences.

    Each epoch visits every sequence once in an order drawn from a generator seeded with
    `seed`; batch k is a list of batch_size sequences. The stream is the same in every
    process that builds it with the same arguments (data-parallel ranks split each batch).
    """

    def __init__(self, sequences, batch_size, seed):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.sequences = sequences
        self.batch_size = min(batch_size, len(sequences))
        self.generator = torch.Generator().manual_seed(seed)
        self.order = []

    def next_batch(self):
        if len(self.order) < self.batch_size:
            self.order = torch.randperm(len(self.sequences), generator=self.generator).tolist()
        picked, self.order = self.order[:self.batch_size], self.order[self.batch_size:]
        return [self.sequences[k] for k in picked]


def shard(batch, rank, world_size):
    """The part of a global batch that data-parallel rank `rank` of `world_size` computes."""
    return batch[rank::world_size]
