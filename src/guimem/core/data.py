"""The data model: one source of truth for actions, steps, episodes and subgoals.

Every other module imports its types from here. Each type is a frozen dataclass with
``to_dict`` / ``from_dict``; ``from_dict`` is total: for any JSON value it returns an
object or raises :class:`DataError` naming the file (when known) and the field that was
wrong, and what it returns writes back as it was read (no NaN, no lone surrogate, positions
within 32 bits).

Coordinates are normalized to [0, 1], origin at the top-left of the screen, ``x`` to the
right and ``y`` down. Bounds are ``(x0, y0, x1, y1)`` with ``x0 <= x1`` and ``y0 <= y1``.
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

ACTION_TYPES: tuple[str, ...] = (
    "tap", "long_press", "swipe", "type", "back", "home", "enter", "open_app", "done", "impossible",
)
"""The AITW-like action space the agents here choose from (the built-in world's, the actors' heads),
in a fixed order (index = class id for models)."""

RECORDED_TYPES: tuple[str, ...] = ("answer", "wait")
"""Action types that recordings of real agents carry beyond that space: ``answer`` (the agent
replies to the user with ``text``, as AndroidWorld's information tasks ask; it ends the episode as
``done`` does) and ``wait`` (the agent lets the screen settle). Stored, described and scored; the
built-in world and the miniature actor do not produce them."""

STEP_TYPES: tuple[str, ...] = ACTION_TYPES + RECORDED_TYPES
"""Every action type an episode's step may hold."""
ENDING_TYPES = frozenset({"done", "impossible", "answer"})  # an episode ends with one of these (or at its budget)

POINT_ACTIONS = frozenset({"tap", "long_press", "swipe"})  # need ``point``
TEXT_ACTIONS = frozenset({"type", "open_app", "answer"})  # need ``text`` (typed text / app name / the reply)
SWIPE_DIRECTIONS: tuple[str, ...] = ("up", "down", "left", "right")
"""Directions a swipe may be given by instead of an end point: the way the finger moves."""
SWIPE_LENGTH = 0.3
"""How far a swipe given only by its direction moves, as a share of the screen, where a screen
point is needed for its end (replaying it, drawing it): the HF answer parser's default too."""
SUCCESS_LABELS: tuple[str, ...] = ("yes", "no", "uncertain")

Point = tuple[float, float]
Bounds = tuple[float, float, float, float]
SuccessLabel = Literal["yes", "no", "uncertain"]


class DataError(ValueError):
    """Bad input: names the file (if known) and the field that was wrong ('' for the value at hand)."""

    def __init__(self, field: str, message: str, path: str | None = None):
        self.field, self.message, self.path = field, message, path
        where = f"{path}: " if path else ""
        what = f"field '{field}': " if field else ""
        super().__init__(f"{where}{what}{message}")

    def at(self, path: str | None, prefix: str = "") -> "DataError":
        """The same error, located in ``path`` and under the field ``prefix``."""
        name = ".".join(p for p in (prefix, self.field) if p)
        return DataError(name, self.message, path or self.path)


MAX_INDEX = 2**31 - 1
"""Largest step or subgoal position accepted: positions fit in 32 bits wherever they go next."""

_SURROGATE = re.compile("[\ud800-\udfff]")  # decodes from JSON ("\\ud800"), cannot be encoded back


# ----------------------------------------------------------------------------- validators
def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return "/".join("object" if k is Mapping else k.__name__ for k in kinds)


def as_object(value: Any, name: str = "") -> Mapping[str, Any]:
    """``value`` if it is an object; else a DataError for the field ``name`` ('' for the value at hand)."""
    if not isinstance(value, Mapping):
        raise DataError(name, f"expected an object, got {type(value).__name__} {value!r:.60}")
    return value


def _text(name: str, value: str) -> str:
    """``value`` if it can be written back as UTF-8 (no lone surrogate)."""
    if not value.isascii() and (bad := _SURROGATE.search(value)):
        raise DataError(name, f"holds a lone surrogate (U+{ord(bad.group()):04X} at character {bad.start()}), "
                              "which cannot be written as UTF-8")
    return value


def get_field(d: Mapping[str, Any], key: str, kind: type | tuple[type, ...], optional: bool = False):
    """``d[key]`` checked to be a ``kind`` (an int passes for a float, a bool never for a number);
    missing or null is an error unless ``optional`` (then None). The data model's one field reader."""
    if key not in d or d[key] is None:
        if optional:
            return None
        raise DataError(key, "missing")
    value = d[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds and (int in kinds or float in kinds):  # true is not 1
        raise DataError(key, f"expected {kind.__name__}, got bool")
    if not isinstance(value, kind):
        raise DataError(key, f"expected {_kind_name(kind)}, got {type(value).__name__} {value!r:.60}")
    return _text(key, value) if isinstance(value, str) else value


def get_index(d: Mapping[str, Any], key: str, optional: bool = False) -> int | None:
    """The position ``d[key]``: an integer in [0, MAX_INDEX]."""
    value = get_field(d, key, int, optional)
    if value is not None and not 0 <= value <= MAX_INDEX:
        raise DataError(key, f"must be in [0, {MAX_INDEX}], got {value!r:.60}")
    return value


def nested_field(name: str, parse: Callable[[Any], Any], value: Any) -> Any:
    """``parse(value)``, its errors placed under the field ``name``."""
    try:
        return parse(value)
    except DataError as err:
        raise err.at(None, name) from None


def _unit(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DataError(name, f"expected a number, got {type(value).__name__} {value!r:.60}")
    if not 0 <= value <= 1:  # compared before float(): an integer of 400 digits overflows a float
        raise DataError(name, f"must be a finite number in [0, 1], got {value!r:.60}")
    return float(value)


def _point(name: str, value: Any) -> Point:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise DataError(name, f"expected [x, y], got {value!r:.60}")
    return (_unit(f"{name}[0]", value[0]), _unit(f"{name}[1]", value[1]))


def _bounds(name: str, value: Any) -> Bounds:
    if not isinstance(value, (list, tuple)) or len(value) != 4:
        raise DataError(name, f"expected [x0, y0, x1, y1], got {value!r:.60}")
    x0, y0, x1, y1 = (_unit(f"{name}[{i}]", v) for i, v in enumerate(value))
    if x0 > x1 or y0 > y1:
        raise DataError(name, f"needs x0 <= x1 and y0 <= y1, got {value!r}")
    return (x0, y0, x1, y1)


def check_json(value: Any, name: str) -> Any:
    """``value`` if it is plain JSON that writes back as it was read: objects with string keys, lists,
    strings without lone surrogates, finite numbers, booleans and nulls; else a DataError naming the
    field (``name.key[i]...``). Walks breadth-first without recursion, so any depth is answered."""
    queue = deque([(name, value)])
    while queue:
        where, v = queue.popleft()
        if isinstance(v, str):
            _text(where, v)
        elif isinstance(v, float) and not math.isfinite(v):
            raise DataError(where, f"expected a finite number, got {v!r}")
        elif isinstance(v, Mapping):
            for k, item in v.items():
                if not isinstance(k, str):
                    raise DataError(where, f"keys must be strings, got {type(k).__name__} {k!r:.60}")
                queue.append((f"{where}.{_text(where, k)}", item))
        elif isinstance(v, (list, tuple)):
            queue.extend((f"{where}[{i}]", item) for i, item in enumerate(v))
        elif v is not None and not isinstance(v, (bool, int, float)):
            raise DataError(where, f"expected a JSON value, got {type(v).__name__}")
    return value


# ----------------------------------------------------------------------------- types
@dataclass(frozen=True)
class Action:
    """One action. ``point``/``end`` normalized; ``text`` typed text, app name or the agent's answer.

    A swipe records where the finger lands (``point``) and either where it lifts (``end``) or,
    as agents that swipe "up" record it, only the way it moves (``direction``); never both."""

    type: str
    point: Point | None = None
    end: Point | None = None  # swipe lift point
    text: str | None = None
    direction: str | None = None  # swipe without an end: up, down, left or right (the finger's motion)

    def __post_init__(self) -> None:
        if self.type not in STEP_TYPES:
            raise DataError("type", f"unknown action type {self.type!r}; expected one of {STEP_TYPES}")
        if self.type in POINT_ACTIONS and self.point is None:
            raise DataError("point", f"a {self.type} needs a point")
        if self.point is not None:
            object.__setattr__(self, "point", _point("point", self.point))
        if self.direction is not None:
            if self.type != "swipe":
                raise DataError("direction", f"only a swipe has a direction, not a {self.type}")
            if self.direction not in SWIPE_DIRECTIONS:
                raise DataError("direction", f"expected one of {SWIPE_DIRECTIONS}, got {self.direction!r:.60}")
            if self.end is not None:
                raise DataError("direction", "a swipe has an end point or a direction, not both")
        if self.type == "swipe" and self.end is None and self.direction is None:
            raise DataError("end", "a swipe needs an end point or a direction")
        if self.end is not None:
            object.__setattr__(self, "end", _point("end", self.end))
        if self.type in TEXT_ACTIONS and not isinstance(self.text, str):
            raise DataError("text", f"a {self.type} needs text, got {self.text!r}")

    def end_point(self, length: float = SWIPE_LENGTH) -> Point | None:
        """Where a swipe lifts: its ``end``, or ``length`` from its start in its ``direction`` (kept
        on screen); None for any other action."""
        if self.type != "swipe":
            return None
        if self.end is not None:
            return self.end
        dx, dy = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}[self.direction]
        x, y = self.point
        return (min(1.0, max(0.0, x + dx * length)), min(1.0, max(0.0, y + dy * length)))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.type}
        if self.point is not None:
            d["point"] = list(self.point)
        if self.end is not None:
            d["end"] = list(self.end)
        if self.direction is not None:
            d["direction"] = self.direction
        if self.text is not None:
            d["text"] = self.text
        return d

    @classmethod
    def from_dict(cls, d: Any) -> "Action":
        d = as_object(d)
        text = get_field(d, "text", str, optional=True)
        direction = get_field(d, "direction", str, optional=True)
        return cls(type=get_field(d, "type", str), point=d.get("point"), end=d.get("end"), text=text,
                   direction=direction)

    def describe(self) -> str:
        """A short human-readable form, e.g. ``tap (0.50, 0.12)`` or ``type "milk"``."""
        if self.type == "swipe" and self.end is None:
            return f"swipe {self.direction} from ({self.point[0]:.2f}, {self.point[1]:.2f})"
        if self.type == "swipe":
            return f"swipe ({self.point[0]:.2f}, {self.point[1]:.2f})->({self.end[0]:.2f}, {self.end[1]:.2f})"
        if self.point is not None:
            return f"{self.type} ({self.point[0]:.2f}, {self.point[1]:.2f})"
        if self.text is not None:
            return f'{self.type} "{self.text}"'
        return self.type


def pixel_box(bounds: Bounds, width: int, height: int) -> tuple[int, int, int, int]:
    """The whole pixels a normalised box covers on a ``width`` x ``height`` image: its near edges
    rounded down, its far edges up, at least one pixel each way. Every crop of an element (the
    miniature actor's, the memory image's strip) is cut along it."""
    x0, y0, x1, y1 = bounds
    left, top = int(x0 * width), int(y0 * height)
    return left, top, max(left + 1, math.ceil(x1 * width)), max(top + 1, math.ceil(y1 * height))


@dataclass(frozen=True)
class UIElement:
    """One node of the accessibility-style UI tree (flattened)."""

    id: str
    role: str  # button, icon, text, field, toggle, list_item, grid_cell, tab, dialog, ...
    text: str = ""  # visible label ('' for label-free icons)
    description: str = ""  # content description ('' when the app gives none)
    bounds: Bounds = (0.0, 0.0, 0.0, 0.0)
    clickable: bool = False
    selected: bool = False  # state: toggled on, checked, chosen or focused (a UI tree's checked / selected / focused)

    def __post_init__(self) -> None:
        object.__setattr__(self, "bounds", _bounds("bounds", self.bounds))

    @property
    def center(self) -> Point:
        x0, y0, x1, y1 = self.bounds
        return ((x0 + x1) / 2, (y0 + y1) / 2)

    @property
    def area(self) -> float:
        x0, y0, x1, y1 = self.bounds
        return (x1 - x0) * (y1 - y0)

    def contains(self, point: Point) -> bool:
        x0, y0, x1, y1 = self.bounds
        return x0 <= point[0] <= x1 and y0 <= point[1] <= y1

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "role": self.role, "text": self.text, "description": self.description,
                "bounds": list(self.bounds), "clickable": self.clickable, "selected": self.selected}

    @classmethod
    def from_dict(cls, d: Any) -> "UIElement":
        d = as_object(d)
        return cls(id=get_field(d, "id", str), role=get_field(d, "role", str), text=get_field(d, "text", str),
                   description=get_field(d, "description", str), bounds=get_field(d, "bounds", (list, tuple)),
                   clickable=get_field(d, "clickable", bool), selected=get_field(d, "selected", bool, optional=True) or False)


@dataclass(frozen=True)
class SubgoalLabel:
    """Ground truth from the world: which subgoal of the task a step belongs to."""

    index: int  # position of the subgoal within the episode (0, 1, ...)
    type: str  # subgoal type from the world's shared library, e.g. "open_menu"
    text: str  # the true sub-intent, e.g. "open the Display settings"

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "type": self.type, "text": self.text}

    @classmethod
    def from_dict(cls, d: Any) -> "SubgoalLabel":
        d = as_object(d)
        return cls(index=get_index(d, "index"), type=get_field(d, "type", str), text=get_field(d, "text", str))


@dataclass(frozen=True)
class Observation:
    """What the agent sees: a screenshot path (relative to its store) and the UI tree (empty when
    the screen was recorded without one).

    ``screen`` is the world's true screen type, kept for analysis only (node purity);
    no method may read it.
    """

    screenshot: str
    elements: tuple[UIElement, ...] = ()
    screen: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"screenshot": self.screenshot, "elements": [e.to_dict() for e in self.elements]}
        if self.screen is not None:
            d["screen"] = self.screen
        return d

    @classmethod
    def from_dict(cls, d: Any) -> "Observation":
        d = as_object(d)
        elements = tuple(nested_field(f"elements[{i}]", UIElement.from_dict, e)  # no UI tree: none
                         for i, e in enumerate(get_field(d, "elements", list, optional=True) or []))
        return cls(screenshot=get_field(d, "screenshot", str), elements=elements,
                   screen=get_field(d, "screen", str, optional=True))


@dataclass(frozen=True)
class Step:
    """An observation and the action taken on it, with optional ground truth: the subgoal it belongs
    to and the expert's action from the same state (what a learner should have done; it differs
    from ``action`` where the demonstrator strayed)."""

    observation: Observation
    action: Action
    subgoal: SubgoalLabel | None = None
    expert: Action | None = None  # None: unknown (recorded data has no expert)

    @property
    def screenshot(self) -> str:
        return self.observation.screenshot

    @property
    def elements(self) -> tuple[UIElement, ...]:
        return self.observation.elements

    def to_dict(self) -> dict[str, Any]:
        d = {**self.observation.to_dict(), "action": self.action.to_dict()}
        if self.subgoal is not None:
            d["subgoal"] = self.subgoal.to_dict()
        if self.expert is not None:
            d["expert"] = self.expert.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: Any) -> "Step":
        observation = Observation.from_dict(d)  # a step is its observation's fields plus these
        action = nested_field("action", Action.from_dict, get_field(d, "action", Mapping))
        raw = get_field(d, "subgoal", Mapping, optional=True)
        subgoal = nested_field("subgoal", SubgoalLabel.from_dict, raw) if raw is not None else None
        raw = get_field(d, "expert", Mapping, optional=True)
        expert = nested_field("expert", Action.from_dict, raw) if raw is not None else None
        return cls(observation=observation, action=action, subgoal=subgoal, expert=expert)


@dataclass(frozen=True)
class Episode:
    """One trajectory: the steps taken towards ``goal`` and the observation after the last.

    ``final`` is None when the recording stops before the last action's outcome (a run cut off by
    its step budget after a tap): what that action did is unknown, and readers of the episode say
    so rather than take the last screen for its result.
    """

    id: str
    app: str
    goal: str
    steps: tuple[Step, ...]
    final: Observation | None  # the screen after the last action (None: not recorded)
    success: bool | None = None  # None: unknown
    provenance: Mapping[str, Any] = field(default_factory=dict)  # seed, task, params, split, ...

    def __post_init__(self) -> None:
        if not self.steps:
            raise DataError("steps", f"episode {self.id!r} has no steps")

    @property
    def phone(self) -> Any:
        """The phone the episode ran on: its app variant (``provenance["variant"]``), so that a memory
        can hold one phone's experience; recordings that name none (real runs on one device) share
        one phone, ``None``."""
        return self.provenance.get("variant")

    @property
    def final_recorded(self) -> bool:
        """Whether the screen after the last action was recorded."""
        return self.final is not None

    @property
    def observations(self) -> tuple[Observation, ...]:
        """One screen per step, then the final one: ``len(steps) + 1`` screens, so that screen
        ``i + 1`` is the one step ``i`` led to. Without a recorded final screen the last step's
        screen stands in for it; :attr:`final_recorded` tells the two apart."""
        last = self.final if self.final is not None else self.steps[-1].observation
        return tuple(s.observation for s in self.steps) + (last,)

    @property
    def recorded_observations(self) -> tuple[Observation, ...]:
        """Every screen the recording holds: one per step, then the final one when recorded."""
        return tuple(s.observation for s in self.steps) + ((self.final,) if self.final is not None else ())

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "app": self.app, "goal": self.goal, "success": self.success,
                "provenance": dict(self.provenance), "steps": [s.to_dict() for s in self.steps],
                "final": self.final.to_dict() if self.final is not None else None}

    @classmethod
    def from_dict(cls, d: Any, path: str | None = None) -> "Episode":
        try:
            d = as_object(d, "episode")
            success = d.get("success")
            if success is not None and not isinstance(success, bool):
                raise DataError("success", f"expected true, false or null, got {success!r:.60}")
            steps = tuple(nested_field(f"steps[{i}]", Step.from_dict, s) for i, s in enumerate(get_field(d, "steps", list)))
            if "final" not in d:  # null says "not recorded"; a missing key is a truncated file
                raise DataError("final", "missing (null when the screen after the last action was not recorded)")
            raw_final = get_field(d, "final", Mapping, optional=True)
            final = nested_field("final", Observation.from_dict, raw_final) if raw_final is not None else None
            provenance = check_json(dict(get_field(d, "provenance", Mapping, optional=True) or {}), "provenance")
            return cls(id=get_field(d, "id", str), app=get_field(d, "app", str), goal=get_field(d, "goal", str),
                       steps=steps, final=final, success=success, provenance=provenance)
        except DataError as err:
            raise err.at(path) from None


@dataclass(frozen=True)
class Subgoal:
    """A contiguous run of actions with one sub-intent: the paper's memory tuple
    ⟨s_from, s_to; text, effect, behaviour, successor, success⟩.

    ``first_step``/``last_step`` are inclusive step indices in the episode; ``to_screenshot``
    is the screen after the last action (the next subgoal's ``from_screenshot``).
    """

    episode_id: str
    index: int  # position within the episode
    first_step: int
    last_step: int
    from_screenshot: str
    to_screenshot: str
    text: str  # the sub-intent
    effect: str  # what changed from the first to the last screen
    behaviour: str  # the pattern of the underlying actions
    success: SuccessLabel
    successor: int | None  # index of the next subgoal of the same episode, or None
    goal: str = ""  # the episode's goal (task context)
    app: str = ""
    actions: tuple[Action, ...] = ()

    def __post_init__(self) -> None:
        if self.success not in SUCCESS_LABELS:
            raise DataError("success", f"expected one of {SUCCESS_LABELS}, got {self.success!r}")
        if not 0 <= self.first_step <= self.last_step:
            raise DataError("last_step", f"needs 0 <= first_step <= last_step, got {self.first_step}..{self.last_step}")

    @property
    def id(self) -> str:
        return f"{self.episode_id}#{self.index}"

    def to_dict(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "index": self.index, "first_step": self.first_step,
                "last_step": self.last_step, "from_screenshot": self.from_screenshot,
                "to_screenshot": self.to_screenshot, "text": self.text, "effect": self.effect,
                "behaviour": self.behaviour, "success": self.success, "successor": self.successor,
                "goal": self.goal, "app": self.app, "actions": [a.to_dict() for a in self.actions]}

    @classmethod
    def from_dict(cls, d: Any, path: str | None = None) -> "Subgoal":
        try:
            d = as_object(d, "subgoal")
            actions = tuple(nested_field(f"actions[{i}]", Action.from_dict, a)
                            for i, a in enumerate(get_field(d, "actions", list, optional=True) or []))
            return cls(episode_id=get_field(d, "episode_id", str), index=get_index(d, "index"),
                       first_step=get_index(d, "first_step"), last_step=get_index(d, "last_step"),
                       from_screenshot=get_field(d, "from_screenshot", str), to_screenshot=get_field(d, "to_screenshot", str),
                       text=get_field(d, "text", str), effect=get_field(d, "effect", str),
                       behaviour=get_field(d, "behaviour", str), success=get_field(d, "success", str),
                       successor=get_index(d, "successor", optional=True), goal=get_field(d, "goal", str, optional=True) or "",
                       app=get_field(d, "app", str, optional=True) or "", actions=actions)
        except DataError as err:
            raise err.at(path) from None


def group_by_episode(subgoals: Iterable[Subgoal]) -> dict[str, list[Subgoal]]:
    """Subgoals by episode id (episodes in order of first appearance), each sorted by index; two
    subgoals of one episode with the same index are a :class:`DataError`."""
    groups: dict[str, list[Subgoal]] = {}
    for s in subgoals:
        groups.setdefault(s.episode_id, []).append(s)
    for eid, group in groups.items():
        group.sort(key=lambda s: s.index)
        if len({s.index for s in group}) != len(group):
            raise DataError("index", f"episode {eid!r} has two subgoals with the same index")
    return groups


def check_unique_ids(items: Sequence[Any], what: str, path: str | None = None) -> None:
    """Raise :class:`DataError` on the first id that occurs twice."""
    seen: set[str] = set()
    for i, item in enumerate(items):
        if item.id in seen:
            raise DataError(f"{what}[{i}].id", f"duplicate id {item.id!r}", path)
        seen.add(item.id)
