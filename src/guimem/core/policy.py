"""The interface every actor shares: the trained miniature actor and any Hugging Face VLM.

An actor sees one :class:`PolicyInput` (the current screen, the goal, a short action
history and, optionally, retrieved memory as text and/or as an image) and answers with a
:class:`PolicyOutput` (an action, plus the hidden state of every layer at the final prompt
token when asked for).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Sequence, runtime_checkable

import numpy as np
from PIL import Image

from guimem.core.data import Action, UIElement

Modality = Literal["none", "text", "image", "both"]
MODALITIES: tuple[Modality, ...] = ("none", "text", "image", "both")
HISTORY_LEN = 4
"""Earlier actions of the episode an actor is shown by default (the miniature's ``ActorConfig.max_history``)."""


@dataclass(frozen=True)
class PolicyInput:
    """Everything an actor may read for one step."""

    screenshot: Image.Image  # the current screen, RGB
    elements: tuple[UIElement, ...]  # its UI tree (an actor may ignore it)
    goal: str
    history: tuple[Action, ...] = ()  # earlier actions of this episode, oldest first
    memory_text: str | None = None  # retrieved experience rendered as text
    memory_image: Image.Image | None = None  # the same experience rendered as an image
    history_screens: tuple[tuple[UIElement, ...], ...] = ()  # the UI tree each history action was taken on
    # (aligned with ``history``; empty when not known): what it touched, and whether the screen changed after it

    def __post_init__(self) -> None:
        if self.history_screens and len(self.history_screens) != len(self.history):
            raise ValueError(f"history_screens: {len(self.history_screens)} screens for {len(self.history)} actions")

    @property
    def modality(self) -> Modality:
        """Which memory the actor is shown: none, text, image or both."""
        has_t, has_i = self.memory_text is not None, self.memory_image is not None
        return "both" if has_t and has_i else "text" if has_t else "image" if has_i else "none"

    def with_modality(self, modality: Modality) -> "PolicyInput":
        """The same input with only the memory of ``modality`` kept (the other dropped)."""
        keep_t, keep_i = modality in ("text", "both"), modality in ("image", "both")
        return PolicyInput(self.screenshot, self.elements, self.goal, self.history,
                           self.memory_text if keep_t else None, self.memory_image if keep_i else None,
                           self.history_screens)


@dataclass(frozen=True)
class PolicyOutput:
    """An actor's answer for one step."""

    action: Action
    hidden_states: np.ndarray | None = None  # [n_layers + 1, d_model]; index 0 = embedding layer
    raw: str | None = None  # the raw text answer, for generative actors
    info: dict = field(default_factory=dict)


class Policy(Protocol):
    """An actor: maps inputs to actions; optionally returns per-layer hidden states."""

    def act(self, inputs: Sequence[PolicyInput], output_hidden_states: bool = False) -> list[PolicyOutput]:
        """Answer a batch of inputs; with ``output_hidden_states`` fill ``hidden_states``."""
        ...


@runtime_checkable
class FeaturisingPolicy(Policy, Protocol):
    """A policy that reads each input once into features holding every memory part, then answers
    them with the memory of any modality: the same answers as :meth:`Policy.act` on
    ``input.with_modality(m)``, without reading the input again (the miniature actor)."""

    batch_size: int

    def featurise(self, inp: PolicyInput) -> Any:
        """This policy's reading of one input, every memory part included."""
        ...

    def act_features(self, feats: Sequence[Any], modalities: Sequence[Modality],
                     output_hidden_states: bool = False) -> list[PolicyOutput]:
        """Answer featurised inputs (one batch), each shown the memory of its modality."""
        ...


def shows(inp: PolicyInput, modality: Modality) -> bool:
    """Whether ``inp`` carries the memory ``modality`` asks for (``none`` always)."""
    has_text, has_image = inp.memory_text is not None, inp.memory_image is not None
    return {"none": True, "text": has_text, "image": has_image, "both": has_text and has_image}[modality]
