"""The preference probe: does the actor's hidden-state shift ``h_I - h_T`` say which rendering of
its memory it will act better with?

:class:`PreferenceProbe` is SwitchMem's probe (its settings a :class:`ProbeConfig`): standardise the
shift, reduce it to ``pca_dim`` dimensions with PCA, fit a logistic regression on the sign of the
sampled action preference of the non-tied steps (scikit-learn throughout). Its continuous
``decision_function`` is what the router's scorer is trained to reproduce (:mod:`guimem.routing.router`).

:func:`layer_curve` asks the question of the paper's layer analysis — does the signal grow with
depth? — by fitting the same probe on every layer's shift, cross-validated by episode (no episode in
both the fitting and the scored fold), and reporting out-of-fold accuracy and ROC AUC with
bootstrap intervals over episodes.

Every array these functions take must hold finite values (:func:`~guimem.core.io.check_finite`): a
NaN shift or decision value is a :class:`~guimem.core.data.DataError` naming the argument, never a
raw scikit-learn error, and a NaN label is never read as a preference for the image (``bool(nan)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from guimem.core.data import DataError
from guimem.core.io import check_finite, check_number


@dataclass(frozen=True)
class ProbeConfig:
    """The probe's settings (params.yaml ``layer_analysis.probe`` and ``probe_router.probe``)."""

    pca_dim: int = 64  # principal directions the standardised shift is reduced to (paper: 64; capped by the data)
    c: float = 1.0  # the logistic regression's inverse L2 strength

    def __post_init__(self) -> None:
        check_number(self.pca_dim, "pca_dim", 1, None, integer=True)
        if not check_number(self.c, "c") > 0:
            raise DataError("c", f"must be > 0, got {self.c!r}")


@dataclass(frozen=True)
class CurveConfig:
    """How the layer curves score the probe (params.yaml ``layer_analysis.curve``)."""

    folds: int = 5  # cross-validation folds of the layer curve, by episode
    n_boot: int = 500  # episode-bootstrap resamples of each layer's intervals

    def __post_init__(self) -> None:
        check_number(self.folds, "folds", 2, None, integer=True)
        check_number(self.n_boot, "n_boot", 1, None, integer=True)


def _finite(array: Any, name: str) -> np.ndarray:
    """``array`` as float64, every value finite (else a DataError naming the argument ``name``)."""
    return check_finite(np.asarray(array, dtype=np.float64), name)


def _labels(array: Any, name: str) -> np.ndarray:
    """``array`` as bool; numbers must be finite first (``bool(nan)`` is True: a NaN would count as a
    preference for the image)."""
    return check_finite(np.asarray(array), name).astype(bool)


def _groups(array: Any) -> np.ndarray:
    """Episode ids; numeric ids must be finite (NaN ids cannot be told apart or grouped)."""
    return check_finite(np.asarray(array), "groups")


def make_probe(config: ProbeConfig, seed: int = 0, n_samples: int | None = None,
               n_features: int | None = None) -> Pipeline:
    """standardise → PCA(``config.pca_dim``, capped at what the data allows) → logistic regression
    (L2, ``config.c``)."""
    dim = config.pca_dim
    if n_samples is not None and n_features is not None:
        dim = max(1, min(config.pca_dim, n_samples - 1, n_features))
    return Pipeline([("scale", StandardScaler()), ("pca", PCA(n_components=dim, random_state=seed)),
                     ("logistic", LogisticRegression(C=config.c, max_iter=2000))])


@dataclass
class PreferenceProbe:
    """SwitchMem's probe on one layer's shift ``h_I - h_T`` (``[n, d]``)."""

    config: ProbeConfig = field(default_factory=ProbeConfig)
    seed: int = 0
    pipeline: Pipeline | None = None

    def fit(self, shift: np.ndarray, image_preferred: np.ndarray) -> "PreferenceProbe":
        """Fit on non-tied steps: ``shift`` ``[n, d]``, ``image_preferred`` ``[n]`` bool (both classes needed)."""
        shift, y = _finite(shift, "shift"), _labels(image_preferred, "image_preferred")
        if shift.ndim != 2 or len(shift) != len(y):
            raise DataError("shift", f"expected [n, d] with one label per row, got {shift.shape} and {y.shape}")
        if len(np.unique(y)) < 2:
            raise DataError("image_preferred", "the probe needs steps won by each modality; all labels are equal")
        self.pipeline = make_probe(self.config, self.seed, *shift.shape).fit(shift, y)
        return self

    def decision_function(self, shift: np.ndarray) -> np.ndarray:
        """``[n]`` the logistic decision value (> 0: the probe says image)."""
        if self.pipeline is None:
            raise RuntimeError("fit the probe first")
        return self.pipeline.decision_function(_finite(shift, "shift"))

    @property
    def explained_variance(self) -> float:
        """Share of the standardised shift's variance the kept principal directions explain."""
        return float(self.pipeline.named_steps["pca"].explained_variance_ratio_.sum())


def cross_validated_decisions(shift: np.ndarray, image_preferred: np.ndarray, groups: np.ndarray, folds: int,
                              probe: ProbeConfig, seed: int = 0) -> np.ndarray:
    """``[n]`` out-of-fold probe decision values, folds by ``groups`` (episodes): each step scored by
    a probe that never saw its episode."""
    shift, y, groups = _finite(shift, "shift"), _labels(image_preferred, "image_preferred"), _groups(groups)
    k = min(folds, len(np.unique(groups)), int(np.bincount(y.astype(int), minlength=2).max()))  # stratified folds
    if k < 2:  # need a larger class of two steps at least, so that stratified folds exist
        raise DataError("groups", "cross-validation by episode needs at least two episodes and a class of two steps")
    out = np.zeros(len(y))
    for fit_idx, score_idx in StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed).split(shift, y, groups):
        if len(np.unique(y[fit_idx])) < 2:  # a fold without one class: the prior decides
            out[score_idx] = 1.0 if y[fit_idx].all() else -1.0
            continue
        fitted = PreferenceProbe(probe, seed).fit(shift[fit_idx], y[fit_idx])
        out[score_idx] = fitted.decision_function(shift[score_idx])
    return out


def probe_scores(y: np.ndarray, decision: np.ndarray) -> tuple[float, float]:
    """``(accuracy, ROC AUC)`` of decision values against ``y`` (AUC NaN with one class only)."""
    y, decision = _labels(y, "y"), _finite(decision, "decision")
    acc = float(((decision > 0) == y).mean())
    auc = float(roc_auc_score(y, decision)) if len(np.unique(y)) == 2 else float("nan")
    return acc, auc


def bootstrap_interval(y: np.ndarray, decision: np.ndarray, groups: np.ndarray, n_boot: int, seed: int = 0,
                       level: float = 0.95) -> dict[str, tuple[float, float]]:
    """Percentile intervals of accuracy and AUC, resampling *episodes* with replacement (steps of one
    episode are not independent)."""
    y, decision, groups = _labels(y, "y"), _finite(decision, "decision"), _groups(groups)
    rng = np.random.default_rng(seed)
    ids = np.unique(groups)
    members = {g: np.flatnonzero(groups == g) for g in ids}
    accs, aucs = [], []
    for _ in range(n_boot):
        idx = np.concatenate([members[g] for g in rng.choice(ids, len(ids), replace=True)])
        acc, auc = probe_scores(y[idx], decision[idx])
        accs.append(acc)
        if not np.isnan(auc):
            aucs.append(auc)
    lo, hi = (1 - level) / 2 * 100, (1 + level) / 2 * 100
    interval = lambda v: (float(np.percentile(v, lo)), float(np.percentile(v, hi))) if v else (float("nan"),) * 2
    return {"accuracy": interval(accs), "auc": interval(aucs)}


def is_constant(shift: np.ndarray) -> bool:
    """Whether every step has the same shift (e.g. layer 0 at the final token of an actor whose
    final-token embedding does not depend on the memory: ``h_I - h_T`` is exactly zero there)."""
    return bool(np.all(np.ptp(np.asarray(shift), axis=0) == 0))


def _no_signal(layer: int, majority: float, steps: int) -> dict[str, Any]:
    """A layer whose shift is the same for every step: nothing to read; the probe is at chance."""
    return {"layer": layer, "accuracy": majority, "auc": 0.5, "accuracy_ci": [majority, majority],
            "auc_ci": [0.5, 0.5], "majority": majority, "steps": int(steps), "constant": True}


def fit_problem(y: np.ndarray, groups: np.ndarray) -> str | None:
    """Why a probe cannot be fitted and scored by episode on these steps, or None: it needs both
    classes, one of them twice, and at least two episodes (a pool where the renderings rarely
    disagree may have none of these)."""
    y, groups = _labels(y, "y"), _groups(groups)
    if len(np.unique(y)) < 2:
        return f"{len(y)} non-tied steps, {int(y.sum())} won by image: both renderings must win some"
    if len(y) < 3:
        return f"{len(y)} non-tied steps, one won by each rendering: too few to fit and score a probe"
    if len(np.unique(groups)) < 2:
        return f"the {len(y)} non-tied steps come from one episode: cross-validation by episode needs two"
    return None


def _insufficient(layer: int, steps: int, why: str) -> dict[str, Any]:
    """A layer the probe could not be fitted on: no number is made up."""
    nan = float("nan")
    return {"layer": layer, "accuracy": nan, "auc": nan, "accuracy_ci": [nan, nan], "auc_ci": [nan, nan],
            "majority": nan, "steps": int(steps), "insufficient": why}


def _scored(layer: int, y: np.ndarray, decision: np.ndarray, groups: np.ndarray, majority: float, n_boot: int,
            seed: int) -> dict[str, Any]:
    """One layer's row: accuracy and AUC of ``decision`` against ``y``, with episode-bootstrap intervals."""
    acc, auc = probe_scores(y, decision)
    ci = bootstrap_interval(y, decision, groups, n_boot, seed)
    return {"layer": layer, "accuracy": acc, "auc": auc, "accuracy_ci": list(ci["accuracy"]),
            "auc_ci": list(ci["auc"]), "majority": majority, "steps": int(len(y))}


def layer_curve(shifts: np.ndarray, image_preferred: np.ndarray, groups: np.ndarray, probe: ProbeConfig,
                curve: CurveConfig, seed: int = 0) -> list[dict[str, Any]]:
    """Per layer of ``shifts`` (``[n, n_layers + 1, d]``, non-tied steps only): out-of-fold accuracy
    and AUC of the probe, with 95% episode-bootstrap intervals, and the majority-class accuracy.

    Layer 0 is the embedding layer's output at the final token, before any block has read the
    memory: for the miniature actor it is the same under both renderings, so its shift is zero and
    the layer is reported at chance (``"constant": True``) without fitting."""
    shifts = check_finite(np.asarray(shifts), "shifts")  # kept in its dtype: a layer at a time is made float64
    y, groups = _labels(image_preferred, "image_preferred"), _groups(groups)
    if (why := fit_problem(y, groups)) is not None:
        return [_insufficient(layer, len(y), why) for layer in range(shifts.shape[1])]
    majority = float(max(y.mean(), 1 - y.mean())) if len(y) else float("nan")
    points = []
    for layer in range(shifts.shape[1]):
        if is_constant(shifts[:, layer]):
            points.append(_no_signal(layer, majority, len(y)))
            continue
        decision = cross_validated_decisions(shifts[:, layer], y, groups, curve.folds, probe, seed)
        points.append(_scored(layer, y, decision, groups, majority, curve.n_boot, seed))
    return points


def transfer_curve(fit_shifts: np.ndarray, fit_preferred: np.ndarray, score_shifts: np.ndarray,
                   score_preferred: np.ndarray, score_groups: np.ndarray, probe: ProbeConfig,
                   curve: CurveConfig, seed: int = 0) -> list[dict[str, Any]]:
    """Per layer: the probe fitted on one set of steps (``[n, layers + 1, d]`` shifts, non-tied) and
    scored on another (other tasks, another split): accuracy and AUC with episode-bootstrap intervals
    (``curve.n_boot`` resamples; ``curve.folds`` is not used: nothing is cross-validated)."""
    fit_shifts, score_shifts = (check_finite(np.asarray(a), name) for a, name in  # in their dtype, as above
                                ((fit_shifts, "fit_shifts"), (score_shifts, "score_shifts")))
    fit_preferred = _labels(fit_preferred, "fit_preferred")
    y, score_groups = _labels(score_preferred, "score_preferred"), _groups(score_groups)
    why = fit_problem(fit_preferred, np.arange(len(fit_preferred)))  # the fit needs both classes
    if why is None and len(np.unique(y)) < 2:
        why = f"the {len(y)} scored steps hold one class only: no AUC"
    if why is not None:
        return [_insufficient(layer, len(y), why) for layer in range(fit_shifts.shape[1])]
    majority = float(max(y.mean(), 1 - y.mean())) if len(y) else float("nan")
    points = []
    for layer in range(fit_shifts.shape[1]):
        if is_constant(fit_shifts[:, layer]):
            points.append(_no_signal(layer, majority, len(y)))
            continue
        fitted = PreferenceProbe(probe, seed).fit(fit_shifts[:, layer], fit_preferred)
        decision = fitted.decision_function(score_shifts[:, layer])
        points.append(_scored(layer, y, decision, np.asarray(score_groups), majority, curve.n_boot, seed))
    return points
