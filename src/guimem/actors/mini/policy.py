"""The frozen miniature actor as a :class:`~guimem.core.policy.Policy`: load, act, hidden states.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Sequence

import torch
import torch.nn.functional as F

from guimem.actors.mini.config import VOCAB_FILE, ActorConfig
from guimem.actors.mini.features import Features, ImagePatcher, collate, decode, featurise
from guimem.actors.mini.model import GuiActor
from guimem.core.data import DataError
from guimem.core.policy import Modality, PolicyInput, PolicyOutput
from guimem.models.tokenizer import Vocabulary


class MiniActor:
    """A trained :class:`GuiActor` with its vocabulary, as a :class:`guimem.core.policy.Policy`.

    Deterministic: eval mode, no gradients, argmax decoding. ``hidden_states`` of each output
    is ``[n_layers + 1, d_model]`` float32 at the final prompt token ``[ACT]``, index 0 = the
    embedding layer.
    """

    def __init__(self, model: GuiActor, vocab: Vocabulary, batch_size: int = 64):
        if model.config.vocab_size != len(vocab):
            raise DataError("vocab_size", f"model has {model.config.vocab_size} word ids, vocabulary {len(vocab)}")
        self.model = model.eval()
        self.vocab = vocab
        self.batch_size = batch_size
        self.patcher = ImagePatcher(max_cache=4096)

    @property
    def config(self) -> ActorConfig:
        return self.model.config

    def featurise(self, inp: PolicyInput) -> Features:
        """This actor's tensors for one input."""
        return featurise(inp, self.vocab, self.config, self.patcher)

    @torch.no_grad()
    def act(self, inputs: Sequence[PolicyInput], output_hidden_states: bool = False) -> list[PolicyOutput]:
        """Answer a batch of inputs; with ``output_hidden_states`` fill ``hidden_states``."""
        outputs: list[PolicyOutput] = []
        for lo in range(0, len(inputs), self.batch_size):
            chunk = inputs[lo:lo + self.batch_size]
            feats = [self.featurise(x) for x in chunk]
            outputs += self.act_features(feats, [x.modality for x in chunk], output_hidden_states)
        return outputs

    @torch.no_grad()
    def act_features(self, feats: Sequence[Features], modalities: Sequence[Modality],
                     output_hidden_states: bool = False) -> list[PolicyOutput]:
        """Answer already-featurised prompts (one batch), each with the memory of its modality."""
        self.model.eval()
        batch = collate(feats, modalities, self.config, self.vocab)
        out = self.model(**batch, output_hidden_states=output_hidden_states)
        actions = decode(out, feats, self.config)
        type_logp = F.log_softmax(out.type_logits, -1).max(-1).values.tolist()
        hs = out.act_hidden_states.float().numpy() if output_hidden_states else None  # [batch, L+1, d]
        return [PolicyOutput(action=a, hidden_states=None if hs is None else hs[i].copy(),
                             info={"modality": m, "type_logprob": type_logp[i]})
                for i, (a, m) in enumerate(zip(actions, modalities))]

    def save(self, path: str) -> None:
        """Write ``config.json``, ``model.safetensors`` and ``vocab.json`` to ``path``, atomically."""
        parent = os.path.dirname(os.path.abspath(path)) or "."
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(path)}-")
        try:
            self.model.save_pretrained(tmp)
            self.vocab.save(os.path.join(tmp, VOCAB_FILE))
            old = None
            if os.path.exists(path):
                old = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(path)}-old-")
                os.replace(path, os.path.join(old, "model"))
            os.replace(tmp, path)
            if old is not None:
                shutil.rmtree(old)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    @classmethod
    def load(cls, path: str, batch_size: int = 64) -> "MiniActor":
        """Read an actor written by :meth:`save` (safetensors weights, JSON config and vocabulary)."""
        for name in ("config.json", "model.safetensors", VOCAB_FILE):
            if not os.path.isfile(os.path.join(path, name)):
                raise DataError(name, "missing from the actor folder", path)
        vocab = Vocabulary.load(os.path.join(path, VOCAB_FILE))
        model = GuiActor.from_pretrained(path)
        return cls(model, vocab, batch_size)
