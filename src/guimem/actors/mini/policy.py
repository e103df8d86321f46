"""The frozen miniature actor as a :class:`~guimem.core.policy.Policy`: load, act, hidden states.

Saved as a folder of kind ``guimem.actor`` (:func:`guimem.core.io.atomic_write_dir`):
``config.json``, ``model.safetensors`` and ``vocab.json``. Loading checks each file before the
model is built: the config must describe an actor (every value of its type and range, names of
apps and roles distinct, float32), the weights file must hold exactly the actor's tensors in the
config's shapes, as float32 (or float64, read back exactly), every weight finite, and the
vocabulary must match the model's word ids; a :class:`~guimem.core.data.DataError` names the
file and field (:func:`guimem.core.io.check_safetensors` reads the weights' header first).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from guimem.actors.mini.config import SEG_MEMORY_CROP, SEG_MEMORY_IMAGE, SEG_MEMORY_TEXT, VOCAB_FILE, ActorConfig
from guimem.actors.mini.decoding import decode, sample_decode
from guimem.actors.mini.features import Features, ImagePatcher, collate, featurise
from guimem.actors.mini.model import GuiActor
from guimem.core.data import DataError
from guimem.core.io import (
    atomic_write_dir,
    check_finite,
    check_safetensors,
    file_inside,
    read_json,
    read_whole,
)
from guimem.core.policy import Modality, PolicyInput, PolicyOutput
from guimem.models.tokenizer import Vocabulary

ACTOR_KIND = "guimem.actor"
CONFIG_FILE, WEIGHTS_FILE = "config.json", "model.safetensors"
ACTOR_FILES = frozenset({CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE})
CARD_JSON, CARD_README = "pretraining.json", "MODEL_CARD.md"
CARD_FILES = frozenset({CARD_JSON, CARD_README})
"""The model card saved beside a pretrained actor (:mod:`guimem.pipeline.pretrain`): for people, and as JSON."""


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
    def reads_history_screens(self) -> bool:
        """Whether its history reads the screens earlier actions were taken on (``history_words``,
        ``history_effect``): two inputs alike but for those screens are then different inputs."""
        return bool(self.config.history_words or self.config.history_effect)

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
                     output_hidden_states: bool = False, n_samples: int = 0,
                     generator: torch.Generator | Sequence[torch.Generator] | None = None,
                     temperature: float = 1.0) -> list[PolicyOutput]:
        """Answer already-featurised prompts (one batch), each with the memory of its modality.

        With ``n_samples`` each output's ``info["samples"]`` also holds that many actions drawn
        from the same forward pass (:func:`sample_decode`, from ``generator``: one, or one per prompt)."""
        self.model.eval()
        batch = collate(feats, modalities, self.config, self.vocab)
        out = self.model(**batch, output_hidden_states=output_hidden_states)
        actions = decode(out, feats, self.config)
        samples = (sample_decode(out, feats, self.config, n_samples, generator if generator is not None
                                 else torch.Generator().manual_seed(0), temperature)
                   if n_samples else None)
        type_logp = F.log_softmax(out.type_logits, -1).max(-1).values.tolist()
        hs = out.act_hidden_states.float().numpy() if output_hidden_states else None  # [batch, L+1, d]
        outputs = []
        for i, (a, m) in enumerate(zip(actions, modalities)):
            info = {"modality": m, "type_logprob": type_logp[i]}
            if samples is not None:
                info["samples"] = samples[i]
            outputs.append(PolicyOutput(action=a, hidden_states=None if hs is None else hs[i].copy(), info=info))
        return outputs

    @torch.no_grad()
    def memory_embeddings(self, feats: Sequence[Features], modality: Modality) -> np.ndarray:
        """``[batch, d_model]`` float32: the actor's own reading of each prompt's memory in
        ``modality`` (``text`` or ``image``), before any transformer block — the mean of the
        embedding layer's output over the memory's tokens (the text block's words; the remembered
        screen's patches and crops). What a router may look at without running the memory prompt:
        one embedding lookup and projection, no attention."""
        if modality not in ("text", "image"):
            raise DataError("modality", f"a memory candidate is text or image, got {modality!r}")
        self.model.eval()
        batch = collate(feats, [modality] * len(feats), self.config, self.vocab)
        keys = ("input_ids", "patch_pixels", "crop_pixels", "element_words", "element_boxes", "segment_ids",
                "position_ids", "row_ids", "col_ids", "match_ids", "role_ids", "act_context_ids")
        h = self.model.embed(*(batch.get(k) for k in keys))  # [batch, seq, d_model]
        seg = batch["segment_ids"]
        mask = ((seg == SEG_MEMORY_TEXT) if modality == "text"
                else (seg == SEG_MEMORY_IMAGE) | (seg == SEG_MEMORY_CROP)).unsqueeze(-1).float()
        pooled = (h * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return pooled.float().numpy()

    def save(self, path: str | os.PathLike, card: Mapping[str, str] | None = None) -> None:
        """Write ``config.json``, ``model.safetensors`` and ``vocab.json`` to ``path``, with the model
        card's files (``card``: name -> text, names of :data:`CARD_FILES`), in one atomic save. The
        card's files are the actor's own: a save without them removes an earlier card, which would
        describe other weights."""
        card = dict(card or {})
        foreign = sorted(set(card) - CARD_FILES)
        if foreign:
            raise DataError("card", f"cannot save {foreign[0]!r:.60} as a model card; expected names of {sorted(CARD_FILES)}",
                            str(path))

        def write(folder: Path) -> None:
            self.model.save_pretrained(folder)
            self.vocab.save(folder / VOCAB_FILE)
            for name, text in sorted(card.items()):
                (folder / name).write_text(text, encoding="utf-8")
        atomic_write_dir(Path(path), write, kind=ACTOR_KIND, owned=tuple(sorted(ACTOR_FILES | CARD_FILES)))

    @classmethod
    def load(cls, path: str | os.PathLike, batch_size: int = 64) -> "MiniActor":
        """Read an actor written by :meth:`save`, every file checked before the model is built."""
        def read(folder: Path) -> "MiniActor":
            for name in sorted(ACTOR_FILES):
                file_inside(folder, name, "file", str(folder / name))  # a link may not lead out of the folder
                if not (folder / name).is_file():
                    raise DataError(name, "missing from the actor folder", str(folder))
            vocab = Vocabulary.load(folder / VOCAB_FILE)
            check_safetensors(folder / WEIGHTS_FILE, _weight_shapes(folder / CONFIG_FILE))
            model = GuiActor.from_pretrained(folder, dtype=torch.float32)  # float32 whatever config.json's dtype says
            for name, weight in model.state_dict().items():
                check_finite(weight.numpy(), name, str(folder / WEIGHTS_FILE))
            try:
                return cls(model, vocab, batch_size)
            except DataError as err:
                raise err.at(str(folder / VOCAB_FILE)) from None
        return read_whole(path, read, "saved actor")


def _weight_shapes(config_path: Path) -> dict[str, tuple[int, ...]]:
    """The shape of every weight of the actor ``config.json`` describes (built on the meta device:
    no memory, no random numbers drawn)."""
    raw = read_json(config_path)
    if not isinstance(raw, dict) or raw.get("model_type") != ActorConfig.model_type:
        got = raw.get("model_type") if isinstance(raw, dict) else raw
        raise DataError("model_type", f"expected {ActorConfig.model_type!r}, got {got!r:.60}", str(config_path))
    for key in ("dtype", "torch_dtype"):  # the weights are float32 (wider ones are read back exactly)
        if raw.get(key) not in (None, "float32"):
            raise DataError(key, f"expected float32, got {raw.get(key)!r:.60}", str(config_path))
    try:
        with torch.device("meta"):
            model = GuiActor(ActorConfig.from_dict(raw))
    except DataError as err:
        raise err.at(str(config_path)) from None
    except (TypeError, ValueError, RuntimeError, KeyError, AttributeError) as err:
        raise DataError("config", f"does not describe an actor: {type(err).__name__}: {str(err)[:120]}",
                        str(config_path)) from None
    return {name: tuple(w.shape) for name, w in model.state_dict().items()}
