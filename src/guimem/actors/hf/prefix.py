"""Prompts in two parts, and the KV cache of their shared part: what lets SwitchMem route a step at the
cost of one prompt.

A step's prompt is its **shared prefix** (system turn, goal, actions so far, screenshot: the same
whichever rendering of the memory follows) and a **memory suffix** (the memory as text, image, both
or none, the question, the generation prompt; :mod:`guimem.actors.hf.prompts`). Each part is
encoded by the model's own processor on its own (:class:`PromptPart`), and a prompt is always the
two parts' tokens one after the other, so a full pass and a pass continued on the prefix's cache
read the same tokens.

A batch of prefixes is run once (:class:`SharedPrefix`: left-padded, so that every row's prefix
ends in the last column); a batch of suffixes then continues it. A suffix block is left-padded on
its own, so a shorter suffix leaves a gap of padding between its row's prefix and itself: the
attention mask has holes there, which ``transformers`` handles (the mask is read per key, and the
position ids skip masked tokens; checked for Qwen2-VL and LLaVA in ``tests/test_hf_actor.py``).

Three things the continued pass must get right, each with ``transformers``' own machinery:

* **position ids** of the whole prompt as a full pass computes them, from the model's
  ``_prepare_position_ids_for_generation`` (1-D positions for LLaVA-style models; for the Qwen-VL
  family a text row and M-RoPE's temporal, height and width rows), of which ``generate`` reads the
  suffix's columns;
* **the suffix's images**, encoded by the model's vision tower and handed over as
  ``mm_encoder_outputs``, the pre-encoded features ``generate`` places at the placeholders of the
  uncached tokens (raw ``pixel_values`` would be matched against every placeholder of the prompt);
* **the cache**, a ``transformers`` :class:`~transformers.DynamicCache` that each continuation
  grows and :meth:`SharedPrefix.rewind` crops back to the prefix, layer by layer.

A prefix is continued only by its own steps: the same templated text and the same screenshot
(:func:`same_screen`), checked row by row.

No attention code is written here: every pass is the model's own ``forward`` or ``generate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from PIL import Image

TOKEN_KEYS = ("input_ids", "attention_mask", "mm_token_type_ids", "token_type_ids")
"""Processor outputs laid along the tokens (``[batch, length]``); every other output describes the
images (``pixel_values``, ``image_grid_thw``, ``image_sizes``, ...), one entry per image along dim 0."""


@dataclass(frozen=True)
class PromptPart:
    """One input's encoded prompt part: the processor's tensors for a batch of one."""

    tokens: dict[str, torch.Tensor]  # the TOKEN_KEYS the processor returned, each [1, length]
    images: dict[str, torch.Tensor]  # the image-side outputs, empty for a part without images

    @classmethod
    def of(cls, encoding: Any) -> PromptPart:
        """Split a processor's output (``BatchFeature`` or dict) into token and image tensors."""
        items = dict(encoding.items())
        return cls({k: v for k, v in items.items() if k in TOKEN_KEYS},
                   {k: v for k, v in items.items() if k not in TOKEN_KEYS})

    @property
    def length(self) -> int:
        return int(self.tokens["input_ids"].shape[1])

    def then(self, suffix: PromptPart) -> PromptPart:
        """This part followed by ``suffix``: the whole prompt of one input."""
        return PromptPart({k: torch.cat([v, suffix.tokens[k]], dim=1) for k, v in self.tokens.items()},
                          concat_images([self, suffix]))


def concat_images(parts: Sequence[PromptPart], pixels: bool = True) -> dict[str, torch.Tensor]:
    """The parts' image tensors in order (the order their placeholders appear in a batch: row by row,
    left to right), each key concatenated along dim 0; without ``pixels``, only what describes the
    images' layout (``image_grid_thw``, ...: what position ids need, not the pixels' megabytes)."""
    keys = [k for k in dict.fromkeys(k for p in parts for k in p.images) if pixels or k != "pixel_values"]
    return {k: torch.cat([p.images[k] for p in parts if k in p.images], dim=0) for k in keys}


def left_padded(parts: Sequence[PromptPart], pad_token_id: int) -> dict[str, torch.Tensor]:
    """The parts' tokens as one ``[n, max length]`` block, each row padded on the left (``input_ids``
    with ``pad_token_id``, the attention mask and token types with 0)."""
    width = max(p.length for p in parts)
    block = {}
    for key in parts[0].tokens:
        fill = pad_token_id if key == "input_ids" else 0
        rows = [torch.nn.functional.pad(p.tokens[key], (width - p.length, 0), value=fill) for p in parts]
        block[key] = torch.cat(rows, dim=0)
    return block


def full_positions(model: Any, tokens: dict[str, torch.Tensor], images: dict[str, torch.Tensor]) -> torch.Tensor:
    """The position ids a full pass of ``generate`` gives these prompts (``[n, L]``, or M-RoPE's
    ``[4, n, L]`` for the Qwen-VL family): the model's own computation, so a continued pass places
    every token where the full pass does."""
    kwargs = {**tokens, **{k: v for k, v in images.items() if k != "pixel_values"}}
    return model._prepare_position_ids_for_generation(tokens["input_ids"], kwargs)


def same_screen(a: Image.Image, b: Image.Image) -> bool:
    """Whether two screenshots are the same pixels: the same object (a step's renderings share theirs:
    no cost), else the same mode, size and bytes."""
    return a is b or (a.mode == b.mode and a.size == b.size and a.tobytes() == b.tobytes())


@dataclass
class SharedPrefix:
    """A batch of prefixes run once: their encodings and the KV cache that holds them.

    ``texts`` are the prefixes' templated texts and ``screens`` their screenshots (a continuation is
    checked against both), ``parts`` their encodings, ``block`` the left-padded token block the cache
    was filled from and ``cache`` the ``transformers`` cache, exactly ``length`` tokens long between
    continuations."""

    texts: list[str]
    screens: list[Image.Image]
    parts: list[PromptPart]
    block: dict[str, torch.Tensor]
    cache: Any

    @property
    def length(self) -> int:
        return int(self.block["input_ids"].shape[1])

    def __len__(self) -> int:
        return len(self.parts)

    def rewind(self) -> None:
        """Crop the cache back to the prefix, layer by layer: a continuation grew every layer, one that
        failed midway (out of memory, say) only the layers it reached."""
        for layer in self.cache.layers:
            extra = layer.get_seq_length() - self.length
            if extra > 0:
                layer.crop(-extra)
