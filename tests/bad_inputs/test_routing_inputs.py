"""Arrays that are not finite, given to the routing's public functions: the router's training, scores,
routing and label-free τ, the preference probe and its layer curves, and the routing scores. Each
case is a :class:`DataError` naming the argument (and the first bad index), never a NaN counted as the
highest score, a NaN label read as a preference for the image, a NaN score that routes to Text, or a
raw scikit-learn error. Everything is built small and in memory.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

from bad_inputs.corpus import error
from guimem.routing.probe import (
    CurveConfig,
    PreferenceProbe,
    ProbeConfig,
    bootstrap_interval,
    cross_validated_decisions,
    fit_problem,
    layer_curve,
    probe_scores,
    transfer_curve,
)
from guimem.routing.records import StepRecords
from guimem.routing.route_scores import at_rate, label_free_tau, preference_shares, rate_sweep, route_records
from guimem.routing.router import Router, RouterConfig, calibrate_tau, train_router

pytestmark = pytest.mark.bad_input

NAN, INF = float("nan"), float("inf")
N = 12
RNG = np.random.default_rng(0)
STATE, TEXT, IMAGE, TARGET = (RNG.normal(size=(N, 5)), RNG.normal(size=(N, 3)), RNG.normal(size=(N, 3)),
                              RNG.normal(size=N))
SHIFT = RNG.normal(size=(N, 4))  # one layer's h_I - h_T
SHIFTS = RNG.normal(size=(N, 3, 4))  # every layer's
PREFERRED = np.arange(N) % 2 == 0
GROUPS = np.array([f"e{i // 2}" for i in range(N)])
SCORES = RNG.normal(size=N)
CONFIG = RouterConfig(hidden=4, epochs=5, seed=0)
PROBE, CURVE = ProbeConfig(pca_dim=2), CurveConfig(folds=2, n_boot=5)


def bad(array: np.ndarray, index: tuple[int, ...] | int, value: Any = NAN) -> np.ndarray:
    """A float copy of ``array`` with ``value`` at ``index``."""
    out = np.array(array, dtype=np.float64)
    out[index] = value
    return out


def router() -> Router:
    return train_router(STATE, TEXT, IMAGE, TARGET, CONFIG)


def fitted_probe() -> PreferenceProbe:
    return PreferenceProbe(PROBE).fit(SHIFT, PREFERRED)


def records(hidden_none: np.ndarray | None = None) -> StepRecords:
    rows = [{"episode_id": f"e{i // 2}", "step": i % 2, "memory_kind": "smg", "target": "tap", "target_type": "tap",
             "n_elements": 3 + i, "groups": ["first step"], "goal": "g"} for i in range(N)]
    hits = {"aitw": {c: RNG.random(N) < 0.5 for c in ("none", "text", "image", "both")}}
    sampled = {"aitw": {c: RNG.integers(0, 5, N) / 4 for c in ("text", "image")}}
    hidden = {c: RNG.normal(size=(N, 2, 5)).astype(np.float32) for c in ("none", "text", "image")}
    if hidden_none is not None:
        hidden["none"] = hidden_none
    candidates = {"text": TEXT.astype(np.float32), "image": IMAGE.astype(np.float32)}
    return StepRecords(rows, hits, sampled, hidden, candidates,
                       {"n_samples": 4, "temperature": 1.0, "seed": 0, "actor": "MiniActor"})


# (case id, the call, the field its DataError names, a fragment of its message)
CASES: list[tuple[str, Callable[[], Any], str, str]] = [
    # the router's training
    ("train_state_nan", lambda: train_router(bad(STATE, (3, 1)), TEXT, IMAGE, TARGET, CONFIG), "state",
     "non-finite value at index (3, 1)"),
    ("train_text_inf", lambda: train_router(STATE, bad(TEXT, (0, 2), INF), IMAGE, TARGET, CONFIG), "text",
     "non-finite value at index (0, 2)"),
    ("train_image_minus_inf", lambda: train_router(STATE, TEXT, bad(IMAGE, (5, 0), -INF), TARGET, CONFIG), "image",
     "non-finite value at index (5, 0)"),
    ("train_target_nan", lambda: train_router(STATE, TEXT, IMAGE, bad(TARGET, 7), CONFIG), "target",
     "non-finite value at index (7,)"),
    ("train_binary_target_nan", lambda: train_router(STATE, TEXT, IMAGE, bad(PREFERRED, 2),
                                                     RouterConfig(hidden=4, epochs=5, target="binary")), "target",
     "non-finite value at index (2,)"),
    ("train_state_too_large", lambda: train_router(bad(STATE, (1, 0), 1e200), TEXT, IMAGE, TARGET, CONFIG), "state",
     "too large to standardise"),
    ("train_target_too_large", lambda: train_router(STATE, TEXT, IMAGE, bad(TARGET, 0, -1e300), CONFIG), "target",
     "too large to standardise"),
    ("train_lr_overshoots", lambda: train_router(STATE, TEXT, IMAGE, TARGET, RouterConfig(hidden=4, epochs=20, lr=1e30)),
     "lr", "must be in (0, 1], got 1e+30"),
    # a trained router's scores and routing
    ("score_state_nan", lambda: router().score(bad(STATE, (2, 4)), TEXT, IMAGE), "state",
     "non-finite value at index (2, 4)"),
    ("score_text_inf", lambda: router().score(STATE, bad(TEXT, (1, 1), INF), IMAGE), "text",
     "non-finite value at index (1, 1)"),
    ("score_image_nan", lambda: router().score(STATE, TEXT, bad(IMAGE, (11, 2))), "image",
     "non-finite value at index (11, 2)"),
    ("score_state_too_wide", lambda: router().score(np.zeros((N, 6)), TEXT, IMAGE), "state",
     "expected [n, 5] values, got shape (12, 6)"),
    ("route_scores_nan", lambda: router().route(bad(SCORES, 4)), "scores", "non-finite value at index (4,)"),
    ("route_tau_nan", lambda: router().route(SCORES, NAN), "tau", "got NaN"),
    ("route_records_state_nan", lambda: route_records(router(), records(bad(np.zeros((N, 2, 5)), (6, -1, 0)))),
     "state", "non-finite value at index (6, 0)"),
    ("label_free_tau_state_inf", lambda: label_free_tau(router(), records(bad(np.zeros((N, 2, 5)), (0, -1, 3), INF))),
     "state", "non-finite value at index (0, 3)"),
    # the label-free threshold (a NaN once sorted as the highest score)
    ("calibrate_nan", lambda: calibrate_tau(bad(SCORES, 0), 0.5), "scores", "non-finite value at index (0,)"),
    ("calibrate_inf", lambda: calibrate_tau(bad(SCORES, 9, INF), 0.25), "scores", "non-finite value at index (9,)"),
    # the preference probe
    ("probe_fit_shift_nan", lambda: PreferenceProbe(PROBE).fit(bad(SHIFT, (3, 3)), PREFERRED), "shift",
     "non-finite value at index (3, 3)"),
    ("probe_fit_label_nan", lambda: PreferenceProbe(PROBE).fit(SHIFT, bad(PREFERRED, 1)), "image_preferred",
     "non-finite value at index (1,)"),
    ("probe_decision_shift_inf", lambda: fitted_probe().decision_function(bad(SHIFT, (0, 0), INF)), "shift",
     "non-finite value at index (0, 0)"),
    ("cross_validated_shift_nan", lambda: cross_validated_decisions(bad(SHIFT, (8, 1)), PREFERRED, GROUPS, 2, PROBE),
     "shift", "non-finite value at index (8, 1)"),
    ("cross_validated_groups_nan", lambda: cross_validated_decisions(SHIFT, PREFERRED, bad(np.arange(N) // 2, 3), 2,
                                                                     PROBE),
     "groups", "non-finite value at index (3,)"),
    ("probe_scores_decision_nan", lambda: probe_scores(PREFERRED, bad(SCORES, 5)), "decision",
     "non-finite value at index (5,)"),
    ("bootstrap_decision_inf", lambda: bootstrap_interval(PREFERRED, bad(SCORES, 2, -INF), GROUPS, 5), "decision",
     "non-finite value at index (2,)"),
    ("fit_problem_label_nan", lambda: fit_problem(bad(PREFERRED, 0), GROUPS), "y", "non-finite value at index (0,)"),
    # the layer curves
    ("layer_curve_shifts_nan", lambda: layer_curve(bad(SHIFTS, (4, 2, 1)), PREFERRED, GROUPS, PROBE, CURVE), "shifts",
     "non-finite value at index (4, 2, 1)"),
    ("layer_curve_shifts_float32_inf", lambda: layer_curve(bad(SHIFTS, (0, 1, 0), INF).astype(np.float32), PREFERRED,
                                                           GROUPS, PROBE, CURVE), "shifts",
     "non-finite value at index (0, 1, 0)"),
    ("layer_curve_label_nan", lambda: layer_curve(SHIFTS, bad(PREFERRED, 3), GROUPS, PROBE, CURVE), "image_preferred",
     "non-finite value at index (3,)"),
    ("transfer_fit_shifts_nan", lambda: transfer_curve(bad(SHIFTS, (1, 1, 1)), PREFERRED, SHIFTS, PREFERRED, GROUPS,
                                                       PROBE, CURVE),
     "fit_shifts", "non-finite value at index (1, 1, 1)"),
    ("transfer_score_shifts_inf", lambda: transfer_curve(SHIFTS, PREFERRED, bad(SHIFTS, (2, 0, 3), INF), PREFERRED,
                                                         GROUPS, PROBE, CURVE), "score_shifts",
     "non-finite value at index (2, 0, 3)"),
    ("transfer_score_label_nan", lambda: transfer_curve(SHIFTS, PREFERRED, SHIFTS, bad(PREFERRED, 6), GROUPS, PROBE,
                                                        CURVE), "score_preferred", "non-finite value at index (6,)"),
    # the routing scores
    ("at_rate_scores_nan", lambda: at_rate(bad(SCORES, 10), 0.5), "scores", "non-finite value at index (10,)"),
    ("rate_sweep_scores_nan", lambda: rate_sweep(bad(SCORES, 1), records(), [0.25, 0.5]), "scores",
     "non-finite value at index (1,)"),
    ("preference_shares_nan", lambda: preference_shares(bad(SCORES, 3)), "preference",
     "non-finite value at index (3,)"),
]


@pytest.mark.parametrize("case, call, field, message", CASES, ids=[c[0] for c in CASES])
def test_a_non_finite_routing_input_is_named(case, call, field, message):
    err = error(call)
    assert (err.field, err.path) == (field, None), str(err)
    assert message in err.message, str(err)


def test_finite_inputs_and_an_infinite_tau_are_accepted():
    r = router()
    scores = r.score(STATE, TEXT, IMAGE)
    assert np.isfinite(scores).all()
    assert not r.route(scores, INF).any() and r.route(scores, -INF).all()  # calibrate_tau's rates 0 and 1
    assert calibrate_tau(scores, 0.0) == INF and calibrate_tau(scores, 1.0) == -INF
    assert [p["layer"] for p in layer_curve(SHIFTS.astype(np.float32), PREFERRED, GROUPS, PROBE, CURVE)] == [0, 1, 2]
