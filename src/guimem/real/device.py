"""A real Android device (or emulator) behind the world's ``reset`` / ``step`` interface.

:class:`DeviceEnv` drives a device through `adbutils <https://github.com/openatx/adbutils>`_:
screenshots via ``screencap``, the UI tree via ``uiautomator dump``, actions via ``input``.
It implements :class:`guimem.core.env.Env`, so closed-loop code runs unchanged on a phone.

A phone has no hidden state to read, so success needs a ``checker`` (a callable given the
device and the task); without one ``info["success"]`` is None.

Coordinates: actions are normalised to [0, 1]; they are scaled by the device's window size
(``wm size``), and UI-tree bounds are divided by it.
"""

from __future__ import annotations

import hashlib
import re
import time
from typing import Any, Callable, Mapping, Protocol
from xml.parsers import expat

from PIL import Image

from guimem.core.data import ENDING_TYPES, Action, DataError, UIElement
from guimem.core.env import Task, WorldObservation
from guimem.core.io import check_number

KEY_HOME, KEY_BACK, KEY_ENTER = 3, 4, 66  # Android key codes


class AdbDeviceLike(Protocol):
    """The part of ``adbutils.AdbDevice`` this backend uses (a fake implements it in tests)."""

    def window_size(self) -> Any: ...  # (width, height)

    def screenshot(self) -> Image.Image: ...

    def dump_hierarchy(self) -> str: ...

    def click(self, x: int, y: int) -> None: ...

    def swipe(self, sx: int, sy: int, ex: int, ey: int, duration: float = 1.0) -> None: ...

    def send_keys(self, text: str) -> Any: ...

    def keyevent(self, key_code: int | str) -> Any: ...

    def app_start(self, package_name: str, activity: str | None = None) -> Any: ...


# class-name fragment -> role, first match wins
_ROLES: tuple[tuple[str, str], ...] = (
    ("EditText", "field"), ("Switch", "toggle"), ("ToggleButton", "toggle"), ("CheckBox", "toggle"),
    ("RadioButton", "radio"), ("ImageButton", "icon"), ("Button", "button"), ("ImageView", "icon"),
    ("TextView", "text"), ("Tab", "tab"),
)


def role_of(cls: str) -> str:
    """A UI-tree role for an Android widget class name (``view`` when unknown)."""
    short = cls.rsplit(".", 1)[-1]
    return next((role for frag, role in _ROLES if frag in short), "view")


MAX_WINDOW_SIDE = 1 << 16  # pixels; a window side beyond this is not a phone's
MAX_COORDINATE = 2**31 - 1  # Android view bounds are 32-bit integers
_BOUNDS = re.compile(r"\[\s*(-?[0-9]+)\s*,\s*(-?[0-9]+)\s*\]\s*\[\s*(-?[0-9]+)\s*,\s*(-?[0-9]+)\s*\]")


def window_size(value: Any) -> tuple[int, int]:
    """``(width, height)`` of a ``wm size`` answer, each an integer in [1, MAX_WINDOW_SIDE]; else a DataError."""
    try:
        width, height = value
    except (TypeError, ValueError):
        raise DataError("window_size", f"expected (width, height), got {value!r:.60}") from None
    return (int(check_number(width, "window_size.width", 1, MAX_WINDOW_SIDE, integer=True)),
            int(check_number(height, "window_size.height", 1, MAX_WINDOW_SIDE, integer=True)))


def _bounds(text: str, size: tuple[int, int], field: str) -> tuple[float, float, float, float]:
    """``'[x0,y0][x1,y1]'`` in pixels -> normalised (x0, y0, x1, y1), clipped to the screen.

    A view may lie partly or wholly off screen (clipped; wholly off, it becomes zero-sized); a
    negative size or a number beyond 32 bits is a :class:`DataError`.
    """
    m = _BOUNDS.fullmatch(text.strip())
    if m is None:
        raise DataError(field, f"expected '[x0,y0][x1,y1]', got {text!r:.60}")
    if any(len(v.lstrip("-")) > 10 for v in m.groups()):  # checked before int(): 5000 digits would be slow
        raise DataError(field, f"a coordinate beyond 32 bits in {text!r:.60}")
    x0, y0, x1, y1 = (int(v) for v in m.groups())
    if max(map(abs, (x0, y0, x1, y1))) > MAX_COORDINATE:
        raise DataError(field, f"a coordinate beyond 32 bits in {text!r:.60}")
    if x1 < x0 or y1 < y0:
        raise DataError(field, f"negative size: needs x0 <= x1 and y0 <= y1, got {text!r:.60}")
    w, h = size
    clip = lambda v, n: round(min(1.0, max(0.0, v / n)), 4)  # noqa: E731
    return clip(x0, w), clip(y0, h), clip(x1, w), clip(y1, h)


def _refuse_doctype(*_: Any) -> None:
    raise DataError("hierarchy", "a DOCTYPE (and with it entity declarations) has no place in a UI dump; refused")


def _nodes(xml: str | bytes) -> list[dict[str, str]]:
    """The attributes of every ``node`` element of a ``uiautomator dump``, in document order.

    Read with expat directly: a DOCTYPE is refused before any entity it declares can be
    expanded (no billion laughs, no external entity); undefined entities are XML errors, and so
    is text no codec can read (an unknown, multi-byte or non-text declared encoding, a lone
    surrogate): a :class:`DataError` under ``hierarchy``, never the codec's own error.
    """
    if not isinstance(xml, (str, bytes)):
        raise DataError("hierarchy", f"expected the dump's XML text, got {type(xml).__name__}")
    nodes: list[dict[str, str]] = []
    parser = expat.ParserCreate()
    parser.StartDoctypeDeclHandler = _refuse_doctype
    parser.StartElementHandler = lambda name, attrs: nodes.append(attrs) if name == "node" else None
    try:
        parser.Parse(xml, True)
    except expat.ExpatError as err:
        raise DataError("hierarchy", f"malformed uiautomator XML: {expat.errors.messages[err.code]} "
                                     f"at line {err.lineno} column {err.offset}") from None
    except (LookupError, ValueError) as err:  # the declared encoding: unknown, multi-byte, not text, or a lone surrogate
        raise DataError("hierarchy", f"unreadable uiautomator XML text: {type(err).__name__}: {str(err)[:100]}") from None
    return nodes


def parse_hierarchy(xml: str | bytes, size: tuple[int, int]) -> tuple[UIElement, ...]:
    """The flattened UI tree of a ``uiautomator dump``: visible nodes with text, a description or a click.

    Raises :class:`DataError`: field ``window_size`` for a size that is not two integers in
    [1, MAX_WINDOW_SIDE]; ``hierarchy`` when the XML does not parse or holds a DOCTYPE;
    ``hierarchy.node[i].bounds`` for bounds that are malformed, of negative size or beyond 32 bits.
    """
    size = window_size(size)
    out = []
    for i, a in enumerate(_nodes(xml)):
        clickable = a.get("clickable") == "true" or a.get("long-clickable") == "true"
        text, desc = a.get("text", ""), a.get("content-desc", "")
        if not (clickable or text or desc) or "bounds" not in a:
            continue
        bounds = _bounds(a["bounds"], size, f"hierarchy.node[{i}].bounds")
        if bounds[0] == bounds[2] or bounds[1] == bounds[3]:
            continue  # off screen or zero-sized
        out.append(UIElement(id=a.get("resource-id") or f"node{i}", role=role_of(a.get("class", "")), text=text,
                             description=desc, bounds=bounds, clickable=clickable,
                             selected=any(a.get(k) == "true" for k in ("checked", "selected", "focused"))))
    return tuple(out)


def _packages(packages: Mapping[str, str]) -> dict[str, str]:
    """App name (lower-cased) -> Android package; anything but strings is a DataError naming the entry."""
    if not isinstance(packages, Mapping):
        raise DataError("packages", f"expected a mapping of app name to package, got {type(packages).__name__}")
    for name, package in packages.items():
        if not isinstance(name, str) or not isinstance(package, str) or not package.strip():
            raise DataError(f"packages[{name!r:.40}]", f"expected an app name mapped to a package, got {package!r:.60}")
    return {name.lower(): package for name, package in packages.items()}


class DeviceEnv:
    """An :class:`guimem.core.env.Env` over an adb device.

    Args:
        device: an ``adbutils.AdbDevice`` (``adbutils.adb.device()``) or anything with its methods.
        packages: app name (as in ``open_app`` actions and tasks) -> Android package.
        checker: ``checker(device, task) -> bool`` judging success at the end, or None.
        max_steps: the step budget.
        settle_s: seconds to wait after an action before reading the screen.
        image_width: resize screenshots to this width (aspect kept); None keeps the device's.
    """

    def __init__(self, device: AdbDeviceLike, packages: Mapping[str, str] | None = None,
                 checker: Callable[[AdbDeviceLike, Task], bool] | None = None, max_steps: int = 30,
                 settle_s: float = 1.0, image_width: int | None = None, sleep: Callable[[float], None] = time.sleep):
        self.device, self.checker = device, checker
        self.packages = _packages(packages or {})
        check_number(max_steps, "max_steps", lo=1, integer=True)
        check_number(settle_s, "settle_s", lo=0)
        if image_width is not None:
            check_number(image_width, "image_width", lo=1, hi=MAX_WINDOW_SIDE, integer=True)
        self.max_steps, self.settle_s, self.image_width, self._sleep = max_steps, settle_s, image_width, sleep
        self.task: Task | None = None
        self.t = 0
        self.ended: str | None = None

    def size(self) -> tuple[int, int]:
        """The device's window size in pixels, checked (:func:`window_size`)."""
        return window_size(self.device.window_size())

    def reset(self, task: Task, seed: int, variant: int = 0) -> WorldObservation:
        """Go to the home screen. ``seed`` and ``variant`` are unused: a real phone's state and apps are not ours to draw."""
        self.task, self.t, self.ended = task, 0, None
        self.device.keyevent(KEY_HOME)
        self._sleep(self.settle_s)
        return self.observe()

    def step(self, action: Action) -> tuple[WorldObservation, bool, dict[str, Any]]:
        """Send one action to the device; the episode ends on done, impossible or answer (its text in
        ``info["answer"]``), or at the budget."""
        if self.task is None or self.ended:
            raise RuntimeError("step() after the episode ended; call reset() first")
        self.t += 1
        effect = self._send(action)
        if action.type in ENDING_TYPES:
            self.ended = action.type
        elif self.t >= self.max_steps:
            self.ended = "budget"
        else:
            self._sleep(self.settle_s)
        obs = self.observe()
        info: dict[str, Any] = {"effect": effect, "steps": self.t, "screen": obs.screen}
        if action.type == "answer":
            info["answer"] = action.text
        if self.ended:
            info["ended"] = self.ended
            info["success"] = None if self.checker is None else (
                self.ended != "impossible" and bool(self.checker(self.device, self.task)))
        return obs, self.ended is not None, info

    def observe(self) -> WorldObservation:
        """The current screenshot (RGB) and UI tree."""
        size = self.size()
        image = self.device.screenshot()
        if not isinstance(image, Image.Image) or image.width < 1 or image.height < 1:
            raise DataError("screenshot", f"expected a non-empty image, got {image!r:.60}")
        image = image.convert("RGB")
        if self.image_width and image.width != self.image_width:
            height = max(1, round(image.height * self.image_width / image.width))  # a very wide image keeps a row
            image = image.resize((self.image_width, height), Image.BILINEAR)
        elements = parse_hierarchy(self.device.dump_hierarchy(), size)
        key = hashlib.sha256(image.tobytes()).hexdigest()[:16]
        return WorldObservation(image=image, elements=elements, screen=None, key=key)

    def _send(self, action: Action) -> str:
        kind, d = action.type, self.device
        if kind in ENDING_TYPES or kind == "wait":  # nothing to send: the step waits settle_s anyway
            return kind
        w, h = self.size()
        px = lambda p: (int(round(p[0] * (w - 1))), int(round(p[1] * (h - 1))))  # noqa: E731
        if kind == "tap":
            d.click(*px(action.point))
        elif kind == "long_press":
            x, y = px(action.point)
            d.swipe(x, y, x, y, 0.8)  # a swipe that does not move is a long press
        elif kind == "swipe":
            d.swipe(*px(action.point), *px(action.end_point()), 0.3)
        elif kind == "type":
            d.send_keys(action.text or "")
        elif kind in ("back", "home", "enter"):
            d.keyevent({"back": KEY_BACK, "home": KEY_HOME, "enter": KEY_ENTER}[kind])
        elif kind == "open_app":
            package = self.packages.get((action.text or "").strip().lower())
            if package is None:
                return "no such app"
            d.app_start(package)
        else:  # pragma: no cover - STEP_TYPES is closed
            raise AssertionError(kind)
        return kind
