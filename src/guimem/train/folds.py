"""Memories rebuilt in k folds, so that no training step reads its own task, and each step reads
the experience of its own phone.

The training episodes are split into ``k`` folds by task (:func:`task_folds`: every episode of one
goal in one fold, drawn by :func:`assign_folds`), so that a step's memory never demonstrates the
task it is doing, on any variant — the condition of the held-out steps, whose memory holds other
tasks only (``metrics/world.json: memory_test_goal_overlap`` 0). Folded by episode instead, most
training steps of a task the world drew more than once read a demonstration of that very task and
learn to copy it, which the held-out memory never allows.

A memory is one phone's experience (:attr:`~guimem.core.data.Episode.phone`: the app variant an
episode ran on), as the held-out steps' is: their memory holds episodes of the evaluation phone only. A training step
that read experience of *another* variant would see glyphs of another design under other words,
and learn that a remembered picture says nothing about the screen in front of it. So the steps
of fold ``f`` on phone ``p`` read memories of every kind rebuilt, with the saved memories'
settings (:func:`rebuild_from`), from the episodes of phone ``p`` in the other folds only
(:func:`fold_memories`: one memory set per *cell* ``(phone, fold)``), and become examples through
:func:`~guimem.train.examples.build_examples` (:func:`build_kfold_examples`). DAgger's rollouts of
a cell's tasks read the same memories.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Hashable, Mapping, Sequence

import numpy as np

from guimem.core.data import DataError, Episode, Subgoal
from guimem.core.policy import HISTORY_LEN
from guimem.smg.memories import Memory, rebuild_like
from guimem.train.examples import ActorExample, build_examples

MemoryFactory = Callable[[str, Sequence[Episode]], Memory]
"""``factory(kind, episodes)``: a memory of ``kind`` built from exactly ``episodes``."""

Cell = tuple[Hashable, int]
"""``(phone, fold)``: the steps that read one set of memories (:func:`fold_memories`)."""

FoldMemories = tuple[dict[str, Cell], dict[Cell, dict[str, Memory]]]
"""What :func:`fold_memories` returns: each episode id's cell, and each cell's memories by kind."""


def assign_folds(keys: Sequence[str], k: int, seed: int) -> dict[str, int]:
    """Each distinct key (an episode id, a goal) to one of ``k`` folds of (nearly) equal size, shuffled by ``seed``."""
    if k < 2:
        raise DataError("k_folds", f"needs at least 2 folds so every memory excludes its episode, got {k}")
    distinct = sorted(set(keys))
    order = np.random.default_rng(seed).permutation(len(distinct))
    return {distinct[j]: rank % k for rank, j in enumerate(order)}


def task_folds(episodes: Sequence[Episode], k: int, seed: int) -> dict[str, int]:
    """Each episode id to one of ``k`` folds, every episode of one goal (one task) in the same fold:
    the goals are shared out by :func:`assign_folds`, so folds hold nearly equal numbers of tasks."""
    by_goal = assign_folds([e.goal for e in episodes], k, seed)
    return {e.id: by_goal[e.goal] for e in episodes}


def rebuild_from(saved: Mapping[str, Memory], subgoals: Mapping[str, Sequence[Subgoal]],
                 store_root: str | Path) -> MemoryFactory:
    """A :data:`MemoryFactory` of memories with the settings of the ``saved`` one of their kind, built
    from the given episodes only (their ``subgoals``, by episode id; screens under ``store_root``)."""
    def rebuild(kind: str, episodes: Sequence[Episode]) -> Memory:
        return rebuild_like(saved[kind], episodes, [s for e in episodes for s in subgoals.get(e.id, [])], store_root)
    return rebuild


def build_kfold_examples(episodes: Sequence[Episode], store_root: str | Path, factory: MemoryFactory,
                         kinds: Sequence[str], k_folds: int, seed: int, kinds_per_step: int | None = 1,
                         max_history: int = HISTORY_LEN, query_vectors: Mapping[str, np.ndarray] | None = None,
                         progress: bool = True, folds: FoldMemories | None = None) -> list[ActorExample]:
    """Training examples whose memory never holds their own task (:func:`task_folds`), let alone their
    episode, and holds their own phone's experience only.

    The steps of cell ``(phone, fold)`` read memories of every kind built by ``factory`` from that
    phone's episodes in the other folds (``folds``: those of :func:`fold_memories`, already built).
    Returned in the order of ``episodes``.
    """
    cells, cell_mems = folds if folds is not None else fold_memories(episodes, factory, kinds, k_folds, seed)
    by_id: dict[str, list[ActorExample]] = {}
    for j, (cell, memories) in enumerate(sorted(cell_mems.items(), key=lambda kv: _cell_order(kv[0]))):
        inside = [e for e in episodes if cells[e.id] == cell]
        for ex in build_examples(inside, store_root, memories, kinds_per_step, seed + 1 + j, max_history,
                                 query_vectors, progress):
            by_id.setdefault(ex.episode_id, []).append(ex)
    return [ex for e in episodes for ex in by_id.get(e.id, [])]


def fold_memories(episodes: Sequence[Episode], factory: MemoryFactory, kinds: Sequence[str], k_folds: int,
                  seed: int) -> FoldMemories:
    """Each episode's cell ``(phone, fold)`` (:attr:`~guimem.core.data.Episode.phone`,
    :func:`task_folds`) and, per cell that holds an episode, a memory of every kind built by
    ``factory`` from the episodes of the same phone in the *other* folds: what that cell's steps
    (and rollouts of its tasks) may read."""
    folds = task_folds(episodes, k_folds, seed)
    cells = {e.id: (e.phone, folds[e.id]) for e in episodes}
    memories = {}
    for cell in sorted(set(cells.values()), key=_cell_order):
        phone, fold = cell
        shared = [e for e in episodes if e.phone == phone and folds[e.id] != fold]
        memories[cell] = {kind: factory(kind, shared) for kind in kinds}
    return cells, memories


def _cell_order(cell: Cell) -> tuple[str, int]:
    """A fixed order of cells whatever their phones' types (``None`` and variant indices)."""
    phone, fold = cell
    return (f"{phone:08d}" if isinstance(phone, int) else str(phone)), fold


def validation_split(episodes: Sequence[Episode], share: float, seed: int) -> tuple[list[Episode], list[Episode]]:
    """The training episodes cut into those to learn from and a validation split of about ``share``
    of them: a seeded draw of whole tasks (every episode of a drawn goal; at least one task when
    ``share`` > 0), both in their order. Checkpoints are selected on the validation split — tasks
    the actor does not learn, as the test's are — never on test or memory episodes."""
    if not 0.0 <= share < 1.0:
        raise DataError("validation_share", f"expected a share in [0, 1), got {share!r}")
    goals = sorted({e.goal for e in episodes})
    target = share * len(episodes)
    held: set[str] = set()
    if share > 0 and len(goals) > 1:
        size = {g: 0 for g in goals}
        for e in episodes:
            size[e.goal] += 1
        held_n = 0
        for j in np.random.default_rng(seed).permutation(len(goals)).tolist():
            if held and held_n + size[goals[j]] / 2 > target:  # closest to the share, in whole tasks
                break
            held.add(goals[j])
            held_n += size[goals[j]]
    return [e for e in episodes if e.goal not in held], [e for e in episodes if e.goal in held]
