"""SwitchMem's recipe on step records: the routers trained on the pool, then scored on held-out steps.

The probe sees the shift ``h_I - h_T`` of the two memory prompts and is the *teacher*: fitted on
the pool's non-tied steps, its decision value on every pool step is the target of the router
(on the steps it was fitted on, the out-of-fold value of a probe that did not see the step's
episode, so that the router does not learn the probe's overfit). The router sees only what
exists before either memory prompt runs: the memory-free hidden state and the actor's embedding
of each candidate. Beside it, the ``binary`` router is the same MLP trained on the non-tied
steps' binary preference directly. On the held-out steps each router's τ is set from its scores
alone, and both are scored against the fixed renderings, ratio-matched random routing, the
UI-density heuristic and a sweep of image-use rates (``routing.route_scores``). What the numbers say
is stated as claims that hold or not: SwitchMem's, and the oracle headroom's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from guimem.core.data import DataError
from guimem.routing.route_scores import density_routing, label_free_tau, rate_sweep, table_one
from guimem.routing.probe import PreferenceProbe, ProbeConfig, cross_validated_decisions, fit_problem
from guimem.routing.records import StepRecords
from guimem.routing.router import Router, RouterConfig, train_router
from guimem.viz.plotting import MEMORY_LABELS

TEACHER_FOLDS = 5  # folds (by episode) of the out-of-fold probe values the router learns on the probe's own steps
RULES = ("aitw", "learngui")  # the step rules Table 1 scores under
FIXED = ("none", "text", "image", "both")  # the fixed renderings


@dataclass
class Routers:
    """What the recipe trained for one memory: the probe, its values on the pool, the two routers."""

    probe: PreferenceProbe
    teacher: np.ndarray  # [pool steps] the router's target: the probe's decision value (out of fold where fitted)
    switchmem: Router  # the shared scorer trained on ``teacher``
    binary: Router  # the same scorer trained on the non-tied steps' binary preference
    state_layer: int  # which layer's memory-free hidden state the routers read

    def state(self, records: StepRecords) -> np.ndarray:
        """``[steps, d]`` the routers' state: the memory-free hidden state at ``state_layer``."""
        return records.hidden["none"][:, self.state_layer]

    def summary(self) -> dict[str, Any]:
        """Each router's τ, image rate on its pool and info, the probe's explained variance, and the
        share of pool steps the teacher sends to Image."""
        return {**{name: {"tau": r.tau, "train_image_rate": r.train_image_rate, **r.info}
                   for name, r in (("switchmem", self.switchmem), ("binary", self.binary))},
                "probe_explained_variance": self.probe.explained_variance,
                "teacher_positive_share": float((self.teacher > 0).mean())}


def train_routers(records: StepRecords, kind: str, rule: str, config: RouterConfig, probe_config: ProbeConfig,
                  state_layer: int = -1, seed: int = 0, where: str = "") -> Routers:
    """SwitchMem's routers for memory ``kind`` from the pool ``records`` (every memory's steps):
    probe (``probe_config``) on the final-layer shift of the non-tied steps under ``rule``, its out-of-fold
    teacher values, then the ``probe`` and ``binary`` routers with ``config``'s shape and training (its
    ``target`` replaced). A pool no probe can be fitted on is a ``DataError`` naming ``where``."""
    pool = records.of_memory(kind)
    decided = pool.non_tied(rule)
    if (why := fit_problem(decided.preference(rule) > 0, decided.episodes)) is not None:
        raise DataError("n_samples", f"{MEMORY_LABELS[kind]}: no probe can be fitted on the pool: {why}; draw more "
                                     "actions per step (layer_analysis.preference.n_samples), at a higher "
                                     "temperature, or from a larger pool", where)
    preferred = decided.preference(rule) > 0
    probe = PreferenceProbe(probe_config, seed).fit(decided.shift(-1), preferred)
    teacher = probe.decision_function(pool.shift(-1))  # tied steps: the probe never saw them
    non_tied = pool.preference(rule) != 0  # the steps it was fitted on get out-of-fold values instead
    teacher[non_tied] = cross_validated_decisions(decided.shift(-1), preferred, decided.episodes, TEACHER_FOLDS,
                                                  probe_config, seed)
    state = lambda rec: rec.hidden["none"][:, state_layer]
    switchmem = train_router(state(pool), pool.candidates["text"], pool.candidates["image"], teacher,
                             dataclasses.replace(config, target="probe"))
    binary = train_router(state(decided), decided.candidates["text"], decided.candidates["image"],
                          (decided.preference(rule) > 0).astype(float), dataclasses.replace(config, target="binary"))
    for router in (switchmem, binary):
        router.info["state_layer"] = state_layer  # what 08 and 09 read the state from
    return Routers(probe, teacher, switchmem, binary, state_layer)


def score_routers(routers: Routers, held: StepRecords, rule: str, sweep_rates: Sequence[float],
                  seed: int = 0) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Both routers on the held-out steps ``held`` of their memory: each τ set from its scores alone
    (the routers are changed in place), Table 1 under both rules (with the UI-density heuristic at
    SwitchMem's image rate), and the sweep of ``sweep_rates`` under ``rule`` of each router and of
    UI density against random routing. Returns ``(table by rule, sweep by router)``."""
    state = routers.state(held)
    scores = {name: r.score(state, held.candidates["text"], held.candidates["image"])
              for name, r in (("switchmem", routers.switchmem), ("binary", routers.binary))}
    for r in (routers.switchmem, routers.binary):
        r.tau = label_free_tau(r, held)  # the held-out steps' scores only
    routings = {"switchmem": routers.switchmem.route(scores["switchmem"]),
                "binary": routers.binary.route(scores["binary"])}
    routings["density"] = density_routing(held, float(routings["switchmem"].mean()), seed)
    table = table_one(held, routings, RULES, seed=seed)
    sweeps = {"SwitchMem router": rate_sweep(scores["switchmem"], held, sweep_rates, rule, seed),
              "binary-target router": rate_sweep(scores["binary"], held, sweep_rates, rule, seed),
              "UI density": rate_sweep(np.array([r["n_elements"] for r in held.rows], float), held,
                                       sweep_rates, rule, seed)}
    return table, sweeps


def fixed_baselines(records: StepRecords, routed: Sequence[str]) -> dict[str, dict[str, dict[str, float]]]:
    """The step accuracy of each fixed rendering, by rule, of every memory in ``records`` that is not
    ``routed`` (shown with the same actor as the memory-augmentation baselines)."""
    out = {}
    for kind in sorted({r["memory_kind"] for r in records.rows} - set(routed)):
        rec = records.of_memory(kind)
        out[kind] = {r: {c: float(rec.hits[r][c].mean()) for c in FIXED} for r in rec.rules}
    return out


def switchmem_findings(table: dict[str, Any], beats_random_at: int, n_rates: int) -> dict[str, bool]:
    """SwitchMem's claims on one memory's Table 1 under one rule (``table``), each holding or not:
    at least the best fixed rendering, above ratio-matched random, above the binary target and UI
    density, and above random at all ``n_rates`` rates of the sweep (it was at ``beats_random_at``)."""
    best = table["switchmem_vs_best_fixed"]["best_fixed"]
    return {
        "switchmem_at_least_best_fixed": bool(table["switchmem"] >= table[best]),
        "switchmem_above_random": bool(table["switchmem"] > table["random"]),
        "switchmem_above_binary_target": bool(table["switchmem"] > table["binary"]),
        "switchmem_above_density": bool(table["switchmem"] > table["density"]),
        "beats_random_at_every_rate": bool(beats_random_at == n_rates),
    }


def headroom_findings(headroom: dict[str, Any], groups: dict[str, dict[str, dict[str, Any]]]) -> dict[str, bool]:
    """The headroom claims on one memory and rule, each holding or not: the per-step oracle above the
    best fixed rendering (``headroom``: ``routing.route_scores.headroom``), SwitchMem above that rendering,
    and the image helping more on the densest screens than the sparsest and after the first step
    (``groups``: ``routing.route_scores.where_image_helps``)."""
    density, position = list(groups["UI density"].values()), groups["step position"]
    return {
        "oracle_headroom_exists": bool(headroom["oracle_gain"] > 0),
        "switchmem_captures_headroom": bool(headroom["switchmem"] > headroom["best_fixed_accuracy"]),
        "image_helps_more_on_dense_screens": bool(density[-1]["image_minus_text"] > density[0]["image_minus_text"]),
        "image_helps_more_after_first_step": bool(position["later step"]["image_minus_text"]
                                                  > position["first step"]["image_minus_text"]),
    }
