"""The model: character embedding -> LSTM -> linear layer to next-character logits.

The LSTM class is a constructor argument: lstmop.nn.LSTM for training, torch.nn.LSTM for the
side-by-side run and for loading a checkpoint without lstmop. Both have the same parameter
names and shapes (lstmop.nn.LSTM derives from torch.nn.LSTM), so the two models share
state_dicts. This module imports only torch.
"""
import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import PackedSequence


class CharLM(torch.nn.Module):
    def __init__(self, vocab_size, embed_size, hidden_size, num_layers, dropout, lstm_class):
        super().__init__()
        self.config = dict(vocab_size=vocab_size, embed_size=embed_size,
                           hidden_size=hidden_size, num_layers=num_layers, dropout=dropout)
        self.embed = torch.nn.Embedding(vocab_size, embed_size)
        self.lstm = lstm_class(embed_size, hidden_size, num_layers=num_layers,
                               dropout=dropout if num_layers > 1 else 0.0)
        self.head = torch.nn.Linear(hidden_size, vocab_size)

    def forward(self, inputs, hx=None):
        """inputs: PackedSequence of ids (N,), or an (T, B) id tensor.

        Returns (logits, (h, c)): logits (N, V) in the packed row order, or (T, B, V).
        """
        if isinstance(inputs, PackedSequence):
            embedded = inputs._replace(data=self.embed(inputs.data))
            output, state = self.lstm(embedded, hx)
            return self.head(output.data), state
        output, state = self.lstm(self.embed(inputs), hx)
        return self.head(output), state


def loss_sum(model, inputs, targets, dtype=None):
    """Summed next-character cross entropy of a packed batch, and its number of characters.

    dtype: compute the cross entropy in this dtype (float64 for evaluation, so that the sum
    over many characters does not round away differences of the model's outputs).
    """
    logits, _ = model(inputs)
    if dtype is not None:
        logits = logits.to(dtype)
    return F.cross_entropy(logits, targets.data, reduction="sum"), targets.data.numel()


@torch.no_grad()
def mean_loss(model, batches):
    """Mean cross entropy per character (nats) over (inputs, targets) batches, in eval mode."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for inputs, targets in batches:
        batch_sum, batch_count = loss_sum(model, inputs, targets, dtype=torch.float64)
        total += float(batch_sum)
        count += batch_count
    model.train(was_training)
    return total / count


@torch.no_grad()
def sample(model, corpus, lines, temperature, seed, prompt="", max_line=None):
    """Generates `lines` lines, one character at a time, each starting from a zero state.

    The model was trained on lines read from a zero state after a newline, so each sampled
    line starts the same way; `prompt` begins the first line. A line ends at a sampled
    newline or at max_line characters (default: the longest line the model was trained on, as
    a model this small often misses the end of a line). Deterministic for a seed.
    """
    if max_line is None:
        max_line = max(len(s) for s in corpus.train)
    was_training = model.training
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    out = []
    for k in range(lines):
        line = prompt if k == 0 else ""
        state = None
        ids = [corpus.newline_id] + [corpus.index[ch] for ch in line if ch in corpus.index]
        logits, state = model(torch.tensor(ids, dtype=torch.int64).unsqueeze(1), state)
        last = logits[-1, 0]
        while len(line) < max_line:
            probs = torch.softmax(last.double() / temperature, dim=0)
            nxt = int(torch.multinomial(probs, 1, generator=generator))
            if nxt == corpus.newline_id:
                break
            line += corpus.vocab[nxt]
            logits, state = model(torch.tensor([[nxt]], dtype=torch.int64), state)
            last = logits[-1, 0]
        out.append(line)
    model.train(was_training)
    return out
