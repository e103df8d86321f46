"""What each memory kind retrieves per query, and in which order: the defaults of the memories'
constructors and of params.yaml's ``graph_build.retrieval`` group, written once.

A memory reads its own field (SMG and Action-Graph ``k_nodes`` and ``rank_by``, Subgoal-Flat
``flat_k``, Task-Graph ``task_k`` and ``task_alpha``); each constructor checks the values it takes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RetrievalConfig:
    """Per-query retrieval of the four memories."""

    k_nodes: int = 1  # nodes SMG and Action-Graph retrieve per query; all their out-edges are returned (paper: 1)
    flat_k: int = 3  # subgoals Subgoal-Flat retrieves per query
    task_k: int = 1  # trajectories Task-Graph retrieves per query
    task_alpha: float = 0.5  # Task-Graph score: weight on first-screen similarity (the rest on goal similarity)
    rank_by: str = "goal"  # order of a node's out-edges: goal (their task's goal against the current one) or id
