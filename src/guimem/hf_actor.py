"""The actor interface over any Hugging Face vision-language model.

:class:`HFVLMActor` implements :class:`guimem.policy.Policy` with ``AutoProcessor`` and
``AutoModelForImageTextToText`` (decoder-only VLMs: Qwen2/2.5/3-VL, UI-TARS, ...). For each
:class:`~guimem.policy.PolicyInput` it

1. builds a chat with the model's chat template: a system turn describing the action space
   and the answer format, and a user turn with the goal, the retrieved memory (as a text
   block, as an image, or both), the earlier actions and the current screenshot;
2. optionally returns the hidden state of every layer at the *final prompt token* (the
   last token of the prompt, after the generation prompt, e.g. the newline after
   ``<|im_start|>assistant``), taken from the prefill pass of generation itself, so it costs
   no extra forward pass;
3. decodes greedily and parses the answer into a :class:`~guimem.data.Action`.

Hidden states follow the ``transformers`` convention, checked for Qwen2-VL in the tests:
``hidden_states`` is ``[n_layers + 1, d_model]`` per input; index 0 is the embedding
output (the input of the first decoder layer), index ``i`` the output of decoder layer
``i``, and the last index the last layer's output after the final norm (what the LM head
reads).

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

An answer that cannot be parsed never becomes a plausible action silently: the output
carries :data:`FALLBACK_ACTION` (``impossible``) and ``info["parse_error"]`` says why.
"""

from __future__ import annotations

import ast
import copy
import json
import math
import re
from typing import Any, Iterator, Literal, Mapping, Sequence

import numpy as np
import torch
from PIL import Image

from guimem.data import Action, DataError
from guimem.policy import PolicyInput, PolicyOutput

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


# ============================================================================ parsing
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


# ============================================================================ prompts
_COORD_TEXT: dict[str, str] = {
    "relative_1000": "integers from 0 to 1000 on each axis, relative to the screenshot's width and height",
    "absolute_resized": "pixels of the screenshot as you see it",
    "absolute_original": "pixels of the screenshot",
    "normalized": "fractions from 0 to 1 of the screenshot's width and height",
}

_JSON_SPACE = """Answer with one JSON object and nothing else, one of:
{"action": "tap", "point": [x, y]}
{"action": "long_press", "point": [x, y]}
{"action": "swipe", "point": [x, y], "end": [x, y]}  (the finger moves from point to end)
{"action": "type", "text": "..."}  (types into the focused field)
{"action": "back"}
{"action": "home"}
{"action": "enter"}
{"action": "open_app", "text": "<app name>"}
{"action": "done"}  (the goal is reached)
{"action": "impossible"}  (the goal cannot be reached)"""

_UITARS_SPACE = """## Output Format
Thought: ...
Action: ...

## Action Space
click(start_box='(x,y)')
long_press(start_box='(x,y)')
type(content='')  # types into the focused field
scroll(start_box='(x,y)', direction='down or up or right or left')  # brings that side's content into view
drag(start_box='(x1,y1)', end_box='(x2,y2)')
open_app(app_name='')
press_back()
press_home()
press_enter()
finished()  # the goal is reached
impossible()  # the goal cannot be reached"""


def system_prompt(answer_format: AnswerFormat, coords: CoordConvention) -> str:
    """The system text: the task, the action space and the answer format."""
    space = _JSON_SPACE if answer_format == "json" else _UITARS_SPACE
    return ("You operate an Android phone to reach the user's goal. At each step you see the current "
            "screenshot, the goal, the actions taken so far and, sometimes, experience retrieved from "
            "earlier episodes. Choose the single next action.\n\n"
            f"{space}\n\nCoordinates (x, y) are {_COORD_TEXT[coords]}; (0, 0) is the top-left corner, "
            "x grows to the right and y downwards.")


def build_messages(inp: PolicyInput, system: str, answer_format: AnswerFormat,
                   frame: Frame, show_frame: bool) -> tuple[list[dict], list[Image.Image]]:
    """The chat (system + user turn) for one input, and its images in the order they appear."""
    content: list[dict[str, Any]] = [{"type": "text", "text": f"Goal: {inp.goal}\n"}]
    images: list[Image.Image] = []
    if inp.memory_text is not None:
        content.append({"type": "text", "text": f"Experience from earlier episodes:\n{inp.memory_text}\n"})
    if inp.memory_image is not None:
        content.append({"type": "text", "text": "Experience from earlier episodes, as an image:\n"})
        content.append({"type": "image"})
        images.append(inp.memory_image.convert("RGB"))
    history = "\n".join(f"{i + 1}. {format_action(a, answer_format, frame)}" for i, a in enumerate(inp.history))
    content.append({"type": "text", "text": f"Actions so far:\n{history or '(none)'}\n"})
    size = f" ({frame[0]:g} x {frame[1]:g} pixels)" if show_frame else ""
    content.append({"type": "text", "text": f"Current screen{size}:\n"})
    content.append({"type": "image"})
    images.append(inp.screenshot.convert("RGB"))
    content.append({"type": "text", "text": "\nWhat is the next action?"})
    messages = [{"role": "system", "content": [{"type": "text", "text": system}]},
                {"role": "user", "content": content}]
    return messages, images


# ============================================================================ the actor
class HFVLMActor:
    """:class:`guimem.policy.Policy` over a Hugging Face VLM (greedy decoding, parsed answers)."""

    def __init__(self, model_id_or_path: str, *, coords: CoordConvention = "relative_1000",
                 answer_format: AnswerFormat = "json", max_new_tokens: int = 64, batch_size: int = 1,
                 swipe_length: float = DEFAULT_SWIPE_LENGTH, system: str | None = None,
                 device: str | None = None, dtype: str | torch.dtype = "auto"):
        """Load ``model_id_or_path`` (a local folder or a cached hub id; never downloads).

        Args:
            coords: the coordinate convention the model answers in (:data:`COORD_CONVENTIONS`).
            answer_format: the format the system prompt asks for (both are parsed).
            max_new_tokens: the generation budget per answer.
            batch_size: inputs per forward pass (left-padded).
            swipe_length: finger travel of a direction-only scroll, fraction of the screen.
            system: a system prompt replacing :func:`system_prompt`'s.
            device: ``cuda`` if available when None.
            dtype: passed to ``from_pretrained`` (``"auto"``: the checkpoint's).
        """
        from transformers import AutoModelForImageTextToText, AutoProcessor

        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        processor = AutoProcessor.from_pretrained(model_id_or_path, local_files_only=True)
        model = AutoModelForImageTextToText.from_pretrained(model_id_or_path, local_files_only=True, dtype=dtype)
        self._setup(model.to(device).eval(), processor, coords, answer_format, max_new_tokens, batch_size,
                    swipe_length, system, name=str(model_id_or_path))

    @classmethod
    def from_model(cls, model: Any, processor: Any, *, coords: CoordConvention = "relative_1000",
                   answer_format: AnswerFormat = "json", max_new_tokens: int = 64, batch_size: int = 1,
                   swipe_length: float = DEFAULT_SWIPE_LENGTH, system: str | None = None) -> "HFVLMActor":
        """An actor over an already-built model and processor (on the model's device)."""
        actor = cls.__new__(cls)
        actor._setup(model.eval(), processor, coords, answer_format, max_new_tokens, batch_size,
                     swipe_length, system, name=type(model).__name__)
        return actor

    def _setup(self, model: Any, processor: Any, coords: str, answer_format: str, max_new_tokens: int,
               batch_size: int, swipe_length: float, system: str | None, name: str) -> None:
        if coords not in COORD_CONVENTIONS:
            raise DataError("coords", f"expected one of {COORD_CONVENTIONS}, got {coords!r}")
        if answer_format not in ANSWER_FORMATS:
            raise DataError("answer_format", f"expected one of {ANSWER_FORMATS}, got {answer_format!r}")
        for field, value in (("max_new_tokens", max_new_tokens), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise DataError(field, f"expected a positive int, got {value!r}")
        if not 0 < swipe_length <= 0.5:
            raise DataError("swipe_length", f"expected a fraction in (0, 0.5], got {swipe_length!r}")
        if getattr(processor, "chat_template", None) is None and getattr(processor.tokenizer, "chat_template", None) is None:
            raise DataError("chat_template", f"the processor of {name} has no chat template")
        self.model, self.processor, self.name = model, processor, name
        self.coords, self.answer_format = coords, answer_format
        self.max_new_tokens, self.batch_size, self.swipe_length = max_new_tokens, batch_size, swipe_length
        self.system = system if system is not None else system_prompt(answer_format, coords)
        tokenizer = processor.tokenizer
        if tokenizer.pad_token_id is None:  # batched generation needs a pad token
            tokenizer.pad_token = tokenizer.eos_token
        self._resized: dict[tuple[int, int], Frame] = {}  # original (W, H) -> processor-resized (W, H)

    # ------------------------------------------------------------------ shape of the model
    @property
    def n_layers(self) -> int:
        """Decoder layers of the language model (hidden states have ``n_layers + 1`` rows)."""
        return int(self.model.config.get_text_config().num_hidden_layers)

    @property
    def d_model(self) -> int:
        """Width of the language model's hidden states."""
        return int(self.model.config.get_text_config().hidden_size)

    @property
    def device(self) -> torch.device:
        """Where the model's weights are (inputs are sent there)."""
        return next(self.model.parameters()).device

    # ------------------------------------------------------------------ prompt
    def frame(self, screenshot: Image.Image) -> Frame:
        """``(width, height)`` of the frame answers about ``screenshot`` are written in."""
        if self.coords == "relative_1000":
            return (1000.0, 1000.0)
        if self.coords == "normalized":
            return (1.0, 1.0)
        if self.coords == "absolute_original":
            return (float(screenshot.width), float(screenshot.height))
        return self.resized_size(screenshot)

    def resized_size(self, image: Image.Image) -> Frame:
        """``(width, height)`` the processor resizes ``image`` to (cached per input size)."""
        key = image.size
        if key not in self._resized:
            image_processor = self.processor.image_processor
            out = image_processor(images=[image.convert("RGB")], return_tensors="pt")
            if "image_grid_thw" in out:  # Qwen-VL family: a grid of patch_size patches
                _, grid_h, grid_w = (int(v) for v in out["image_grid_thw"][0])
                patch = int(image_processor.patch_size)
                self._resized[key] = (float(grid_w * patch), float(grid_h * patch))
            else:  # fixed-size processors: pixel_values [n, C, H, W]
                height, width = out["pixel_values"].shape[-2:]
                self._resized[key] = (float(width), float(height))
        return self._resized[key]

    def prompt(self, inp: PolicyInput) -> tuple[str, list[Image.Image], Frame]:
        """The chat-templated prompt text of one input, its images and its coordinate frame."""
        frame = self.frame(inp.screenshot)
        messages, images = build_messages(inp, self.system, self.answer_format, frame,
                                          show_frame=self.coords.startswith("absolute"))
        template = self.processor.chat_template or self.processor.tokenizer.chat_template
        text = self.processor.apply_chat_template(messages, chat_template=template, tokenize=False,
                                                  add_generation_prompt=True)
        return text, images, frame

    def encode(self, inputs: Sequence[PolicyInput]) -> tuple[Any, list[Frame]]:
        """Processor outputs of a batch (left-padded: the last column is every final prompt token)."""
        texts, images, frames = zip(*(self.prompt(i) for i in inputs))
        enc = self.processor(text=list(texts), images=list(images), padding=True, padding_side="left",
                             return_tensors="pt")
        return enc.to(self.device, dtype=self.model.dtype), list(frames)  # images cast to the model dtype

    # ------------------------------------------------------------------ acting
    def act(self, inputs: Sequence[PolicyInput], output_hidden_states: bool = False) -> list[PolicyOutput]:
        """Answer a batch; with ``output_hidden_states`` fill ``[n_layers + 1, d_model]`` per input."""
        outputs: list[PolicyOutput] = []
        for start in range(0, len(inputs), self.batch_size):
            outputs.extend(self._act_batch(inputs[start:start + self.batch_size], output_hidden_states))
        return outputs

    def _generation_config(self, output_hidden_states: bool) -> Any:
        """The model's generation config, made greedy, returning a dict (and hidden states if asked)."""
        config = copy.deepcopy(self.model.generation_config)
        config.do_sample, config.num_beams, config.max_new_tokens = False, 1, self.max_new_tokens
        config.temperature = config.top_p = config.top_k = None  # greedy: no sampling knobs
        config.pad_token_id = self.processor.tokenizer.pad_token_id
        config.return_dict_in_generate, config.output_hidden_states = True, output_hidden_states
        return config

    @torch.inference_mode()
    def _act_batch(self, inputs: Sequence[PolicyInput], output_hidden_states: bool) -> list[PolicyOutput]:
        enc, frames = self.encode(inputs)
        prompt_len = enc["input_ids"].shape[1]
        gen = self.model.generate(**enc, generation_config=self._generation_config(output_hidden_states))
        answers = self.processor.tokenizer.batch_decode(gen.sequences[:, prompt_len:], skip_special_tokens=True)
        hidden = None
        if output_hidden_states:
            # gen.hidden_states[0]: the prefill pass, a tuple of n_layers + 1 tensors [batch, prompt_len, d_model]
            hidden = torch.stack(gen.hidden_states[0], dim=1)[:, :, -1].float().cpu().numpy()  # [batch, n_layers+1, d_model]
        n_prompt = enc["attention_mask"].sum(dim=1).tolist()
        return [self.to_output(a, f, None if hidden is None else hidden[i], int(n))
                for i, (a, f, n) in enumerate(zip(answers, frames, n_prompt))]

    def to_output(self, answer: str, frame: Frame, hidden_states: np.ndarray | None = None,
                  prompt_tokens: int | None = None) -> PolicyOutput:
        """A decoded answer as a PolicyOutput; unparseable: FALLBACK_ACTION and ``info["parse_error"]``."""
        info: dict[str, Any] = {"frame": list(frame), "coords": self.coords}
        if prompt_tokens is not None:
            info["prompt_tokens"] = prompt_tokens
        try:
            action = parse_answer(answer, frame, self.swipe_length)
        except DataError as err:  # ActionParseError, or an Action refusing what was parsed
            action, info["parse_error"] = FALLBACK_ACTION, str(err)
        return PolicyOutput(action=action, hidden_states=hidden_states, raw=answer, info=info)


# ============================================================================ a tiny random model
_TINY_SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                        "<|image_pad|>", "<|video_pad|>")
TINY_CHAT_TEMPLATE = (  # Qwen-style: <|im_start|>role\n...<|im_end|>, images as vision pads
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def byte_tokenizer(chat_template: str = TINY_CHAT_TEMPLATE) -> Any:
    """A byte-level BPE tokenizer without merges (one token per byte) with Qwen's special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(list(_TINY_SPECIAL_TOKENS))
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   chat_template=chat_template)


def tiny_random_qwen2_vl(n_layers: int = 2, d_model: int = 32, seed: int = 0,
                         max_image_tokens: int = 16) -> tuple[Any, Any]:
    """A randomly initialised Qwen2-VL and its processor, built offline (tests, benchmarks, smoke runs).

    The text model has ``n_layers`` decoder layers of width ``d_model``; the vision tower one
    block; images are resized to at most ``max_image_tokens`` merged 28 x 28 patches. The
    processor is Qwen2-VL's without its video processor (which needs torchvision).
    """
    from transformers import AutoModelForImageTextToText, Qwen2VLConfig, Qwen2VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    class ImageOnlyQwen2VLProcessor(Qwen2VLProcessor):
        """Qwen2-VL's processor for images only."""

        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
            super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)

    tokenizer = byte_tokenizer()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in _TINY_SPECIAL_TOKENS}
    image_processor = Qwen2VLImageProcessorPil(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * max_image_tokens)
    processor = ImageOnlyQwen2VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                          chat_template=TINY_CHAT_TEMPLATE)
    heads = max(2, d_model // 8)  # head_dim 8
    half_rotary = d_model // heads // 2  # M-RoPE splits each head's rotary half over (t, h, w)
    config = Qwen2VLConfig(
        text_config=dict(vocab_size=len(tokenizer), hidden_size=d_model, intermediate_size=2 * d_model,
                         num_hidden_layers=n_layers, num_attention_heads=heads, num_key_value_heads=heads // 2,
                         bos_token_id=None, eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                          "mrope_section": [half_rotary - 2 * (half_rotary // 4),
                                                            half_rotary // 4, half_rotary // 4]}),
        vision_config=dict(depth=1, embed_dim=32, hidden_size=d_model, num_heads=2, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    torch.manual_seed(seed)
    return AutoModelForImageTextToText.from_config(config).eval(), processor
