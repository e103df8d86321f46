"""Choosing the frozen actor by name: the miniature actor, or any Hugging Face VLM on disk."""

from __future__ import annotations

import os

from guimem.actors.hf.policy import HFVLMActor
from guimem.actors.mini.policy import MiniActor
from guimem.core.data import DataError
from guimem.core.policy import Policy

MINI_ACTOR = "mini"
"""``actor_model`` value naming the miniature actor trained by the ``actor`` stage."""


def load_actor(actor_model: str, actor_dir: str | os.PathLike, batch_size: int = 64,
               coords: str = "relative_1000", answer_format: str = "json", max_new_tokens: int = 64) -> Policy:
    """The frozen actor a closed-loop run plays with, chosen by ``actor_model`` (a params.yaml value).

    ``"mini"``: the miniature actor saved by the ``actor`` stage in ``actor_dir``. Anything else is
    a Hugging Face vision-language model id or local folder, loaded by
    :class:`guimem.actors.hf.policy.HFVLMActor` from disk only (it must already be
    there), answering in ``answer_format`` with coordinates in the ``coords`` convention.
    """
    if not isinstance(actor_model, str) or not actor_model.strip():
        raise DataError("actor_model", f"expected {MINI_ACTOR!r} or a Hugging Face model id / folder, got {actor_model!r}")
    if actor_model == MINI_ACTOR:
        return MiniActor.load(actor_dir, batch_size=batch_size)
    return HFVLMActor(actor_model, coords=coords, answer_format=answer_format, max_new_tokens=max_new_tokens,
                      batch_size=batch_size)


def describe_actor(actor: Policy, actor_model: str) -> str:
    """One line naming the actor a stage plays with: the miniature's size, or the model's id and depth."""
    if isinstance(actor, MiniActor):
        c = actor.config
        return f"the miniature actor: {c.num_hidden_layers} layers, d_model {c.hidden_size}"
    if isinstance(actor, HFVLMActor):
        return f"{actor_model}: {actor.n_layers} layers, d_model {actor.d_model}"
    return actor_model
