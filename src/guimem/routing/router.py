"""SwitchMem's router: a shared MLP scorer ``q(state, candidate)`` and a label-free threshold.

The probe (:mod:`guimem.routing.probe`) reads ``h_I - h_T``, which needs *both* memory prompts run.
The router must decide before running either: it sees the actor's hidden state on the memory-free
prompt (``state``, one forward pass the step needs anyway for no memory) and a cheap reading of each
candidate rendering (``candidate``: the actor's own embedding of the memory tokens, no transformer
block). One MLP — *shared* by the two candidates, told which is which by a modality flag — scores
each: ``r = q(state, image) - q(state, text)``. It is trained so that ``r`` reproduces the probe's
continuous decision value (``target="probe"``, SwitchMem), or, as the simpler baseline, with a
logistic loss on the binary sampled preference directly (``target="binary"``).

**The threshold τ, calibrated without labels.** ``r ≥ τ`` routes to Image. On its training pool the
router's own decisions at ``r ≥ 0`` give an image-use rate ρ (the rate the probe's supervision
implies). On new steps — another memory, another split, another benchmark — :func:`calibrate_tau`
sets τ between the router's scores *there* so that the top ρ of them go to Image: the router keeps
using Image on the share of steps it learned to, ranked by its own scores. It reads the scores only:
no action, reward, success or preference of the new steps
(:func:`guimem.routing.route_scores.label_free_tau` does it from step records).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from guimem.core.data import DataError
from guimem.core.io import (
    atomic_write_dir,
    check_finite,
    check_number,
    check_safetensors,
    file_inside,
    read_json,
    read_whole,
    write_json,
)

ROUTER_KIND = "guimem.router"
RouterTarget = Literal["probe", "binary"]
MIN_STD = 1e-8  # a standard deviation at or below this is stored as 1 (:func:`_standardiser`)
MAX_HIDDEN = 1 << 16  # the scorer's width: far beyond a router's, bounded so a config cannot ask for terabytes
MAX_INPUT = 1 << 20  # widths of the state and candidate vectors (a hidden size)


@dataclass(frozen=True)
class RouterConfig:
    """The scorer's shape and training."""

    hidden: int = 64  # MLP width
    epochs: int = 200  # full-batch passes (the pool is small)
    lr: float = 0.003  # AdamW learning rate
    weight_decay: float = 0.01
    target: RouterTarget = "probe"  # probe: regress the probe's decision value; binary: the sign of the preference
    seed: int = 0

    def __post_init__(self) -> None:
        if self.target not in ("probe", "binary"):
            raise DataError("target", f"expected probe or binary, got {self.target!r:.60}")
        check_number(self.hidden, "hidden", 1, MAX_HIDDEN, integer=True)
        check_number(self.epochs, "epochs", 1, 10**6, integer=True)
        check_number(self.seed, "seed", None, None, integer=True)
        check_number(self.weight_decay, "weight_decay", 0, 1)
        if not 0 < check_number(self.lr, "lr") <= 1:  # AdamW: above 1 the first step overshoots any scale
            raise DataError("lr", f"must be in (0, 1], got {self.lr!r}")


class SharedScorer(nn.Module):
    """``q(state, candidate, modality)``: one MLP over ``[state; candidate; is_image]``."""

    def __init__(self, d_state: int, d_candidate: int, hidden: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_state + d_candidate + 1, hidden), nn.GELU(),
                                 nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, 1))

    def forward(self, state: torch.Tensor, candidate: torch.Tensor, is_image: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([state, candidate, is_image[:, None]], dim=-1)).squeeze(-1)  # [batch]


@dataclass
class Router:
    """A trained scorer with the standardisation of its inputs and its threshold."""

    scorer: SharedScorer
    state_mean: np.ndarray
    state_std: np.ndarray
    cand_mean: np.ndarray
    cand_std: np.ndarray
    config: RouterConfig
    tau: float = 0.0
    train_image_rate: float = 0.5  # share of its training pool the router sends to Image at r >= 0
    info: dict[str, Any] = field(default_factory=dict)
    source: Path | None = field(default=None, compare=False)  # the folder it was loaded from (errors name it)

    def score(self, state: np.ndarray, text: np.ndarray, image: np.ndarray) -> np.ndarray:
        """``[n]`` ``r = q_I - q_T`` for states ``[n, d_s]`` and candidates ``[n, d_c]`` each.

        Every score is finite, or nothing is returned: a NaN compares below every τ and would send
        the step to Text without a word. An input that is not finite, or not ``[n, d]``, is a
        :class:`DataError` naming it (``state``, ``text``, ``image``); an input the router's
        standardisation takes beyond float32's range (a finite but overflowing ``state_mean`` of
        ``router.json``, say), or weights that overflow on it, a DataError naming the field of the
        router and, for a loaded router, its file."""
        s = self._standardised(state, "state", "state")
        t = self._standardised(text, "text", "cand")
        i = self._standardised(image, "image", "cand")
        if not len(s) == len(t) == len(i):
            raise DataError("image", f"one state and two candidates per step: {len(s)}, {len(t)}, {len(i)} rows")
        self.scorer.eval()
        with torch.no_grad():
            ones, zeros = torch.ones(len(s)), torch.zeros(len(s))
            r = (self.scorer(s, i, ones) - self.scorer(s, t, zeros)).double().numpy()
        if not np.isfinite(r).all():
            k = int(np.flatnonzero(~np.isfinite(r))[0])
            raise self._error("weights", f"the scorer gives step {k} the score {r[k]}: its weights overflow float32 "
                                         "on these inputs", "scorer.safetensors")
        return r

    def _standardised(self, x: np.ndarray, name: str, prefix: str) -> torch.Tensor:
        """Input ``x`` (argument ``name``) standardised by ``{prefix}_mean`` and ``{prefix}_std``, as
        the float32 the scorer reads; every value checked finite before and after."""
        mean, std = getattr(self, f"{prefix}_mean"), getattr(self, f"{prefix}_std")
        x = check_finite(np.asarray(x, dtype=np.float64), name)
        if x.ndim != 2 or x.shape[1] != len(mean):
            raise DataError(name, f"expected [n, {len(mean)}] values, got shape {x.shape}")
        with np.errstate(over="ignore", invalid="ignore"):
            z = ((x - mean) / std).astype(np.float32)
            if np.isfinite(z).all():
                return torch.from_numpy(z)
            row, col = (int(v) for v in np.argwhere(~np.isfinite(z))[0])
            culprit = "mean" if not np.isfinite(np.float32(mean[col] / std[col])) else "std"
        raise self._error(f"{prefix}_{culprit}[{col}]",
                          f"standardising {name}[{row}, {col}] = {x[row, col]:g} by mean {mean[col]:g} and standard "
                          f"deviation {std[col]:g} goes beyond float32's range: the router cannot score it")

    def _error(self, field: str, message: str, file: str = "router.json") -> DataError:
        """A DataError on ``field``, in ``file`` of the folder the router was loaded from (when it was)."""
        return DataError(field, message, str(self.source / file) if self.source is not None else None)

    def route(self, scores: np.ndarray, tau: float | None = None) -> np.ndarray:
        """``[n]`` bool: Image where ``r >= tau`` (default: the router's calibrated τ; ±inf sends every
        step one way). A NaN score or τ is a DataError: it would compare below every threshold."""
        scores = check_finite(np.asarray(scores, dtype=np.float64), "scores")
        tau = self.tau if tau is None else tau
        if np.isnan(tau):
            raise DataError("tau", "expected a number, got NaN")
        return scores >= tau

    # ------------------------------------------------------------------ disk
    def save(self, path: str | os.PathLike) -> Path:
        """``router.json`` (config, input standardisation, τ) and ``scorer.safetensors``, atomically."""
        meta = {"config": asdict(self.config), "tau": float(self.tau), "train_image_rate": float(self.train_image_rate),
                "d_state": int(len(self.state_mean)), "d_candidate": int(len(self.cand_mean)),
                "state_mean": self.state_mean.tolist(), "state_std": self.state_std.tolist(),
                "cand_mean": self.cand_mean.tolist(), "cand_std": self.cand_std.tolist(), "info": self.info}

        def write(folder: Path) -> None:
            write_json(folder / "router.json", meta)
            save_file({k: v.contiguous() for k, v in self.scorer.state_dict().items()}, str(folder / "scorer.safetensors"))

        return atomic_write_dir(Path(path), write, kind=ROUTER_KIND, owned=("router.json", "scorer.safetensors"))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Router":
        """Read a router written by :meth:`save`: every value of ``router.json`` of its type and range
        (τ finite, standard deviations above :data:`MIN_STD`), the weights exactly the scorer's tensors,
        float32 (or float64), finite; else a :class:`DataError` naming the file and field."""
        def read(folder: Path) -> "Router":
            where = str(folder / "router.json")
            meta = read_json(file_inside(folder, "router.json", "file", where))
            if not isinstance(meta, dict):
                raise DataError("router.json", f"expected an object, got {type(meta).__name__}", where)
            missing = [k for k in _ROUTER_FIELDS if k not in meta]
            if missing:
                raise DataError(missing[0], "missing", where)
            config = _config(meta["config"], where)
            d_s = int(check_number(meta["d_state"], "d_state", 1, MAX_INPUT, integer=True, path=where))
            d_c = int(check_number(meta["d_candidate"], "d_candidate", 1, MAX_INPUT, integer=True, path=where))
            tau = float(check_number(meta["tau"], "tau", path=where))
            rate = float(check_number(meta["train_image_rate"], "train_image_rate", 0, 1, path=where))
            arrays = {k: _vector(meta[k], k, d, k.endswith("_std"), where)
                      for k, d in (("state_mean", d_s), ("state_std", d_s), ("cand_mean", d_c), ("cand_std", d_c))}
            info = _info(meta.get("info", {}), where)
            weights = file_inside(folder, "scorer.safetensors", "file", str(folder / "scorer.safetensors"))
            with torch.device("meta"):  # the shapes the config implies, nothing allocated
                shapes = {k: tuple(v.shape) for k, v in SharedScorer(d_s, d_c, config.hidden).state_dict().items()}
            check_safetensors(weights, shapes)
            scorer = SharedScorer(d_s, d_c, config.hidden)
            try:
                scorer.load_state_dict(load_file(str(weights)))
            except (RuntimeError, OSError, SafetensorError) as err:
                raise DataError("scorer.safetensors", f"not this router's weights: {str(err)[:160]}",
                                str(weights)) from None
            for name, w in scorer.state_dict().items():  # float64 beyond float32's range is infinite here
                check_finite(w.numpy(), name, str(weights))
            return cls(scorer, arrays["state_mean"], arrays["state_std"], arrays["cand_mean"], arrays["cand_std"],
                       config,
                       tau, rate, info, source=folder)
        return read_whole(path, read, "saved router")


_ROUTER_FIELDS = ("config", "d_state", "d_candidate", "tau", "train_image_rate", "state_mean", "state_std",
                  "cand_mean", "cand_std")
"""What ``router.json`` must hold (``info`` may be left out)."""


def _config(raw: Any, where: str) -> RouterConfig:
    """The :class:`RouterConfig` of ``router.json``: an object of exactly its fields, each checked."""
    names = [f.name for f in fields(RouterConfig)]
    if not isinstance(raw, dict):
        raise DataError("config", f"expected an object, got {type(raw).__name__}", where)
    unknown = sorted(set(raw) - set(names), key=str)
    if unknown:
        raise DataError(f"config.{unknown[0]!s:.40}", f"not a router setting (expected {names})", where)
    try:
        return RouterConfig(**raw)
    except DataError as err:
        raise DataError(f"config.{err.field}", err.message, where) from None


def _vector(raw: Any, field: str, d: int, positive: bool, where: str) -> np.ndarray:
    """``[d]`` float64 from a JSON list of ``d`` finite numbers (standard deviations above :data:`MIN_STD`)."""
    if not isinstance(raw, list) or len(raw) != d:
        got = f"{len(raw)} values" if isinstance(raw, list) else type(raw).__name__
        raise DataError(field, f"expected a list of {d} values, got {got}", where)
    for i, v in enumerate(raw):
        check_number(v, f"{field}[{i}]", path=where)
        if positive and not v > MIN_STD:
            raise DataError(f"{field}[{i}]", f"a standard deviation must be > {MIN_STD:g}, got {v!r}", where)
    return np.asarray(raw, dtype=np.float64)


_INFO_NUMBERS = {"final_loss": (0, None), "first_loss": (0, None), "target_scale": (0, None)}


def _info(raw: Any, where: str) -> dict[str, Any]:
    """``info``: an object; the values the router's code reads of their type (``state_layer`` an integer)."""
    if not isinstance(raw, dict):
        raise DataError("info", f"expected an object, got {type(raw).__name__}", where)
    if "state_layer" in raw:
        check_number(raw["state_layer"], "info.state_layer", -1, None, integer=True, path=where)
    if "steps" in raw:
        check_number(raw["steps"], "info.steps", 2, None, integer=True, path=where)
    for key, (lo, hi) in _INFO_NUMBERS.items():
        if key in raw:
            check_number(raw[key], f"info.{key}", lo, hi, path=where)
    if "target_scale" in raw and not raw["target_scale"] > 0:  # the targets were divided by it
        raise DataError("info.target_scale", f"must be > 0, got {raw['target_scale']!r}", where)
    return dict(raw)


def _standardiser(x: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and standard deviation of ``x`` (one at or below :data:`MIN_STD` stored as 1);
    values so large that their mean or variance overflows float64 are a DataError naming ``name``."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean, std = x.mean(0), x.std(0)
    if not (np.isfinite(mean).all() and np.isfinite(std).all()):
        raise DataError(name, f"values up to {np.abs(x).max():g}: too large to standardise (their mean or variance "
                              "overflows float64)")
    return mean, np.where(std > MIN_STD, std, 1.0)


def train_router(state: np.ndarray, text: np.ndarray, image: np.ndarray, target: np.ndarray,
                 config: RouterConfig = RouterConfig()) -> Router:
    """Fit the shared scorer on a pool of steps.

    ``state`` ``[n, d_s]``: the memory-free hidden state; ``text``, ``image`` ``[n, d_c]``: the two
    candidates; ``target`` ``[n]``: the probe's decision value (``config.target == "probe"``; scaled
    to unit variance, the loss is the squared error of ``r``) or the binary preference, 1 = image
    (``"binary"``: logistic loss on ``r``). Full-batch AdamW, seeded; deterministic for a fixed
    torch thread count. A value that is not finite in any input is a :class:`DataError` naming the
    argument, and so is a training whose loss stops being finite (naming the learning rate).
    """
    state, text, image, target = (check_finite(np.asarray(a, np.float64), name) for a, name in
                                  ((state, "state"), (text, "text"), (image, "image"), (target, "target")))
    n = len(target)
    if not (len(state) == len(text) == len(image) == n) or n < 2:
        raise DataError("target", f"one target per step and at least two steps: {len(state)}, {len(text)}, "
                                  f"{len(image)}, {n}")
    s_mean, s_std = _standardiser(state, "state")
    c_mean, c_std = _standardiser(np.concatenate([text, image]),
                                  "text" if np.abs(text).max(initial=0) >= np.abs(image).max(initial=0) else "image")
    torch.manual_seed(config.seed)
    scorer = SharedScorer(state.shape[1], text.shape[1], config.hidden)
    s = torch.as_tensor((state - s_mean) / s_std, dtype=torch.float32)
    t = torch.as_tensor((text - c_mean) / c_std, dtype=torch.float32)
    i = torch.as_tensor((image - c_mean) / c_std, dtype=torch.float32)
    _standardiser(target, "target")  # a target whose variance overflows is refused
    scale = float(target.std()) if config.target == "probe" and target.std() > 0 else 1.0
    y = torch.as_tensor(target / scale, dtype=torch.float32)
    ones, zeros = torch.ones(n), torch.zeros(n)
    opt = torch.optim.AdamW(scorer.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    losses = []
    scorer.train()
    for _ in range(config.epochs):
        r = scorer(s, i, ones) - scorer(s, t, zeros)
        loss = F.mse_loss(r, y) if config.target == "probe" else F.binary_cross_entropy_with_logits(r, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if not np.isfinite(losses[-1]):
            raise DataError("lr", f"training diverged (loss {losses[-1]} at epoch {len(losses)}): lower the "
                                  f"learning rate ({config.lr:g})")
    router = Router(scorer, s_mean, s_std, c_mean, c_std, config,
                    info={"final_loss": losses[-1], "first_loss": losses[0], "steps": n, "target_scale": scale})
    router.train_image_rate = float(router.route(router.score(state, text, image), 0.0).mean())
    return router


def calibrate_tau(scores: np.ndarray, image_rate: float) -> float:
    """The label-free threshold: between the scores of the steps it will route, so that the
    ``round(image_rate * n)`` highest-scoring ones go to Image — halfway between the lowest of those
    and the next score, so that no step sits on the threshold (where last-bit float noise from
    another batch or machine could flip it). It reads the scores only: no label of those steps. A
    score that is not finite is a :class:`DataError` (NaN would sort as the highest)."""
    scores = check_finite(np.asarray(scores, dtype=np.float64), "scores")
    if scores.ndim != 1 or not len(scores):
        raise DataError("scores", f"expected a non-empty [n] array, got shape {scores.shape}")
    if not 0.0 <= image_rate <= 1.0:
        raise DataError("image_rate", f"expected a share in [0, 1], got {image_rate}")
    n = len(scores)
    k = int(round(image_rate * n))
    if k <= 0:
        return float(np.inf)
    if k >= n:
        return float(-np.inf)
    ordered = np.sort(scores)[::-1]  # highest first
    return float((ordered[k - 1] + ordered[k]) / 2)

