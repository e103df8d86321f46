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

import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

import numpy as np
from tqdm.auto import tqdm

from guimem.data import Action, DataError
from guimem.policy import Modality, Policy, PolicyInput
from guimem.world import Env, Task, WorldObservation

PAPER_SR: dict[str, float] = {"none": 34.19, "flat": 30.77, "action_graph": 38.46, "task_graph": 36.75, "smg": 45.30}
"""The SMG paper's success rates (%), SPA-Bench subset, Qwen3-VL-8B actor."""

_SEED_STRIDE = 7919  # replay seed i of an episode = its own seed + i * stride (i = 0: the demonstration's own)


class Memory(Protocol):
    """What the closed loop needs of a memory (see :mod:`guimem.memories`)."""

    def retrieve(self, screenshot, goal: str, k: int = 1): ...

    def render_text(self, retrieved) -> str: ...

    def render_image(self, retrieved): ...


@dataclass(frozen=True)
class Replay:
    """One closed-loop episode to play: a held-out task in a world seeded by ``seed``."""

    episode: str  # id of the held-out episode whose task is replayed
    task: Task
    seed: int  # world seed (content, theme, shuffles, popups)
    run: int = 0  # seed index: success rates are averaged per run, spread taken over runs


@dataclass(frozen=True)
class TraceStep:
    """One tick of one episode: what was retrieved and what the actor did."""

    screen_key: str  # content key of the screen the actor saw
    action: Action
    retrieved: tuple[str, ...]  # ids of the memory items shown (empty without memory)

    def to_dict(self) -> dict[str, Any]:
        return {"screen_key": self.screen_key, "action": self.action.to_dict(), "retrieved": list(self.retrieved)}


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
        d = asdict(self)
        d["steps"] = [s.to_dict() for s in self.steps]
        return d


@dataclass
class _Running:
    """Book-keeping of one episode while it runs."""

    episode: str
    env: Env
    goal: str
    obs: WorldObservation
    history: list[Action] = field(default_factory=list)
    steps: list[TraceStep] = field(default_factory=list)
    ended: str | None = None
    success: bool = False


def memory_input(obs: WorldObservation, goal: str, history: Sequence[Action], memory: Memory | None,
                 modality: Modality, k: int, history_len: int) -> tuple[PolicyInput, tuple[str, ...]]:
    """The actor's input for one screen: memory retrieved for it and shown in ``modality``."""
    text = image = None
    ids: tuple[str, ...] = ()
    if memory is not None and modality != "none":
        retrieved = memory.retrieve(obs.image, goal, k)
        ids = tuple(item.id for item in retrieved.items)
        if modality in ("text", "both"):
            text = memory.render_text(retrieved)
        if modality in ("image", "both"):
            image = memory.render_image(retrieved)
    inputs = PolicyInput(obs.image, obs.elements, goal, tuple(history[-history_len:]) if history_len else (),
                         text, image)
    return inputs, ids


def replay_tasks(episodes: Sequence[Any], n_seeds: int) -> list[Replay]:
    """A :class:`Replay` of every held-out episode for each seed index ``0 .. n_seeds - 1``.

    Seed index 0 replays the demonstration's own world seed (same content, theme, shuffles and
    popup schedule); the others give the same task in a differently shuffled, themed and
    interrupted phone. Ordered by seed index, then by episode.
    """
    out = []
    for i in range(n_seeds):
        for ep in episodes:
            prov = ep.provenance
            if "task" not in prov or "seed" not in prov:
                raise DataError("provenance.task", f"episode {ep.id!r} records no task and seed to replay")
            out.append(Replay(ep.id, Task.from_dict(prov["task"]), (int(prov["seed"]) + i * _SEED_STRIDE) % 2**31, i))
    return out


def run_closed_loop(make_env: Callable[[], Env], tasks: Sequence[Replay], policy: Policy,
                    memory: Memory | None, memory_name: str, modality: Modality = "text", k: int = 1,
                    history_len: int = 4, batch_size: int = 32, max_ticks: int = 1000,
                    progress: bool = True) -> list[Trace]:
    """Play every replay with ``policy`` reading ``memory``; return the traces.

    Episodes run ``batch_size`` at a time in lock-step; results are in the order of ``tasks``.
    ``max_ticks`` is a safety net above the environments' own step budgets.
    """
    traces: list[Trace] = []
    bar = tqdm(total=len(tasks), desc=f"closed loop [{memory_name}/{modality}]", disable=not progress)
    for start in range(0, len(tasks), batch_size):
        batch = tasks[start:start + batch_size]
        running = []
        for replay in batch:
            env = make_env()
            running.append(_Running(replay.episode, env, replay.task.goal, env.reset(replay.task, replay.seed)))
        for _ in range(max_ticks):
            active = [r for r in running if r.ended is None]
            if not active:
                break
            prepared = [memory_input(r.obs, r.goal, r.history, memory, modality, k, history_len) for r in active]
            outputs = policy.act([p[0] for p in prepared])
            for r, (_, ids), out in zip(active, prepared, outputs):
                r.steps.append(TraceStep(r.obs.key, out.action, ids))
                r.history.append(out.action)
                r.obs, done, info = r.env.step(out.action)
                if done:
                    r.ended, r.success = info["ended"], bool(info["success"])
        else:
            raise RuntimeError(f"closed loop exceeded max_ticks={max_ticks}; does the environment have a budget?")
        traces += [Trace(r.episode, memory_name, modality, replay.seed, replay.run, r.goal, tuple(r.steps), r.ended,
                         r.success) for r, replay in zip(running, batch)]
        bar.update(len(running))
    bar.close()
    return traces


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


def save_traces(path: str | os.PathLike, traces: Sequence[Trace]) -> None:
    """Write traces as JSON lines, atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            for t in traces:
                f.write(json.dumps(t.to_dict(), sort_keys=True) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_traces(path: str | os.PathLike) -> list[Trace]:
    """Read traces written by :func:`save_traces`; errors name the file, line and field."""
    traces = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        try:
            d = json.loads(line)
            steps = tuple(TraceStep(s["screen_key"], Action.from_dict(s["action"]), tuple(s["retrieved"]))
                          for s in d["steps"])
            traces.append(Trace(d["episode"], d["memory"], d["modality"], int(d["seed"]), int(d["run"]), d["goal"], steps,
                                d["ended"], bool(d["success"])))
        except json.JSONDecodeError as err:
            raise DataError(f"line {n}", f"malformed JSON: {err.msg}", str(path)) from None
        except KeyError as err:
            raise DataError(f"line {n}.{err.args[0]}", "missing", str(path)) from None
        except DataError as err:
            raise err.at(str(path), f"line {n}") from None
    return traces


def markdown_table(table: Mapping[str, Mapping[str, Any]], paper: Mapping[str, float], order: Sequence[str],
                   labels: Mapping[str, str]) -> str:
    """The SMG table as markdown: SR mean ± std over seeds here, beside the paper's SR."""
    lines = ["| memory | SR here (%) | seeds | paper SR (%) |", "| --- | ---: | ---: | ---: |"]
    for name in order:
        row = table.get(name)
        here = f"{row['mean']:.1f} ± {row['std']:.1f}" if row else "—"
        n = len(row["per_seed"]) if row else 0
        ref = paper.get(name, math.nan)
        lines.append(f"| {labels.get(name, name)} | {here} | {n} | {'—' if math.isnan(ref) else f'{ref:.2f}'} |")
    return "\n".join(lines) + "\n"
