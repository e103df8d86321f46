"""Bad input to the data model: ``from_dict`` of every type answers any JSON value with an object or a
:class:`DataError` naming the field (never TypeError, OverflowError or RecursionError), and what it
accepts can be written back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from guimem.core.data import MAX_INDEX, Action, DataError, Episode, Observation, Step, Subgoal, SubgoalLabel, UIElement
from guimem.core.io import json_text

pytestmark = pytest.mark.bad_input

DELETE = object()  # a case value: remove the key
NAN, INF, HUGE = float("nan"), float("inf"), 10**400  # HUGE: a 401-digit integer, more than a float holds
LONE = "a\ud800b"  # a lone surrogate, which JSON "\ud800" decodes to and UTF-8 cannot encode

ELEMENT = UIElement("btn:ok", "button", "OK", "", (0.1, 0.2, 0.3, 0.4), True).to_dict()
ACTION = Action("swipe", (0.5, 0.8), (0.5, 0.3)).to_dict()
STEP = {"screenshot": "s0", "elements": [ELEMENT, ELEMENT], "screen": "notes/list",
        "action": {"type": "tap", "point": [0.2, 0.3]}, "subgoal": {"index": 0, "type": "open_app", "text": "open Notes"}}
EPISODE = {"id": "ep-1", "app": "Notes", "goal": "Turn on dark mode", "success": True,
           "provenance": {"seed": 1, "task": {"template": "notes.display", "params": [1, 2]}},
           "steps": [STEP, {**STEP, "action": ACTION}], "final": {"screenshot": "s2", "elements": [ELEMENT]}}
SUBGOAL = Subgoal("ep-1", 0, 0, 1, "s0", "s2", "open Notes", "the list shows", "tap", "yes", 1, "goal", "Notes",
                  (Action("tap", (0.2, 0.3)),)).to_dict()

TYPES = {"Action": (Action, ACTION), "UIElement": (UIElement, ELEMENT), "SubgoalLabel": (SubgoalLabel, STEP["subgoal"]),
         "Observation": (Observation, EPISODE["final"]), "Step": (Step, STEP), "Episode": (Episode, EPISODE),
         "Subgoal": (Subgoal, SUBGOAL)}
FILE = "bad.json"  # the path Episode and Subgoal are told they were read from


def _nest(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def changed(base: Any, path: tuple, value: Any) -> Any:
    """A deep copy of ``base`` with the value at ``path`` replaced (or removed with :data:`DELETE`)."""
    if not path:
        return value
    out = json.loads(json.dumps(base))  # a copy sharing nothing (deepcopy keeps the bases' shared elements shared)
    d = out
    for key in path[:-1]:
        d = d[key]
    if value is DELETE:
        del d[path[-1]]
    else:
        d[path[-1]] = value
    return out


CASES = [
    # (case id, type, path in its base dict, bad value, field the error names, fragment of its message)
    ("action is a list", "Action", (), [1, 2], "", "expected an object, got list"),
    ("action is null", "Action", (), None, "", "expected an object, got NoneType"),
    ("action type missing", "Action", ("type",), DELETE, "type", "missing"),
    ("action type unknown", "Action", ("type",), "fly", "type", "unknown action type"),
    ("action type a number", "Action", ("type",), 3, "type", "expected str, got int"),
    ("swipe without point", "Action", ("point",), DELETE, "point", "needs a point"),
    ("point of one number", "Action", ("point",), [0.5], "point", "expected [x, y]"),
    ("point a string", "Action", ("point",), "ab", "point", "expected [x, y]"),
    ("point x NaN", "Action", ("point", 0), NAN, "point[0]", "finite number in [0, 1]"),
    ("point y infinite", "Action", ("point", 1), INF, "point[1]", "finite number in [0, 1]"),
    ("point x a huge integer", "Action", ("point", 0), HUGE, "point[0]", "finite number in [0, 1]"),
    ("point y a bool", "Action", ("point", 1), True, "point[1]", "expected a number, got bool"),
    ("end below zero", "Action", ("end", 1), -0.1, "end[1]", "finite number in [0, 1]"),
    ("swipe without end", "Action", ("end",), DELETE, "end", "needs an end point"),
    ("text a list", "Action", ("text",), ["a"], "text", "expected str, got list"),
    ("text with a lone surrogate", "Action", ("text",), LONE, "text", "lone surrogate (U+D800 at character 1)"),
    ("element is a list", "UIElement", (), [], "", "expected an object, got list"),
    ("element role missing", "UIElement", ("role",), DELETE, "role", "missing"),
    ("element id with a lone surrogate", "UIElement", ("id",), "\udfff", "id", "lone surrogate (U+DFFF"),
    ("bounds inverted", "UIElement", ("bounds",), [0.5, 0.2, 0.3, 0.4], "bounds", "x0 <= x1"),
    ("bounds of three", "UIElement", ("bounds",), [0.1, 0.2, 0.3], "bounds", "expected [x0, y0, x1, y1]"),
    ("bounds a huge integer", "UIElement", ("bounds", 2), HUGE, "bounds[2]", "finite number in [0, 1]"),
    ("bounds minus infinity", "UIElement", ("bounds", 0), -INF, "bounds[0]", "finite number in [0, 1]"),
    ("clickable a string", "UIElement", ("clickable",), "true", "clickable", "expected bool, got str"),
    ("selected a number", "UIElement", ("selected",), 1, "selected", "expected bool, got int"),
    ("label index negative", "SubgoalLabel", ("index",), -1, "index", f"must be in [0, {MAX_INDEX}]"),
    ("label index past 32 bits", "SubgoalLabel", ("index",), MAX_INDEX + 1, "index", f"must be in [0, {MAX_INDEX}]"),
    ("label index a float", "SubgoalLabel", ("index",), 1.0, "index", "expected int, got float"),
    ("label index a bool", "SubgoalLabel", ("index",), False, "index", "expected int, got bool"),
    ("label text missing", "SubgoalLabel", ("text",), DELETE, "text", "missing"),
    ("elements an object", "Observation", ("elements",), {}, "elements", "expected list, got dict"),
    ("elements item a list", "Observation", ("elements", 0), [1], "elements[0]", "expected an object, got list"),
    ("element bounds in elements", "Observation", ("elements", 0, "bounds", 3), 2, "elements[0].bounds[3]", "[0, 1]"),
    ("screenshot a list", "Observation", ("screenshot",), ["s"], "screenshot", "expected str, got list"),
    ("screen a number", "Observation", ("screen",), 7, "screen", "expected str, got int"),
    ("step is a list", "Step", (), [], "", "expected an object, got list"),
    ("step action a list", "Step", ("action",), [], "action", "expected object, got list"),
    ("step action missing", "Step", ("action",), DELETE, "action", "missing"),
    ("step action point huge", "Step", ("action", "point", 0), HUGE, "action.point[0]", "[0, 1]"),
    ("step subgoal a list", "Step", ("subgoal",), ["x"], "subgoal", "expected object, got list"),
    ("step subgoal index a string", "Step", ("subgoal", "index"), "1", "subgoal.index", "expected int, got str"),
    ("episode is a list", "Episode", (), [EPISODE], "episode", "expected an object, got list"),
    ("episode is a number", "Episode", (), 3, "episode", "expected an object, got int"),
    ("episode id a number", "Episode", ("id",), 1, "id", "expected str, got int"),
    ("goal with a lone surrogate", "Episode", ("goal",), LONE, "goal", "lone surrogate"),
    ("success a string", "Episode", ("success",), "yes", "success", "true, false or null"),
    ("steps an object", "Episode", ("steps",), {"0": STEP}, "steps", "expected list, got dict"),
    ("steps empty", "Episode", ("steps",), [], "steps", "has no steps"),
    ("steps item a list", "Episode", ("steps", 1), [STEP], "steps[1]", "expected an object, got list"),
    ("steps action a list", "Episode", ("steps", 1, "action"), [], "steps[1].action", "expected object, got list"),
    ("steps element clickable", "Episode", ("steps", 0, "elements", 1, "clickable"), None, "steps[0].elements[1].clickable",
     "missing"),
    ("final a list", "Episode", ("final",), [], "final", "expected object, got list"),
    ("final missing", "Episode", ("final",), DELETE, "final", "missing"),
    ("final elements a string", "Episode", ("final", "elements"), "x", "final.elements", "expected list, got str"),
    ("provenance a list", "Episode", ("provenance",), [1], "provenance", "expected object, got list"),
    ("provenance NaN", "Episode", ("provenance", "seed"), NAN, "provenance.seed", "expected a finite number"),
    ("provenance nested infinity", "Episode", ("provenance", "task", "params", 1), INF, "provenance.task.params[1]",
     "expected a finite number"),
    ("provenance lone surrogate", "Episode", ("provenance", "task", "template"), LONE, "provenance.task.template",
     "lone surrogate"),
    ("provenance key lone surrogate", "Episode", ("provenance", "task"), {"\ud800": 1}, "provenance.task",
     "lone surrogate"),
    ("provenance NaN 3000 deep", "Episode", ("provenance", "deep"), _nest(3000, NAN), "provenance.deep" + "[0]" * 3000,
     "expected a finite number"),
    ("subgoal is a list", "Subgoal", (), [SUBGOAL], "subgoal", "expected an object, got list"),
    ("subgoal success unknown", "Subgoal", ("success",), "maybe", "success", "expected one of"),
    ("subgoal steps reversed", "Subgoal", ("first_step",), 2, "last_step", "first_step <= last_step"),
    ("subgoal first step negative", "Subgoal", ("first_step",), -1, "first_step", f"must be in [0, {MAX_INDEX}]"),
    ("subgoal successor huge", "Subgoal", ("successor",), HUGE, "successor", f"must be in [0, {MAX_INDEX}]"),
    ("subgoal index a string", "Subgoal", ("index",), "0", "index", "expected int, got str"),
    ("subgoal text a lone surrogate", "Subgoal", ("text",), LONE, "text", "lone surrogate"),
    ("subgoal effect missing", "Subgoal", ("effect",), DELETE, "effect", "missing"),
    ("subgoal actions an object", "Subgoal", ("actions",), {}, "actions", "expected list, got dict"),
    ("subgoal actions item a list", "Subgoal", ("actions", 0), [], "actions[0]", "expected an object, got list"),
    ("subgoal action point NaN", "Subgoal", ("actions", 0, "point", 0), NAN, "actions[0].point[0]", "finite"),
]


@pytest.mark.parametrize("case, kind, path, value, field, fragment", CASES, ids=[c[0] for c in CASES])
def test_from_dict_refuses_with_the_field(case, kind, path, value, field, fragment):
    cls, base = TYPES[kind]
    located = kind in ("Episode", "Subgoal")
    with pytest.raises(DataError) as info:
        cls.from_dict(changed(base, path, value), path=FILE) if located else cls.from_dict(changed(base, path, value))
    err = info.value
    assert (err.field, err.path) == (field, FILE if located else None), str(err)[:300]
    assert fragment in err.message, str(err)[:300]


ACCEPTED = [
    # (case id, type, path, value, what the loaded object holds there)
    ("integer coordinate", "Action", ("point", 0), 1, lambda a: a.point == (1.0, 0.8)),
    ("unknown keys ignored", "Action", ("note",), "hi", lambda a: a == Action.from_dict(ACTION)),
    ("huge integer in provenance", "Episode", ("provenance", "seed"), HUGE, lambda e: e.provenance["seed"] == HUGE),
    ("deep provenance", "Episode", ("provenance", "deep"), _nest(3000, 1), lambda e: len(e.provenance["deep"]) == 1),
    ("success null", "Episode", ("success",), None, lambda e: e.success is None),
    ("selected absent", "UIElement", ("selected",), DELETE, lambda u: u.selected is False),
    ("successor null", "Subgoal", ("successor",), None, lambda s: s.successor is None),
    ("largest index", "SubgoalLabel", ("index",), MAX_INDEX, lambda s: s.index == MAX_INDEX),
]


@pytest.mark.parametrize("case, kind, path, value, holds", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_from_dict_accepts(case, kind, path, value, holds):
    cls, base = TYPES[kind]
    assert holds(cls.from_dict(changed(base, path, value)))


# ----------------------------------------------------------------------------- totality
JSON_VALUES = [None, True, 0, -1, HUGE, 1.5, NAN, INF, "x", LONE, [], [0.5, 0.5], {}, {"a": 1}, [[0.5]]]


def _paths(d: Any, prefix: tuple = ()):
    yield prefix
    if isinstance(d, dict):
        for k, v in d.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            yield from _paths(v, prefix + (i,))


@pytest.mark.parametrize("kind", ["Episode", "Subgoal"])
def test_from_dict_is_total_and_what_it_accepts_writes_back(kind):
    """Every value at every place gives an object or a DataError; an accepted object writes and reads back."""
    cls, base = TYPES[kind]
    outcomes = {"refused": 0, "accepted": 0}
    for path in _paths(base):
        for value in JSON_VALUES:
            try:
                obj = cls.from_dict(changed(base, path, value))
            except DataError:
                outcomes["refused"] += 1
                continue
            outcomes["accepted"] += 1
            assert cls.from_dict(json.loads(json_text(obj.to_dict()).encode("utf-8"))) == obj, path
    assert outcomes["refused"] > outcomes["accepted"] > 0
