"""SwitchMem along whole trajectories: the router's choices in step order, and the closed-loop conditions.

Routing statistics (dual-modality trajectories, switches, run lengths: ``routing.route_scores``) need
each trajectory's choices in step order. Offline they come from the router on every step of the
held-out demonstrations, grouped by episode; a sample of steps would join runs across the steps
left out, so it is refused. In closed loop, the fixed conditions no memory and text memory are
the ones ``05_closed_loop`` already played on the same tasks and world seeds: they are read back
from its traces, checked to be exactly those plays, and named by condition beside the new ones.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Mapping, Sequence

from guimem.core.data import DataError
from guimem.eval.closed_loop import Replay, Trace, load_traces
from guimem.routing.route_scores import route_records
from guimem.routing.records import StepRecords
from guimem.routing.router import Router

REUSED = (("none", "none"), ("text", "text"))  # (condition, modality) 05 plays: no memory, and the memory as text


def routed_trajectories(router: Router, records: StepRecords, where: str = "") -> list[list[bool]]:
    """The router's choice (True: image) at every step of each episode in ``records``, in step
    order, episodes in order of first appearance. Records that miss a step of an episode are a
    ``DataError`` naming ``where``: runs along a trajectory need every step."""
    _, image = route_records(router, records)
    by_episode: dict[str, list[tuple[int, bool]]] = {}
    for row, img in zip(records.rows, image):
        by_episode.setdefault(row["episode_id"], []).append((row["step"], bool(img)))
    if any([i for i, _ in sorted(steps)] != list(range(len(steps))) for steps in by_episode.values()):
        raise DataError("max_eval_steps", "the held-out records are a sample of steps; routing along "
                                          "trajectories needs every step (run 06_layer_analysis with 0)", where)
    return [[img for _, img in sorted(steps)] for steps in by_episode.values()]


def reused_traces(path: str | os.PathLike, memory: str, replays: Sequence[Replay]) -> dict[str, list[Trace]]:
    """05's traces at ``path`` of the conditions it plays too: ``none`` (no memory) and ``text``
    (``memory`` shown as text), each exactly on ``replays``' episodes and seeds, else a ``DataError``
    naming the file (the two stages were given different tasks or seeds)."""
    planned = sorted((r.episode, r.seed) for r in replays)
    earlier = load_traces(path)
    reused = {}
    for name, modality in REUSED:
        source = "none" if name == "none" else memory
        got = [t for t in earlier if t.memory == source and t.modality == modality]
        if sorted((t.episode, t.seed) for t in got) != planned:
            raise DataError("traces.jsonl", f"05_closed_loop did not play {source}/{modality} on this stage's tasks "
                                            "and seeds: give both stages the same seed, max_tasks and n_seeds",
                            str(path))
        reused[name] = got
    return reused


def condition_traces(reused: Mapping[str, Sequence[Trace]], played: Mapping[str, Sequence[Trace]]) -> list[Trace]:
    """Every condition's traces, each named by its condition (``Trace.memory``): the reused ones
    renamed, then the played ones, in the order of the two mappings."""
    return ([dataclasses.replace(t, memory=name) for name, got in reused.items() for t in got]
            + [t for got in played.values() for t in got])
