"""Where the same experience shown as text and shown as an image lead the actor to different actions.

SwitchMem's premise is that neither rendering of a retrieved demonstration is better everywhere:
on some steps the words help, on others the picture. :func:`contest` measures that on paired
step scores (the same steps, the same memory, two renderings): the share of *non-tied* steps
(exactly one rendering right), each rendering's share of them, the best fixed rendering and the
per-step oracle between the two (an analysis reference: it sees which one was right).
:func:`step_groups` cuts the steps by what they need — a label-free icon or a labelled control to
touch, text to type, a system key, the end of the task, the first step or a later one — so a
figure can show where each rendering wins. :func:`information_groups` cuts them by what the right
action needs to be known — what the goal and screen determine, and what only experience gives.
:func:`rendering_measures` says whether the actor reads each rendering at all: how often the image
leaves its action where no memory put it, what another step's image costs, and how each rendering
does where only it can carry the answer (a label-free glyph for the picture, a word training never
showed for the text).
"""

from __future__ import annotations

from typing import Collection, Mapping, Sequence

import numpy as np

from guimem.core.data import Action
from guimem.core.describe import is_labeled, target_element
from guimem.core.policy import PolicyInput
from guimem.models.tokenizer import words


def contest(text: np.ndarray, image: np.ndarray) -> dict[str, float | int]:
    """Paired per-step hits (``[n]`` bool each) of the text and the image rendering, summarised.

    ``non_tied_share``: steps where exactly one is right; ``text_wins`` / ``image_wins``: each
    one's share of those; ``best_fixed``: the better rendering's accuracy; ``oracle``: the accuracy
    of picking, per step, the rendering that was right; ``oracle_gain``: oracle minus best fixed.
    """
    text, image = np.asarray(text, dtype=bool), np.asarray(image, dtype=bool)
    if text.shape != image.shape or text.ndim != 1:
        raise ValueError(f"expected paired [n] hits, got {text.shape} and {image.shape}")
    n = len(text)
    non_tied = text != image
    k = int(non_tied.sum())
    best = max(float(text.mean()), float(image.mean())) if n else float("nan")
    oracle = float((text | image).mean()) if n else float("nan")
    return {"steps": n, "non_tied": k, "non_tied_share": k / n if n else float("nan"),
            "text_wins": float((text & ~image).sum() / k) if k else float("nan"),
            "image_wins": float((image & ~text).sum() / k) if k else float("nan"),
            "text_accuracy": float(text.mean()) if n else float("nan"),
            "image_accuracy": float(image.mean()) if n else float("nan"),
            "best_fixed": best, "oracle": oracle, "oracle_gain": oracle - best}


STEP_GROUPS: tuple[str, ...] = ("label-free icon", "labelled control", "unseen word", "typing", "system key", "done",
                                "first step", "later step")
"""The groups :func:`step_groups` cuts held-out steps into (a step may be in several)."""


def step_groups(inputs: Sequence[PolicyInput], targets: Sequence[Action],
                unseen_words: Collection[str] = ()) -> dict[str, np.ndarray]:
    """``[n]`` bool masks over the steps, one per :data:`STEP_GROUPS` name: what the right action
    needs (a touch on a label-free icon or on a labelled control — ``unseen word`` when its label is
    one of ``unseen_words``, words training never showed, such as an evaluation variant's synonyms
    (:func:`guimem.phone.variants.unseen_words`) — typing, a system key such as
    ``back``/``home``/``enter``, ``done``) and where in the episode it is (its first step or later)."""
    out = {g: np.zeros(len(inputs), dtype=bool) for g in STEP_GROUPS}
    unseen = {w.strip().lower() for w in unseen_words}
    for i, (inp, target) in enumerate(zip(inputs, targets)):
        element = target_element(target, inp.elements)
        if element is not None:
            out["labelled control" if is_labeled(element) else "label-free icon"][i] = True
            out["unseen word"][i] = (element.text.strip() or element.description.strip()).lower() in unseen
        out["typing"][i] = target.type == "type"
        out["system key"][i] = target.type in ("back", "home", "enter")
        out["done"][i] = target.type == "done"
        out["first step" if not inp.history else "later step"][i] = True
    return out


def contest_by_group(text: np.ndarray, image: np.ndarray, groups: Mapping[str, np.ndarray]) -> dict[str, dict]:
    """:func:`contest` within each group of steps."""
    return {name: contest(np.asarray(text)[mask], np.asarray(image)[mask]) for name, mask in groups.items()}


INFORMATION_GROUPS: tuple[str, ...] = ("label in goal", "label not in goal", "label-free icon", "typing", "done",
                                       "system key", "swipe", "open app")
"""What a step's right action needs to be known (:func:`information_groups`)."""
DETERMINED = ("label in goal", "typing", "done")
"""The groups whose target the goal and the screen determine: the control the goal names, the text
it quotes, the end once the screen shows the task done. The others need what only experience of
this app variant gives (which unnamed menu, which bare icon) or recovery."""


def information_groups(inputs: Sequence[PolicyInput], targets: Sequence[Action]) -> dict[str, np.ndarray]:
    """``[n]`` bool masks, one per :data:`INFORMATION_GROUPS` name (each step in exactly one): a touch
    on a control whose label the goal names (all its words in the goal), on a labelled control the
    goal does not name, on a label-free icon; typing; ``done``; a system key; a swipe; opening an app."""
    out = {g: np.zeros(len(inputs), dtype=bool) for g in INFORMATION_GROUPS}
    for i, (inp, target) in enumerate(zip(inputs, targets)):
        kind = target.type
        if kind in ("tap", "long_press"):
            element = target_element(target, inp.elements)
            label = (element.text.strip() or element.description.strip()) if element is not None else ""
            named = bool(label) and set(words(label)) <= set(words(inp.goal))
            group = "label in goal" if named else "label not in goal" if label else "label-free icon"
        else:
            group = {"type": "typing", "done": "done", "swipe": "swipe", "open_app": "open app"}.get(kind, "system key")
        out[group][i] = True
    return out


def agreement(a: Sequence[Action], b: Sequence[Action]) -> float:
    """The share of steps where two runs of a policy took the same action (paired, ``[n]`` each)."""
    if len(a) != len(b):
        raise ValueError(f"expected paired actions, got {len(a)} and {len(b)}")
    return float(np.mean([x == y for x, y in zip(a, b)])) if len(a) else float("nan")


def rendering_measures(none: Sequence[Action], image: Sequence[Action], hits: Mapping[str, np.ndarray],
                       groups: Mapping[str, np.ndarray]) -> dict[str, float | int]:
    """Whether the actor reads each rendering of its memory, on paired held-out steps.

    ``none`` / ``image``: its actions with no memory and with the image (``[n]`` each); ``hits``:
    ``[n]`` bool step hits under ``"text"``, ``"image"`` and ``"shuffled image"`` (another step's
    image, :func:`guimem.eval.memory_effect.shuffled_images`); ``groups``: :func:`step_groups`' masks.

    * ``image_vs_none_agreement``: the share of steps where the image leaves the action no memory
      gives (1.0: the picture is never read);
    * ``shuffled_image_drop``: image accuracy minus accuracy with another step's image (0: it does
      not matter *which* experience the picture shows);
    * ``label_free_image_minus_text``: on steps whose target is a label-free glyph, image minus text
      accuracy (the picture's own ground);
    * ``synonym_text_minus_image``: on steps whose target's label is a word training never showed,
      text minus image accuracy (the words' own ground). Each with its number of steps.
    """
    text, img, shuffled = (np.asarray(hits[k], dtype=bool) for k in ("text", "image", "shuffled image"))
    glyph, word = np.asarray(groups["label-free icon"], bool), np.asarray(groups["unseen word"], bool)

    def gap(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> float:
        return float(a[mask].mean() - b[mask].mean()) if mask.any() else float("nan")

    return {"image_vs_none_agreement": agreement(image, none),
            "shuffled_image_drop": float(img.mean() - shuffled.mean()) if len(img) else float("nan"),
            "label_free_image_minus_text": gap(img, text, glyph), "label_free_steps": int(glyph.sum()),
            "synonym_text_minus_image": gap(text, img, word), "synonym_steps": int(word.sum())}

