"""SwitchMem's actor work as executor tasks (:mod:`guimem.core.executor`), and its routed policy as
a value workers load.

:func:`record_steps` runs :func:`~guimem.routing.records.collect_records` on chunks of whole forward
batches, each worker loading the actor once (:class:`~guimem.eval.jobs.ActorWork`): the records are
the same, array for array, wherever the chunks ran. :class:`SwitchMemRouting` is what a routed
closed-loop play (:class:`~guimem.eval.jobs.PlayEpisodes`) loads: the actor routed by the router
saved for each memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from guimem.actors.loading import ActorSpec
from guimem.core.data import DataError
from guimem.core.executor import Executor, LocalExecutor
from guimem.core.policy import Policy
from guimem.core.progress import progress_bar
from guimem.core.resume import ChunkCache, cached_map, code_fingerprint, tree_digest
from guimem.eval.action_match import MatchConfig
from guimem.eval.jobs import ActorWork
from guimem.routing.policy import SwitchMemPolicy
from guimem.routing.records import SampledPreference, StepRecords, collect_records, concat
from guimem.routing.router import Router


@dataclass(frozen=True)
class RecordSteps(ActorWork):
    """:func:`collect_records` as executor work (:class:`guimem.core.executor.Task`): each worker
    loads the actor once; a chunk is ``(seed, examples)`` and comes back as those steps' records (the
    seed travels with the chunk, so 06's two sets of steps, seeded apart, share the workers)."""

    actor: ActorSpec
    rules: tuple[tuple[str, MatchConfig], ...]
    preference: SampledPreference
    batch_size: int
    code: str = field(default_factory=code_fingerprint)  # the code the results belong to (checked by workers)
    result_types: ClassVar[tuple[type, ...]] = (StepRecords,)  # what a kept chunk's result is built of (core.resume)

    def run(self, policy: Any, chunk: tuple[int, Sequence[Any]]) -> StepRecords:
        seed, examples = chunk
        return collect_records(policy, examples, dict(self.rules), self.preference, seed, self.batch_size,
                               progress=False)


def record_steps(actor: ActorSpec, examples: Sequence[Any], rules: Mapping[str, MatchConfig],
                 preference: SampledPreference, seed: int = 0, executor: Executor | None = None,
                 chunk_batches: int = 4, cache: ChunkCache | None = None, progress: bool = True) -> StepRecords:
    """:func:`collect_records` with the actor ``actor`` names (``actor.batch_size`` prompts per forward
    pass), run by ``executor`` (default: this process) on chunks of ``chunk_batches`` forward batches;
    with ``cache`` each finished chunk is kept, and a run stopped midway resumes from those
    (:mod:`guimem.core.resume`).

    A chunk starts at a multiple of ``batch_size``, so every forward pass holds the same prompts as
    in one call over all the examples: the records are the same, array for array, wherever the
    chunks ran (batch composition moves float noise; sampling is seeded per step)."""
    if not examples:
        raise DataError("examples", "no steps to record")
    batch_size = actor.batch_size
    size = batch_size * chunk_batches
    chunks = [(seed, list(examples[lo:lo + size])) for lo in range(0, len(examples), size)]
    task = RecordSteps(actor, tuple(rules.items()), preference, batch_size)
    parts = []
    with progress_bar(total=len(examples), desc="layer analysis", disable=not progress) as bar:
        for part in cached_map(executor or LocalExecutor(), task, chunks, cache):
            parts.append(part)
            bar.update(len(part))
    return concat(parts)


@dataclass(frozen=True)
class SwitchMemRouting:
    """The routed policy of a closed-loop play (:class:`guimem.eval.jobs.Routing`): the actor routed
    by the router saved under ``<routers_dir>/<memory>``. The path is made absolute, for workers
    started elsewhere."""

    routers_dir: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "routers_dir", os.path.abspath(self.routers_dir))

    def policy(self, actor: Policy, memory: str) -> SwitchMemPolicy:
        return SwitchMemPolicy(actor, Router.load(Path(self.routers_dir) / memory))

    def fingerprint(self) -> str:
        return tree_digest(self.routers_dir)
