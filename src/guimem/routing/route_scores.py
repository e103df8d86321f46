"""Scoring routing decisions on held-out steps: SwitchMem's Table 1, the random and heuristic
baselines, the rate sweep and the oracle headroom.

Every number here is computed from the per-step greedy hits of :class:`~guimem.routing.records.StepRecords`
(the actor really run under each condition): a routing decision for a step picks the text or the
image column of that step, so no routed prompt needs running again to be scored.

* :func:`routed_hits` — the hits of a routing (``[n]`` bool, True = Image);
* :func:`random_routing` — ratio-matched random routing: Image on a random share ``rate`` of the
  steps; its expected accuracy is exactly ``rate * acc_I + (1 - rate) * acc_T``, and its spread
  over draws is given as a 95% interval;
* :func:`rate_sweep` — the router and random routing at a sweep of image-use rates (the router
  thresholded at the matching quantile of its own scores): does it beat random at every rate?
* :func:`density_routing` — the screen-feature heuristic: Image on the densest screens (most UI
  elements), at a given rate;
* :func:`headroom` — best fixed modality → a routing → the per-step oracle (an analysis reference:
  it sees which rendering was right).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from guimem.core.io import check_finite
from guimem.eval.action_match import paired_counts
from guimem.routing.records import CONDITIONS, StepRecords
from guimem.routing.router import Router, calibrate_tau


def routed_hits(records: StepRecords, image: np.ndarray, rule: str = "aitw") -> np.ndarray:
    """``[n]`` bool: the greedy hit of the rendering each step is routed to (``image`` True: Image)."""
    image = np.asarray(image, dtype=bool)
    return np.where(image, records.hits[rule]["image"], records.hits[rule]["text"])


def fixed_accuracies(records: StepRecords, rule: str = "aitw") -> dict[str, float]:
    """Step accuracy of every fixed condition: none, text, image, both."""
    return {c: float(records.hits[rule][c].mean()) for c in CONDITIONS}


def random_routing(records: StepRecords, rate: float, rule: str = "aitw", n_draws: int = 1000,
                   seed: int = 0) -> dict[str, float]:
    """Ratio-matched random routing: ``k = round(rate * n)`` steps sent to Image at random. Its exact
    expected accuracy (``k/n * acc_I + (1 - k/n) * acc_T``) and the 95% interval over ``n_draws``
    such routings."""
    n = len(records)
    text, image = records.hits[rule]["text"], records.hits[rule]["image"]
    k = int(round(rate * n))
    expected = float(k / n * image.mean() + (1 - k / n) * text.mean())
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_draws):
        mask = np.zeros(n, dtype=bool)
        mask[rng.choice(n, k, replace=False)] = True
        draws.append(float(np.where(mask, image, text).mean()))
    return {"rate": float(rate), "expected": expected, "lo": float(np.percentile(draws, 2.5)),
            "hi": float(np.percentile(draws, 97.5))}


def beats_random(hits: np.ndarray, records: StepRecords, rate: float, rule: str = "aitw", n_draws: int = 2000,
                 seed: int = 0) -> float:
    """One-sided p-value of a routing's accuracy against random routing at the same rate: the share
    of random routings (same number of Image steps) at least as accurate."""
    n = len(records)
    text, image = records.hits[rule]["text"], records.hits[rule]["image"]
    k = int(round(rate * n))
    rng = np.random.default_rng(seed)
    acc = float(np.mean(hits))
    count = 0
    for _ in range(n_draws):
        mask = np.zeros(n, dtype=bool)
        mask[rng.choice(n, k, replace=False)] = True
        count += float(np.where(mask, image, text).mean()) >= acc
    return (count + 1) / (n_draws + 1)


def at_rate(scores: np.ndarray, rate: float, seed: int = 0) -> np.ndarray:
    """``[n]`` bool: Image on the ``round(rate * n)`` highest-scoring steps; equal scores are ordered
    at random (``seed``), so a score with many ties (a count of elements) favours no record order.
    A score that is not finite is a :class:`~guimem.core.data.DataError` (NaN has no rank)."""
    scores = check_finite(np.asarray(scores, dtype=np.float64), "scores")
    k = int(round(rate * len(scores)))
    order = np.lexsort((np.random.default_rng(seed).random(len(scores)), -scores))
    mask = np.zeros(len(scores), dtype=bool)
    mask[order[:k]] = True
    return mask


def rate_sweep(scores: np.ndarray, records: StepRecords, rates: Sequence[float], rule: str = "aitw",
               seed: int = 0) -> list[dict[str, float]]:
    """At each image-use rate: the router (Image on its top-scored share) against random routing."""
    rows = []
    for rate in rates:
        hits = routed_hits(records, at_rate(scores, rate, seed), rule)
        rnd = random_routing(records, rate, rule, seed=seed)
        rows.append({"rate": float(rate), "router": float(hits.mean()), "random": rnd["expected"],
                     "random_lo": rnd["lo"], "random_hi": rnd["hi"], "gain": float(hits.mean()) - rnd["expected"]})
    return rows


def density_routing(records: StepRecords, rate: float, seed: int = 0) -> np.ndarray:
    """The UI-density heuristic: Image on the share ``rate`` of steps with the most UI elements."""
    density = np.array([r["n_elements"] for r in records.rows], dtype=np.float64)
    return at_rate(density, rate, seed)


def headroom(records: StepRecords, routings: dict[str, np.ndarray], rule: str = "aitw") -> dict[str, Any]:
    """Best fixed rendering → each routing → the per-step oracle between text and image."""
    text, image = records.hits[rule]["text"], records.hits[rule]["image"]
    best_name = "image" if image.mean() > text.mean() else "text"
    out = {"best_fixed": best_name, "best_fixed_accuracy": float(max(text.mean(), image.mean())),
           "oracle": float((text | image).mean()), "steps": len(records)}
    for name, mask in routings.items():
        out[name] = float(routed_hits(records, mask, rule).mean())
    out["oracle_gain"] = out["oracle"] - out["best_fixed_accuracy"]
    return out


def routing_runs(image: Sequence[bool]) -> dict[str, float]:
    """Routing behaviour along one trajectory: whether it uses both modalities, its image share,
    its switches and its mean run length (steps between switches)."""
    image = np.asarray(image, dtype=bool)
    if not len(image):
        return {"dual": False, "image_share": float("nan"), "switches": 0, "mean_run": float("nan"), "steps": 0}
    switches = int((image[1:] != image[:-1]).sum())
    return {"dual": bool(image.any() and (~image).any()), "image_share": float(image.mean()), "switches": switches,
            "mean_run": len(image) / (switches + 1), "steps": int(len(image))}


def routing_statistics(trajectories: Sequence[Sequence[bool]]) -> dict[str, float]:
    """The paper's Table 2 over trajectories: dual-modality trajectories %, image-routed steps %,
    mean switches per trajectory, mean run length (over all runs of all trajectories)."""
    runs = [routing_runs(t) for t in trajectories if len(t)]
    if not runs:
        return {"trajectories": 0}
    steps = sum(r["steps"] for r in runs)
    n_runs = sum(r["switches"] + 1 for r in runs)
    return {"trajectories": len(runs), "dual_modality_pct": 100 * float(np.mean([r["dual"] for r in runs])),
            "image_steps_pct": 100 * float(sum(r["image_share"] * r["steps"] for r in runs) / steps),
            "switches_per_trajectory": float(np.mean([r["switches"] for r in runs])),
            "mean_run_length": steps / n_runs}


def preference_shares(preference: np.ndarray) -> dict[str, float | int]:
    """Who wins the steps a (sampled) preference does not tie: ``steps``, ``non_tied``,
    ``non_tied_share``, ``text_wins``, ``image_wins`` (shares of the non-tied steps). A preference
    that is not finite is a :class:`~guimem.core.data.DataError` (NaN is neither tied nor won)."""
    preference = check_finite(np.asarray(preference, dtype=float), "preference")
    n, k = len(preference), int((preference != 0).sum())
    return {"steps": n, "non_tied": k, "non_tied_share": k / n if n else float("nan"),
            "text_wins": float((preference < 0).sum() / k) if k else float("nan"),
            "image_wins": float((preference > 0).sum() / k) if k else float("nan")}


def table_one(records: StepRecords, routings: dict[str, np.ndarray], rules: Sequence[str],
              reference: str = "switchmem", seed: int = 0) -> dict[str, dict[str, Any]]:
    """SwitchMem's Table 1 on held-out steps, per rule: the fixed conditions (none, text, image,
    both), every routing in ``routings`` (name -> ``[n]`` bool, True = Image) with its image rate,
    ratio-matched random routing at ``reference``'s rate, and the per-step oracle; plus the paired
    sign test of ``reference`` against the best fixed rendering and its p-value against random."""
    out: dict[str, dict[str, Any]] = {}
    for rule in rules:
        row: dict[str, Any] = dict(fixed_accuracies(records, rule))
        for name, mask in routings.items():
            row[name] = float(routed_hits(records, mask, rule).mean())
            row[f"{name}_image_rate"] = float(np.mean(mask))
        text, image = records.hits[rule]["text"], records.hits[rule]["image"]
        row["oracle"] = float((text | image).mean())
        if reference in routings:
            rate = float(np.mean(routings[reference]))
            ref_hits = routed_hits(records, routings[reference], rule)
            rnd = random_routing(records, rate, rule, seed=seed)
            row["random"], row["random_ci"] = rnd["expected"], [rnd["lo"], rnd["hi"]]
            best = "image" if image.mean() > text.mean() else "text"
            row[f"{reference}_vs_best_fixed"] = {"best_fixed": best, **paired_counts(ref_hits, records.hits[rule][best])}
            row[f"{reference}_vs_random_p"] = round(beats_random(ref_hits, records, rate, rule, seed=seed), 4)
        out[rule] = row
    return out


ACTION_CATEGORIES: dict[str, str] = {
    "tap": "interface functionality", "long_press": "interface functionality", "swipe": "interface functionality",
    "type": "interface functionality", "done": "task status", "impossible": "task status",
    "back": "system navigation", "home": "system navigation", "enter": "system navigation",
    "open_app": "system navigation"}
"""SwitchMem's action categories: acting on the app's interface, saying where the task stands, moving
through the system."""


def route_records(router: Router, records: StepRecords) -> tuple[np.ndarray, np.ndarray]:
    """``(scores [n], image [n] bool)``: the router on every step of ``records`` at its own τ, reading
    the memory-free hidden state of the layer it was trained on (``router.info["state_layer"]``)."""
    layer = int(router.info.get("state_layer", -1))
    scores = router.score(records.hidden["none"][:, layer], records.candidates["text"], records.candidates["image"])
    return scores, router.route(scores)


def label_free_tau(router: Router, records: StepRecords) -> float:
    """SwitchMem's τ for the steps of ``records``: :func:`~guimem.routing.router.calibrate_tau` on the
    router's scores there (from their memory-free states and candidates only) at the image rate the
    router has on its own training pool. No hit, preference, action or success of theirs is read."""
    return calibrate_tau(route_records(router, records)[0], router.train_image_rate)


def where_image_helps(records: StepRecords, image: np.ndarray, rule: str = "aitw",
                      density_edges: Sequence[float] | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """Text against image against the routing, within groups of held-out steps: by UI density
    (elements on screen, cut at ``density_edges``; default its tertiles), by action category
    (:data:`ACTION_CATEGORIES`), by step position (first step, later) and by target (label-free
    icon, labelled control). Per group: steps, text and image accuracy, image minus text, the
    routing's accuracy and its image share, the oracle."""
    image = np.asarray(image, dtype=bool)
    text_hits, image_hits = records.hits[rule]["text"], records.hits[rule]["image"]
    routed = routed_hits(records, image, rule)
    density = np.array([r["n_elements"] for r in records.rows], dtype=float)
    edges = list(density_edges) if density_edges is not None else [float(np.quantile(density, q)) for q in (1 / 3, 2 / 3)]
    cuts = {f"≤ {edges[0]:g} elements": density <= edges[0]}
    for lo, hi in zip(edges[:-1], edges[1:]):
        cuts[f"{lo:g}–{hi:g} elements"] = (density > lo) & (density <= hi)
    cuts[f"> {edges[-1]:g} elements"] = density > edges[-1]
    category = np.array([ACTION_CATEGORIES.get(r["target_type"], "other") for r in records.rows])
    axes = {"UI density": cuts,
            "action category": {c: category == c for c in ("interface functionality", "task status",
                                                            "system navigation")},
            "step position": {"first step": records.group("first step"), "later step": records.group("later step")},
            "target": {"label-free icon": records.group("label-free icon"),
                       "labelled control": records.group("labelled control")}}
    out: dict[str, dict[str, dict[str, float]]] = {}
    for axis, groups in axes.items():
        out[axis] = {}
        for name, mask in groups.items():
            n = int(mask.sum())
            if not n:
                continue
            t, i = float(text_hits[mask].mean()), float(image_hits[mask].mean())
            out[axis][name] = {"steps": n, "text": t, "image": i, "image_minus_text": i - t,
                               "routed": float(routed[mask].mean()), "image_share": float(image[mask].mean()),
                               "oracle": float((text_hits[mask] | image_hits[mask]).mean())}
    return out
