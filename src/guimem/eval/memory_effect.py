"""Where does showing the memory change the actor's action? Paired splits of one step-score table.

Every held-out step is scored with no memory and with the memory shown (the same steps), so a
difference can be read step by step: which steps showing the memory *fixes* and which it
*breaks* (:func:`guimem.eval.action_match.paired_counts`, with the exact sign test). Two splits say
where the memory could help at all:

* :func:`names_target_split` — steps where the memory text quotes the element the demonstrator
  touched and the goal does not name it, against all other steps;
* :func:`right_experience_split` — steps where the retrieved items hold the true next subgoal
  (retrieval's ``hit_shown``), against steps shown the wrong experience.

``hits`` maps each modality to its ``[n]`` bool step hits on the same steps, ``none`` included.
:func:`shuffled_images` gives the control that says whether the actor reads *which* experience its
picture shows: every step shown the image another episode's step retrieved.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence, TypeVar

import numpy as np

from guimem.core.data import DataError
from guimem.core.policy import MODALITIES
from guimem.eval.action_match import paired_counts


E = TypeVar("E")  # an example with ``input`` (a PolicyInput) and ``episode_id``


def shuffled_images(examples: Sequence[E], seed: int) -> list[E]:
    """The ``examples`` with each one's memory image taken from another example of another episode
    (a seeded permutation, repaired so that no step keeps an image of its own episode where a swap
    can avoid it); text and everything else unchanged."""
    n = len(examples)
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    episode = [ex.episode_id for ex in examples]
    for i in range(n):
        if episode[order[i]] != episode[i]:
            continue
        for j in rng.permutation(n):
            if episode[order[j]] != episode[i] and episode[order[i]] != episode[j]:
                order[i], order[j] = order[j], order[i]
                break
    return [dataclasses.replace(ex, input=dataclasses.replace(ex.input, memory_image=examples[k].input.memory_image))
            for ex, k in zip(examples, order)]


def _check(hits: Mapping[str, np.ndarray], mask: np.ndarray) -> None:
    """Every column and the mask cover the same steps."""
    for m, h in hits.items():
        if len(h) != len(mask):
            raise DataError(f"hits[{m}]", f"{len(h)} steps, the mask has {len(mask)}")


def names_target_split(hits: Mapping[str, np.ndarray], names_target: np.ndarray) -> dict[str, Any]:
    """Share of steps whose memory text names the target; accuracy there per modality (NaN when
    none); text against none there (``text_vs_none``) and on the other steps (``..._elsewhere``)."""
    mask = np.asarray(names_target, dtype=bool)
    _check(hits, mask)
    base, text = hits["none"], hits["text"]
    accuracy = {m: float(hits[m][mask].mean()) if mask.any() else float("nan") for m in MODALITIES}
    return {"share_of_steps": float(mask.mean()), **accuracy,
            "text_vs_none": paired_counts(text[mask], base[mask]),
            "text_vs_none_elsewhere": paired_counts(text[~mask], base[~mask])}


def right_experience_split(hits: Mapping[str, np.ndarray], right: np.ndarray) -> dict[str, Any]:
    """Share of steps shown the right experience; per memory modality and side (``text/right``,
    ``text/wrong``, ...) the accuracy with no memory and with it, and the paired counts."""
    mask = np.asarray(right, dtype=bool)
    _check(hits, mask)
    base = hits["none"]
    out: dict[str, Any] = {"share_of_steps": round(float(mask.mean()), 4)}
    for m in MODALITIES[1:]:
        for label, side in (("right", mask), ("wrong", ~mask)):
            out[f"{m}/{label}"] = {"none": round(float(base[side].mean()), 4),
                                   "memory": round(float(hits[m][side].mean()), 4),
                                   **paired_counts(hits[m][side], base[side])}
    return out
