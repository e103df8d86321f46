"""Bad VLM answers, each with its exact outcome: the Action read, or an ActionParseError naming its field.

The parser (guimem.actors.hf.parsing.parse_answer) must be total: crashes seen before were
TypeError on ``{[1]}``, RecursionError on deep nesting, and JSON quoted in a UI-TARS thought
overriding the Action line. Answers are read in the 0-1000 frame unless a case gives another.
"""

from __future__ import annotations

import pytest

from guimem.actors.hf.parsing import ActionParseError, parse_answer
from guimem.core.data import Action

pytestmark = pytest.mark.bad_input

K = (1000.0, 1000.0)
DEEP = 3000  # far deeper than the 64 levels parse_json accepts, and than Python's recursion limit

# (case id, answer, outcome: the Action, or the field an ActionParseError names)
CASES: list[tuple[str, object, Action | str]] = [
    # not an answer at all
    ("empty", "", "answer"),
    ("blank", " \n\t ", "answer"),
    ("not_a_string", b'{"action": "back"}', "answer"),
    ("nul", "\x00", "answer"),
    ("prose", "I am not sure what to do here.", "answer"),
    # objects that are not JSON or Python dicts, or name no action
    ("list_in_braces", "{[1]}", "answer"),
    ("tuple_in_braces", "{(1)}", "answer"),
    ("int_keys", "{1:2}", "answer"),
    ("set_value", "{'action': 'back', 'x': {1, 2}}", "answer"),
    ("bytes_value", "{'action': 'type', 'text': b'x'}", "answer"),
    ("complex_coordinate", "{'action': 'tap', 'point': [1j, 2]}", "answer"),
    ("power_expression", "{'action': 'tap', 'point': [10**400, 2]}", "answer"),
    ("action_a_list", '{"action": ["tap"]}', "answer"),
    ("action_a_number", '{"action": 5}', "answer"),
    ("arguments_a_string", '{"name": "mobile_use", "arguments": "oops"}', "answer"),
    ("unknown_action", '{"action": "fly"}', "answer"),
    ("unsupported_action", "wait()", "answer"),
    ("unsupported_key", "hotkey(key='ctrl c')", "answer"),
    ("unknown_button", '{"name": "mobile_use", "arguments": {"action": "system_button", "button": "Menu"}}', "answer"),
    ("terminate_maybe", '{"name": "mobile_use", "arguments": {"action": "terminate", "status": "maybe"}}', "status"),
    # truncated
    ("unclosed_call", "click(start_box='(10,20)'", "answer"),
    ("unclosed_finished", "finished(", "answer"),
    ("unclosed_object", '{"action": "tap", "point": [500, 250]', "answer"),
    # missing or wrong arguments
    ("tap_without_point", '{"action": "tap"}', "point"),
    ("point_of_three", '{"action": "tap", "point": [1, 2, 3]}', "point"),
    ("point_a_word", '{"action": "tap", "point": "here"}', "point"),
    ("point_an_object", '{"action": "tap", "point": {"x": 1}}', "point"),
    ("y_a_bool", '{"action": "tap", "x": 1, "y": true}', "point"),
    ("swipe_without_end", '{"action": "swipe", "point": [1, 2]}', "end"),
    ("scroll_sideways", "scroll(direction='sideways')", "direction"),
    ("swipe_direction_a_number", '{"action": "swipe", "point": [500, 500], "direction": 5}', "direction"),
    ("type_without_text", '{"action": "type"}', "text"),
    ("type_text_a_number", '{"action": "type", "text": 5}', "text"),
    ("open_app_blank", '{"action": "open_app", "text": "  "}', "text"),
    ("lone_surrogate_json", '{"action": "type", "text": "\\ud800"}', "text"),
    ("lone_surrogate_call", "type(content='\ud800')", "text"),
    # a point as keyword coordinates: each must be one number inside the frame, and both given
    ("x_a_word", "click(x=five, y=250)", "point"),
    ("x_two_numbers", "click(x='500, 3', y=250)", "point"),
    ("x_a_list", "click(x=[500], y=250)", "point"),
    ("x_nan", "click(x=NaN, y=1)", "point"),
    ("x_infinite", "click(x=1e999, y=1)", "point"),
    ("x_outside", "click(x=1200, y=250)", "point"),
    ("x_negative", "tap(x=-1, y=250)", "point"),
    ("only_x", "click(x=500)", "point"),
    ("x_of_a_megabyte", "click(x=" + "9" * 1_000_000 + ", y=1)", "point"),
    ("keywords_of_a_megabyte", "click(" + "x=1, " * 200_000 + ")", "point"),
    ("quoted_names_of_a_megabyte", "click(" + "'x'=1, " * 150_000 + ")", "point"),
    ("end_y_a_word", "swipe(start_x=1, start_y=2, end_x=3, end_y=far)", "end"),
    ("swipe_only_its_start", "swipe(start_x=1, start_y=2)", "end"),
    ("point_x_a_bool", '{"action": "tap", "point": {"x": true, "y": 2}}', "point"),
    ("point_x_only", '{"action": "tap", "point": {"x": 1}}', "point"),
    ("point_x_y_and_more", '{"action": "tap", "point": {"x": 1, "y": 2, "z": 3}}', "point"),
    ("mismatched_name_quotes", "click('x\"=500, y=250)", "answer"),  # its quote never closes: the call neither
    # coordinates that are absurd, huge or not finite: refused, never clipped
    ("outside_the_grid", '{"action": "tap", "point": [1200, 40]}', "point"),
    ("just_outside", "click(start_box='(1000.0001,5)')", "point"),
    ("negative", '{"action": "tap", "point": [-1, 5]}', "point"),
    ("infinite_literal", '{"action": "tap", "point": [1e999, 1]}', "point"),
    ("nan", '{"action": "tap", "point": [NaN, 1]}', "point"),
    ("infinity", '{"action": "tap", "point": [Infinity, 1]}', "point"),
    ("int_of_400_digits", '{"action": "tap", "point": [' + "9" * 400 + ", 1]}", "point"),
    ("negative_int_of_400_digits", '{"action": "tap", "point": [-' + "9" * 400 + ", 1]}", "point"),
    ("int_of_5000_digits", '{"action": "tap", "point": [' + "9" * 5000 + ", 1]}", "answer"),  # refused by parse_json
    ("call_of_5000_digits", "click(start_box='(" + "9" * 5000 + ",2)')", "point"),
    ("box_outside", "click(start_box='(900,900,1300,1300)')", "point"),
    # nesting and repetition: refused or skipped in linear time
    ("deep_object", '{"a":' * DEEP + "1" + "}" * DEEP, "answer"),
    ("deep_point", '{"action": "tap", "point": ' + "[" * 100 + "500, 500" + "]" * 100 + "}", "answer"),
    ("deep_tuple", "{'action': 'tap', 'point': " + "(" * DEEP + "500, 500" + ")" * DEEP + "}", "answer"),
    ("open_braces", "{" * 100_000, "answer"),
    ("open_brackets", "[" * 100_000, "answer"),
    ("open_calls", "click(" * 10_000, "answer"),
    ("open_quotes", "{" + "'" * 10_000, "answer"),
    ("escaped_quotes", '{"' + '\\"' * 10_000, "answer"),
    # which part is read (accepted, with the action the answer means)
    ("json_in_thought", "Thought: I'd do {\"action\": \"back\"}\nAction: click(start_box='(100,200)')",
     Action("tap", point=(0.1, 0.2))),
    ("call_in_thought", "Thought: maybe press_back()?\nAction: press_home()", Action("home")),
    ("nothing_after_action_line", 'Thought: {"action": "back"}\nAction: I do not know', "answer"),
    ("json_in_a_call_string", "type(content='{\"action\": \"back\"}')", Action("type", text='{"action": "back"}')),
    ("call_in_a_json_string", '{"thought": "press_back()"}', "answer"),
    ("first_of_two_calls", "click(start_box='(1,2)') click(start_box='(3,4)')", Action("tap", point=(0.001, 0.002))),
    # "Action:" inside a line is prose: the whole answer is read, and its first action is the JSON
    ("inline_action_marker", 'Sure: {"action": "back"}. Action: press_home()', Action("back")),
    ("normalized_in_1000_frame", '{"action": "tap", "point": [0.5, 0.25]}', Action("tap", point=(0.0005, 0.00025))),
]


def test_the_corpus_is_large_and_unique():
    ids = [case[0] for case in CASES]
    assert len(ids) == len(set(ids)) and len(ids) >= 30


@pytest.mark.parametrize("answer, outcome", [pytest.param(a, o, id=i) for i, a, o in CASES])
def test_bad_answer_has_its_exact_outcome(answer, outcome):
    if isinstance(outcome, Action):
        assert parse_answer(answer, K) == outcome
        return
    with pytest.raises(ActionParseError) as err:
        parse_answer(answer, K)
    assert err.value.field == outcome and err.value.path is None
