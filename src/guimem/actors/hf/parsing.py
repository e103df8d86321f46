"""Reading a vision-language model's answer as an action, and writing an action in its answer format.

Two answer formats are understood, whichever the prompt asked for:

- JSON, e.g. ``{"action": "tap", "point": [x, y]}``, with code fences or prose around it,
  also single-quoted Python dicts and Qwen2.5-VL's ``mobile_use`` tool calls
  (``{"name": "mobile_use", "arguments": {"action": "click", "coordinate": [x, y]}}``);
- UI-TARS / Qwen-VL calls, e.g. ``click(start_box='(x,y)')``, ``long_press(...)``,
  ``type(content='...')``, ``scroll(start_box='(x,y)', direction='down')``,
  ``drag(start_box=..., end_box=...)``, ``press_back()``, ``press_home()``,
  ``open_app(app_name='...')``, ``finished()``, optionally after ``Thought: ...``.

Coordinates in answers follow a *convention* (:data:`COORD_CONVENTIONS`), a parameter:
``relative_1000`` (UI-TARS and Qwen2-VL: integers on a 0-1000 grid), ``absolute_resized``
(Qwen2.5-VL, UI-TARS-1.5: pixels of the image as resized by the processor),
``absolute_original`` (pixels of the screenshot as given) or ``normalized`` (0-1). A point
may be written ``[x, y]``, ``(x,y)``, ``<point>x y</point>``, or as a box ``(x1,y1,x2,y2)``
(its centre is taken). Everything is converted to the data model's normalized [0, 1].

Scrolls and swipes: an Action ``swipe`` records the finger's motion from ``point`` to
``end``. ``scroll(direction=d)`` asks to bring into view the content lying in direction
``d``, so the finger moves the opposite way (scroll ``down``: finger swipes up); a
``swipe`` given only a direction moves the finger that way. Either spans ``swipe_length``
of the screen, its start moved inwards if needed so that the whole motion stays on screen.
"""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any, Iterator, Literal, Mapping, Sequence

from guimem.core.data import Action, DataError

CoordConvention = Literal["relative_1000", "absolute_resized", "absolute_original", "normalized"]
AnswerFormat = Literal["json", "uitars"]
COORD_CONVENTIONS: tuple[CoordConvention, ...] = ("relative_1000", "absolute_resized", "absolute_original", "normalized")
ANSWER_FORMATS: tuple[AnswerFormat, ...] = ("json", "uitars")
FALLBACK_ACTION = Action("impossible")  # what an unparseable answer becomes (flagged in info)
DEFAULT_SWIPE_LENGTH = 0.3  # finger travel of a direction-only scroll/swipe, fraction of the screen

Frame = tuple[float, float]  # (width, height) of the coordinate frame answers are written in


class ActionParseError(DataError):
    """A model answer that does not describe a valid action."""

    def __init__(self, message: str, field: str = "answer"):
        super().__init__(field, message)


# Action names as models write them -> our action types.
_ACTION_NAMES: dict[str, str] = {
    **dict.fromkeys(["tap", "click", "left_single", "left_click", "touch"], "tap"),
    **dict.fromkeys(["long_press", "longpress", "long_click", "long_tap"], "long_press"),
    **dict.fromkeys(["swipe", "drag", "scroll"], "swipe"),
    **dict.fromkeys(["type", "input", "input_text", "type_text", "write"], "type"),
    **dict.fromkeys(["back", "press_back", "navigate_back", "go_back"], "back"),
    **dict.fromkeys(["home", "press_home", "navigate_home", "go_home"], "home"),
    **dict.fromkeys(["enter", "press_enter"], "enter"),
    **dict.fromkeys(["open_app", "open", "launch", "launch_app"], "open_app"),
    **dict.fromkeys(["done", "finished", "finish", "complete", "task_complete", "status_complete"], "done"),
    **dict.fromkeys(["impossible", "infeasible", "call_user", "task_impossible", "status_impossible"], "impossible"),
}
# Names we recognise but cannot express in the AITW-like action space.
_UNSUPPORTED = frozenset({"wait", "right_single", "left_double", "answer"})
_SPECIAL = frozenset({"key", "hotkey", "press_key", "keyevent", "system_button", "press_button", "terminate"})
_KEY_NAMES = {"enter": "enter", "keycode_enter": "enter", "back": "back", "keycode_back": "back",
              "home": "home", "keycode_home": "home"}
_POINT_KEYS = ("point", "coordinate", "coordinates", "start_box", "start_point", "start", "position", "box", "bbox")
_END_KEYS = ("end", "end_point", "coordinate2", "end_box", "end_coordinate")
_TEXT_KEYS = ("text", "content", "value", "input", "query")
_APP_KEYS = ("app_name", "app", "text", "name", "package")
_DIRECTIONS: dict[str, tuple[int, int]] = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}
_KNOWN = frozenset(_ACTION_NAMES) | _SPECIAL | _UNSUPPORTED  # names that start an action
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE]-?\d+)?")


def _canonical(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def coords_to_unit(value: Any, frame: Frame, field: str = "point") -> tuple[float, float]:
    """A point or box in ``frame`` coordinates as a normalized ``(x, y)`` (a box gives its centre)."""
    if isinstance(value, str):
        nums = [float(v) for v in _NUMBER.findall(value)]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        nums = [float(v) for v in value]
    else:
        raise ActionParseError(f"expected a point [x, y] or a box, got {value!r:.80}", field)
    if len(nums) == 4:
        nums = [(nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2]
    if len(nums) != 2:
        raise ActionParseError(f"expected 2 coordinates (or 4 for a box), got {len(nums)} in {value!r:.80}", field)
    x, y = nums[0] / frame[0], nums[1] / frame[1]
    if not (math.isfinite(x) and math.isfinite(y) and 0.0 <= x <= 1.0 and 0.0 <= y <= 1.0):
        raise ActionParseError(f"({nums[0]:g}, {nums[1]:g}) lies outside the {frame[0]:g} x {frame[1]:g} frame", field)
    return (x, y)


def directional_swipe(direction: str, start: tuple[float, float] | None, scroll: bool,
                      length: float = DEFAULT_SWIPE_LENGTH) -> Action:
    """A swipe of ``length`` for a direction; ``scroll=True`` moves the finger opposite to it."""
    key = _canonical(direction)
    if key not in _DIRECTIONS:
        raise ActionParseError(f"unknown direction {direction!r}; expected up, down, left or right", "direction")
    dx, dy = _DIRECTIONS[key]
    if scroll:
        dx, dy = -dx, -dy
    x, y = start if start is not None else (0.5, 0.5)
    # move the start inwards so that the whole motion stays on screen
    x = min(x, 1 - length) if dx > 0 else max(x, length) if dx < 0 else x
    y = min(y, 1 - length) if dy > 0 else max(y, length) if dy < 0 else y
    return Action("swipe", point=(x, y), end=(x + dx * length, y + dy * length))


def _first(d: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for k in keys:
        if d.get(k) is not None:
            return d[k]
    return None


def _arg(args: Mapping[str, Any], keys: Sequence[str], positional: Sequence[Any]) -> Any:
    """The first of ``keys`` given, else the first positional argument, else None."""
    value = _first(args, keys)
    return positional[0] if value is None and positional else value


def _special_action(raw: str, args: Mapping[str, Any], positional: Sequence[Any]) -> Action:
    """Key presses, system buttons and ``terminate(status=...)`` as our actions."""
    if raw == "terminate":
        status = _canonical(str(_arg(args, ("status", "result"), positional) or ""))
        if status not in ("success", "failure", "fail", "failed"):
            raise ActionParseError(f"terminate needs status success or failure, got {status!r}", "status")
        return Action("done" if status == "success" else "impossible")
    key = _canonical(str(_arg(args, ("key", "button", "text", "keycode"), positional) or ""))
    if key not in _KEY_NAMES:
        raise ActionParseError(f"{raw} {key!r} is not in the action space (enter, back, home)")
    return Action(_KEY_NAMES[key])


def _build_action(name: str, args: Mapping[str, Any], positional: Sequence[Any], frame: Frame,
                  swipe_length: float) -> Action:
    """One action from its name and arguments (JSON keys or call keywords)."""
    raw = _canonical(name)
    if raw in _SPECIAL:
        return _special_action(raw, args, positional)
    if raw in _UNSUPPORTED:
        raise ActionParseError(f"{name!r} is not in the action space")
    if raw not in _ACTION_NAMES:
        raise ActionParseError(f"unknown action {name!r}")
    kind = _ACTION_NAMES[raw]

    def point(keys: Sequence[str], field: str) -> tuple[float, float] | None:
        value = _first(args, keys)
        if value is None and "x" in args and "y" in args and field == "point":
            value = [args["x"], args["y"]]
        return None if value is None else coords_to_unit(value, frame, field)

    if kind in ("tap", "long_press"):
        p = point(_POINT_KEYS, "point")
        if p is None and positional:
            p = coords_to_unit(" ".join(map(str, positional)), frame, "point")
        if p is None:
            raise ActionParseError(f"a {kind} needs a point", "point")
        return Action(kind, point=p)
    if kind == "swipe":
        start, end = point(_POINT_KEYS, "point"), point(_END_KEYS, "end")
        direction = _first(args, ("direction",))
        if start is not None and end is not None:
            return Action("swipe", point=start, end=end)
        if direction is not None:
            return directional_swipe(str(direction), start, scroll=raw == "scroll", length=swipe_length)
        raise ActionParseError(f"a {name} needs an end point or a direction", "end")
    if kind == "type":
        text = _arg(args, _TEXT_KEYS, positional)
        if not isinstance(text, str):
            raise ActionParseError(f"a type needs text, got {text!r:.60}", "text")
        return Action("type", text=text)
    if kind == "open_app":
        app = _arg(args, _APP_KEYS, positional)
        if not isinstance(app, str) or not app.strip():
            raise ActionParseError(f"an open_app needs an app name, got {app!r:.60}", "text")
        return Action("open_app", text=app.strip())
    return Action(kind)


# ---------------------------------------------------------------------------- JSON answers
def _balanced_end(text: str, start: int, open_: str, close: str) -> int | None:
    """Index just past the bracket matching ``text[start]``, quotes respected; None if unclosed."""
    depth, quote, i = 0, None, start
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _json_objects(text: str) -> Iterator[dict]:
    """Every top-level ``{...}`` in ``text`` that parses as JSON or as a Python dict literal."""
    i = text.find("{")
    while i != -1:
        end = _balanced_end(text, i, "{", "}")
        if end is None:
            return
        chunk = text[i:end]
        obj: Any = None
        try:
            obj = json.loads(chunk)
        except ValueError:
            try:
                obj = ast.literal_eval(chunk)
            except (ValueError, SyntaxError):
                obj = None
        if isinstance(obj, dict):
            yield obj
            i = text.find("{", end)
        else:
            i = text.find("{", i + 1)


def _action_key(d: Mapping[str, Any]) -> str | None:
    """The key naming the action: ``action``/``action_type`` always, ``type``/``name`` if known."""
    for key in ("action", "action_type"):
        if isinstance(d.get(key), str):
            return key
    for key in ("type", "name"):
        value = d.get(key)
        if isinstance(value, str) and _canonical(value) in _KNOWN:
            return key
    return None


def parse_json_action(text: str, frame: Frame, swipe_length: float = DEFAULT_SWIPE_LENGTH) -> Action | None:
    """The first JSON action in ``text``; None if it holds no JSON object naming an action."""
    for obj in _json_objects(text):
        if isinstance(obj.get("arguments"), Mapping):  # a tool call: {"name": ..., "arguments": {...}}
            obj = obj["arguments"]
        key = _action_key(obj)
        if key is None:
            continue
        args = {k: v for k, v in obj.items() if k != key}
        return _build_action(obj[key], args, (), frame, swipe_length)
    return None


# ---------------------------------------------------------------------------- call answers
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def _unquote(value: str) -> Any:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), value[1:-1], flags=re.S)
    return value


def _split_args(inner: str) -> list[str]:
    """Split call arguments at top-level commas (outside quotes and brackets)."""
    parts, depth, quote, start, i = [], 0, None, 0, 0
    while i < len(inner):
        c = inner[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
        i += 1
    parts.append(inner[start:])
    return [p for p in (p.strip() for p in parts) if p]


def parse_call_action(text: str, frame: Frame, swipe_length: float = DEFAULT_SWIPE_LENGTH) -> Action | None:
    """The first ``name(args)`` call naming an action (after ``Action:`` if present); None if none."""
    marker = list(re.finditer(r"action\s*:", text, flags=re.I))
    body = text[marker[-1].end():] if marker else text
    for m in _CALL.finditer(body):
        if _canonical(m[1]) not in _KNOWN:
            continue
        end = _balanced_end(body, m.end() - 1, "(", ")")
        if end is None:
            raise ActionParseError(f"unclosed call {body[m.start():m.start() + 60]!r}")
        kwargs, positional = {}, []
        for arg in _split_args(body[m.end():end - 1]):
            kw = re.match(r"([A-Za-z_]\w*)\s*=\s*(.*)\Z", arg, flags=re.S)
            if kw:
                kwargs[kw[1]] = _unquote(kw[2])
            else:
                positional.append(_unquote(arg))
        return _build_action(m[1], kwargs, positional, frame, swipe_length)
    return None


def parse_answer(text: str, frame: Frame, swipe_length: float = DEFAULT_SWIPE_LENGTH) -> Action:
    """A model's answer as an Action: JSON first, then a UI-TARS style call.

    Args:
        text: the decoded answer.
        frame: ``(width, height)`` of the coordinate frame the answer is written in
            (``(1000, 1000)`` for ``relative_1000``, ``(1, 1)`` for ``normalized``, pixels
            for the absolute conventions).
        swipe_length: finger travel of a scroll given only by its direction.

    Raises:
        ActionParseError: no action could be read, or the one found is invalid.
    """
    if not isinstance(text, str) or not text.strip():
        raise ActionParseError("empty answer")
    action = parse_json_action(text, frame, swipe_length)
    if action is None:
        action = parse_call_action(text, frame, swipe_length)
    if action is None:
        raise ActionParseError(f"no action found in {text.strip()[:80]!r}")
    return action


# ============================================================================ formatting
def _fmt(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def _in_frame(point: tuple[float, float], frame: Frame, integer: bool) -> tuple[float, float]:
    x, y = point[0] * frame[0], point[1] * frame[1]
    return (float(round(x)), float(round(y))) if integer else (round(x, 3), round(y, 3))


def format_action(action: Action, answer_format: AnswerFormat, frame: Frame) -> str:
    """An action written the way the model is asked to answer (for the history block)."""
    integer = tuple(frame) != (1.0, 1.0)  # pixel and 0-1000 frames are written as integers
    p = _in_frame(action.point, frame, integer) if action.point is not None else None
    e = _in_frame(action.end, frame, integer) if action.end is not None else None
    if answer_format == "json":
        d: dict[str, Any] = {"action": action.type}
        if p is not None:
            d["point"] = [int(v) if integer else v for v in p]
        if e is not None:
            d["end"] = [int(v) if integer else v for v in e]
        if action.text is not None:
            d["text"] = action.text
        return json.dumps(d, ensure_ascii=False)
    def box(q: tuple[float, float]) -> str:
        return f"'({_fmt(q[0])},{_fmt(q[1])})'"

    def quoted(text: str | None) -> str:
        return "'" + (text or "").replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"

    if action.type == "tap":
        return f"click(start_box={box(p)})"
    if action.type == "long_press":
        return f"long_press(start_box={box(p)})"
    if action.type == "swipe":
        return f"drag(start_box={box(p)}, end_box={box(e)})"
    if action.type == "type":
        return f"type(content={quoted(action.text)})"
    if action.type == "open_app":
        return f"open_app(app_name={quoted(action.text)})"
    return {"back": "press_back()", "home": "press_home()", "enter": "press_enter()",
            "done": "finished()", "impossible": "impossible()"}[action.type]
