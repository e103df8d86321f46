"""The smallest actor config the tests and smoke runs use: ``ActorConfig`` overrides for a two-block,
32-wide miniature reading 32x16 screens and memory images in 8-pixel patches, at most five elements
and 24 memory tokens, so that a forward pass or a few training steps take milliseconds on a CPU.

    GuiActor(ActorConfig(vocab_size=len(vocab), app_names=["Notes"], **TINY))
    TrainConfig(..., model=TINY)
"""

from __future__ import annotations

from typing import Any

TINY: dict[str, Any] = dict(
    hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, dropout=0.0,
    screen_height=32, screen_width=16, memory_image_height=32, memory_image_width=16, patch_size=8,
    max_memory_tokens=24, max_elements=5, crop_size=4)
