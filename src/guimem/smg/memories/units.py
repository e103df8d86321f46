"""What a memory stores of an episode: its units, and the renderable item of each.

A unit is a :class:`~guimem.core.data.Subgoal`: the segmentation's subgoals (SMG, Flat), each single
step (Action-Graph, :func:`step_units`) or the whole trajectory (Task-Graph, :func:`task_unit`).
Success labels come from the segmentation's judge (a step inherits its subgoal's label, a
trajectory its last subgoal's), never from the world's ground truth.
"""

from __future__ import annotations

from typing import Sequence

from guimem.core.data import DataError, Episode, Subgoal, check_unique_ids, group_by_episode
from guimem.core.describe import describe_actions, target_element
from guimem.smg.annotate import span_effect
from guimem.smg.graph import check_subgoals
from guimem.smg.memories.items import MemoryItem
from guimem.smg.screens import screen_contexts


def _success_of_steps(subgoals: Sequence[Subgoal], n_steps: int) -> list[str]:
    """The judge's label of the subgoal covering each step ("uncertain" where none does)."""
    labels = ["uncertain"] * n_steps
    for s in subgoals:
        for i in range(s.first_step, min(s.last_step, n_steps - 1) + 1):
            labels[i] = s.success
    return labels


def span_effects(episode: Episode, spans: Sequence[tuple[int, int]]) -> list[str]:
    """The segmentation's effect sentence for each ``(first, last)`` span of ``episode`` (the one
    definition of an effect, :func:`guimem.smg.annotate.span_effect`)."""
    ctx = screen_contexts(episode.observations)
    return [span_effect(episode, a, b, ctx) for a, b in spans]


def step_units(episode: Episode, subgoals: Sequence[Subgoal]) -> list[Subgoal]:
    """Each step of ``episode`` as a one-action unit (the Action-Graph's edges)."""
    obs, n = episode.observations, len(episode.steps)
    labels = _success_of_steps(subgoals, n)
    phrases = describe_actions([s.action for s in episode.steps], [s.elements for s in episode.steps])
    effects = span_effects(episode, [(i, i) for i in range(n)])
    return [Subgoal(episode.id, i, i, i, obs[i].screenshot, obs[i + 1].screenshot, phrases[i], effects[i],
                    episode.steps[i].action.type, labels[i], i + 1 if i + 1 < n else None, episode.goal,
                    episode.app, (episode.steps[i].action,))
            for i in range(n)]


def task_unit(episode: Episode, subgoals: Sequence[Subgoal]) -> Subgoal:
    """The whole episode as one unit (the Task-Graph's edge): first screen -> final screen, intent = goal."""
    obs, n = episode.observations, len(episode.steps)
    last = max(subgoals, key=lambda s: s.index).success if subgoals else "uncertain"
    return Subgoal(episode.id, 0, 0, n - 1, obs[0].screenshot, obs[n].screenshot, episode.goal,
                   span_effects(episode, [(0, n - 1)])[0], f"{n} steps", last, None, episode.goal,
                   episode.app, tuple(s.action for s in episode.steps))


def subgoal_units(episode: Episode, subgoals: Sequence[Subgoal]) -> list[Subgoal]:
    """The episode's subgoals in index order (the SMG's and Flat's units)."""
    return sorted(subgoals, key=lambda s: s.index)


def task_units(episode: Episode, subgoals: Sequence[Subgoal]) -> list[Subgoal]:
    """The whole episode as the one unit Task-Graph stores (:func:`task_unit`)."""
    return [task_unit(episode, subgoals)]


def make_item(memory: str, kind: str, unit: Subgoal, episode: Episode) -> MemoryItem:
    """The renderable item of ``memory``'s unit (an item of ``kind``): its actions in words and their
    targets, from the episode."""
    steps = episode.steps[unit.first_step: unit.last_step + 1]
    if len(steps) != unit.last_step - unit.first_step + 1:
        raise DataError("last_step", f"unit {unit.id} runs past the {len(episode.steps)} steps of its episode")
    actions = [s.action for s in steps]
    screens = [s.elements for s in steps]
    return MemoryItem(id=f"{memory}:{unit.id}", kind=kind, episode_id=unit.episode_id,
                      first_step=unit.first_step, last_step=unit.last_step, success=unit.success,
                      goal=unit.goal or episode.goal, text=unit.text, effect=unit.effect,
                      anchor=unit.from_screenshot, outcome=unit.to_screenshot, actions=tuple(actions),
                      phrases=tuple(describe_actions(actions, screens)),
                      targets=tuple(target_element(a, els) for a, els in zip(actions, screens)),
                      shots=tuple(s.screenshot for s in steps))


def pair_episodes(episodes: Sequence[Episode], subgoals: Sequence[Subgoal]) -> list[tuple[Episode, list[Subgoal]]]:
    """Each episode (in the given order) with its subgoals; subgoals of unknown episodes, episodes
    that are not :class:`Episode` or share an id, and subgoals with unsafe paths are errors."""
    for i, e in enumerate(episodes):
        if not isinstance(e, Episode):
            raise DataError(f"episodes[{i}]", f"expected an Episode, got {type(e).__name__}")
    check_unique_ids(episodes, "episodes")
    by_episode = group_by_episode(check_subgoals(subgoals))
    ids = {e.id for e in episodes}
    stray = sorted(set(by_episode) - ids)
    if stray:
        raise DataError("episode_id", f"subgoals of {len(stray)} episode(s) not given, e.g. {stray[0]!r}")
    return [(e, by_episode.get(e.id, [])) for e in episodes]
