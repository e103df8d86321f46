"""The one road from a memory to the actor's input: retrieve for a screen and a goal, render what
was retrieved as text and as an image.

Every consumer goes through :class:`MemoryReader`: the training examples and DAgger's rollouts
(both renderings, so training can draw the modality), the retrieval evaluation (which saves the
renderings the actor is later scored on), and the closed loop (only the modality shown). A
rendering depends only on the items retrieved, so it is memoised by their ids; in the closed loop
a retrieval depends only on the goal and the screen's pixels, so :meth:`MemoryReader.read` also
memoises it by ``(goal, screen key)``. How the items look is the memory's style
(:class:`~guimem.smg.memories.RenderStyle`) and its renderers (:func:`~guimem.smg.memories.render_text`,
:func:`~guimem.smg.memories.render_image`), reached through the memory's ``render_text`` and
``render_image``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from guimem.core.env import WorldObservation
from guimem.core.policy import Modality, PolicyInput
from guimem.smg.memories import Memory, Retrieved

Shown = tuple[str | None, Any]
"""``(memory text or None, memory image or None)``: what the actor is shown of one retrieval."""


class QueryVectors:
    """Retrieval embeddings of live screens, memoised by the screen's content key.

    A screen's key identifies its pixels (:attr:`WorldObservation.key`), so each distinct screen
    is embedded once per notebook, however many episodes, seeds and memories show it; the new
    screens of a tick are embedded in one call (the embedder's own micro-batches and content-hash
    cache apply). Every memory that shares the embedder can share one instance.
    """

    def __init__(self, embedder: Any):
        self.embedder = embedder
        self.vectors: dict[str, np.ndarray] = {}  # screen key -> [dim] embedding

    def add(self, screens: Iterable[WorldObservation]) -> int:
        """Embed the screens not seen yet (one call); returns how many were new."""
        todo: dict[str, Any] = {}
        for obs in screens:
            if obs.key not in self.vectors and obs.key not in todo:
                todo[obs.key] = obs.image
        if todo:
            self.vectors.update(zip(todo, self.embedder.embed(list(todo.values()))))
        return len(todo)

    def __getitem__(self, key: str) -> np.ndarray:
        return self.vectors[key]


class MemoryReader:
    """What ``memory`` shows the actor: its retrieval for a query screen and a goal, rendered in
    ``modality`` (``both``: text and image; ``none`` or no memory: nothing).

    ``k`` anchors are retrieved per query (None: the memory's default). ``store_root`` is where the
    image renderer finds the remembered screens (None: the memory's own store). With ``vectors``,
    :meth:`read` queries by the screen's embedding (computed by :meth:`prepare` in one batch per
    tick) instead of its image. ``retrievals`` and ``renders`` count the work done.
    """

    def __init__(self, memory: Memory | None, modality: Modality = "both", k: int | None = None,
                 vectors: QueryVectors | None = None, store_root: str | Path | None = None):
        self.memory, self.modality, self.k, self.vectors, self.store_root = memory, modality, k, vectors, store_root
        self.active = memory is not None and modality != "none"
        self._reads: dict[tuple[str, str], tuple[str | None, Any, tuple[str, ...]]] = {}
        self._renders: dict[tuple[str, ...], Shown] = {}
        self.retrievals = self.renders = 0

    def retrieve(self, query: Any, goal: str) -> Retrieved:
        """The memory's items for ``query`` (a screenshot or its embedding) and ``goal``."""
        self.retrievals += 1
        return self.memory.retrieve(query, goal, self.k)

    def render(self, retrieved: Retrieved) -> Shown:
        """``retrieved`` as text and as image, each only where the modality shows it (memoised by item ids)."""
        ids = tuple(retrieved.ids)
        shown = self._renders.get(ids)
        if shown is None:
            shown = self._renders[ids] = (self.text(retrieved) if self.modality in ("text", "both") else None,
                                          self.image(retrieved) if self.modality in ("image", "both") else None)
            self.renders += 1
        return shown

    def text(self, retrieved: Retrieved) -> str:
        """The memory block of ``retrieved`` for the actor's prompt (not memoised: see :meth:`render`)."""
        return self.memory.render_text(retrieved)

    def image(self, retrieved: Retrieved) -> Any:
        """The memory image of ``retrieved`` (not memoised: see :meth:`render`)."""
        if self.store_root is None:
            return self.memory.render_image(retrieved)
        return self.memory.render_image(retrieved, self.store_root)

    def show(self, inp: PolicyInput, query: Any) -> PolicyInput:
        """``inp`` carrying what the memory retrieved for ``query`` and the input's goal."""
        text, image = self.render(self.retrieve(query, inp.goal))
        return replace(inp, memory_text=text, memory_image=image)

    def prepare(self, items: Iterable[tuple[WorldObservation, str]]) -> None:
        """Embed, in one call, the screens of ``(observation, goal)`` pairs not read yet."""
        if self.active and self.vectors is not None:
            self.vectors.add(obs for obs, goal in items if (goal, obs.key) not in self._reads)

    def read(self, obs: WorldObservation, goal: str) -> tuple[str | None, Any, tuple[str, ...]]:
        """``(memory text or None, memory image or None, retrieved ids)`` for a live screen and goal,
        memoised by ``(goal, screen key)``."""
        if not self.active:
            return None, None, ()
        key = (goal, obs.key)
        hit = self._reads.get(key)
        if hit is None:
            retrieved = self.retrieve(self.vectors[obs.key] if self.vectors is not None else obs.image, goal)
            hit = self._reads[key] = (*self.render(retrieved), tuple(retrieved.ids))
        return hit
