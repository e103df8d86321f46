"""What experience is worth in closed loop: the ceiling a phone the actor knows sets, and the oracle memory.

Two references beside the memories of :mod:`guimem.eval.jobs`' plays, on the same held-out tasks and
world seeds:

* **The training phones** (:func:`on_training_phones`): each replay played on a phone pretraining
  showed, with no memory — what the frozen actor can do where nothing is unfamiliar. The gap from
  there to the evaluation phone without memory is what experience of the evaluation phone can recover.
* **The oracle memory** (:func:`oracle_demonstrations`, :func:`play_oracle`): for each replay, a
  Subgoal-aware Memory Graph built from one clean expert demonstration of *that very task*, on its
  phone, in its world seed, cut at the world's true subgoal boundaries (with the pipeline's SMG
  settings). Retrieval by the current screen then returns the subgoal that starts on this screen
  in the true demonstration: the true next subgoal's own experience, as text or as an image. It
  bounds what a retriever can hand this actor; how much of the gap it closes says how well the actor
  reads experience at all.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from pathlib import Path
from typing import Mapping, Sequence

from guimem.core.data import Episode, Subgoal
from guimem.core.policy import Modality, Policy
from guimem.core.store import load_episodes, save_episodes
from guimem.eval.closed_loop import LoopStats, Replay, Trace, run_closed_loop
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import run_episode
from guimem.phone.world import World
from guimem.smg.judge import RuleJudge
from guimem.smg.memories import Memory, rebuild_like
from guimem.smg.reader import QueryVectors
from guimem.smg.segmenters import GroundTruthSegmenter

TRAINING_PHONES = "training phones"
"""The traces' memory name of the replays played on training phones, without memory."""
ORACLE = "oracle"
"""The traces' memory name of the replays played with the oracle memory."""


def on_training_phones(replays: Sequence[Replay], train_variants: Sequence[int]) -> list[Replay]:
    """Each replay on a training phone instead of its own: seed index ``i`` on the ``i``-th training
    phone (cycling), so each phone plays the same tasks in one world seed."""
    return [dataclasses.replace(r, variant=train_variants[r.run % len(train_variants)]) for r in replays]


def _key(replay: Replay) -> str:
    return f"{replay.episode}.run{replay.run}"


def oracle_demonstrations(replays: Sequence[Replay], world: WorldConfig, root: str | Path,
                          ) -> dict[str, tuple[Episode, list[Subgoal]]]:
    """A clean expert demonstration of every replay's task on its phone in its world seed (no wrong
    tap, no give-up, no wrong final state), saved as an episode store at ``root``, with its subgoals
    cut at the world's true boundaries and judged by the rule judge; by replay (``<episode>.run<i>``)."""
    clean = dataclasses.replace(world, p_wrong_tap=0.0)
    env = World(clean)
    images: dict[str, bytes] = {}
    episodes = [run_episode(env, r.task, r.seed, _key(r), images, clean, mode="clean", variant=r.variant)
                for r in replays]
    save_episodes(episodes, images, root, {"generator": "guimem.eval.oracle", "world": clean.to_dict()})
    saved = {e.id: e for e in load_episodes(root, verify_images=False)}  # screenshots as store paths
    segmenter = GroundTruthSegmenter(RuleJudge())
    return {_key(r): (saved[_key(r)], segmenter.segment(saved[_key(r)])) for r in replays}


def play_oracle(replays: Sequence[Replay], demonstrations: Mapping[str, tuple[Episode, list[Subgoal]]],
                like: Memory, root: str | Path, policy: Policy, world: WorldConfig, modality: Modality,
                history_len: int, k: int | None = None, stats: LoopStats | None = None) -> list[Trace]:
    """Every replay played reading its own oracle memory: a memory with the settings of ``like`` (the
    pipeline's SMG) built from its demonstration only (``root``: their store), shown as ``modality``."""
    vectors = QueryVectors(like.image_embedder)
    traces: list[Trace] = []
    screens: OrderedDict = OrderedDict()  # rendered screens, shared by the replays' worlds
    for replay in replays:
        episode, subgoals = demonstrations[_key(replay)]
        memory = rebuild_like(like, [episode], subgoals, root)
        traces += run_closed_loop(lambda: World(world, image_cache=screens), [replay], policy, memory, ORACLE,
                                  modality=modality, k=k, history_len=history_len, batch_size=0, progress=False,
                                  vectors=vectors, stats=stats)
    return [dataclasses.replace(t, memory=f"{ORACLE}/{modality}") for t in traces]


def wrong_done(traces: Sequence[Trace]) -> dict[str, float]:
    """Per memory name: the share of episodes that ended with ``done`` said while the task was not done."""
    by: dict[str, list[bool]] = {}
    for t in traces:
        by.setdefault(t.memory, []).append(t.ended == "done" and not t.success)
    return {name: sum(v) / len(v) for name, v in by.items()}
