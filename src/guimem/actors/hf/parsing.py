"""Reading a vision-language model's answer as an action, and writing an action in its answer format.

Two answer formats are understood, whichever the prompt asked for:

- JSON, e.g. ``{"action": "tap", "point": [x, y]}``, with code fences or prose around it,
  also single-quoted Python dicts and Qwen2.5-VL's ``mobile_use`` tool calls
  (``{"name": "mobile_use", "arguments": {"action": "click", "coordinate": [x, y]}}``);
- UI-TARS / Qwen-VL calls, e.g. ``click(start_box='(x,y)')``, ``long_press(...)``,
  ``type(content='...')``, ``scroll(start_box='(x,y)', direction='down')``,
  ``drag(start_box=..., end_box=...)``, ``press_back()``, ``press_home()``,
  ``open_app(app_name='...')``, ``finished()``, optionally after ``Thought: ...``.

Which part of an answer is read: the text after the last line that starts with ``Action:``
(UI-TARS' ``Thought: ...`` / ``Action: ...``), else the whole answer; in it, the first object
``{...}`` that names an action or the first call of a known action name, whichever comes first.
So JSON quoted in a thought never overrides the ``Action:`` line, an object inside a call's
string argument is text, and a call inside an object's string is text.

Coordinates in answers follow a *convention* (:data:`COORD_CONVENTIONS`), a parameter:
``relative_1000`` (UI-TARS and Qwen2-VL: integers on a 0-1000 grid), ``absolute_resized``
(Qwen2.5-VL, UI-TARS-1.5: pixels of the image as resized by the processor),
``absolute_original`` (pixels of the screenshot as given) or ``normalized`` (0-1). A point
may be written ``[x, y]``, ``(x,y)``, ``<point>x y</point>``, as a box ``(x1,y1,x2,y2)``
(its centre is taken), or as two coordinates of their own: keyword arguments or keys ``x=500,
y=250`` (``start_x``/``start_y`` and ``end_x``/``end_y``, ``x1``/``y1`` and ``x2``/``y2`` for a
swipe), each a number, quoted or not, and ``{"x": 500, "y": 250}``. A call's keyword names may be
quoted too (``click("x"=500, "y"=250)``). Everything is converted to the data model's normalized [0, 1]; a point
outside the frame (or not finite) is a parse error, never clipped.

Scrolls and swipes: an Action ``swipe`` records the finger's motion from ``point`` to
``end``. ``scroll(direction=d)`` asks to bring into view the content lying in direction
``d``, so the finger moves the opposite way (scroll ``down``: finger swipes up); a
``swipe`` given only a direction moves the finger that way. Either spans ``swipe_length``
of the screen, its start moved inwards if needed so that the whole motion stays on screen.

:func:`parse_answer` is total and linear: for any string it returns an :class:`Action` or
raises :class:`ActionParseError`, and it looks at each character a bounded number of times
(brackets are matched in one pass; an object is parsed once, and skipped whole if it is not
an action; nesting deeper than :data:`~guimem.core.io.MAX_JSON_DEPTH` and integers beyond
Python's digit limit are refused by :func:`~guimem.core.io.parse_json` before any work that
could recurse or overflow). ``benchmarks/bench_parsing.py`` measures it.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Iterator, Literal, Mapping, Sequence

from guimem.core.data import Action, DataError
from guimem.core.io import parse_json

CoordConvention = Literal["relative_1000", "absolute_resized", "absolute_original", "normalized"]
AnswerFormat = Literal["json", "uitars"]
COORD_CONVENTIONS: tuple[CoordConvention, ...] = ("relative_1000", "absolute_resized", "absolute_original", "normalized")
ANSWER_FORMATS: tuple[AnswerFormat, ...] = ("json", "uitars")
DEFAULT_COORDS: CoordConvention = "relative_1000"  # what most GUI VLMs answer in (Qwen2.5-VL: absolute_resized)
DEFAULT_ANSWER_FORMAT: AnswerFormat = "json"
DEFAULT_MAX_NEW_TOKENS = 64  # an answer's budget in tokens: a JSON action takes ~25, a UI-TARS thought more
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
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def _canonical(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def _as_float(value: str | float) -> float:
    """``float(value)``, an integer too large for a float becoming an infinity of its sign."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def coords_to_unit(value: Any, frame: Frame, field: str = "point") -> tuple[float, float]:
    """A point or box in ``frame`` coordinates as a normalized ``(x, y)`` (a box gives its centre)."""
    if isinstance(value, Mapping) and set(value) == {"x", "y"}:  # {"x": 500, "y": 250}
        nums = [_coordinate(value["x"], "x", field), _coordinate(value["y"], "y", field)]
    elif isinstance(value, str):
        nums = [_as_float(v) for v in _NUMBER.findall(value)]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        nums = [_as_float(v) for v in value]
    else:
        raise ActionParseError(f"expected a point [x, y] or a box, got {value!r:.80}", field)
    if len(nums) == 4:
        nums = [(nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2]
    if len(nums) != 2:
        raise ActionParseError(f"expected 2 coordinates (or 4 for a box), got {len(nums)} in {value!r:.80}", field)
    x, y = nums[0] / frame[0], nums[1] / frame[1]
    if not (0.0 <= x <= 1.0 and 0.0 <= y <= 1.0):  # also false for NaN
        raise ActionParseError(f"({nums[0]:.10g}, {nums[1]:.10g}) lies outside the {frame[0]:g} x {frame[1]:g} frame", field)
    return (x + 0.0, y + 0.0)  # -0.0 + 0.0 is 0.0


def directional_swipe(direction: str, start: tuple[float, float] | None, scroll: bool,
                      length: float = DEFAULT_SWIPE_LENGTH) -> Action:
    """A swipe of ``length`` for a direction; ``scroll=True`` moves the finger opposite to it."""
    key = _canonical(direction)
    if key not in _DIRECTIONS:
        raise ActionParseError(f"unknown direction {direction!r:.60}; expected up, down, left or right", "direction")
    dx, dy = _DIRECTIONS[key]
    if scroll:
        dx, dy = -dx, -dy
    x, y = start if start is not None else (0.5, 0.5)
    # move the start inwards so that the whole motion stays on screen
    x = min(x, 1 - length) if dx > 0 else max(x, length) if dx < 0 else x
    y = min(y, 1 - length) if dy > 0 else max(y, length) if dy < 0 else y
    return Action("swipe", point=(x, y), end=(x + dx * length, y + dy * length))


# A point given as two coordinates of their own (``click(x=500, y=250)``, ``{"x": 500, "y": 250}``,
# ``swipe(start_x=.., start_y=.., end_x=.., end_y=..)``): the (x, y) key pairs of a start and an end.
_XY_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "point": (("x", "y"), ("start_x", "start_y"), ("x1", "y1"), ("from_x", "from_y"), ("x_start", "y_start")),
    "end": (("end_x", "end_y"), ("x2", "y2"), ("to_x", "to_y"), ("x_end", "y_end")),
}
_ONE_NUMBER = re.compile(rf"\s*+(?:{_NUMBER.pattern})\s*+")


def _coordinate(value: Any, key: str, field: str) -> float:
    """One coordinate: a number, or a string holding exactly one (``'500'``, ``" 250.5 "``)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _as_float(value)
    if isinstance(value, str) and _ONE_NUMBER.fullmatch(value):
        return _as_float(value)
    raise ActionParseError(f"{key} must be one number, got {value!r:.60}", field)


def _xy_pair(args: Mapping[str, Any], pairs: Sequence[tuple[str, str]], field: str) -> list[float] | None:
    """The first ``(x, y)`` key pair ``args`` gives both of, as two numbers; None if it gives none."""
    for kx, ky in pairs:
        if args.get(kx) is not None and args.get(ky) is not None:
            return [_coordinate(args[kx], kx, field), _coordinate(args[ky], ky, field)]
    return None


def _first(d: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for k in keys:
        if d.get(k) is not None:
            return d[k]
    return None


def _arg(args: Mapping[str, Any], keys: Sequence[str], positional: Sequence[Any]) -> Any:
    """The first of ``keys`` given, else the first positional argument, else None."""
    value = _first(args, keys)
    return positional[0] if value is None and positional else value


def _text_arg(value: Any, field: str, what: str) -> str:
    """``value`` if it is a string that can be written as UTF-8 (no lone surrogate)."""
    if not isinstance(value, str):
        raise ActionParseError(f"{what}, got {value!r:.60}", field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ActionParseError(f"{what} that can be written as UTF-8, got a lone surrogate at {err.start}", field) from None
    return value


def _special_action(raw: str, args: Mapping[str, Any], positional: Sequence[Any]) -> Action:
    """Key presses, system buttons and ``terminate(status=...)`` as our actions."""
    if raw == "terminate":
        status = _canonical(str(_arg(args, ("status", "result"), positional) or ""))
        if status not in ("success", "failure", "fail", "failed"):
            raise ActionParseError(f"terminate needs status success or failure, got {status!r:.60}", "status")
        return Action("done" if status == "success" else "impossible")
    key = _canonical(str(_arg(args, ("key", "button", "text", "keycode"), positional) or ""))
    if key not in _KEY_NAMES:
        raise ActionParseError(f"{raw} {key!r:.60} is not in the action space (enter, back, home)")
    return Action(_KEY_NAMES[key])


def _build_action(name: str, args: Mapping[str, Any], positional: Sequence[Any], frame: Frame,
                  swipe_length: float) -> Action:
    """One action from its name and arguments (JSON keys or call keywords)."""
    raw = _canonical(name)
    if raw in _SPECIAL:
        return _special_action(raw, args, positional)
    if raw in _UNSUPPORTED:
        raise ActionParseError(f"{name!r:.60} is not in the action space")
    if raw not in _ACTION_NAMES:
        raise ActionParseError(f"unknown action {name!r:.60}")
    kind = _ACTION_NAMES[raw]

    def point(keys: Sequence[str], field: str) -> tuple[float, float] | None:
        value = _first(args, keys)
        if value is None:
            value = _xy_pair(args, _XY_KEYS[field], field)
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
        return Action("type", text=_text_arg(_arg(args, _TEXT_KEYS, positional), "text", "a type needs text"))
    if kind == "open_app":
        app = _text_arg(_arg(args, _APP_KEYS, positional), "text", "an open_app needs an app name").strip()
        if not app:
            raise ActionParseError("an open_app needs an app name, got a blank one", "text")
        return Action("open_app", text=app)
    return Action(kind)


# ---------------------------------------------------------------------------- scanning
# A quoted string, or an unterminated one up to the end. It never fails, so a scan never
# restarts inside it (the plain '"(?:[^"\\]|\\.)*"' backtracks from every quote of "\"\"\"...).
# An apostrophe inside a word ("don't") neither opens nor closes a single-quoted string.
_APOSTROPHE = r"(?<=\w)'(?=\w)"
_QUOTED = {'"': re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"?', re.DOTALL),
           "'": re.compile(rf"'(?:[^'\\]++|\\.|{_APOSTROPHE})*+'?", re.DOTALL)}
_OPENING_QUOTE = r"""["]|(?<!\w)'|'(?!\w)"""
_BRACKET_TOKENS = {"{": re.compile(rf"[{{}}]|{_OPENING_QUOTE}"), "(": re.compile(rf"[()]|{_OPENING_QUOTE}")}
_CLOSE = {"{": "}", "(": ")"}


def _bracket_pairs(text: str, open_: str, start: int = 0) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of every balanced ``{...}`` (or ``(...)``) from ``start`` on, in the order they close.

    One pass over ``text``. Quotes count inside brackets only (prose has apostrophes); a quote
    left open runs to the end of the text, and so do brackets it holds.
    """
    tokens, close, stack, i = _BRACKET_TOKENS[open_], _CLOSE[open_], [], start
    while True:
        if not stack:
            i = text.find(open_, i)
            if i == -1:
                return
            stack.append(i)
            i += 1
            continue
        m = tokens.search(text, i)
        if m is None:
            return
        c, i = m.group(), m.end()
        if c == open_:
            stack.append(m.start())
        elif c == close:
            yield stack.pop(), i
        else:
            i = _QUOTED[c].match(text, m.start()).end()


_ARG_TOKENS = re.compile(rf"[,()\[\]{{}}]|{_OPENING_QUOTE}")


def _split_args(inner: str) -> list[str]:
    """Split call arguments at top-level commas (outside quotes and brackets)."""
    parts, depth, start, i = [], 0, 0, 0
    while m := _ARG_TOKENS.search(inner, i):
        c, i = m.group(), m.end()
        if c in "'\"":
            i = _QUOTED[c].match(inner, m.start()).end()
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0:
            parts.append(inner[start:m.start()])
            start = i
    parts.append(inner[start:])
    return [p for p in (p.strip() for p in parts) if p]


def _unescape(value: str) -> str:
    """Backslash escapes in a quoted argument resolved (``\\n``, ``\\t``; any other char as itself)."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), value, flags=re.DOTALL)


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return _unescape(value[1:-1])
    return value


# Python-literal tokens that JSON spells differently (strings first, so nothing inside one is touched).
_PYTHON_TOKENS = re.compile(rf"""(?P<str>{_QUOTED['"'].pattern}|{_QUOTED["'"].pattern})"""
                            r"""|\b(?P<word>True|False|None)\b|(?P<paren>[()])|,(?=\s*+[}\]\)])""", re.DOTALL)
_JSON_WORDS = {"True": "true", "False": "false", "None": "null", "(": "[", ")": "]"}
_SINGLE_QUOTED_ESCAPE = re.compile(r'\\(.)|"', re.DOTALL)  # an escape, or a bare double quote


def _double_quoted(single: str) -> str:
    """A single-quoted Python string as a JSON one: ``\\'`` unescaped, a bare ``"`` escaped, other escapes kept."""
    def fix(m: re.Match) -> str:
        return '\\"' if m[1] is None else "'" if m[1] == "'" else m[0]

    return '"' + _SINGLE_QUOTED_ESCAPE.sub(fix, single[1:-1]) + '"'


def _python_to_json(chunk: str) -> str:
    """A Python dict literal rewritten as JSON: single-quoted strings, True/False/None, tuples, trailing commas."""
    def rewrite(m: re.Match) -> str:
        if s := m["str"]:
            return _double_quoted(s) if s[0] == "'" else s
        return _JSON_WORDS.get(m["word"] or m["paren"] or "", "")  # "" drops a trailing comma

    return _PYTHON_TOKENS.sub(rewrite, chunk)


def _read_object(chunk: str) -> Any:
    """``chunk`` parsed as JSON, else as a Python dict literal; None if neither (too deep or huge included)."""
    try:
        return parse_json(chunk)
    except DataError:
        pass
    try:
        return parse_json(_python_to_json(chunk))
    except DataError:
        return None


_ACTION_KEY_WORD = re.compile("action|type|name")  # what an object naming an action must hold (_action_key)


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


def _object_action(chunk: str, frame: Frame, swipe_length: float) -> Action | None:
    """The action an object ``{...}`` names; None if it does not parse or names none."""
    if not _ACTION_KEY_WORD.search(chunk):  # cheap: most braces in prose are not worth parsing
        return None
    obj = _read_object(chunk)
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("arguments"), Mapping):  # a tool call: {"name": ..., "arguments": {...}}
        obj = obj["arguments"]
    key = _action_key(obj)
    if key is None:
        return None
    return _build_action(obj[key], {k: v for k, v in obj.items() if k != key}, (), frame, swipe_length)


# A keyword argument, its name bare or quoted (``x=500``, ``'x'=500``, ``"x" = '500'``).
_KWARG = re.compile(r"""(["']?+)([A-Za-z_]\w*+)\1\s*+=\s*+(.*)\Z""", re.DOTALL)


def _call_action(body: str, call: re.Match, frame: Frame, swipe_length: float) -> Action:
    """The action of the call ``name(...)`` that ``call`` found in ``body`` (its ``(`` ends the match)."""
    open_ = call.end() - 1
    end = next((e for s, e in _bracket_pairs(body, "(", open_) if s == open_), None)
    if end is None:
        raise ActionParseError(f"unclosed call {body[call.start():call.start() + 60]!r}")
    kwargs, positional = {}, []
    for arg in _split_args(body[call.end():end - 1]):
        if kw := _KWARG.match(arg):
            kwargs[kw[2]] = _unquote(kw[3])
        else:
            positional.append(_unquote(arg))
    return _build_action(call["name"], kwargs, positional, frame, swipe_length)


# The line that starts UI-TARS' action part, markdown emphasis allowed ("**Action:**").
_ACTION_LINE = re.compile(r"^[ \t*#>_-]*+action[ \t*_]*+:", re.IGNORECASE | re.MULTILINE)
# An object's opening brace, or a call: a name right before "(" ("go back (to ..." in prose is no call).
_START = re.compile(r"\{|\b(?P<name>[A-Za-z_]\w*+)\(")


def _action_part(text: str) -> str:
    """The text after the last ``Action:`` line; the whole text if there is none."""
    last = None
    for last in _ACTION_LINE.finditer(text):
        pass
    return text if last is None else text[last.end():]


def _scan(body: str, frame: Frame, swipe_length: float) -> Action | None:
    """The first object naming an action or call of a known action in ``body``; None if there is none."""
    objects = dict(_bracket_pairs(body, "{"))
    i = 0
    while m := _START.search(body, i):
        i = m.end()
        if m["name"] is None:  # an object
            end = objects.get(m.start())
            if end is None:
                continue  # a brace never closed: read on inside it
            action = _object_action(body[m.start():end], frame, swipe_length)
            if action is not None:
                return action
            i = end  # skip it whole: what it quotes is not the answer
        elif m["name"].lower() in _KNOWN:  # a call's name has no spaces or dashes to canonicalise
            return _call_action(body, m, frame, swipe_length)
    return None


def _check_frame(frame: Any) -> None:
    """Refuse a frame that is not two finite positive sizes (a caller's error, not the answer's)."""
    ok = isinstance(frame, (tuple, list)) and len(frame) == 2 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < math.inf for v in frame)
    if not ok:
        raise DataError("frame", f"expected (width, height), two positive finite numbers, got {frame!r:.60}")


def parse_answer(text: str, frame: Frame, swipe_length: float = DEFAULT_SWIPE_LENGTH) -> Action:
    """A model's answer as an Action (see the module docstring for which part is read).

    Total and linear in ``len(text)``: any string gives an Action or an ActionParseError.

    Args:
        text: the decoded answer.
        frame: ``(width, height)`` of the coordinate frame the answer is written in
            (``(1000, 1000)`` for ``relative_1000``, ``(1, 1)`` for ``normalized``, pixels
            for the absolute conventions).
        swipe_length: finger travel of a scroll given only by its direction.

    Raises:
        ActionParseError: no action could be read, or the one found is invalid (its field named).
        DataError: ``frame`` is not two positive finite sizes.
    """
    _check_frame(frame)
    if not isinstance(text, str):
        raise ActionParseError(f"expected the answer as text, got {type(text).__name__}")
    if not text.strip():
        raise ActionParseError("empty answer")
    body = _action_part(text)
    try:
        action = _scan(body, frame, swipe_length)
    except ActionParseError:
        raise
    except DataError as err:  # the data model refusing what was read
        raise ActionParseError(err.message, err.field) from None
    if action is None:
        where = "after the 'Action:' line " if body is not text else ""
        raise ActionParseError(f"no action found {where}in {text.strip()[:80]!r}")
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
    end = action.end_point()
    e = _in_frame(end, frame, integer) if end is not None else None
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
    if action.type == "answer":  # a recorded agent's reply (history only: not in the action space asked for)
        return f"answer(content={quoted(action.text)})"
    return {"back": "press_back()", "home": "press_home()", "enter": "press_enter()",
            "done": "finished()", "impossible": "impossible()", "wait": "wait()"}[action.type]
