"""Checkpoints: a plain state_dict plus what is needed to rebuild the model.

The file holds only tensors, strings and numbers (torch.save of a dict), no lstmop objects:
    {"format": "charlm-1", "model_state": state_dict, "model_config": CharLM.config,
     "vocab": the vocabulary string, "corpus_config": {"max_len", "held_out_fraction"},
     "step": steps trained, "held_out_loss": nats per character when saved}
The LSTM's keys are torch.nn.LSTM's (lstm.weight_ih_l0, lstm.bias_hh_l0, ...), so
load_torch_model() rebuilds it on torch.nn.LSTM and loads it with strict=True. Imports only
torch.
"""
import pathlib

import torch

from .model import CharLM

FORMAT = "charlm-1"


def save(path, model, vocab, corpus_config, step, held_out_loss):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    torch.save({"format": FORMAT, "model_state": state, "model_config": dict(model.config),
                "vocab": vocab, "corpus_config": dict(corpus_config), "step": step,
                "held_out_loss": held_out_loss}, path)
    return path


def load(path):
    checkpoint = torch.load(path, map_location="cpu")
    if checkpoint.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} checkpoint (format {checkpoint.get('format')!r})")
    return checkpoint


def load_model(checkpoint, lstm_class):
    """The checkpoint's model built on lstm_class (torch.nn.LSTM or lstmop.nn.LSTM)."""
    model = CharLM(lstm_class=lstm_class, **checkpoint["model_config"])
    model.load_state_dict(checkpoint["model_state"], strict=True)
    return model


def load_torch_model(path):
    """(model on torch.nn.LSTM, checkpoint dict): needs torch only, not lstmop."""
    checkpoint = load(path)
    return load_model(checkpoint, torch.nn.LSTM), checkpoint
