"""First half of the TorchScript deployment test: scripts a model containing lstmop.nn.LSTM,
saves it with torch.jit.save, and saves what it must give (inputs, outputs, gradients) for
load_scripted_model.cpp, which loads both in C++ (libtorch and the op library, no Python) and
checks them.

    PYTHONPATH=python /usr/bin/python3 tests/torchscript/export_model.py OUT_DIR

Writes OUT_DIR/model.pt (the scripted model) and OUT_DIR/expected.pt (a scripted module whose
buffers are the tensors; C++ reads them with .attr(name)). float64, one thread on both sides
(the linear layers' products are then the same calls), dropout masks from seed 7.
"""
import pathlib
import sys
from typing import Dict, Tuple

import torch
from torch import Tensor
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import lstmop

DROPOUT_SEED = 7


class Tagger(torch.nn.Module):
    """A sequence tagger: 2-layer bidirectional lstmop.nn.LSTM (batch_first, dropout between
    layers) and a linear layer; forward() on a padded batch, packed() on padded sequences of
    the given lengths, run as a PackedSequence."""

    def __init__(self):
        super().__init__()
        self.lstm = lstmop.nn.LSTM(3, 5, num_layers=2, bidirectional=True, batch_first=True,
                                   dropout=0.4)
        self.head = torch.nn.Linear(10, 2)

    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        output, (hn, cn) = self.lstm(x)
        return self.head(output), hn, cn

    @torch.jit.export
    def packed(self, x: Tensor, lengths: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        sequences = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        output, (hn, cn) = self.lstm(sequences)
        padded, _ = pad_packed_sequence(output, batch_first=True)
        return self.head(padded), hn, cn


class Tensors(torch.nn.Module):
    """Named tensors as buffers of a scripted module: what C++ can load with torch::jit::load."""

    def __init__(self, tensors: Dict[str, Tensor]):
        super().__init__()
        for name, tensor in tensors.items():
            self.register_buffer(name, tensor.detach().clone())

    def forward(self) -> int:
        return 0


def gradients(model, outputs, weights):
    """d sum(weights * outputs) / d parameters, in named_parameters() order."""
    loss = sum((w * o).sum() for w, o in zip(weights, outputs))
    return torch.autograd.grad(loss, [p for _, p in model.named_parameters()])


def main(out_dir):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.jit.script(Tagger().double())
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 6, 3, generator=g, dtype=torch.float64)
    lengths = torch.tensor([4, 6, 2])
    weights = [torch.randn(s, generator=g, dtype=torch.float64)
               for s in ((3, 6, 2), (4, 3, 5), (4, 3, 5))]
    tensors = {"x": x, "lengths": lengths}
    for k, w in enumerate(weights):
        tensors[f"weight{k}"] = w

    model.eval()
    for method in ("forward", "packed"):
        args = (x,) if method == "forward" else (x, lengths)
        outputs = getattr(model, method)(*args)
        for k, o in enumerate(outputs):
            tensors[f"eval_{method}_{k}"] = o
        for k, grad in enumerate(gradients(model, outputs, weights)):
            tensors[f"eval_{method}_grad{k}"] = grad
    model.train()  # dropout between the layers
    torch.manual_seed(DROPOUT_SEED)
    outputs = model(x)
    for k, o in enumerate(outputs):
        tensors[f"train_forward_{k}"] = o
    for k, grad in enumerate(gradients(model, outputs, weights)):
        tensors[f"train_forward_grad{k}"] = grad
    tensors["parameter_count"] = torch.tensor(len(list(model.parameters())))

    out_dir.mkdir(parents=True, exist_ok=True)
    model.eval()
    torch.jit.save(model, str(out_dir / "model.pt"))
    torch.jit.save(torch.jit.script(Tensors(tensors)), str(out_dir / "expected.pt"))
    print(f"wrote {out_dir / 'model.pt'} and {out_dir / 'expected.pt'} ({len(tensors)} tensors)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: export_model.py OUT_DIR")
    main(pathlib.Path(sys.argv[1]))
