"""The VLM answer parser (guimem.actors.hf.parsing): formats and conventions, which part of an
answer is read, totality on thousands of generated strings. Bad answers with their exact
outcome are in tests/bad_inputs/test_answers.py; the linear time in benchmarks/bench_parsing.py.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from guimem.actors.hf.parsing import (
    ActionParseError,
    coords_to_unit,
    directional_swipe,
    format_action,
    parse_answer,
)
from guimem.core.data import ACTION_TYPES, Action, DataError

K = (1000.0, 1000.0)  # the relative_1000 frame


@pytest.mark.parametrize("answer, frame, expected", [
    # JSON, with prose, fences, single quotes, tool calls
    ('{"action": "tap", "point": [500, 250]}', K, Action("tap", point=(0.5, 0.25))),
    ('Sure.\n```json\n{"action": "long_press", "point": [100, 900]}\n```', K, Action("long_press", point=(0.1, 0.9))),
    ("{'action': 'type', 'text': 'Milk 2%'}", K, Action("type", text="Milk 2%")),
    ('{"action": "swipe", "point": [500, 800], "end": [500, 200]}', K, Action("swipe", point=(0.5, 0.8), end=(0.5, 0.2))),
    ('{"action": "open_app", "text": "Mail"} and then more', K, Action("open_app", text="Mail")),
    ('{"thought": "first"} {"action": "BACK"}', K, Action("back")),
    ('{"type": "click", "coordinate": "(250, 750)"}', K, Action("tap", point=(0.25, 0.75))),
    ('{"action": "tap", "point": [0.5, 0.25]}', (1.0, 1.0), Action("tap", point=(0.5, 0.25))),
    ('<tool_call>\n{"name": "mobile_use", "arguments": {"action": "click", "coordinate": [180, 320]}}\n</tool_call>',
     (360.0, 640.0), Action("tap", point=(0.5, 0.5))),
    ('{"name": "mobile_use", "arguments": {"action": "swipe", "coordinate": [0, 640], "coordinate2": [360, 0]}}',
     (360.0, 640.0), Action("swipe", point=(0.0, 1.0), end=(1.0, 0.0))),
    ('{"name": "mobile_use", "arguments": {"action": "system_button", "button": "Home"}}', K, Action("home")),
    ('{"name": "mobile_use", "arguments": {"action": "key", "text": "enter"}}', K, Action("enter")),
    ('{"name": "mobile_use", "arguments": {"action": "terminate", "status": "success"}}', K, Action("done")),
    ('{"name": "mobile_use", "arguments": {"action": "terminate", "status": "failure"}}', K, Action("impossible")),
    ('{"name": "mobile_use", "arguments": {"action": "open", "text": "Clock"}}', K, Action("open_app", text="Clock")),
    # UI-TARS / Qwen-VL calls
    ("Thought: the search box.\nAction: click(start_box='<|box_start|>(120,340)<|box_end|>')", K,
     Action("tap", point=(0.12, 0.34))),
    ("click(start_box='(100,100,300,500)')", K, Action("tap", point=(0.2, 0.3))),  # a box: its centre
    ("click(start_box='<point>200 300</point>')", K, Action("tap", point=(0.2, 0.3))),
    ("click(start_box='[180, 320]')", (360.0, 640.0), Action("tap", point=(0.5, 0.5))),
    ("long_press(start_box='(0,1000)', time='2')", K, Action("long_press", point=(0.0, 1.0))),
    ("type(content='it\\'s \"fine\"\\n')", K, Action("type", text="it's \"fine\"\n")),
    ('type(content="a, b (c)")', K, Action("type", text="a, b (c)")),
    ("drag(start_box='(100,900)', end_box='(100,200)')", K, Action("swipe", point=(0.1, 0.9), end=(0.1, 0.2))),
    ("scroll(start_box='(500,500)', direction='down')", K, Action("swipe", point=(0.5, 0.5), end=(0.5, 0.2))),
    ("scroll(start_box='(500,500)', direction='left')", K, Action("swipe", point=(0.5, 0.5), end=(0.8, 0.5))),
    ("press_back()", K, Action("back")),
    ("Action: press_home()", K, Action("home")),
    ("press_enter()", K, Action("enter")),
    ("hotkey(key='enter')", K, Action("enter")),
    ("open_app(app_name='Calendar')", K, Action("open_app", text="Calendar")),
    ("finished(content='all set')", K, Action("done")),
    ("call_user()", K, Action("impossible")),
    ("Action: click(100, 200)", K, Action("tap", point=(0.1, 0.2))),
    # which part is read: the Action line over the thought, the first item over later ones
    ("Thought: I'd answer {\"action\": \"back\"}\nAction: click(start_box='(100,200)')", K, Action("tap", point=(0.1, 0.2))),
    ("Thought: not click(start_box='(1,1)')\nAction: press_home()", K, Action("home")),
    ('Thought: {"action": "back"}\n**Action:** {"action": "home"}', K, Action("home")),
    ("type(content='{\"action\": \"back\"}')", K, Action("type", text='{"action": "back"}')),
    ('{"thought": "click(start_box=\'(1,1)\')"} press_enter()', K, Action("enter")),
    ('click(start_box=\'(100,200)\') {"action": "back"}', K, Action("tap", point=(0.1, 0.2))),
    ('I use { as a brace. {"action": "back"}', K, Action("back")),
    ("I'd go back (the list is wrong): press_back()", K, Action("back")),
    # apostrophes inside words, Python literals
    ("type(content='it's fine')", K, Action("type", text="it's fine")),
    ("{'action': 'type', 'text': 'don't \\'stop\\' \"me\" \\u00e9'}", K, Action("type", text="don't 'stop' \"me\" \u00e9")),
    ("{'action': 'tap', 'point': (500, 250,), 'ok': True, 'why': None,}", K, Action("tap", point=(0.5, 0.25))),
    ("click(start_box='(.5,.25)')", (1.0, 1.0), Action("tap", point=(0.5, 0.25))),
    ("click(start_box='(-0,1000)')", K, Action("tap", point=(0.0, 1.0))),
])
def test_parse_answer(answer, frame, expected):
    assert _close(parse_answer(answer, frame), expected), parse_answer(answer, frame)


@pytest.mark.parametrize("answer, frame, expected", [
    # a point as two coordinates of their own: keyword arguments, quoted or not, or keys of an object
    ("click(x=500, y=250)", K, Action("tap", point=(0.5, 0.25))),
    ("Action: tap(x='500', y='250')", K, Action("tap", point=(0.5, 0.25))),
    ('click(x="500", y = "250")', K, Action("tap", point=(0.5, 0.25))),
    ('click("x"=500, \'y\'=250)', K, Action("tap", point=(0.5, 0.25))),
    ("click(x=180.5, y=320)", (361.0, 640.0), Action("tap", point=(0.5, 0.5))),
    ("click(x=0.5, y=0.25)", (1.0, 1.0), Action("tap", point=(0.5, 0.25))),
    ("long_press(x=100, y=900)", K, Action("long_press", point=(0.1, 0.9))),
    ("swipe(start_x=500, start_y=800, end_x=500, end_y=200)", K, Action("swipe", point=(0.5, 0.8), end=(0.5, 0.2))),
    ("swipe(x1=100, y1=900, x2='100', y2='200')", K, Action("swipe", point=(0.1, 0.9), end=(0.1, 0.2))),
    ("scroll(x=500, y=500, direction='down')", K, Action("swipe", point=(0.5, 0.5), end=(0.5, 0.2))),
    ("type(text='Milk 2%')", K, Action("type", text="Milk 2%")),
    ('type(content="x=1, y=2")', K, Action("type", text="x=1, y=2")),
    ("type('a=b')", K, Action("type", text="a=b")),  # a positional string holding '=' stays text
    # the other keyword names of a point, bare or quoted
    ("click(point='<point>500 250</point>')", K, Action("tap", point=(0.5, 0.25))),
    ("click(point=[500, 250])", K, Action("tap", point=(0.5, 0.25))),
    ("click(coordinate=(500, 250))", K, Action("tap", point=(0.5, 0.25))),
    ("click(start_box=[500,250])", K, Action("tap", point=(0.5, 0.25))),
    ('tap(point="500,250")', K, Action("tap", point=(0.5, 0.25))),
    # objects: x and y keys, a point as {"x", "y"}, a swipe's start_x ... end_y
    ('{"action": "click", "x": "500", "y": 250}', K, Action("tap", point=(0.5, 0.25))),
    ('{"action": "tap", "point": {"x": 500, "y": "250"}}', K, Action("tap", point=(0.5, 0.25))),
    ('{"action": "swipe", "start_x": 500, "start_y": 800, "end_x": 500, "end_y": 200}', K,
     Action("swipe", point=(0.5, 0.8), end=(0.5, 0.2))),
])
def test_keyword_coordinates(answer, frame, expected):
    assert _close(parse_answer(answer, frame), expected), parse_answer(answer, frame)


def _close(a: Action, b: Action) -> bool:
    """Equal actions, points compared to 1e-9."""
    def near(p, q):
        return (p is None and q is None) or (p is not None and q is not None and np.allclose(p, q, atol=1e-9))
    return a.type == b.type and a.text == b.text and near(a.point, b.point) and near(a.end, b.end)


def test_coordinate_conventions_convert_to_normalized():
    assert coords_to_unit([500, 250], K) == (0.5, 0.25)
    assert coords_to_unit("(180, 320)", (360.0, 640.0)) == (0.5, 0.5)
    assert coords_to_unit([0.5, 0.25], (1.0, 1.0)) == (0.5, 0.25)
    with pytest.raises(ActionParseError, match="outside"):
        coords_to_unit([361, 10], (360.0, 640.0))
    with pytest.raises(ActionParseError):
        coords_to_unit([True, 1], K)


def test_direction_only_swipes_stay_on_screen():
    up = directional_swipe("down", (0.5, 0.1), scroll=True, length=0.3)  # scroll down: finger goes up
    assert up.point == pytest.approx((0.5, 0.3)) and up.end == pytest.approx((0.5, 0.0))
    right = directional_swipe("right", None, scroll=False, length=0.3)  # swipe right: finger goes right
    assert right.point == (0.5, 0.5) and right.end == pytest.approx((0.8, 0.5))


@pytest.mark.parametrize("answer_format", ["json", "uitars"])
@pytest.mark.parametrize("frame", [K, (1.0, 1.0), (360.0, 640.0)])
def test_format_then_parse_round_trips(answer_format, frame):
    actions = [Action("tap", point=(0.5, 0.25)), Action("long_press", point=(0.25, 0.75)),
               Action("swipe", point=(0.5, 0.75), end=(0.5, 0.25)), Action("type", text="it's a\nline"),
               Action("open_app", text="Mail"), Action("back"), Action("home"), Action("enter"),
               Action("done"), Action("impossible")]
    for action in actions:
        assert _close(parse_answer(format_action(action, answer_format, frame), frame), action), action



def test_a_bad_frame_is_the_callers_error_not_the_answers():
    for frame in [(0, 1000), (1000.0, float("nan")), (1000, float("inf")), (-1, 1), (True, 1), (1000,), "1000x1000"]:
        with pytest.raises(DataError) as err:
            parse_answer("press_back()", frame)
        assert err.value.field == "frame" and not isinstance(err.value, ActionParseError)


# ============================================================================ totality
# Pieces of answers, valid and not: brackets, quotes, escapes, markers, names, keys, and
# numbers a float cannot hold (1e999, 400 and 5000 digits), NaN, a lone surrogate, NUL.
_ATOMS = ["{", "}", "[", "]", "(", ")", "'", '"', "\\", ":", ",", " ", "\n", "action", "Action:", "Thought:",
          "**Action:**", "tap", "click(", "type(", "scroll(", "drag(", "terminate(", "point", '"point"', "'point'",
          "start_box=", "end_box=", "direction=", "'down'", "1", "500", "-3", "1e999", "-1e999", "NaN", "Infinity",
          "9" * 400, "9" * 5000, "0.5", ".5", "True", "None", '"action"', "'action'", '"tap"', "'type'", '"text"',
          "\ud800", "é", "\x00", "name", '"arguments"', "mobile_use", "<point>", "</point>", "status", "-", "don't"]
_SAMPLE = [Action("tap", point=(0.5, 0.25)), Action("swipe", point=(0.1, 0.9), end=(0.9, 0.1)),
           Action("type", text="it's {a} (b)"), Action("open_app", text="Mail"), Action("done")]
_FIELDS = {"answer", "point", "end", "text", "direction", "status"}  # what an ActionParseError may name


def _generated(rng: random.Random, frame: tuple[float, float]) -> tuple[str, Action | None]:
    """One answer, and the action it must give where that is known: random code points and bytes,
    truncated or mutated valid answers, deep or unbalanced nesting, random strings of answer pieces,
    and a valid Action line after a thought made of such pieces (which must not change it)."""
    kind = rng.randrange(7)
    if kind == 0:  # any code point, surrogates and controls included
        return "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randrange(40))), None
    if kind == 1:  # random bytes read as Latin-1
        return bytes(rng.randrange(256) for _ in range(rng.randrange(60))).decode("latin-1"), None
    if kind == 4:  # nesting up to 300 deep, closed or not
        depth = rng.randrange(300)
        opening, closing = rng.choice([("{", "}"), ("[", "]"), ("(", ")"), ('{"a":', "}"), ("{'a':(", ")}")])
        return '{"action": "tap", "point": ' + opening * depth + "500, 500" + closing * rng.randrange(depth + 1) + "}", None
    pieces = "".join(rng.choice(_ATOMS) for _ in range(rng.randrange(30)))
    if kind == 5:
        return pieces, None
    action = rng.choice(_SAMPLE)
    answer = format_action(action, rng.choice(["json", "uitars"]), frame)
    if kind == 2:  # truncated
        return answer[:rng.randrange(len(answer) + 1)], None
    if kind == 3:  # characters deleted, doubled or replaced by a piece
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(len(answer))
            answer = answer[:i] + rng.choice(["", answer[i] * 2, rng.choice(_ATOMS)]) + answer[i + 1:]
        return answer, None
    return f"Thought: {pieces}\nAction: {answer}", action


@pytest.mark.parametrize("frame", [K, (1.0, 1.0), (360.0, 640.0)])
def test_any_string_gives_an_action_on_screen_or_a_parse_error(frame):
    rng = random.Random(20240)
    outcomes = {"action": 0, "error": 0}
    for _ in range(3000):
        answer, expected = _generated(rng, frame)
        try:
            action = parse_answer(answer, frame)
        except ActionParseError as err:
            assert expected is None and err.field in _FIELDS, (answer, err)
            outcomes["error"] += 1
            continue
        assert action.type in ACTION_TYPES, answer
        for point in (action.point, action.end):
            assert point is None or all(0.0 <= v <= 1.0 for v in point), (answer, action)
        assert expected is None or _close(action, expected), (answer, action)
        outcomes["action"] += 1
    assert min(outcomes.values()) > 300, outcomes  # the generators reach both outcomes
