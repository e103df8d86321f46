"""The actor's closed-loop and step-scoring work as executor tasks (:mod:`guimem.core.executor`):
run in this process, on worker processes or on Ray, with the same results.

**Closed-loop episodes**: the actor plays replays of held-out tasks with a memory. A :class:`Play`
is one chunk: replays played with one memory shown one way, a whole condition (``batch_size`` 0)
or one of its lock-step batches. Every worker loads what :class:`PlayEpisodes` names once (the
actor, the memories and, for routed plays, the routed policies its ``routing`` builds), and a chunk
is one :func:`~guimem.eval.closed_loop.run_closed_loop` call, the same call a stage makes in
process; so traces are the same wherever the chunks ran::

    task = PlayEpisodes(ActorSpec("pretrained/actor"), world_config, "data/graph_build", ...)
    traces, work = play_all(task, condition_plays("smg", "smg", "text", replays), executor)

A chunk's memoised answers are its own (one ``run_closed_loop`` call): with ``batch_size`` 0 a
condition is one chunk; with lock-step batches, an input met again in a later batch is asked again,
in another forward batch, whose float noise may rarely change an action. So traces may depend on
``batch_size``, never on where the chunks ran.

**Step scores**: :func:`score_steps` runs :func:`~guimem.eval.step_table.step_table` on chunks of
whole forward batches, each worker loading the actor once.

The actor is named by a :class:`PolicySpec` (``guimem.actors.loading.ActorSpec``), and a routed
play's policy by a :class:`Routing` (SwitchMem's: ``guimem.routing.jobs.SwitchMemRouting``): both
are values a worker loads from, so this module knows policies only as :class:`~guimem.core.policy.Policy`.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, Sequence

import numpy as np

from guimem.core.data import Action, DataError
from guimem.core.executor import Executor, LocalExecutor
from guimem.core.policy import HISTORY_LEN, Modality, Policy
from guimem.core.progress import progress_bar
from guimem.core.resume import ChunkCache, cached_map, check_same_code, code_fingerprint, tree_digest
from guimem.eval.action_match import MatchConfig
from guimem.eval.closed_loop import LoopStats, Replay, Trace, TraceStep, run_closed_loop
from guimem.eval.step_table import StepHits, step_table
from guimem.phone.config import WorldConfig
from guimem.phone.world import World
from guimem.smg.memories import load_memories
from guimem.smg.reader import QueryVectors


class PolicySpec(Protocol):
    """A policy as a value: what a worker loads it from (``guimem.actors.loading.ActorSpec``)."""

    batch_size: int  # inputs per forward pass

    def load(self) -> Policy:
        """The policy, loaded."""
        ...

    def fingerprint(self) -> str | None:
        """A digest of what it loads (None: not known, so nothing it computed is kept)."""
        ...


class Routing(Protocol):
    """How a routed play's policy is made from the actor: a value workers load from."""

    def policy(self, actor: Policy, memory: str) -> Policy:
        """The actor routed for the saved memory ``memory``."""
        ...

    def fingerprint(self) -> str:
        """A digest of what it loads."""
        ...


class ActorWork:
    """What the tasks that run the actor on steps share (each a frozen dataclass with fields
    ``actor`` and ``code``): keyed by their parameters and the actor's files, and set up by loading
    the actor once per worker, after checking that the worker runs the code the work was made by."""

    actor: PolicySpec
    code: str

    def fingerprint(self) -> str | None:
        actor = self.actor.fingerprint()
        return None if actor is None else f"{self!r}|{actor}"

    def setup(self) -> Any:
        check_same_code(self.code)
        return self.actor.load()


# ----------------------------------------------------------------------------- step scores
@dataclass(frozen=True)
class ScoreSteps(ActorWork):
    """:func:`~guimem.eval.step_table.step_table` as executor work: each worker loads the actor once; a
    chunk is a run of consecutive examples and comes back as their table (positions within the chunk)."""

    actor: PolicySpec
    modalities: tuple[Modality, ...]
    match: MatchConfig
    code: str = field(default_factory=code_fingerprint)  # the code the results belong to (checked by workers)
    result_types: ClassVar[tuple[type, ...]] = (StepHits, Action)  # what a kept chunk's result is built of (core.resume)

    def run(self, policy: Any, chunk: Sequence[Any]) -> dict[Modality, StepHits]:
        return step_table(policy, chunk, self.modalities, self.match)


def score_steps(actor: PolicySpec, examples: Sequence[Any], modalities: Sequence[Modality], match: MatchConfig,
                executor: Executor | None = None, chunk_batches: int = 4,
                cache: ChunkCache | None = None) -> dict[Modality, StepHits]:
    """:func:`~guimem.eval.step_table.step_table` with the actor ``actor`` names, run by ``executor``
    (default: this process) on chunks of ``chunk_batches`` forward batches (``actor.batch_size``
    steps each); with ``cache`` each finished chunk is kept, and a run stopped midway resumes from those.

    Chunks are cut the same way wherever they run, so the table is too. Where every example carries
    every modality's memory (05_closed_loop's held-out steps do), a chunk starts at a multiple of the
    batch size and each forward pass holds the inputs it holds in one ``step_table`` call over all
    the examples: the same table, step for step. (Otherwise a modality's batches are formed within
    each chunk, which may move float noise.)"""
    if not examples:
        raise DataError("examples", "no steps to score")
    size = max(1, actor.batch_size) * chunk_batches
    starts = range(0, len(examples), size)
    task = ScoreSteps(actor, tuple(modalities), match)
    parts = list(cached_map(executor or LocalExecutor(), task, [list(examples[lo:lo + size]) for lo in starts], cache))
    return {m: StepHits(m, np.concatenate([p[m].index + lo for p, lo in zip(parts, starts)]).astype(int),
                        np.concatenate([p[m].step for p in parts]).astype(bool),
                        np.concatenate([p[m].type for p in parts]).astype(bool),
                        tuple(a for p in parts for a in p[m].actions))
            for m in modalities}


# ----------------------------------------------------------------------------- closed-loop episodes
@dataclass(frozen=True)
class Play:
    """One chunk of closed-loop work: ``replays`` played with ``memory`` shown as ``modality``."""

    name: str  # the traces' memory name: the condition ("smg", "none"; 09: "image", "switchmem")
    memory: str | None  # the saved memory read (None: no memory)
    modality: Modality
    replays: tuple[Replay, ...]
    routed: bool = False  # a routed policy chooses text or image per step (the memory is rendered both ways)

    def __post_init__(self) -> None:
        if self.routed and self.modality != "both":
            raise DataError("modality", f"a routed play renders the memory both ways, got {self.modality!r}")
        if self.memory is None and self.modality != "none":
            raise DataError("modality", f"a play without memory shows none, got {self.modality!r}")


def condition_plays(name: str, memory: str | None, modality: Modality, replays: Sequence[Replay],
                    batch_size: int = 0, routed: bool = False) -> list[Play]:
    """One condition's plays: every replay at once (``batch_size`` 0), or lock-step batches of that many."""
    if not replays:
        raise DataError("replays", f"no episodes to play for {name!r}")
    size = batch_size if batch_size > 0 else len(replays)
    return [Play(name, memory, modality, tuple(replays[lo:lo + size]), routed) for lo in range(0, len(replays), size)]


@dataclass(frozen=True)
class PlayEpisodes:
    """What a worker loads to play (:class:`guimem.core.executor.Task`): the actor, the world the
    replays run in, the saved memories ``memories`` of ``memories_dir`` and, for routed plays, the
    policies ``routing`` makes. Paths are made absolute, for workers started elsewhere."""

    actor: PolicySpec
    world: WorldConfig
    memories_dir: str
    memories: tuple[str, ...]  # the memories the plays read
    store_root: str  # the memory episodes' store (the screens the memories show)
    image_embedder: str = "efficientnet_lite0"
    text_embedder: str = "minilm"
    cache_dir: str = ""  # the content-hash embedding cache ("": none)
    routing: Routing | None = None  # routed plays: the actor routed per memory (None: no routed play)
    k: int | None = None  # anchors per query (None: each memory's own)
    history_len: int = HISTORY_LEN
    code: str = field(default_factory=code_fingerprint)  # the code the results belong to (checked by workers)
    result_types: ClassVar[tuple[type, ...]] = (Trace, TraceStep, Action, LoopStats)  # a kept play's result (core.resume)

    def __post_init__(self) -> None:
        for name in ("memories_dir", "store_root", "cache_dir"):
            value = getattr(self, name)
            if value:
                object.__setattr__(self, name, os.path.abspath(value))
        if self.image_embedder.startswith("hf:"):  # a local model folder
            object.__setattr__(self, "image_embedder", "hf:" + os.path.abspath(self.image_embedder[3:]))
        object.__setattr__(self, "memories", tuple(self.memories))

    def fingerprint(self) -> str | None:
        """Its parameters and a digest of what it loads: the actor, the memories (and the screen
        projection), the routed policies, and the memory store's files by size and time."""
        actor = self.actor.fingerprint()
        if actor is None:
            return None
        folder = Path(self.memories_dir)
        memories = tree_digest(*(folder / m for m in self.memories), folder / "projection", folder / ".projection.old")
        routing = self.routing.fingerprint() if self.routing is not None else "-"
        embedder = tree_digest(self.image_embedder[3:], contents=False) if self.image_embedder.startswith("hf:") else "-"
        return f"{self!r}|{actor}|{memories}|{routing}|{embedder}|{tree_digest(self.store_root, contents=False)}"

    def setup(self) -> "_Player":
        check_same_code(self.code)
        return _Player(self)

    def run(self, player: "_Player", play: Play) -> tuple[list[Trace], LoopStats]:
        return player.play(play)


class _Player:
    """A worker's loaded actor, memories and routed policies, and the memos its plays share (the
    retrieval embedding of each screen, the rendered screens): sharing them changes no result, only time."""

    def __init__(self, task: PlayEpisodes):
        self.task = task
        self.actor = task.actor.load()
        self.memories = load_memories(task.memories_dir, task.image_embedder, task.text_embedder,
                                      store_root=task.store_root, cache_dir=task.cache_dir or None,
                                      names=task.memories) if task.memories else {}
        first = next(iter(self.memories.values()), None)
        self.vectors = QueryVectors(first.image_embedder) if first is not None else None
        self.screens: OrderedDict = OrderedDict()
        self.routed: dict[str, Policy] = {}

    def policy(self, play: Play) -> Any:
        if not play.routed:
            return self.actor
        if play.memory not in self.routed:
            if self.task.routing is None:
                raise DataError("routing", f"the routed play {play.name!r} needs a routing")
            self.routed[play.memory] = self.task.routing.policy(self.actor, play.memory)
        return self.routed[play.memory]

    def play(self, play: Play) -> tuple[list[Trace], LoopStats]:
        if play.memory is not None and play.memory not in self.memories:
            raise DataError("memory", f"{play.memory!r} is not among the task's memories {list(self.task.memories)}")
        memory = self.memories[play.memory] if play.memory is not None else None
        work = LoopStats()
        traces = run_closed_loop(lambda: World(self.task.world, image_cache=self.screens), list(play.replays),
                                 self.policy(play), memory, play.name, modality=play.modality, k=self.task.k,
                                 history_len=self.task.history_len, batch_size=0, progress=False,
                                 vectors=self.vectors if memory is not None else None, stats=work,
                                 trace_shown=play.routed)
        return traces, work


def play_all(task: PlayEpisodes, plays: Sequence[Play], executor: Executor | None = None,
             cache: ChunkCache | None = None, progress: bool = True) -> tuple[list[Trace], dict[str, LoopStats]]:
    """Every play's traces, in the order of ``plays``, and each condition's work counts (as counted
    when its plays ran). With ``cache`` each finished play is kept, and a run stopped midway resumes
    from those (:mod:`guimem.core.resume`)."""
    traces: list[Trace] = []
    work: dict[str, LoopStats] = {}
    with progress_bar(total=sum(len(p.replays) for p in plays), desc="closed loop", disable=not progress) as bar:
        for i, (got, stats) in enumerate(cached_map(executor or LocalExecutor(), task, list(plays), cache)):
            play = plays[i]
            traces += got
            work.setdefault(play.name, LoopStats()).add(stats)
            bar.update(len(got))
    return traces, work
