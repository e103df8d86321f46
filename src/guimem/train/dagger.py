"""DAgger: the actor plays training tasks itself, and the expert labels every state it reaches.

Behaviour cloning only ever shows the actor states the demonstrator reached. Once the actor errs
it is somewhere no example showed it, and it rarely finds its way back (covariate shift). DAgger
(Ross et al., 2011) closes that gap: roll the current actor out, ask the expert
(:class:`guimem.phone.expert.Expert`, right from any state) what it should have done at every
state it visited, add those examples to the training set, and train on.

:func:`dagger_examples` runs the rollouts in lock-step (per tick, one call embedding the new screens
and one batched actor call), each on its task's own app variant and world seed, reading the memory
it is given in the modality drawn for it, through the same :class:`~guimem.smg.reader.MemoryReader`
as the closed loop; every
visited state becomes an :class:`~guimem.train.examples.ActorExample` carrying *both* memory
renderings (training redraws the modality every epoch) and the expert's action as its target.
:func:`plan_rollouts` draws a round's rollouts, and :func:`run_dagger` alternates rounds of
rollouts with training on every example so far.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Hashable, Mapping, Sequence

import numpy as np

from guimem.core.data import Action, UIElement
from guimem.core.policy import MODALITIES, Modality, Policy, PolicyInput
from guimem.core.progress import progress_bar
from guimem.eval.closed_loop import Replay, pick_tasks, replay_tasks
from guimem.phone.config import WorldConfig
from guimem.phone.expert import Expert
from guimem.phone.toolkit import stable_int
from guimem.phone.world import World
from guimem.smg.memories import Memory
from guimem.smg.reader import MemoryReader, QueryVectors
from guimem.train.examples import ActorExample


@dataclass(frozen=True)
class Rollout:
    """One DAgger rollout: a training task replayed in a fresh world seed, with the memory it reads."""

    replay: Replay
    memory: Memory | None = None  # None: no memory
    memory_kind: str | None = None  # its name, recorded on the examples
    modality: Modality = "none"  # what the actor is shown while it plays


@dataclass
class DaggerStats:
    """What a round of rollouts did: episodes, states labelled, how the actor's episodes ended."""

    episodes: int = 0
    states: int = 0
    kept: int = 0  # examples kept (a state already labelled for the same prompt is kept once)
    success: int = 0
    disagreements: int = 0  # states where the actor's action was not the expert's type
    ended: dict[str, int] = field(default_factory=dict)
    labels: dict[str, int] = field(default_factory=dict)  # the kept examples' expert action types
    kept_after_first_disagreement: int = 0  # kept examples of states after the actor's first wrong action type

    def to_dict(self) -> dict:
        return {"episodes": self.episodes, "states": self.states, "kept": self.kept, "success": self.success,
                "success_rate": self.success / self.episodes if self.episodes else 0.0,
                "type_disagreement_rate": self.disagreements / self.states if self.states else 0.0,
                "ended": dict(sorted(self.ended.items())), "labels": dict(sorted(self.labels.items())),
                "kept_after_first_disagreement": self.kept_after_first_disagreement}


@dataclass
class _Live:
    rollout: Rollout
    world: World
    teacher: Expert
    obs: object
    history: list[Action] = field(default_factory=list)
    screens: list[tuple[UIElement, ...]] = field(default_factory=list)  # the UI tree each history action was taken on
    strayed: bool = False  # the actor has taken another action type than the expert's in this rollout


def dagger_examples(policy: Policy, rollouts: Sequence[Rollout], world_config: WorldConfig, max_history: int,
                    seed: int, progress: bool = True, beta: float = 0.0) -> tuple[list[ActorExample], DaggerStats]:
    """Play every rollout with ``policy`` and label each state it visits with the expert's action.

    ``beta`` is DAgger's mixing (Ross et al. 2011, the policy ``beta * expert + (1 - beta) *
    actor``): at each step the expert's action is the one carried out with probability ``beta``,
    so the states labelled are the actor's detours near the expert's path rather than the loops it
    falls into once lost (0: the actor alone). Episodes run in lock-step until each ends (``done``,
    ``impossible`` or the world's step budget). Deterministic for a deterministic policy and ``seed``.
    """
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta: the expert's share of the actions carried out is in [0, 1], got {beta!r}")
    rng = random.Random(stable_int("dagger", seed))
    stats = DaggerStats(episodes=len(rollouts))
    live = []
    for r in rollouts:
        world = World(world_config)
        obs = world.reset(r.replay.task, r.replay.seed, r.replay.variant)
        live.append(_Live(r, world, Expert(world, max_repeats=None), obs))
    readers = {id(r.memory): MemoryReader(r.memory) for r in rollouts if r.memory is not None}
    queries = {id(r.memory.image_embedder): QueryVectors(r.memory.image_embedder) for r in rollouts
               if r.memory is not None}  # per screen embedder: each tick's new screens in one call
    examples: list[ActorExample] = []
    seen: set[tuple] = set()
    reads_screens = bool(getattr(policy, "reads_history_screens", False))
    bar = progress_bar(total=len(live), desc="dagger rollouts", unit="ep", disable=not progress)
    while live:
        for embedder, vectors in queries.items():
            vectors.add(lv.obs for lv in live
                        if lv.rollout.memory is not None and id(lv.rollout.memory.image_embedder) == embedder)
        inputs, shown = [], []
        for lv in live:
            recent = slice(-max_history, None) if max_history else slice(0, 0)
            inp = PolicyInput(lv.obs.image, lv.obs.elements, lv.rollout.replay.task.goal,
                              tuple(lv.history[recent]), history_screens=tuple(lv.screens[recent]))
            if lv.rollout.memory is not None:
                query = queries[id(lv.rollout.memory.image_embedder)][lv.obs.key]
                inp = readers[id(lv.rollout.memory)].show(inp, query)
            inputs.append(inp)
            shown.append(inp.with_modality(lv.rollout.modality))
        answers = [out.action for out in policy.act(shown)]
        still = []
        for lv, inp, action in zip(live, inputs, answers):
            label = lv.teacher.act(lv.world, rng)[0]
            stats.states += 1
            stats.disagreements += action.type != label.type
            key = (lv.rollout.replay.task.goal, lv.obs.key, inp.history, lv.rollout.memory_kind,
                   inp.history_screens if reads_screens else ())  # an example per input the policy tells apart
            if key not in seen:
                seen.add(key)
                examples.append(ActorExample(inp, label, lv.rollout.replay.episode, len(lv.history),
                                             lv.rollout.memory_kind))
                stats.labels[label.type] = stats.labels.get(label.type, 0) + 1
                stats.kept_after_first_disagreement += lv.strayed
            lv.strayed = lv.strayed or action.type != label.type
            if beta > 0.0 and rng.random() < beta:  # (no draw at 0: the actor-only rollouts stay as they were)
                action = label
            lv.history.append(action)
            lv.screens.append(lv.obs.elements)
            lv.obs, done, info = lv.world.step(action)
            if done:
                stats.success += bool(info["success"])
                stats.ended[info["ended"]] = stats.ended.get(info["ended"], 0) + 1
                bar.update(1)
            else:
                still.append(lv)
        live = still
    bar.close()
    stats.kept = len(examples)
    return examples, stats


def plan_rollouts(episodes: Sequence, folds: Mapping[str, Hashable], fold_memories: Mapping[Hashable, Mapping[str, Memory]],
                  n: int, seed: int, modality_weights: Sequence[float], run: int = 1) -> list[Rollout]:
    """``n`` rollouts of the tasks of ``episodes`` (drawn by ``seed``), each in a fresh world seed
    (replay index ``run``) on its episode's variant, reading a memory of its episode's cell (``folds``
    maps an episode id to it: :func:`guimem.train.folds.fold_memories`; a kind drawn at random) in a
    modality drawn by ``modality_weights`` (none/text/image/both)."""
    rng = np.random.default_rng(seed)
    picked = pick_tasks(list(episodes), n, seed)
    replays = {r.episode: r for r in replay_tasks(picked, run + 1) if r.run == run}
    weights = np.asarray(modality_weights, dtype=float)
    if weights.shape != (len(MODALITIES),) or (weights < 0).any() or weights.sum() <= 0:
        raise ValueError(f"modality_weights: expected {len(MODALITIES)} non-negative odds, not all 0, got {list(modality_weights)}")
    out = []
    for ep in picked:
        memories = fold_memories[folds[ep.id]]
        kind = sorted(memories)[int(rng.integers(len(memories)))]
        modality = MODALITIES[int(rng.choice(len(MODALITIES), p=weights / weights.sum()))]
        out.append(Rollout(replays[ep.id], memories[kind], kind, modality))
    return out


Fit = Callable[[list[ActorExample], int, Policy], Policy]
"""``fit(examples, round, policy)``: ``policy`` trained on, from where it stands, over ``examples``
after DAgger round ``round`` (0-based)."""


def run_dagger(policy: Policy, examples: Sequence[ActorExample], fit: Fit, episodes: Sequence,
               folds: tuple[Mapping[str, Hashable], Mapping[Hashable, Mapping[str, Memory]]], world_config: WorldConfig,
               rounds: int, tasks: int, seed: int, modality_weights: Sequence[float], max_history: int,
               progress: bool = True, beta: float = 0.0) -> tuple[Policy, list[ActorExample], list[dict]]:
    """``rounds`` rounds of DAgger: in round ``r``, ``policy`` plays ``tasks`` tasks of ``episodes``
    (:func:`plan_rollouts` with seed ``seed + r`` and replay index ``r + 1``, reading the memories of
    ``folds``: :func:`guimem.train.folds.fold_memories`), the expert labels every state it visits
    (:func:`dagger_examples`, the expert carrying out a ``beta`` share of the actions), and ``fit``
    trains it on over all examples so far. Returns the last
    policy, every example (``examples`` first) and each round's :meth:`DaggerStats.to_dict`."""
    examples, stats = list(examples), []
    for r in range(rounds):
        rollouts = plan_rollouts(episodes, *folds, tasks, seed + r, modality_weights, run=r + 1)
        new, round_stats = dagger_examples(policy, rollouts, world_config, max_history, seed + r, progress, beta)
        examples = examples + new
        stats.append(round_stats.to_dict())
        policy = fit(examples, r, policy)
    return policy, examples, stats
