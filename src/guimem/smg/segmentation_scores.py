"""How well a segmentation matches the world's ground truth: its boundaries, its intents and its judge.

Boundary precision/recall/F1 (:func:`boundary_scores`; a boundary is a step where a new
subgoal starts, step 0 excluded; exact matching by default, a tolerance optional), intent
agreement (:func:`intent_agreement`) and the judge's confusion matrix
(:func:`judge_confusion`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from guimem.core.data import DataError, Episode, Subgoal
from guimem.smg.segmenters import Span


def boundaries(parts: Sequence[Span | Subgoal]) -> list[int]:
    """The steps where a new subgoal starts, step 0 excluded (it always starts one)."""
    firsts = [p.first if isinstance(p, Span) else p.first_step for p in parts]
    return sorted({f for f in firsts if f > 0})


def match_boundaries(pred: Sequence[int], true: Sequence[int], tolerance: int = 0) -> int:
    """The most one-to-one pairs (p, t) with ``|p - t| <= tolerance``.

    Greedy in order (each predicted boundary takes the earliest free true boundary within
    reach), which is optimal for intervals of equal width on a line. With ``tolerance=0``
    this is the size of the intersection of the two sets.
    """
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    true_sorted, j, hits = sorted(set(true)), 0, 0
    for p in sorted(set(pred)):
        while j < len(true_sorted) and true_sorted[j] < p - tolerance:
            j += 1
        if j < len(true_sorted) and true_sorted[j] <= p + tolerance:
            hits, j = hits + 1, j + 1
    return hits


@dataclass(frozen=True)
class BoundaryScores:
    """Boundary precision, recall and F1 with the counts behind them.

    Conventions for empty sets: no predicted boundaries gives precision 1 when there are no
    true ones either, else 0; no true boundaries gives recall 1 when none were predicted,
    else 0. F1 is 0 when precision + recall is 0.
    """

    tp: int
    n_pred: int
    n_true: int

    @property
    def precision(self) -> float:
        return self.tp / self.n_pred if self.n_pred else float(self.n_true == 0)

    @property
    def recall(self) -> float:
        return self.tp / self.n_true if self.n_true else float(self.n_pred == 0)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __add__(self, other: "BoundaryScores") -> "BoundaryScores":
        return BoundaryScores(self.tp + other.tp, self.n_pred + other.n_pred, self.n_true + other.n_true)

    def to_dict(self) -> dict[str, float | int]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                "tp": self.tp, "n_pred": self.n_pred, "n_true": self.n_true}


def boundary_scores(pred: Sequence[int], true: Sequence[int], tolerance: int = 0) -> BoundaryScores:
    """Scores of one episode's predicted boundaries against the true ones (see :func:`match_boundaries`)."""
    return BoundaryScores(match_boundaries(pred, true, tolerance), len(set(pred)), len(set(true)))


def corpus_boundary_scores(pred: Mapping[str, Sequence[Span | Subgoal]], true: Mapping[str, Sequence[Span | Subgoal]],
                           tolerance: int = 0) -> BoundaryScores:
    """Micro-averaged scores over the episodes in ``pred`` (counts summed, then the ratios).

    Raises :class:`DataError` when an episode of ``pred`` has no ground truth in ``true``.
    """
    total = BoundaryScores(0, 0, 0)
    for eid, parts in pred.items():
        if eid not in true:
            raise DataError("episode_id", f"no ground-truth segmentation for episode {eid!r}")
        total = total + boundary_scores(boundaries(parts), boundaries(true[eid]), tolerance)
    return total


def part_bounds(part: Span | Subgoal) -> tuple[int, int]:
    """The first and last step of a span or subgoal."""
    return (part.first, part.last) if isinstance(part, Span) else (part.first_step, part.last_step)


def step_intents(parts: Sequence[Span | Subgoal]) -> list[str]:
    """The intent text of each step (index = step) under a segmentation."""
    out: list[str] = []
    for part in parts:
        first, last = part_bounds(part)
        out.extend([part.text] * (last - first + 1))
    return out


def intent_agreement(pred: Mapping[str, Sequence[Span | Subgoal]], true: Mapping[str, Sequence[Span | Subgoal]],
                     embedder) -> float:
    """Step-weighted mean cosine between the predicted and the true intent of every step.

    Each step contributes the cosine between the text of the predicted subgoal holding it and
    that of the true subgoal holding it, so a pair of overlapping segments counts in
    proportion to their overlap. ``embedder.embed(texts)`` must return unit rows ``[n, dim]``.
    Returns NaN when there are no steps.
    """
    pairs: list[tuple[str, str]] = []
    for eid, parts in pred.items():
        if eid not in true:
            raise DataError("episode_id", f"no ground-truth segmentation for episode {eid!r}")
        p, t = step_intents(parts), step_intents(true[eid])
        if len(p) != len(t):
            raise DataError("last_step", f"episode {eid!r}: {len(p)} predicted steps but {len(t)} true ones")
        pairs.extend(zip(p, t))
    if not pairs:
        return float("nan")
    texts = sorted({x for pair in pairs for x in pair})
    vectors = np.asarray(embedder.embed(texts), dtype=np.float64)  # [n_texts, dim], unit rows
    index = {x: i for i, x in enumerate(texts)}
    cos = [float(vectors[index[a]] @ vectors[index[b]]) for a, b in pairs]
    return float(np.mean(cos))


JUDGE_VERDICTS: tuple[str, ...] = ("yes", "no", "uncertain")  # rows of the judge's confusion matrix
JUDGE_TRUTHS: tuple[bool, ...] = (True, False)  # its columns


@dataclass(frozen=True)
class JudgeScores:
    """The judge's episode verdicts against the true outcome.

    ``matrix[i][j]`` counts episodes with verdict ``JUDGE_VERDICTS[i]`` and outcome
    ``JUDGE_TRUTHS[j]``. ``accuracy`` counts an ``uncertain`` verdict as wrong;
    ``decided_accuracy`` is over yes/no verdicts only; ``coverage`` is their share.
    Episodes whose outcome is unknown (None) are left out.
    """

    matrix: tuple[tuple[int, int], ...]

    @property
    def n(self) -> int:
        return sum(map(sum, self.matrix))

    @property
    def correct(self) -> int:
        return self.matrix[0][0] + self.matrix[1][1]

    @property
    def decided(self) -> int:
        return sum(self.matrix[0]) + sum(self.matrix[1])

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else float("nan")

    @property
    def decided_accuracy(self) -> float:
        return self.correct / self.decided if self.decided else float("nan")

    @property
    def coverage(self) -> float:
        return self.decided / self.n if self.n else float("nan")

    def to_dict(self) -> dict:
        """Accuracies rounded to 4 places, the counts, and the matrix with its row and column names."""
        return {"accuracy": round(self.accuracy, 4), "decided_accuracy": round(self.decided_accuracy, 4),
                "coverage": round(self.coverage, 4), "n": self.n, "rows": list(JUDGE_VERDICTS),
                "columns": ["success", "failure"], "matrix": [list(r) for r in self.matrix]}


def judge_confusion(verdicts: Sequence[str], outcomes: Sequence[bool | None]) -> JudgeScores:
    """The 3x2 confusion of episode verdicts (yes/no/uncertain) against true outcomes."""
    if len(verdicts) != len(outcomes):
        raise ValueError(f"{len(verdicts)} verdicts but {len(outcomes)} outcomes")
    counts = Counter((v, o) for v, o in zip(verdicts, outcomes) if o is not None)
    for v, _ in counts:
        if v not in JUDGE_VERDICTS:
            raise DataError("success", f"unknown verdict {v!r}; expected one of {JUDGE_VERDICTS}")
    return JudgeScores(tuple(tuple(counts[(v, o)] for o in JUDGE_TRUTHS) for v in JUDGE_VERDICTS))


def sample_evenly(items: Sequence, k: int) -> list:
    """``k`` items spread evenly over ``items`` (all of them when ``k >= len(items)``; none when ``k <= 0``)."""
    n = len(items)
    if k <= 0 or n == 0:
        return []
    if k >= n:
        return list(items)
    return [items[(i * n) // k] for i in range(k)]


def every_step_spans(episode: Episode) -> list[Span]:
    """The trivial segmentation with a boundary before every step (a reference for the metrics)."""
    return [Span(i, i, "") for i in range(len(episode.steps))]


def score_segmentation(pred: Mapping[str, Sequence[Span | Subgoal]], true: Mapping[str, Sequence[Span | Subgoal]],
                       embedder=None, tolerance: int = 0) -> dict[str, float | int]:
    """Boundary precision/recall/F1 (micro) and, with an embedder, intent agreement, rounded to 4 places."""
    out: dict[str, float | int] = {"episodes": len(pred)}
    out.update({k: round(v, 4) if isinstance(v, float) else v
                for k, v in corpus_boundary_scores(pred, true, tolerance).to_dict().items()})
    if embedder is not None:
        out["intent_agreement"] = round(intent_agreement(pred, true, embedder), 4)
    return out
