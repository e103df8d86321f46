"""Bad closed-loop trace files: each line refused with the file, the line and the field named."""

from __future__ import annotations

import json

import pytest

from guimem.core.data import Action, DataError
from guimem.eval.closed_loop import Trace, TraceStep, load_traces, save_traces

pytestmark = pytest.mark.bad_input

GOOD = Trace("e1", "smg", "text", 2, 1, "goal", (TraceStep("k1", Action("tap", (0.5, 0.5)), ("a#1",)),), "done", True)


def edited(**changes):
    d = GOOD.to_dict()
    for key, value in changes.items():
        if key.startswith("step_"):
            d["steps"][0][key[5:]] = value
        else:
            d[key] = value
    return json.dumps(d)


CASES = [  # (case, line written, field named)
    ("a list, not an object", "[1]", ""),
    ("null steps", edited(steps=None), "steps"),
    ("steps not a list", edited(steps={"a": 1}), "steps"),
    ("a step not an object", edited(steps=[3]), "steps[0]"),
    ("unknown ending", edited(ended="crashed"), "ended"),
    ("seed a float", edited(seed=2.5), "seed"),
    ("seed a bool", edited(seed=True), "seed"),
    ("success a string", edited(success="yes"), "success"),
    ("goal missing", edited(goal=None), "goal"),
    ("unknown action type", edited(step_action={"type": "fly"}), "steps[0].action.type"),
    ("action a list", edited(step_action=["tap"]), "steps[0].action"),
    ("retrieved not ids", edited(step_retrieved=[1, 2]), "steps[0].retrieved[0]"),
    ("screen key a number", edited(step_screen_key=7), "steps[0].screen_key"),
    ("malformed JSON", "{not json", "line"),
    ("nested too deep", "[" * 200 + "]" * 200, "line"),
    ("a 5000-digit seed", edited(seed=0).replace('"seed": 0', '"seed": ' + "9" * 5000), "line"),
]


@pytest.mark.parametrize("line,field", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_trace_line_names_file_line_and_field(tmp_path, line, field):
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(GOOD.to_dict()) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_traces(path)
    assert info.value.field == field and info.value.path == f"{path}, line 2", str(info.value)


def test_a_folder_or_a_missing_file_is_named(tmp_path):
    with pytest.raises(DataError, match="missing"):
        load_traces(tmp_path / "none.jsonl")
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(DataError, match="is a folder"):
        load_traces(tmp_path / "dir.jsonl")


def test_good_traces_round_trip_with_a_line_separator_in_the_goal(tmp_path):
    odd = Trace("e2", "none", "none", 0, 0, "say\u2028hi", (), "budget", False)
    save_traces(tmp_path / "t.jsonl", [GOOD, odd])
    assert load_traces(tmp_path / "t.jsonl") == [GOOD, odd]
