"""Step-level action scores: does a predicted action match the demonstrated one?

Two published rule sets, and a stricter one of our own, chosen by :class:`MatchConfig`:

**AITW** (Rawles et al., 2023, ``action_matching.py`` of Android in the Wild).
A *touch* is a tap, a long press or a swipe; it has a touch point and a lift point.

- If either action is not a touch, they match iff their types are equal (typed text and
  status contents are not compared, unless another text rule is chosen).
- A touch is a *tap* when its touch and lift points are within 0.04 (normalized,
  Euclidean, inclusive); otherwise it is a *swipe*. A tap never matches a swipe.
- Two taps match when both touch points fall inside the same *enlarged* UI box, or are
  within 0.14 of each other (normalized, Euclidean, inclusive). A box ``(y, x, h, w)``
  (top, left, height, width) is enlarged to ``y' = max(0, y - 0.7h)``,
  ``x' = max(0, x - 0.7w)``, ``h' = min(1, 2.4h)``, ``w' = min(1, 2.4w)``; containment is
  inclusive of its edges. (Clipping ``y'`` at 0 does not lengthen ``h'``: a box at the top
  border grows less upwards and no more downwards, exactly as the reference code does.)
- Two swipes match when their dominant axis (argmax of ``|lift - touch|`` over
  ``(y, x)``, a tie going to the vertical axis) is the same, whatever the sign.
- AITW has no long press. Here a ``long_press`` is a touch whose lift point equals its
  touch point, so it is scored exactly like a tap (a long press on the right element
  matches a tap on it). A ``tap`` also lifts where it touched.

**LearnGUI** (Liu et al., 2025, LearnAct's offline evaluation).

- Types must match (a ``long_press`` is its own type).
- Taps and long presses match when their points are within ``int(0.14 * W)`` pixels
  (Euclidean distance in pixels on a ``W x H`` pixel screen; normalized points are scaled
  by ``W`` along x and ``H`` along y; the tolerance is truncated to an integer number of
  pixels as in the reference code; inclusive).
- Typed text matches by token-set F1 >= 0.5 (lower-cased, whitespace-split).
- Swipes match when their directions are equal (up/down/left/right, from the dominant
  axis with the same tie rule; here the sign matters). The direction is the finger's
  motion, from ``point`` to ``end``: a swipe ``up`` moves the finger up the screen.
- An ``answer`` (recorded agents' reply to the user; neither benchmark has one) matches an
  answer whose text matches under the text rule, ``token_f1`` where that rule is ``ignore``.
- Every other type matches on the type alone.

**Element-exact** (``element``; neither benchmark's): what a miniature world can score because its
screens carry their UI tree. Types must match (a ``long_press`` is its own type); a tap or long
press must hit the element the true one hit (:func:`guimem.core.describe.target_element` on the
true step's elements; where the true touch hits none, the AITW distance rule decides); swipes
match on direction; typed text must equal the true text up to case and surrounding spaces (the
``contain`` rule's normalisation); an ``open_app`` must name the same app. The AITW tap rule
counts a tap on a neighbouring element as right when it lands in the enlarged box or within 0.14:
this rule does not.

The text rule for ``type`` actions is a parameter of every variant: ``ignore`` (AITW's
own), ``contain`` or ``token_f1`` (LearnGUI's own). Coordinates throughout are the data
model's: normalized to [0, 1], origin top-left, x right, y down.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal, Sequence

import numpy as np

from guimem.core.data import Action, DataError, Point, UIElement
from guimem.core.describe import swipe_direction, target_element

Variant = Literal["aitw", "learngui", "element"]
TextRule = Literal["ignore", "contain", "token_f1", "exact"]
BoxYXHW = tuple[float, float, float, float]  # (top y, left x, height, width), normalized

VARIANTS: tuple[Variant, ...] = ("aitw", "learngui", "element")
TEXT_RULES: tuple[TextRule, ...] = ("ignore", "contain", "token_f1", "exact")
DEFAULT_TEXT_RULE: dict[Variant, TextRule] = {"aitw": "ignore", "learngui": "token_f1", "element": "exact"}

AITW_TAP_DISTANCE = 0.14  # two taps within this normalized distance match
AITW_TAP_SWIPE_THRESHOLD = 0.04  # a touch whose lift is within this of its touch is a tap
AITW_BOX_AUGMENT = 1.4  # a UI box grows by 1.4x its height and width, half on each side
LEARNGUI_TAP_FRACTION = 0.14  # tap tolerance, as a fraction of the screen width in pixels
TOKEN_F1_THRESHOLD = 0.5  # typed texts match at token-set F1 >= this
TOUCH_TYPES = frozenset({"tap", "long_press", "swipe"})


@dataclass(frozen=True)
class MatchConfig:
    """Which rule set scores a step, and how typed text is compared."""

    variant: Variant = "aitw"  # "aitw" or "learngui"
    text_rule: TextRule | None = None  # None: the variant's own (aitw: ignore, learngui: token_f1)
    screen_size_px: tuple[int, int] | None = None  # (width, height) in pixels; LearnGUI needs it
    match_app_name: bool = False  # not in either benchmark: an open_app also needs the same app name

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise DataError("variant", f"expected one of {VARIANTS}, got {self.variant!r}")
        if self.text_rule is not None and self.text_rule not in TEXT_RULES:
            raise DataError("text_rule", f"expected one of {TEXT_RULES} or None, got {self.text_rule!r}")
        if self.screen_size_px is not None:
            size = self.screen_size_px
            if (not isinstance(size, (tuple, list)) or len(size) != 2
                    or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size)):
                raise DataError("screen_size_px", f"expected (width, height) as positive ints, got {size!r}")
            object.__setattr__(self, "screen_size_px", (size[0], size[1]))
        if self.variant == "learngui" and self.screen_size_px is None:
            raise DataError("screen_size_px", "the LearnGUI rules measure tap distance in pixels: give (width, height)")

    @property
    def rule(self) -> TextRule:
        """The text rule in force for ``type`` actions."""
        return self.text_rule if self.text_rule is not None else DEFAULT_TEXT_RULE[self.variant]


ELEMENT_EXACT = MatchConfig(variant="element", match_app_name=True)
"""The strictest score of a step: a touch on the element the true one touched, the exact text, the app named."""


# ----------------------------------------------------------------------------- geometry
def distance(a: Point, b: Point) -> float:
    """Euclidean distance between two normalized points."""
    return math.hypot(a[0] - b[0], a[1] - b[1])


def bounds_to_yxhw(bounds: tuple[float, float, float, float]) -> BoxYXHW:
    """Our ``UIElement.bounds`` ``(x0, y0, x1, y1)`` as AITW's ``(y, x, h, w)`` box."""
    x0, y0, x1, y1 = bounds
    return (y0, x0, y1 - y0, x1 - x0)


def enlarge_box(box: BoxYXHW) -> BoxYXHW:
    """AITW's enlarged box: ``(max(0, y-0.7h), max(0, x-0.7w), min(1, 2.4h), min(1, 2.4w))``."""
    y, x, h, w = box
    dh, dw = AITW_BOX_AUGMENT * h, AITW_BOX_AUGMENT * w
    return (max(0.0, y - dh / 2), max(0.0, x - dw / 2), min(1.0, h + dh), min(1.0, w + dw))


def in_box(point: Point, box: BoxYXHW) -> bool:
    """Whether the ``(x, y)`` point lies in the ``(y, x, h, w)`` box, edges included."""
    y, x, h, w = box
    return y <= point[1] <= y + h and x <= point[0] <= x + w


def touch_and_lift(action: Action) -> tuple[Point, Point] | None:
    """The touch and lift points of a touch action (tap and long press lift where they touch)."""
    if action.type == "swipe":
        return action.point, action.end_point()
    if action.type in ("tap", "long_press"):
        return action.point, action.point
    return None


def is_vertical(touch: Point, lift: Point) -> bool:
    """Whether a motion's dominant axis is vertical (``|dy| >= |dx|``: a tie goes vertical)."""
    return abs(lift[1] - touch[1]) >= abs(lift[0] - touch[0])


# ----------------------------------------------------------------------------- text
def _tokens(text: str | None) -> set[str]:
    return set((text or "").lower().split())


def token_f1(pred: str | None, true: str | None) -> float:
    """Token-set F1 of two texts (lower-cased, whitespace-split); 1.0 when both are empty."""
    p, t = _tokens(pred), _tokens(true)
    if not p and not t:
        return 1.0
    if not p or not t:
        return 0.0
    return 2 * len(p & t) / (len(p) + len(t))  # = 2PR/(P+R), exact at 0.5


def _normalize(text: str | None) -> str:
    return " ".join((text or "").lower().split())


def texts_match(pred: str | None, true: str | None, rule: TextRule) -> bool:
    """Typed texts under ``rule``.

    ``ignore``: always. ``contain``: after lower-casing and collapsing whitespace, either
    text contains the other; two empty texts match, an empty one never matches a non-empty
    one. ``token_f1``: token-set F1 >= 0.5. ``exact``: equal after lower-casing and collapsing
    whitespace.
    """
    if rule == "ignore":
        return True
    if rule == "exact":
        return _normalize(pred) == _normalize(true)
    if rule == "contain":
        p, t = _normalize(pred), _normalize(true)
        if not p or not t:
            return p == t
        return p in t or t in p
    if rule == "token_f1":
        return token_f1(pred, true) >= TOKEN_F1_THRESHOLD
    raise DataError("text_rule", f"expected one of {TEXT_RULES}, got {rule!r}")


def _same_app(pred: Action, true: Action) -> bool:
    return _normalize(pred.text) == _normalize(true.text)


# ----------------------------------------------------------------------------- AITW
def aitw_kind(action: Action) -> str:
    """The AITW action class: ``tap`` (any touch lifted within 0.04), ``swipe``, or the type."""
    points = touch_and_lift(action)
    if points is None:
        return action.type
    return "tap" if distance(*points) <= AITW_TAP_SWIPE_THRESHOLD else "swipe"


def aitw_taps_match(a: Point, b: Point, elements: Sequence[UIElement]) -> bool:
    """Two taps: both inside one enlarged UI box, or within 0.14 of each other."""
    if distance(a, b) <= AITW_TAP_DISTANCE:
        return True
    boxes = (enlarge_box(bounds_to_yxhw(e.bounds)) for e in elements)
    return any(in_box(a, box) and in_box(b, box) for box in boxes)


def aitw_match(pred: Action, true: Action, elements: Sequence[UIElement], config: MatchConfig) -> bool:
    """The AITW rules; ``elements`` are the UI elements of the true step's screen."""
    p_touch, t_touch = touch_and_lift(pred), touch_and_lift(true)
    if p_touch is None or t_touch is None:
        return _non_touch_match(pred, true, config)
    p_kind, t_kind = aitw_kind(pred), aitw_kind(true)
    if p_kind != t_kind:
        return False  # a tap never matches a swipe
    if p_kind == "tap":
        return aitw_taps_match(p_touch[0], t_touch[0], elements)
    return is_vertical(*p_touch) == is_vertical(*t_touch)


def _non_touch_match(pred: Action, true: Action, config: MatchConfig) -> bool:
    if pred.type != true.type:
        return False
    if pred.type == "type":
        return texts_match(pred.text, true.text, config.rule)
    if pred.type == "answer":  # neither benchmark has one; what it says is what it is for
        return texts_match(pred.text, true.text, "token_f1" if config.rule == "ignore" else config.rule)
    if pred.type == "open_app" and config.match_app_name:
        return _same_app(pred, true)
    return True


# ----------------------------------------------------------------------------- LearnGUI
def learngui_tap_tolerance_px(width_px: int) -> int:
    """LearnGUI's tap tolerance: ``int(0.14 * width)`` pixels."""
    return int(LEARNGUI_TAP_FRACTION * width_px)


def pixel_distance(a: Point, b: Point, size_px: tuple[int, int]) -> float:
    """Euclidean distance in pixels between two normalized points on a ``(W, H)`` screen."""
    width, height = size_px
    return math.hypot((a[0] - b[0]) * width, (a[1] - b[1]) * height)


def learngui_match(pred: Action, true: Action, config: MatchConfig) -> bool:
    """The LearnGUI rules (``config.screen_size_px`` gives the screen in pixels)."""
    if pred.type != true.type:
        return False
    if true.type in ("tap", "long_press"):
        size = config.screen_size_px
        return pixel_distance(pred.point, true.point, size) <= learngui_tap_tolerance_px(size[0])
    if true.type == "swipe":
        return swipe_direction(pred) == swipe_direction(true)
    return _non_touch_match(pred, true, config)


# ----------------------------------------------------------------------------- element-exact
def element_match(pred: Action, true: Action, elements: Sequence[UIElement], config: MatchConfig) -> bool:
    """The element-exact rules (module docstring); ``elements`` are the UI elements of the true step's screen."""
    if pred.type != true.type:
        return False
    if true.type in ("tap", "long_press"):
        hit = target_element(true, elements)
        if hit is None:
            return distance(pred.point, true.point) <= AITW_TAP_DISTANCE
        return target_element(pred, elements) == hit
    if true.type == "swipe":
        return swipe_direction(pred) == swipe_direction(true)
    if true.type == "open_app":
        return _same_app(pred, true)
    return _non_touch_match(pred, true, config)


# ----------------------------------------------------------------------------- scoring
def action_match(pred: Action, true: Action, elements: Sequence[UIElement], config: MatchConfig) -> bool:
    """Whether ``pred`` matches ``true`` under ``config`` (elements: the true step's UI)."""
    if config.variant == "aitw":
        return aitw_match(pred, true, elements, config)
    if config.variant == "element":
        return element_match(pred, true, elements, config)
    return learngui_match(pred, true, config)


def action_class(action: Action, config: MatchConfig) -> str:
    """The class type accuracy compares: AITW's tap/swipe split of touches, or the raw type."""
    return aitw_kind(action) if config.variant == "aitw" else action.type


def step_accuracy(pred_actions: Sequence[Action | None], true_actions: Sequence[Action],
                  elements_per_step: Sequence[Sequence[UIElement]] | None = None,
                  config: MatchConfig = MatchConfig()) -> dict[str, Any]:
    """Micro-averaged step accuracy and type accuracy over a set of steps.

    Args:
        pred_actions: one prediction per step; ``None`` marks a step with no valid
            prediction (an unparseable answer): it counts as wrong, and in ``n_invalid``.
        true_actions: the demonstrated action of each step.
        elements_per_step: the UI elements of each true step's screen (AITW's boxes);
            required under AITW, ignored under LearnGUI.
        config: the rule set and the text rule.

    Returns:
        ``n_steps``, ``n_correct``, ``n_type_correct``, ``n_invalid``, ``step_accuracy``,
        ``type_accuracy``, ``variant``, ``text_rule``, and ``by_type``: per true action
        type, ``{"n", "correct", "accuracy"}``.
    """
    n = len(true_actions)
    if len(pred_actions) != n:
        raise DataError("pred_actions", f"got {len(pred_actions)} predictions for {n} true actions")
    if n == 0:
        raise DataError("true_actions", "no steps to score")
    if elements_per_step is None:
        if config.variant == "aitw":
            raise DataError("elements_per_step", "the AITW rules need each true step's UI elements")
        elements_per_step = [()] * n
    elif len(elements_per_step) != n:
        raise DataError("elements_per_step", f"got {len(elements_per_step)} element lists for {n} true actions")

    correct, type_correct, invalid = 0, 0, 0
    seen, hits = Counter(), Counter()
    for i, (pred, true, elements) in enumerate(zip(pred_actions, true_actions, elements_per_step)):
        if not isinstance(true, Action):
            raise DataError(f"true_actions[{i}]", f"expected an Action, got {type(true).__name__}")
        if pred is not None and not isinstance(pred, Action):
            raise DataError(f"pred_actions[{i}]", f"expected an Action or None, got {type(pred).__name__}")
        seen[true.type] += 1
        if pred is None:
            invalid += 1
            continue
        ok = action_match(pred, true, elements, config)
        correct += ok
        hits[true.type] += ok
        type_correct += action_class(pred, config) == action_class(true, config)
    return {
        "n_steps": n, "n_correct": correct, "n_type_correct": type_correct, "n_invalid": invalid,
        "step_accuracy": correct / n, "type_accuracy": type_correct / n,
        "variant": config.variant, "text_rule": config.rule,
        "by_type": {t: {"n": seen[t], "correct": hits[t], "accuracy": hits[t] / seen[t]} for t in sorted(seen)},
    }


def paired_sign_test(fixed: int, broken: int) -> float:
    """Two-sided exact sign test (McNemar's exact test) for two conditions scored on the same steps.

    ``fixed``: steps right under the new condition and wrong under the reference; ``broken``: the
    reverse. Under the null hypothesis that the conditions are equally good, each of the
    ``fixed + broken`` discordant steps falls either way with probability 1/2; the p-value is the
    probability of a split at least as uneven. Concordant steps carry no evidence and are not counted.
    """
    for name, value in (("fixed", fixed), ("broken", broken)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise DataError(name, f"must be a count (a non-negative int), got {value!r}")
    n, low = fixed + broken, min(fixed, broken)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(low + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired_counts(hits: np.ndarray, reference: np.ndarray) -> dict[str, Any]:
    """Steps a condition fixes and breaks against ``reference`` (``[n]`` bool each, the same steps),
    and the sign test's p-value (rounded to 4 places)."""
    hits, reference = np.asarray(hits, dtype=bool), np.asarray(reference, dtype=bool)
    if hits.shape != reference.shape:
        raise DataError("hits", f"shape {hits.shape} differs from the reference's {reference.shape}")
    fixed, broken = int((hits & ~reference).sum()), int((~hits & reference).sum())
    return {"fixed": fixed, "broken": broken, "p_value": round(paired_sign_test(fixed, broken), 4)}
