"""What each memory kind retrieves per query, and in which order: the defaults of the memories'
constructors and of params.yaml's ``graph_build.retrieval`` group, written once.

A memory reads its own fields (:data:`KIND_FIELDS`: SMG and Action-Graph ``k_nodes`` and ``rank_by``,
Subgoal-Flat ``flat_k``, Task-Graph ``task_k`` and ``task_alpha``), which
:meth:`RetrievalConfig.settings` gives as its constructor's arguments; each constructor checks the
values it takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guimem.core.data import DataError

KIND_FIELDS: dict[str, dict[str, str]] = {  # each memory kind's constructor argument -> the field it reads
    "smg": {"k": "k_nodes", "rank_by": "rank_by"},
    "flat": {"k": "flat_k"},
    "action_graph": {"k": "k_nodes", "rank_by": "rank_by"},
    "task_graph": {"k": "task_k", "alpha": "task_alpha"},
}


@dataclass(frozen=True)
class RetrievalConfig:
    """Per-query retrieval of the four memories."""

    k_nodes: int = 1  # nodes SMG and Action-Graph retrieve per query; all their out-edges are returned (paper: 1)
    flat_k: int = 3  # subgoals Subgoal-Flat retrieves per query
    task_k: int = 1  # trajectories Task-Graph retrieves per query
    task_alpha: float = 0.5  # Task-Graph score: weight on first-screen similarity (the rest on goal similarity)
    rank_by: str = "goal"  # order of a node's out-edges: goal (their task's goal against the current one) or id

    def settings(self, kind: str) -> dict[str, Any]:
        """The retrieval settings memory ``kind`` is built with (``{"k": 3}`` for Subgoal-Flat):
        the arguments :func:`guimem.smg.memories.make_memory` takes for it."""
        if kind not in KIND_FIELDS:
            raise DataError("memory", f"unknown memory {kind!r:.60}; expected one of {list(KIND_FIELDS)}")
        return {arg: getattr(self, name) for arg, name in KIND_FIELDS[kind].items()}
