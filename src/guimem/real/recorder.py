"""Recording demonstrations from a phone (or any :class:`~guimem.core.env.Env`) into an episode store.

    from adbutils import adb
    env = DeviceEnv(adb.device(), packages={"Settings": "com.android.settings"}, image_width=540)
    record_episodes(env, [Task("Turn on Wi-Fi", app="settings")], scripted([...]), "data/my_phone")
    record_episodes(env, tasks, actor_choice(actor), "data/my_phone")      # an actor drives

Each step stores what the agent saw — the screenshot and the UI tree the device dumped — and the
action taken; the screen after the last action is the episode's final screen. Who chooses the
actions is a callable ``choose(task, observation, history) -> Action``: a fixed script
(:func:`scripted`, e.g. a person's actions written down), any actor (:func:`actor_choice`: the
miniature, a Hugging Face VLM, SwitchMem), or a person at the keyboard. An episode ends when the
action ends it (``done``, ``impossible``, ``answer``) or at the environment's step budget. Success
is the environment's verdict (a phone's ``checker``; None without one). Nothing is written until
every episode is recorded; then the store is saved atomically, as any import.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from PIL import Image

from guimem.core.data import Action, DataError, Episode, Observation, Step
from guimem.core.env import Env, Task, WorldObservation
from guimem.core.policy import HISTORY_LEN, PolicyInput
from guimem.core.store import save_episodes

Choose = Callable[[Task, WorldObservation, Sequence[Action]], Action]
"""Who acts: the next action for ``task`` on the current screen, after ``history``."""


def scripted(actions: Sequence[Action]) -> Choose:
    """The actions of a script, in order (one episode's; a script that runs out is a DataError)."""
    todo: Iterator[Action] = iter(list(actions))

    def choose(task: Task, obs: WorldObservation, history: Sequence[Action]) -> Action:
        try:
            return next(todo)
        except StopIteration:
            raise DataError("actions", f"the script ran out after {len(history)} actions on {task.goal!r:.60}") from None

    return choose


def actor_choice(actor: Any, history_len: int = HISTORY_LEN) -> Choose:
    """An actor (anything with ``act([PolicyInput]) -> [PolicyOutput]``) choosing from the screen,
    the goal, its last ``history_len`` actions and the UI trees they were taken on (what each touched,
    for an actor that reads it: the pretrained miniature), without memory. The trees are kept here,
    one per action of the episode; an episode starts again with an empty history."""
    screens: list = []  # the UI tree each action of this episode was taken on

    def choose(task: Task, obs: WorldObservation, history: Sequence[Action]) -> Action:
        if obs.image is None:
            raise DataError("image", "the environment returned a screen without a picture")
        if not history:
            screens.clear()
        if len(screens) != len(history):
            raise DataError("history", f"{len(history)} actions but {len(screens)} screens seen: this chooser "
                                       "follows one episode at a time, every action its own")
        recent = slice(-history_len, None) if history_len else slice(0, 0)
        action = actor.act([PolicyInput(screenshot=obs.image, elements=obs.elements, goal=task.goal,
                                        history=tuple(history[recent]),
                                        history_screens=tuple(screens[recent]))])[0].action
        screens.append(obs.elements)
        return action

    return choose


def record_episode(env: Env, task: Task, choose: Choose, episode_id: str, seed: int = 0,
                   provenance: Mapping[str, Any] | None = None) -> tuple[Episode, dict[str, Image.Image]]:
    """Play ``task`` on ``env`` with ``choose`` and return the episode (screenshot keys
    ``<episode_id>/<i>``) and its images by key."""
    images: dict[str, Image.Image] = {}

    def keep(o: WorldObservation, i: int) -> Observation:
        if o.image is None:
            raise DataError("image", "the environment returned a screen without a picture")
        key = f"{episode_id}/{i}"
        images[key] = o.image
        return o.to_observation(key)

    obs, steps, history, info = env.reset(task, seed), [], [], {}
    done = False
    while not done:
        action = choose(task, obs, tuple(history))
        if not isinstance(action, Action):
            raise DataError("action", f"choose returned {type(action).__name__}, not an Action")
        seen = keep(obs, len(steps))
        obs, done, info = env.step(action)
        steps.append(Step(seen, action))
        history.append(action)
    final = keep(obs, len(steps))
    success = info.get("success")
    prov = {"source": "device", "ended": info.get("ended"), **dict(provenance or {})}
    if "answer" in info:
        prov["answer"] = info["answer"]
    return Episode(id=episode_id, app=task.app or "unknown", goal=task.goal, steps=tuple(steps), final=final,
                   success=success if isinstance(success, bool) else None, provenance=prov), images


def record_episodes(env: Env, tasks: Sequence[Task], choose: Choose | Sequence[Choose], store: str | os.PathLike,
                    ids: Sequence[str] | None = None, provenance: Mapping[str, Any] | None = None) -> Path:
    """Record one episode per task (``choose`` one callable for all, or one per task) and save them
    as the episode store ``store`` (replacing an episode store there, never anything else); ids
    default to ``episode-0000``, ... Returns the store's path."""
    chooses = list(choose) if isinstance(choose, (list, tuple)) else [choose] * len(tasks)
    if len(chooses) != len(tasks):
        raise DataError("choose", f"one per task: {len(tasks)} tasks, {len(chooses)} callables")
    ids = list(ids) if ids is not None else [f"episode-{i:04d}" for i in range(len(tasks))]
    if len(ids) != len(tasks):
        raise DataError("ids", f"one per task: {len(tasks)} tasks, {len(ids)} ids")
    episodes, images = [], {}
    for task, pick, eid in zip(tasks, chooses, ids):
        episode, shots = record_episode(env, task, pick, eid, provenance=provenance)
        episodes.append(episode)
        images.update(shots)
    return save_episodes(episodes, images, store, meta={"recorded": "device", **dict(provenance or {})})
