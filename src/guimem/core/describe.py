"""Words for actions on a UI tree, shared by segmentation and memory rendering.

``describe_action(Action("tap", (0.9, 0.05)), elements)`` reads like ``tap "Preferences"
(button)`` when the tap lands on a labelled element, and like ``tap an unlabeled icon at top
right`` when the element has neither text nor description. The element a touch hits is the
topmost clickable element whose bounds contain the point; elements later in the list are
drawn on top (the world's and the Android accessibility tree's order).

Pure functions of an action and its screen's elements; deterministic.
"""

from __future__ import annotations

from typing import Literal, Sequence

from guimem.core.data import Action, DataError, Point, UIElement

SCROLLABLE_ROLES = frozenset({"list", "grid", "scroll", "pager", "page", "recycler"})
"""Roles a swipe is described as acting on (``swipe up on the list``)."""

FIELD_ROLES = frozenset({"field", "edit", "input", "search"})
"""Roles that accept typed text."""

_ROWS = ("top", "middle", "bottom")
_COLS = ("left", "center", "right")


def _third(v: float) -> int:
    """0, 1 or 2: which third of [0, 1] holds ``v`` (boundaries go to the later third)."""
    return min(2, int(v * 3))


def region_words(point: Point) -> str:
    """Where a normalized point lies on the screen, e.g. ``top right`` or ``middle left``.

    The screen is cut in thirds each way; the very middle is ``center``.
    """
    row, col = _ROWS[_third(point[1])], _COLS[_third(point[0])]
    if row == "middle" and col == "center":
        return "center"
    return f"{row} {col}"


def element_label(element: UIElement) -> str:
    """An element's label: its text, else its description, else ``an unlabeled <role>``."""
    text = element.text.strip() or element.description.strip()
    return f'"{text}"' if text else f"an unlabeled {element.role}"


def is_labeled(element: UIElement) -> bool:
    """Whether the element has visible text or a content description."""
    return bool(element.text.strip() or element.description.strip())


def target_element(action: Action, elements: Sequence[UIElement]) -> UIElement | None:
    """The topmost clickable element whose bounds contain the action's point, or None.

    Actions without a point (type, back, ...) have no target; a swipe's point is its touch point.
    """
    if action.point is None:
        return None
    for element in reversed(elements):
        if element.clickable and element.contains(action.point):
            return element
    return None


def scroll_container(point: Point, elements: Sequence[UIElement]) -> UIElement | None:
    """The topmost scrollable element (list, grid, ...) under ``point``, or None."""
    for element in reversed(elements):
        if element.role in SCROLLABLE_ROLES and element.contains(point):
            return element
    return None


def text_field(elements: Sequence[UIElement]) -> UIElement | None:
    """The screen's text field when there is exactly one, else None (focus is not in the tree)."""
    fields = [e for e in elements if e.role in FIELD_ROLES]
    return fields[0] if len(fields) == 1 else None


Direction = Literal["up", "down", "left", "right", "none"]


def swipe_direction(action: Action) -> Direction:
    """The way the finger moves in a swipe: the dominant axis of end - start, ties going vertical
    (``|dy| >= |dx|``); ``none`` when it does not move. The one definition every module uses."""
    if action.type != "swipe":
        raise DataError("type", f"only a swipe has a direction, got {action.type!r}")
    if action.direction is not None:
        return action.direction
    dx, dy = action.end[0] - action.point[0], action.end[1] - action.point[1]
    if dx == 0 and dy == 0:
        return "none"
    if abs(dy) >= abs(dx):
        return "down" if dy > 0 else "up"
    return "right" if dx > 0 else "left"


def direction_words(action: Action) -> str:
    """A swipe's direction in words: ``up``, ..., or ``in place`` when the finger does not move."""
    direction = swipe_direction(action)
    return "in place" if direction == "none" else direction


def _describe_touch(verb: str, action: Action, elements: Sequence[UIElement]) -> str:
    """``tap "OK" (button)``, ``tap an unlabeled icon at top right`` or ``tap at center``."""
    target = target_element(action, elements)
    if target is None:
        return f"{verb} at {region_words(action.point)}"
    if is_labeled(target):
        return f"{verb} {element_label(target)} ({target.role})"
    return f"{verb} {element_label(target)} at {region_words(target.center)}"


def describe_action(action: Action, elements: Sequence[UIElement] = (),
                    field: UIElement | None = None) -> str:
    """A short phrase for ``action`` on a screen with ``elements``.

    Args:
        action: the action taken.
        elements: the UI tree of the screen the action was taken on.
        field: the focused text field for a ``type`` action, when the caller knows it
            (e.g. the target of the preceding tap); otherwise the screen's only field is used.
    """
    kind = action.type
    if kind in ("tap", "long_press"):
        return _describe_touch("tap" if kind == "tap" else "long press", action, elements)
    if kind == "swipe":
        container = scroll_container(action.point, elements)
        where = f"on the {container.role}" if container is not None else f"at {region_words(action.point)}"
        return f"swipe {direction_words(action)} {where}"
    if kind == "type":
        field = field if field is not None else text_field(elements)
        into = f" into {element_label(field)}" if field is not None else ""
        return f'type "{action.text}"{into}'
    if kind == "open_app":
        return f'open app "{action.text}"'
    if kind == "enter":
        return "press enter"
    if kind == "impossible":
        return "declare the task impossible"
    if kind == "answer":
        return f'answer "{action.text}"'
    if kind == "wait":
        return "wait for the screen"
    return kind  # back, home, done


def describe_actions(actions: Sequence[Action], screens: Sequence[Sequence[UIElement]]) -> list[str]:
    """Phrases for a run of actions, each on its own screen; a type goes into the field tapped before it."""
    if len(actions) != len(screens):
        raise ValueError(f"{len(actions)} actions but {len(screens)} screens")
    phrases, focused = [], None
    for action, elements in zip(actions, screens):
        phrases.append(describe_action(action, elements, field=focused if action.type == "type" else None))
        if action.type != "type":  # typing keeps the focus; anything else moves or drops it
            target = target_element(action, elements)
            focused = target if target is not None and target.role in FIELD_ROLES else None
    return phrases
