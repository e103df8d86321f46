"""Demonstration steps as examples any actor can be trained or scored on, each with the
experience a memory retrieved for it.

An :class:`ActorExample` pairs what the actor sees at a demonstration step (screen, goal,
history, and the retrieved experience as text and as an image) with its target: the expert's
action from that state (``Step.expert``, where the world recorded one: the demonstrator's
mistakes stay in the stores and in memory but are never imitated), else what the demonstrator
did. Training examples read memories through :class:`~guimem.smg.reader.MemoryReader`
(:func:`build_examples`; rebuilt in k folds by :mod:`guimem.train.folds`, so a step never sees its
own episode); held-out examples read what ``retrieval_eval`` rendered from the saved memories
(:func:`examples_from_retrieval`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
from PIL import Image

from guimem.core.data import Action, DataError, Episode, Step
from guimem.core.describe import target_element
from guimem.core.policy import HISTORY_LEN, PolicyInput
from guimem.core.progress import progress_bar
from guimem.core.store import load_screenshot, open_image
from guimem.smg.memories import Memory
from guimem.smg.reader import MemoryReader
from guimem.smg.retrieval import saved_renderings


@dataclass(frozen=True)
class ActorExample:
    """One behaviour-cloning example: what the actor saw and what the demonstrator did."""

    input: PolicyInput  # memory_text / memory_image: the retrieved experience (either may be None)
    target: Action
    episode_id: str = ""
    step: int = -1
    memory_kind: str | None = None  # which memory produced the experience (None: no memory)


def target_of(step: Step) -> Action:
    """What a learner should do at ``step``: the expert's action when recorded, else the one taken."""
    return step.expert if step.expert is not None else step.action


def episode_steps(episode: Episode, store_root: str | Path, max_history: int) -> list[tuple[PolicyInput, Action]]:
    """Every step of ``episode`` as a memory-less input (screen, tree, goal, the actions taken
    before it and the trees they were taken on) and its target (:func:`target_of`)."""
    out = []
    for i, step in enumerate(episode.steps):
        earlier = episode.steps[max(0, i - max_history):i] if max_history else ()
        screenshot = load_screenshot(store_root, step.screenshot)
        out.append((PolicyInput(screenshot, step.elements, episode.goal, tuple(s.action for s in earlier),
                                history_screens=tuple(s.elements for s in earlier)), target_of(step)))
    return out


def build_examples(episodes: Sequence[Episode], store_root: str | Path, memories: Mapping[str, Memory],
                   kinds_per_step: int | None = None, seed: int = 0, max_history: int = HISTORY_LEN,
                   query_vectors: Mapping[str, np.ndarray] | None = None, progress: bool = True) -> list[ActorExample]:
    """Examples of ``episodes`` with experience retrieved from ``memories`` (built without them).

    Each step gets ``kinds_per_step`` memory kinds drawn at random (all of them when None), one
    example per kind; ``query_vectors`` (screenshot path -> embedding) spare re-embedding screens.
    """
    kinds = sorted(memories)
    n_kinds = len(kinds) if kinds_per_step is None else min(kinds_per_step, len(kinds))
    rng = np.random.default_rng(seed)
    readers = {kind: MemoryReader(memories[kind]) for kind in kinds}
    out: list[ActorExample] = []
    for episode in progress_bar(episodes, desc="examples", unit="episode", disable=not progress):
        for i, (inp, action) in enumerate(episode_steps(episode, store_root, max_history)):
            shot = episode.steps[i].screenshot
            query = query_vectors[shot] if query_vectors is not None and shot in query_vectors else inp.screenshot
            chosen = kinds if n_kinds == len(kinds) else sorted(rng.choice(kinds, n_kinds, replace=False).tolist())
            for kind in chosen:
                out.append(ActorExample(readers[kind].show(inp, query), action, episode.id, i, kind))
    return out


def examples_from_retrieval(episodes: Sequence[Episode], store_root: str | Path, retrieval_dir: str | Path,
                            kinds: Sequence[str], max_history: int = HISTORY_LEN) -> list[ActorExample]:
    """Held-out examples with the memory the ``retrieval_eval`` stage retrieved for every step.

    Reads ``<retrieval_dir>/<kind>/steps.jsonl`` (text block and image path per step); one
    example per step and kind, in episode, step and ``kinds`` order.
    """
    saved = {kind: saved_renderings(retrieval_dir, kind) for kind in kinds}
    images: dict[Path, Image.Image] = {}
    out = []
    for episode in episodes:
        for i, (inp, action) in enumerate(episode_steps(episode, store_root, max_history)):
            for kind in kinds:
                if (episode.id, i) not in saved[kind]:
                    raise DataError("steps.jsonl", f"no retrieved memory for {episode.id} step {i}",
                                    str(Path(retrieval_dir) / kind))
                text, image_path = saved[kind][(episode.id, i)]
                if image_path not in images:
                    images[image_path] = open_image(image_path)
                out.append(ActorExample(replace(inp, memory_text=text, memory_image=images[image_path]), action,
                                        episode.id, i, kind))
    return out


def sample_held_out(examples: Sequence[ActorExample], max_steps: int, seed: int) -> list[ActorExample]:
    """The examples of a fixed random sample of ``max_steps`` held-out steps (every step when
    ``max_steps`` is 0 or more than there are), in their original order; all memory kinds of a
    sampled step are kept, so conditions stay paired."""
    steps = sorted({(ex.episode_id, ex.step) for ex in examples})
    if max_steps and max_steps < len(steps):
        rng = np.random.default_rng(seed)
        steps = [steps[i] for i in sorted(rng.choice(len(steps), max_steps, replace=False))]
    keep = set(steps)
    return [ex for ex in examples if (ex.episode_id, ex.step) in keep]


def memory_names_target(example: ActorExample) -> bool:
    """Whether the memory text quotes the label of the element the demonstrator touched while the
    goal does not: a step where (textual) experience carries what the goal leaves out."""
    target = target_element(example.target, example.input.elements)
    if target is None or not target.text or example.input.memory_text is None:
        return False
    label = target.text.lower()
    return f'"{label}"' in example.input.memory_text.lower() and label not in example.input.goal.lower()
