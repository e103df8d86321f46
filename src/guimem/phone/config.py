"""The synthetic phone's configuration: image size, step budget, interruptions, shuffles, themes,
and the demonstrator's noise (``params.yaml``'s ``world`` section).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from guimem.core.data import DataError
from guimem.phone.tasks import TEMPLATES


@dataclass(frozen=True)
class WorldConfig:
    """Every knob of the world and its demonstrator; fields map 1:1 to ``params.yaml: world:``."""

    n_train: int = 600  # training episodes
    n_test: int = 120  # test episodes
    n_memory: int = 240  # memory episodes: experience on the evaluation variants (other tasks than the test's)
    start: str = "app"  # where an episode starts: "app" (inside the task's app) or "launcher"
    variants: int = 5  # variants of every app (0: the reference design)
    train_variants: tuple[int, ...] = tuple(range(4))  # variants the training episodes run on (0 among them); the others are for evaluation
    image_width: int = 180  # screenshot width in pixels; height is twice that
    max_steps: int = 30  # step budget per episode
    dialog_prob: float = 0.3  # chance that an episode is interrupted by a popup
    shuffle: bool = True  # per-episode layout shuffles (list and icon-toolbar order, the FAB's side)
    themes: bool = True  # per-episode accent colours (False: always blue)
    p_launcher_tap: float = 0.5  # the demonstrator opens apps from the launcher grid (else open_app)
    p_wrong_tap: float = 0.05  # per-step chance of a wrong tap, undone with back
    p_give_up: float = 0.08  # per-episode chance of giving up midway
    p_give_up_impossible: float = 0.5  # share of give-ups ending with `impossible` (others wander to the budget)
    p_wrong_state: float = 0.1  # per-episode chance of finishing in a wrong state, then `done`
    success_min: float = 0.6  # the demonstrator's success rate must land in [success_min, success_max]
    success_max: float = 0.92
    test_param_share: float = 0.25  # share of each template's parameter combinations kept for the test split
    unseen_templates: tuple[str, ...] = ("settings.search_toggle", "notes.rename", "messages.mute", "shop.wishlist",
                                         "clock.label_alarm")  # templates only in the test split
    test_unseen_share: float = 0.3  # share of test episodes drawn from the unseen templates

    def __post_init__(self) -> None:
        object.__setattr__(self, "unseen_templates", tuple(self.unseen_templates))
        for name in ("dialog_prob", "p_launcher_tap", "p_wrong_tap", "p_give_up", "p_give_up_impossible",
                     "p_wrong_state", "success_min", "success_max", "test_param_share", "test_unseen_share"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise DataError(f"world.{name}", f"must be a probability in [0, 1], got {v!r}")
        object.__setattr__(self, "train_variants", tuple(self.train_variants))
        if self.start not in ("app", "launcher"):
            raise DataError("world.start", f"expected 'app' or 'launcher', got {self.start!r}")
        if self.variants < 2:
            raise DataError("world.variants", f"must be at least 2 (some to learn on, some to evaluate on), got {self.variants!r}")
        bad = [v for v in self.train_variants if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < self.variants]
        if bad or not self.train_variants or len(set(self.train_variants)) != len(self.train_variants):
            raise DataError("world.train_variants", f"must be distinct variant indices in [0, {self.variants}), got "
                            f"{list(self.train_variants)!r}")
        if 0 not in self.train_variants:
            raise DataError("world.train_variants", "must hold variant 0, the reference design (the evaluation "
                            f"variants' glyph designs and words are the ones training never shows), got {list(self.train_variants)!r}")
        if len(self.train_variants) == self.variants:
            raise DataError("world.train_variants", "must leave at least one variant for evaluation")
        for name in ("n_train", "n_test", "n_memory", "max_steps", "image_width"):
            if getattr(self, name) < (2 if name == "image_width" else 0):
                raise DataError(f"world.{name}", f"must be a positive integer, got {getattr(self, name)!r}")
        if self.image_width % 2:
            raise DataError("world.image_width", f"must be even, got {self.image_width}")
        unknown = [t for t in self.unseen_templates if t not in TEMPLATES]
        if unknown:
            raise DataError("world.unseen_templates", f"unknown templates {unknown}")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], path: str | None = None) -> "WorldConfig":
        """Build from the ``world:`` section of params.yaml; unknown or mistyped keys raise DataError."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        kwargs = {}
        for key, value in d.items():
            if key not in fields:
                raise DataError(f"world.{key}", f"unknown key; expected one of {sorted(fields)}", path)
            default = fields[key].default
            kind = type(default)
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if kind is tuple and isinstance(value, list):
                value = tuple(value)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise DataError(f"world.{key}", f"expected {kind.__name__}, got {type(value).__name__} {value!r:.60}", path)
            kwargs[key] = value
        try:
            return cls(**kwargs)
        except DataError as err:
            raise DataError(err.field, err.message, path) from None

    @property
    def eval_variants(self) -> tuple[int, ...]:
        """The variants held out from training: test episodes, memory and the closed loop run on them."""
        return tuple(v for v in range(self.variants) if v not in self.train_variants)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["unseen_templates"] = list(self.unseen_templates)
        d["train_variants"] = list(self.train_variants)
        return d
