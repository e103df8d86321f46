"""Closed-loop evaluation: a frozen actor plays tasks in an environment with a memory.

Episodes run in lock-step so that the actor sees one batch per tick: every tick, each
unfinished episode retrieves its memory for the current screen, the actor answers all of
them at once, and each environment takes its action. An episode ends when the actor says
``done`` or ``impossible`` or the environment's step budget runs out; success is the
environment's own check on its final state (for the built-in world: its hidden state).

Every step is traced (action, retrieved memory item ids, screen key) so that later
analyses (SwitchMem's routing statistics) can replay what the actor saw.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from guimem.core.data import Action, DataError, UIElement, as_object, get_field, nested_field
from guimem.core.env import Env, Task, WorldObservation
from guimem.core.io import read_jsonl, write_jsonl
from guimem.core.policy import HISTORY_LEN, Modality, Policy, PolicyInput
from guimem.core.progress import progress_bar
from guimem.core.store import read_manifest
from guimem.eval.action_match import paired_counts
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import holds_everywhere
from guimem.phone.tasks import task_from_dict
from guimem.phone.world import World
from guimem.smg.memories import Memory
from guimem.smg.reader import MemoryReader, QueryVectors

_SEED_STRIDE = 7919  # replay seed i of an episode = its own seed + i * stride (i = 0: the demonstration's own)


@dataclass(frozen=True)
class Replay:
    """One closed-loop episode to play: a held-out task in a world seeded by ``seed``."""

    episode: str  # id of the held-out episode whose task is replayed
    task: Task
    seed: int  # world seed (content, theme, shuffles, popups)
    run: int = 0  # seed index: success rates are averaged per run, spread taken over runs
    variant: int = 0  # the app variant the phone runs (the held-out episode's own)


NO_MEMORY = "none"  # the memory name of episodes played without one
ENDINGS: tuple[str, ...] = ("done", "impossible", "budget")  # how an episode ends


@dataclass(frozen=True)
class TraceStep:
    """One tick of one episode: what was retrieved and what the actor did."""

    screen_key: str  # content key of the screen the actor saw
    action: Action
    retrieved: tuple[str, ...]  # ids of the memory items shown (empty without memory)
    shown: str | None = None  # the modality the policy chose to show (a router's choice; None: not traced)

    def to_dict(self) -> dict[str, Any]:
        d = {"screen_key": self.screen_key, "action": self.action.to_dict(), "retrieved": list(self.retrieved)}
        if self.shown is not None:
            d["shown"] = self.shown
        return d

    @classmethod
    def from_dict(cls, d: Any) -> "TraceStep":
        d = as_object(d)
        retrieved = get_field(d, "retrieved", list)
        for i, item in enumerate(retrieved):
            if not isinstance(item, str):
                raise DataError(f"retrieved[{i}]", f"expected a memory item id, got {item!r:.60}")
        shown = d.get("shown")
        if shown is not None and shown not in ("none", "text", "image", "both"):
            raise DataError("shown", f"expected a modality, got {shown!r:.60}")
        return cls(get_field(d, "screen_key", str), nested_field("action", Action.from_dict, get_field(d, "action", dict)),
                   tuple(retrieved), shown)


@dataclass(frozen=True)
class Trace:
    """One closed-loop episode."""

    episode: str  # id of the held-out episode whose task and seed were replayed
    memory: str  # memory name ("none" for no memory)
    modality: str  # how the memory was shown
    seed: int  # world seed
    run: int  # seed index (0, 1, 2, ...)
    goal: str
    steps: tuple[TraceStep, ...]
    ended: str  # done, impossible or budget
    success: bool

    def to_dict(self) -> dict[str, Any]:
        d = {f: getattr(self, f) for f in ("episode", "memory", "modality", "seed", "run", "goal", "ended", "success")}
        d["steps"] = [s.to_dict() for s in self.steps]  # (dataclasses.asdict would deep-copy every step first)
        return d

    @classmethod
    def from_dict(cls, d: Any) -> "Trace":
        """A trace written by :meth:`to_dict`; a bad field is a :class:`DataError` naming it."""
        d = as_object(d)
        steps = get_field(d, "steps", list)
        ended = get_field(d, "ended", str)
        if ended not in ENDINGS:
            raise DataError("ended", f"expected one of {ENDINGS}, got {ended!r:.60}")
        return cls(get_field(d, "episode", str), get_field(d, "memory", str), get_field(d, "modality", str),
                   get_field(d, "seed", int), get_field(d, "run", int), get_field(d, "goal", str),
                   tuple(nested_field(f"steps[{i}]", TraceStep.from_dict, s) for i, s in enumerate(steps)),
                   ended, get_field(d, "success", bool))


@dataclass
class _Running:
    """Book-keeping of one episode while it runs."""

    episode: str
    env: Env | None  # None once the episode has ended
    goal: str
    obs: WorldObservation
    history: list[Action] = field(default_factory=list)
    screens: list[tuple[UIElement, ...]] = field(default_factory=list)  # the UI tree each history action was taken on
    steps: list[TraceStep] = field(default_factory=list)
    ended: str | None = None
    success: bool = False


def pick_tasks(episodes: Sequence[Any], max_tasks: int, seed: int) -> list[Any]:
    """``max_tasks`` of ``episodes`` drawn at random by ``seed`` (all when 0 or more than there are),
    in their original order. A store may be ordered by template (unseen ones first), so a prefix
    would not be a fair sample."""
    if max_tasks <= 0 or max_tasks >= len(episodes):
        return list(episodes)
    keep = np.sort(np.random.default_rng(seed).choice(len(episodes), max_tasks, replace=False))
    return [episodes[i] for i in keep]


def replay_tasks(episodes: Sequence[Any], n_seeds: int) -> list[Replay]:
    """A :class:`Replay` of every held-out episode for each seed index ``0 .. n_seeds - 1``.

    Seed index 0 replays the demonstration's own world seed (same content, theme, shuffles and
    popup schedule); the others give the same task in a differently shuffled, themed and
    interrupted phone. Every replay keeps its episode's app variant. Ordered by seed index, then by episode.
    """
    out = []
    for i in range(n_seeds):
        for ep in episodes:
            prov = ep.provenance
            if "task" not in prov or "seed" not in prov:
                raise DataError("provenance.task", f"episode {ep.id!r} records no task and seed to replay")
            variant = prov.get("variant", 0)
            if not isinstance(variant, int) or isinstance(variant, bool) or variant < 0:
                raise DataError("provenance.variant", f"episode {ep.id!r}: expected a variant index, got {variant!r:.40}")
            out.append(Replay(ep.id, task_from_dict(prov["task"]), (int(prov["seed"]) + i * _SEED_STRIDE) % 2**31, i,
                              variant))
    return out


@dataclass
class LoopStats:
    """Work counts of :func:`run_closed_loop` (deterministic; no timings)."""

    steps: int = 0  # environment steps taken
    actor_inputs: int = 0  # distinct inputs the actor answered (the rest were answered before)
    retrievals: int = 0  # distinct (goal, screen) retrievals
    renders: int = 0  # distinct renderings of retrieved items
    embedded: int = 0  # screens newly embedded for retrieval

    def add(self, other: "LoopStats") -> None:
        for f in self.__dataclass_fields__:
            setattr(self, f, getattr(self, f) + getattr(other, f))


def input_key(obs: WorldObservation, goal: str, history: Sequence[Action], history_len: int,
              screens: Sequence[tuple[UIElement, ...]] = ()) -> tuple:
    """Everything the actor reads at one step, as a hashable key: goal, screen (pixels and UI
    tree) and the visible history (its actions and the trees they were taken on); the memory shown
    follows from goal and screen."""
    recent = slice(-history_len, None) if history_len else slice(0, 0)
    return (goal, obs.key, obs.elements, tuple(history[recent]), tuple(screens[recent]))


def run_closed_loop(make_env: Callable[[], Env], tasks: Sequence[Replay], policy: Policy,
                    memory: Memory | None, memory_name: str, modality: Modality = "text", k: int | None = 1,
                    history_len: int = HISTORY_LEN, batch_size: int = 32, max_ticks: int = 1000,
                    progress: bool = True, vectors: QueryVectors | None = None, memo: bool = True,
                    stats: LoopStats | None = None, trace_shown: bool = False) -> list[Trace]:
    """Play every replay with ``policy`` reading ``memory``; return the traces.

    Episodes run ``batch_size`` at a time in lock-step (0: all at once); results are in the order
    of ``tasks``. ``max_ticks`` is a safety net above the environments' own step budgets.

    ``policy`` must be deterministic (a frozen actor with argmax decoding): with ``memo`` an
    input it has answered before (same goal, screen, UI tree and visible history, hence the same
    memory) gets the same action without asking again, within this call. Stuck episodes (the
    same tap on the same screen until the budget) then cost environment steps only. ``vectors``
    (a :class:`QueryVectors` over the memory's image embedder, shareable across memories) makes
    retrieval embed each distinct screen once, in one batch per tick; by default one is made when
    the memory has an ``image_embedder``. ``stats`` accumulates work counts. With ``trace_shown``
    each step also records the modality the policy reports it was shown (``info["modality"]``: a
    router such as :class:`guimem.routing.policy.SwitchMemPolicy` chooses it per step).
    """
    if vectors is None and memory is not None and modality != "none" and hasattr(memory, "image_embedder"):
        vectors = QueryVectors(memory.image_embedder)
    reader = MemoryReader(memory, modality, k, vectors)
    reads_screens = bool(getattr(policy, "reads_history_screens", False))  # else the same input whatever the screens
    answers: dict[tuple, tuple[Action, str | None]] = {}  # input key -> the policy's action, the modality shown
    counts = LoopStats()
    n_vectors = len(vectors.vectors) if vectors is not None else 0
    traces: list[Trace] = []
    bar = progress_bar(total=len(tasks), desc=f"closed loop [{memory_name}/{modality}]", disable=not progress)
    batch_size = batch_size if batch_size > 0 else max(1, len(tasks))
    for start in range(0, len(tasks), batch_size):
        batch = tasks[start:start + batch_size]
        running = []
        for replay in batch:
            env = make_env()
            running.append(_Running(replay.episode, env, replay.task.goal, env.reset(replay.task, replay.seed, replay.variant)))
        for _ in range(max_ticks):
            active = [r for r in running if r.ended is None]
            if not active:
                break
            keys = [input_key(r.obs, r.goal, r.history, history_len, r.screens if reads_screens else ())
                    if memo else i for i, r in enumerate(active)]
            reader.prepare((r.obs, r.goal) for r in active)
            reads = [reader.read(r.obs, r.goal) for r in active]
            new: dict[Any, PolicyInput] = {}
            for key, r, (text, image, _) in zip(keys, active, reads):
                if key not in answers and key not in new:
                    recent = slice(-history_len, None) if history_len else slice(0, 0)
                    new[key] = PolicyInput(r.obs.image, r.obs.elements, r.goal, tuple(r.history[recent]), text, image,
                                           tuple(r.screens[recent]))
            if new:
                outputs = policy.act(list(new.values()))
                answers.update(zip(new, ((out.action, out.info.get("modality") if trace_shown else None)
                                         for out in outputs)))
                counts.actor_inputs += len(new)
            for key, r, (_, _, ids) in zip(keys, active, reads):
                action, shown = answers[key]
                r.steps.append(TraceStep(r.obs.key, action, ids, shown))
                r.history.append(action)
                r.screens.append(r.obs.elements)
                r.obs, done, info = r.env.step(action)
                counts.steps += 1
                if done:
                    r.ended, r.success = info["ended"], bool(info["success"])
                    r.env = None  # its rendered screens can go
            if not memo:
                answers.clear()
        else:
            raise RuntimeError(f"closed loop exceeded max_ticks={max_ticks}; does the environment have a budget?")
        traces += [Trace(r.episode, memory_name, modality, replay.seed, replay.run, r.goal, tuple(r.steps), r.ended,
                         r.success) for r, replay in zip(running, batch)]
        bar.update(len(running))
    bar.close()
    counts.retrievals, counts.renders = reader.retrievals, reader.renders
    counts.embedded = (len(vectors.vectors) - n_vectors) if vectors is not None else 0
    if stats is not None:
        stats.add(counts)
    return traces


def replay_world_config(store_root: str | os.PathLike, max_steps: int | None = None) -> WorldConfig:
    """The world the episodes of a store were recorded in (its manifest's ``meta.world``), with
    the closed loop's own step budget ``max_steps`` when given: seed 0 of a replay then shows the
    actor exactly the demonstration's phone (theme, shuffles, popup schedule)."""
    path = Path(store_root) / "manifest.json"
    meta = read_manifest(store_root).get("meta") or {}
    if not isinstance(meta.get("world"), Mapping):
        raise DataError("meta.world", "the store records no world config to replay its tasks in", str(path))
    config = WorldConfig.from_dict(meta["world"], str(path))
    return dataclasses.replace(config, max_steps=max_steps) if max_steps is not None else config


NO_ENVIRONMENT = ("these are recorded runs, not the world's: there is no environment (phone, emulator) to replay "
                  "their tasks in, so the closed loop is skipped")
"""What a closed-loop stage says when its episodes are recorded runs."""


def replay_world(store_root: str | os.PathLike, max_steps: int | None = None) -> WorldConfig | None:
    """:func:`replay_world_config`, or None for a store of recorded runs (an import: its manifest
    records where it came from, ``meta.recorded``, and no world): its tasks have no environment to be
    replayed in. A store that is neither is refused as :func:`replay_world_config` refuses it."""
    meta = read_manifest(store_root).get("meta") or {}
    if "world" not in meta and isinstance(meta.get("recorded"), Mapping):
        return None
    return replay_world_config(store_root, max_steps)


def success_table(traces: Iterable[Trace]) -> dict[str, dict[str, Any]]:
    """Per memory: success rate (%) per run (seed index), its mean and sample standard deviation over runs."""
    by: dict[str, dict[int, list[bool]]] = {}
    for t in traces:
        by.setdefault(t.memory, {}).setdefault(t.run, []).append(t.success)
    table = {}
    for name, seeds in by.items():
        rates = [100.0 * float(np.mean(v)) for _, v in sorted(seeds.items())]
        table[name] = {"per_seed": rates, "mean": float(np.mean(rates)),
                       "std": float(np.std(rates, ddof=1)) if len(rates) > 1 else 0.0,
                       "episodes": sum(len(v) for v in seeds.values())}
    return table


def success_by_need(traces: Iterable[Trace], replays: Sequence[Any], world: WorldConfig
                    ) -> tuple[float, dict[str, dict[str, Any]]]:
    """Which replayed episodes need experience of this phone, and each memory's success on each kind:
    an episode (task x world seed) whose expert path holds on every variant
    (:func:`guimem.phone.demonstrator.holds_everywhere`) is ``holds_everywhere``, the others
    ``needs_experience``. Returns the first kind's share of the episodes and
    :func:`success_by_group` by kind."""
    planner = World(world, render=False)
    need = {(r.episode, r.seed): "holds_everywhere" if holds_everywhere(planner, (r.task, r.variant), r.seed)
            else "needs_experience" for r in replays}
    share = sum(v == "holds_everywhere" for v in need.values()) / len(need)
    return share, success_by_group(traces, need)


def success_by_group(traces: Iterable[Trace], group_of: Mapping[tuple[str, int], str]) -> dict[str, dict[str, Any]]:
    """Per memory and group of episodes: episodes, successes and success rate (%).

    ``group_of`` names the group of each played episode by ``(episode, world seed)`` (a task's need
    for experience can depend on the world seed, which shuffles the phone); a trace with no group is
    a :class:`DataError`, so every episode is counted once.
    """
    out: dict[str, dict[str, Any]] = {}
    for t in traces:
        group = group_of.get((t.episode, t.seed))
        if group is None:
            raise DataError("episode", f"no group for episode {t.episode!r} at world seed {t.seed}")
        cell = out.setdefault(t.memory, {}).setdefault(group, {"episodes": 0, "successes": 0})
        cell["episodes"] += 1
        cell["successes"] += int(t.success)
    for groups in out.values():
        for cell in groups.values():
            cell["success_rate"] = round(100.0 * cell["successes"] / cell["episodes"], 2)
    return {name: dict(sorted(groups.items())) for name, groups in out.items()}


def longest_stall(trace: Trace) -> int:
    """The most consecutive steps at which the actor saw the same screen: its actions in between
    changed nothing visible (1 when every action changed the screen; 0 for an empty trace)."""
    best = run = 0
    previous = None
    for step in trace.steps:
        run = run + 1 if step.screen_key == previous else 1
        previous = step.screen_key
        best = max(best, run)
    return best


def stalled_share(traces: Iterable[Trace], min_steps: int = 5) -> dict[str, float]:
    """Per memory: the share of episodes in which the actor saw one screen for at least
    ``min_steps`` steps in a row — it kept acting without changing anything, a state the
    demonstrations never show it how to leave."""
    by: dict[str, list[bool]] = {}
    for t in traces:
        by.setdefault(t.memory, []).append(longest_stall(t) >= min_steps)
    return {name: float(np.mean(flags)) for name, flags in by.items()}


def save_traces(path: str | os.PathLike, traces: Sequence[Trace]) -> Path:
    """Write traces as JSON lines, atomically."""
    return write_jsonl(path, (t.to_dict() for t in traces))


def load_traces(path: str | os.PathLike) -> list[Trace]:
    """Read traces written by :func:`save_traces`; errors name the file, line and field."""
    traces = []
    for lineno, d in read_jsonl(path):
        try:
            traces.append(Trace.from_dict(d))
        except DataError as err:
            raise err.at(f"{path}, line {lineno}") from None
    return traces


def paired_success(traces: Iterable[Trace], memory: str, reference: str = NO_MEMORY) -> dict[str, Any]:
    """The paired test of a success-rate difference: over the episodes (task x world seed) both
    ``memory`` and ``reference`` played, how many only ``memory`` completed (``fixed``) and how many
    only ``reference`` did (``broken``), with the exact sign test's p-value on those discordant pairs."""
    traces = list(traces)
    base = {(t.episode, t.run): t.success for t in traces if t.memory == reference}
    pairs = [(t.success, base[(t.episode, t.run)]) for t in traces
             if t.memory == memory and (t.episode, t.run) in base]
    if not pairs:
        raise DataError("memory", f"no episode played with both {memory!r} and {reference!r}")
    hits, ref = np.array([p[0] for p in pairs], dtype=bool), np.array([p[1] for p in pairs], dtype=bool)
    return {"pairs": len(pairs), **paired_counts(hits, ref)}
