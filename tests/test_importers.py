"""Importers of recorded trajectories: the agent-run format on small fixtures (every action kind,
names that are not file-safe, downscaling, foreign image bytes), malformed inputs (a clear error
naming the file and the field, nothing written) and the bundled real sample; the command line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from guimem.core.data import Action, DataError, Episode
from guimem.core.store import load_episodes, load_screenshot, save_episodes
from guimem.real.__main__ import main
from guimem.real.importers.agent_run import import_agent_runs, parse_action
from guimem.real.importers.common import downscaled_size, safe_id
from tests.recordings import (
    aitw_step, learngui_step, line, write_aitw, write_jsonl, write_learngui, write_run,
)

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "android_world_simple_calendar"


ALL_KINDS = [
    line(action="open", text="Simple Calendar Pro"),
    line(action="click", coordinate=[999, 0]),
    line(action="long_press", coordinate=[500, 500]),
    line(action="swipe", direction="up", coordinate=[500, 800]),
    line(action="swipe", coordinate=[100, 100], coordinate2=[100, 900]),
    line(action="type", text="Call with Marketing", coordinate=[250, 100]),
    line(action="system_button", button="Back"),
    line(action="wait", time=2),
    line(action="answer", text="Call with Marketing"),
    line(action="terminate", status="success"),
]


def test_every_action_kind_is_mapped(tmp_path):
    write_run(tmp_path / "runs" / "What_is_my_next_event_", ALL_KINDS)
    (ep,) = import_agent_runs(tmp_path / "runs", tmp_path / "store")
    assert [s.action for s in ep.steps] == [
        Action("open_app", text="Simple Calendar Pro"), Action("tap", point=(1.0, 0.0)),
        Action("long_press", point=(500 / 999, 500 / 999)), Action("swipe", point=(500 / 999, 800 / 999), direction="up"),
        Action("swipe", point=(100 / 999, 100 / 999), end=(100 / 999, 900 / 999)),
        Action("type", text="Call with Marketing"), Action("back"), Action("wait"),
        Action("answer", text="Call with Marketing"), Action("done")]
    assert ep.success is True and ep.app == "Simple Calendar Pro" and ep.goal == "What is my next event"
    assert ep.provenance["type_points"] == {"5": [250 / 999, 100 / 999]}  # the field typed into is kept
    assert ep.provenance["final_screen"] == "repeated" and ep.final == ep.steps[-1].observation
    assert all(s.elements == () for s in ep.steps)  # no UI tree recorded


def test_a_recorded_after_screen_is_the_final_one_and_status_failure_is_no_success(tmp_path):
    write_run(tmp_path / "run", [line(action="click", coordinate=[1, 2]), line(action="terminate", status="failure")],
              screens=3)
    (ep,) = import_agent_runs(tmp_path / "run", tmp_path / "store")  # a single run folder as src
    assert ep.provenance["final_screen"] == "recorded" and ep.final != ep.steps[-1].observation
    assert ep.steps[-1].action == Action("impossible") and ep.success is False
    write_run(tmp_path / "budget", [line(action="click", coordinate=[1, 2])])
    assert import_agent_runs(tmp_path / "budget", tmp_path / "store2")[0].success is None  # never terminated


def test_a_run_cut_off_after_a_tap_has_no_final_screen_and_nothing_claims_what_the_tap_did(tmp_path):
    import dataclasses

    from guimem.smg.annotate import NOT_RECORDED
    from guimem.smg.judge import RuleJudge
    from guimem.smg.screens import read_episode, trajectory_text
    from guimem.smg.segment import make_segmenter, segment_episodes

    write_run(tmp_path / "runs" / "cut", [line(action="click", coordinate=[1, 2]), line(action="click", coordinate=[5, 5])])
    (ep,) = import_agent_runs(tmp_path / "runs", tmp_path / "store")
    assert ep.final is None and ep.provenance["final_screen"] == "not recorded" and not ep.final_recorded
    assert json.loads(next((tmp_path / "store" / "episodes").glob("*.json")).read_text())["final"] is None
    assert load_episodes(tmp_path / "store") == [ep]  # null round-trips
    assert len(ep.observations) == 3 and ep.observations[-1] == ep.steps[-1].observation  # the stand-in
    assert len(ep.recorded_observations) == 2
    assert read_episode(ep).kinds[-1] == "effective"  # not "noise": the same screen is no evidence here
    subgoals = segment_episodes([ep], make_segmenter("rule"), progress=False)
    assert subgoals[-1].effect.endswith(NOT_RECORDED)
    assert "End: not recorded" in trajectory_text(ep)  # what the LLM segmenter and judge read
    ended = import_agent_runs(tmp_path / "runs", tmp_path / "s2")[0]  # a judge reads the last screen recorded
    done = dataclasses.replace(ended, goal="turn on Wi-Fi", steps=(*ended.steps[:-1], dataclasses.replace(
        ended.steps[-1], action=Action("done"))))
    assert RuleJudge().episode_verdict(done)[0] in ("yes", "no", "uncertain")
    with pytest.raises(DataError, match=r"labels\['cut'\].*a list of 2 screen types"):  # no type for a screen not recorded
        import_agent_runs(tmp_path / "runs", tmp_path / "store3", labels={"cut": ["a", "b", "c"]})
    assert not (tmp_path / "store3").exists()


def test_names_are_made_safe_unique_and_kept(tmp_path):
    for name in ("In_Simple_Calendar_Pro,_delete_the_event_", "In_Simple_Calendar_Pro;_delete_the_event_", "plain"):
        write_run(tmp_path / "runs" / name, [line(action="terminate", status="success")])
    eps = import_agent_runs(tmp_path / "runs", tmp_path / "store")
    ids = [e.id for e in eps]
    assert len(set(ids)) == 3 and "plain" in ids and all("," not in i and ";" not in i for i in ids)
    assert {e.provenance["source_name"] for e in eps} == {p.name for p in (tmp_path / "runs").iterdir()}
    taken: set[str] = set()
    assert safe_id("a" * 300, taken) != safe_id("a" * 301, taken) and all(len(t) <= 128 for t in taken)
    assert safe_id(".hidden", set()).startswith("hidden-")


def test_goals_and_app_options(tmp_path):
    write_run(tmp_path / "runs" / "Do_I_have_any_events", [line(action="terminate", status="success")])
    (ep,) = import_agent_runs(tmp_path / "runs", tmp_path / "s", goals={"Do_I_have_any_events": "Do I have any events?"},
                              app="Simple Calendar Pro")
    assert ep.goal == "Do I have any events?" and ep.app == "Simple Calendar Pro"
    assert ep.provenance["goal_source"] == "goals"
    with pytest.raises(DataError, match="names no run folder"):
        import_agent_runs(tmp_path / "runs", tmp_path / "t", goals={"elsewhere": "x"})
    assert not (tmp_path / "t").exists()


def test_downscaling_and_foreign_bytes_under_a_png_name(tmp_path):
    write_run(tmp_path / "run", [line(action="click", coordinate=[1, 2]), line(action="wait")], size=(100, 220),
              fmt="JPEG")
    (ep,) = import_agent_runs(tmp_path / "run", tmp_path / "store", max_side=55)
    load_episodes(tmp_path / "store", verify_images=True)  # stored as real PNG: the full check passes
    assert load_screenshot(tmp_path / "store", ep.steps[0].screenshot).size == (25, 55) == downscaled_size((100, 220), 55)
    assert downscaled_size((100, 220), None) == (100, 220) == downscaled_size((100, 220), 500)


@pytest.mark.parametrize("lines, screens, field", [
    (['{"name": "mobile_use", "arguments": {"action": "click", '], None, "line"),  # truncated JSON
    ([line(action="fly")], None, "line 1: arguments.action"),
    ([line(action="click", coordinate=[1000, 5])], None, "line 1: arguments.coordinate[0]"),
    ([line(action="click", coordinate=[5])], None, "line 1: arguments.coordinate"),
    ([line(action="click")], None, "line 1: arguments.coordinate"),
    ([line(action="type")], None, "line 1: arguments.text"),
    ([line(action="swipe", direction="sideways", coordinate=[1, 1])], None, "line 1: arguments.direction"),
    ([line(action="system_button", button="Menu")], None, "line 1: arguments.button"),
    ([line(action="terminate", status="success"), '{"name": "x"}'], None, "line 2: arguments"),
    ([line(action="click", coordinate=[1, 1]), line(action="terminate", status="success")], 1, "screenshot_1.png"),
    ([""], 1, "steps"),
])
def test_malformed_runs_name_the_file_and_field_and_write_nothing(tmp_path, lines, screens, field):
    write_run(tmp_path / "run", lines, screens=screens)
    with pytest.raises(DataError) as err:
        import_agent_runs(tmp_path / "run", tmp_path / "store")
    assert err.value.field.startswith(field) and str(tmp_path / "run") in str(err.value)
    assert not (tmp_path / "store").exists()


def test_a_failed_import_leaves_an_existing_store_and_refuses_other_folders(tmp_path):
    write_run(tmp_path / "good", [line(action="terminate", status="success")])
    import_agent_runs(tmp_path / "good", tmp_path / "store")
    before = sorted(p.name for p in (tmp_path / "store" / "episodes").iterdir())
    write_run(tmp_path / "bad", [line(action="click", coordinate=[1, 1])], screens=0)
    with pytest.raises(DataError):
        import_agent_runs(tmp_path / "bad", tmp_path / "store")
    assert sorted(p.name for p in (tmp_path / "store" / "episodes").iterdir()) == before
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    with pytest.raises(DataError):
        import_agent_runs(tmp_path / "good", tmp_path / "notes")
    assert (tmp_path / "notes" / "mine.txt").read_text() == "keep me"
    with pytest.raises(DataError, match="no run folder"):
        import_agent_runs(tmp_path / "notes", tmp_path / "other")
    with pytest.raises(DataError, match="max_side"):
        import_agent_runs(tmp_path / "good", tmp_path / "other", max_side=0)


def test_parse_action_keeps_what_the_action_does_not_hold():
    assert parse_action({"action": "terminate", "status": "Success"}) == (Action("done"), {"status": "Success"})
    assert parse_action({"action": "swipe", "direction": "Left"})[0] == Action("swipe", point=(0.5, 0.5), direction="left")


def test_the_bundled_real_sample_imports(tmp_path):
    eps = import_agent_runs(SAMPLE, tmp_path / "store")
    assert len(eps) == 3 and sum(len(e.steps) for e in eps) == 28
    by_name = {e.provenance["source_name"]: e for e in eps}
    answer = by_name["What_is_my_next_upcoming_event_in_Simple_Calendar_"]
    assert [s.action.type for s in answer.steps][-2:] == ["answer", "done"] and answer.success is True
    assert answer.steps[-2].action.text == "Call with Marketing"
    assert by_name["Do_I_have_any_events_October_28_in_Simple_Calendar"].success is None  # ran out of steps
    assert load_screenshot(tmp_path / "store", answer.steps[0].screenshot).size == (363, 800)
    notice, licence = (SAMPLE / "NOTICE.md").read_text(), (SAMPLE / "LICENSE").read_text()
    assert "android_world" in notice and "Apache" in notice  # where the runs come from, under which licence
    assert "Apache License" in licence and "Version 2.0" in licence


def test_command_line(tmp_path, capsys):
    write_run(tmp_path / "runs" / "a_run", [line(action="terminate", status="success")])
    goals = tmp_path / "goals.json"
    goals.write_text(json.dumps({"a_run": "A goal"}))
    assert main(["import", "agent_run", str(tmp_path / "runs"), str(tmp_path / "store"), "--goals", str(goals),
                 "--max-side", "20"]) == 0
    assert "1 episodes, 1 steps" in capsys.readouterr().out
    assert load_episodes(tmp_path / "store")[0].goal == "A goal"
    assert "warning" not in capsys.readouterr().err  # every goal given
    assert main(["import", "agent_run", str(tmp_path / "runs"), str(tmp_path / "s1")]) == 0
    err = capsys.readouterr().err  # the goal is the folder's name: said, with the option that gives it
    assert "1 of 1 runs have no goal but their folder's name (e.g. 'a run')" in err and "--goals" in err
    goals.write_text("[1, 2]")
    assert main(["import", "agent_run", str(tmp_path / "runs"), str(tmp_path / "s2"), "--goals", str(goals)]) == 2
    assert "goals.json" in capsys.readouterr().err and not (tmp_path / "s2").exists()
    assert main(["import", "agent_run", str(tmp_path / "nowhere"), str(tmp_path / "s3")]) == 2
    assert "src" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the data model for real recordings
def test_swipes_by_direction_answers_and_waits_round_trip():
    for action in (Action("swipe", point=(0.5, 0.8), direction="up"), Action("answer", text="Call with Marketing"),
                   Action("wait")):
        assert Action.from_dict(json.loads(json.dumps(action.to_dict()))) == action
    swipe = Action("swipe", point=(0.5, 0.8), direction="up")
    assert swipe.end_point() == pytest.approx((0.5, 0.5)) and swipe.end_point(0.9) == (0.5, 0.0)  # kept on screen
    assert Action("tap", point=(0.1, 0.1)).end_point() is None
    assert swipe.describe() == "swipe up from (0.50, 0.80)" and Action("answer", text="x").describe() == 'answer "x"'
    for bad, field in ((dict(type="swipe", point=(0.5, 0.5)), "end"),
                       (dict(type="swipe", point=(0.5, 0.5), end=(0.5, 0.1), direction="up"), "direction"),
                       (dict(type="swipe", point=(0.5, 0.5), direction="north"), "direction"),
                       (dict(type="tap", point=(0.5, 0.5), direction="up"), "direction"),
                       (dict(type="answer"), "text")):
        with pytest.raises(DataError) as err:
            Action(**bad)
        assert err.value.field == field


def test_an_observation_without_elements_reads_from_json():
    from guimem.core.data import Observation

    assert Observation.from_dict({"screenshot": "screens/0123456789abcdef.png"}).elements == ()


def test_answers_are_scored_and_described_and_the_miniature_refuses_them():
    from guimem.actors.mini.features import type_index
    from guimem.core.describe import describe_action, swipe_direction
    from guimem.eval.action_match import MatchConfig, action_match

    for variant in ("aitw", "learngui"):
        config = MatchConfig(variant, screen_size_px=(1080, 2400))
        assert action_match(Action("answer", text="Call with marketing"), Action("answer", text="call with Marketing"),
                            (), config)
        assert not action_match(Action("answer", text="Lunch"), Action("answer", text="Call with Marketing"), (), config)
        assert not action_match(Action("done"), Action("answer", text="x"), (), config)
        assert action_match(Action("swipe", point=(0.5, 0.8), direction="up"),
                            Action("swipe", point=(0.5, 0.9), end=(0.5, 0.2)), (), config)
    assert describe_action(Action("answer", text="Call with Marketing")) == 'answer "Call with Marketing"'
    assert swipe_direction(Action("swipe", point=(0.5, 0.8), direction="left")) == "left"
    with pytest.raises(DataError, match="action space"):
        type_index(Action("wait"), "action")


def test_a_store_holds_recorded_only_types(tmp_path):
    from guimem.core.data import Observation, Step

    obs = Observation(screenshot="s0")
    ep = Episode(id="e", app="calendar", goal="g", steps=(Step(obs, Action("wait")), Step(obs, Action("answer", text="t"))),
                 final=obs)
    buf = io.BytesIO()
    Image.new("RGB", (4, 8)).save(buf, format="PNG")
    save_episodes([ep], {"s0": buf.getvalue()}, tmp_path / "store")
    assert [s.action for s in load_episodes(tmp_path / "store")[0].steps] == [Action("wait"), Action("answer", text="t")]


def test_recorded_only_actions_are_written_into_a_hugging_face_history():
    from guimem.actors.hf.parsing import format_action

    for fmt in ("json", "uitars"):
        assert "Call" in format_action(Action("answer", text="Call"), fmt, (1000.0, 1000.0))
        assert "wait" in format_action(Action("wait"), fmt, (1000.0, 1000.0))
        assert format_action(Action("swipe", point=(0.5, 0.8), direction="up"), fmt, (1000.0, 1000.0)) == \
            format_action(Action("swipe", point=(0.5, 0.8), end=(0.5, 0.5)), fmt, (1000.0, 1000.0))


# ----------------------------------------------------------------------------- Android in the Wild (JSON)
def test_aitw_actions_boxes_and_provenance(tmp_path):
    from guimem.real.importers.aitw import import_aitw

    steps = [aitw_step(step=0), aitw_step(step=1, touch=[0.5, 0.8], lift=[0.5, 0.2], action_type_text="scroll up"),
             aitw_step(step=2, action_type_id=3, action_type_text="type", type_text="hotels paris"),
             aitw_step(step=3, action_type_id=7), aitw_step(step=4, action_type_id=5), aitw_step(step=5, action_type_id=6),
             aitw_step(step=6, action_type_id=10)]
    src = write_aitw(tmp_path, {"general": [steps], "install": [[aitw_step(ep="77", action_type_id=11)]]})
    eps = {e.provenance["source_name"]: e for e in import_aitw(src, tmp_path / "store", images=tmp_path / "images")}
    ep = eps["9001"]
    assert [s.action for s in ep.steps] == [
        Action("tap", point=(0.3, 0.6)), Action("swipe", point=(0.5, 0.8), end=(0.5, 0.2)),
        Action("type", text="hotels paris"), Action("enter"), Action("back"), Action("home"), Action("done")]
    (box,) = ep.steps[0].elements  # AITW's (y, x, h, w) box as (x0, y0, x1, y1)
    assert box.bounds == pytest.approx((0.2, 0.55, 0.45, 0.65)) and box.text == ""
    assert ep.goal == "search for hotels in Paris" and ep.success is None and ep.provenance["scenario"] == "general"
    assert eps["77"].steps[0].action == Action("impossible") and eps["77"].provenance["scenario"] == "install"


@pytest.mark.parametrize("change, field", [
    (dict(action_type_id=1), "general[0].steps[0].action_type_id"),
    (dict(touch=[1.5, 0.2]), "general[0].steps[0].touch[0]"),
    (dict(action_type_id=3, type_text=None), "general[0].steps[0].type_text"),
    (dict(annot_position=[0.1, 0.2, 0.3]), "general[0].steps[0].annot_position"),
    (dict(img_filename="../escape"), "general[0].steps[0].img_filename"),
    (dict(img_filename="general/none"), "general[0].steps[0].img_filename"),
])
def test_aitw_malformed_steps_name_the_field(tmp_path, change, field):
    from guimem.real.importers.aitw import import_aitw

    src = write_aitw(tmp_path, {"general": [[aitw_step()]]})
    doc = json.loads(src.read_text())
    doc["general"][0][0].update(change)
    src.write_text(json.dumps(doc))
    with pytest.raises(DataError) as err:
        import_aitw(src, tmp_path / "store", images=tmp_path / "images")
    assert err.value.field == field and str(src) in str(err.value) and not (tmp_path / "store").exists()


def test_aitw_episode_whose_steps_disagree_is_refused(tmp_path):
    from guimem.real.importers.aitw import import_aitw

    src = write_aitw(tmp_path, [[aitw_step(step=0), aitw_step(ep="other", step=1)]])
    with pytest.raises(DataError, match="belongs to episode"):
        import_aitw(src, tmp_path / "store", images=tmp_path / "images")


# ----------------------------------------------------------------------------- generic JSON lines
def test_jsonl_steps_ui_dumps_and_final_screens(tmp_path):
    from guimem.real.importers.jsonl import import_jsonl

    src = write_jsonl(tmp_path, [
        {"episode": "r,1", "goal": "Turn on Wi-Fi", "app": "settings", "screenshot": "shots/0.png",
         "ui_xml": "dumps/0.xml", "action": {"type": "tap", "point": [0.5, 0.3]}, "provenance": {"device": "pixel"}},
        {"episode": "r,1", "screenshot": "shots/1.png", "action": {"type": "answer", "text": "on"}, "success": True},
        {"episode": "r,1", "final_screenshot": "shots/2.png"},
        {"episode": 2, "goal": "Scroll", "screenshot": "shots/1.png",
         "action": {"type": "swipe", "point": [0.5, 0.8], "direction": "up"}},
    ])
    by_name = {e.provenance["source_name"]: e for e in import_jsonl(src, tmp_path / "store")}
    first, second = by_name["r,1"], by_name["2"]
    assert first.provenance["source_name"] == "r,1" and "," not in first.id and first.provenance["device"] == "pixel"
    (wifi,) = first.steps[0].elements
    assert wifi.text == "Wi-Fi" and wifi.role == "toggle" and wifi.bounds == pytest.approx((0.0, 0.25, 1.0, 0.375))
    assert first.success is True and first.provenance["final_screen"] == "recorded" and first.app == "settings"
    assert second.app == "unknown" and second.success is None
    assert second.final is None and second.provenance["final_screen"] == "not recorded"  # a swipe's outcome unknown
    assert second.steps[0].action == Action("swipe", point=(0.5, 0.8), direction="up")


@pytest.mark.parametrize("lines, field", [
    ([{"goal": "g", "screenshot": "shots/0.png", "action": {"type": "back"}}], "line 1: episode"),
    ([{"episode": "a", "screenshot": "shots/0.png", "action": {"type": "back"}}], "line 1: goal"),
    ([{"episode": "a", "goal": "g", "screenshot": "shots/9.png", "action": {"type": "back"}}], "line 1: screenshot"),
    ([{"episode": "a", "goal": "g", "screenshot": "/etc/x.png", "action": {"type": "back"}}], "line 1: screenshot"),
    ([{"episode": "a", "goal": "g", "screenshot": "shots/0.png", "action": {"type": "fly"}}], "line 1: action.type"),
    ([{"episode": "a", "goal": "g", "screenshot": "shots/0.png", "ui_xml": "dumps/9.xml", "action": {"type": "back"}}],
     "line 1: ui_xml"),
    ([{"episode": "a", "final_screenshot": "shots/0.png"}], "line 1: final_screenshot"),
    ([{"episode": "a", "goal": "g", "screenshot": "shots/0.png", "action": {"type": "back"}},
      {"episode": "a", "final_screenshot": "shots/1.png"},
      {"episode": "a", "screenshot": "shots/2.png", "action": {"type": "back"}}], "line 3: episode"),
    ([{"episode": "a", "goal": "g", "screenshot": "shots/0.png", "action": {"type": "back"}, "success": "yes"}],
     "line 1: success"),
])
def test_jsonl_malformed_lines_name_the_line_and_field(tmp_path, lines, field):
    from guimem.real.importers.jsonl import import_jsonl

    src = write_jsonl(tmp_path, lines)
    with pytest.raises(DataError) as err:
        import_jsonl(src, tmp_path / "store")
    assert err.value.field == field and not (tmp_path / "store").exists()


def test_command_line_options_belong_to_their_format(tmp_path, capsys):
    src = write_aitw(tmp_path, {"general": [[aitw_step()]]})
    assert main(["import", "aitw", str(src), str(tmp_path / "store"), "--images", str(tmp_path / "images")]) == 0
    with pytest.raises(SystemExit) as exit_:
        main(["import", "aitw", str(src), str(tmp_path / "s2"), "--goals", "g.json"])
    assert exit_.value.code == 2 and "aitw takes no --goals" in capsys.readouterr().err


# ----------------------------------------------------------------------------- LearnGUI-Offline
def test_learngui_actions_and_descriptions(tmp_path):
    from guimem.real.importers.learngui import import_learngui

    actions = ["CLICK[500,1000]", "LONG_PRESS[0,2000]", "SWIPE[UP]", "TYPE[Rome]", "PRESS_ENTER", "PRESS_BACK",
               "PRESS_HOME", "TASK_COMPLETE[1h30m]"]
    src = write_learngui(tmp_path, {"ep 1": {"instruction": "How long is the trip?", "detected_app": "citymapper",
                                             "steps": [learngui_step(i, a) for i, a in enumerate(actions)]},
                                    "ep2": {"instruction": "Nothing", "steps": [learngui_step(0, "TASK_COMPLETE[]")]}})
    eps = {e.provenance["source_name"]: e for e in import_learngui(src, tmp_path / "store")}
    ep = eps["ep 1"]
    assert [s.action for s in ep.steps] == [
        Action("tap", point=(0.5, 0.5)), Action("long_press", point=(0.0, 1.0)),
        Action("swipe", point=(0.5, 0.5), direction="up"), Action("type", text="Rome"), Action("enter"),
        Action("back"), Action("home"), Action("answer", text="1h30m")]
    assert ep.app == "citymapper" and ep.id == "ep-1-" + ep.id.split("-")[-1] and ep.goal == "How long is the trip?"
    assert ep.provenance["action_descriptions"][:2] == ["step 0", "step 1"]
    assert eps["ep2"].steps[0].action == Action("done") and eps["ep2"].app == "unknown"


@pytest.mark.parametrize("action, field", [
    ("CLICK[1001,5]", "e.steps[0].action"), ("SWIPE[NORTH]", "e.steps[0].action"), ("FLY", "e.steps[0].action"),
])
def test_learngui_malformed_actions_name_the_step(tmp_path, action, field):
    from guimem.real.importers.learngui import import_learngui

    src = write_learngui(tmp_path, {"e": {"instruction": "x", "steps": [learngui_step(0, action)]}})
    with pytest.raises(DataError) as err:
        import_learngui(src, tmp_path / "store")
    assert err.value.field == field and str(src) in str(err.value) and not (tmp_path / "store").exists()


def test_recorded_episodes_are_segmented_and_judged_with_their_answers(tmp_path):
    from guimem.smg.judge import RuleJudge
    from guimem.smg.segment import make_segmenter

    write_run(tmp_path / "runs" / "What_is_my_next_event", [
        line(action="click", coordinate=[500, 500]), line(action="wait"), line(action="answer", text="Call with Marketing")])
    (ep,) = import_agent_runs(tmp_path / "runs", tmp_path / "store")
    subgoals = make_segmenter("rule").segment(ep)
    assert 'answer "Call with Marketing"' in [s.text for s in subgoals]  # the reply reaches memory
    assert "wait" in " ".join(s.behaviour for s in subgoals)
    assert RuleJudge().episode_verdict(ep)[1] != "the trajectory ended without 'done' or an answer"


def test_screen_labels_are_joined_and_checked(tmp_path):
    write_run(tmp_path / "runs" / "a", [line(action="click", coordinate=[1, 1]), line(action="terminate", status="success")])
    (ep,) = import_agent_runs(tmp_path / "runs", tmp_path / "store", labels={"a": ["home", "settings"]})
    assert [o.screen for o in ep.observations] == ["home", "settings", "settings"]  # the final repeats the last
    for bad, field in (({"b": ["x", "y"]}, "labels['b']"), ({"a": ["x"]}, "labels['a']"), ({"a": ["x", ""]}, "labels['a']")):
        with pytest.raises(DataError) as err:
            import_agent_runs(tmp_path / "runs", tmp_path / "other", labels=bad)
        assert err.value.field == field and not (tmp_path / "other").exists()


def test_the_bundled_sample_has_a_label_for_every_screen(tmp_path):
    labels = json.loads((SAMPLE / "screen_labels.json").read_text())
    eps = import_agent_runs(SAMPLE, tmp_path / "store", labels=labels)
    assert all(o.screen for e in eps for o in e.observations)
    assert {o.screen for e in eps for o in e.observations} >= {"home", "app_drawer", "month", "day", "edit_event"}


def test_screens_that_differ_only_in_the_status_bar_are_one_screen(tmp_path):
    from guimem.smg.screens import read_episode

    folder = write_run(tmp_path / "runs" / "clock", [line(action="click", coordinate=[500, 500])] * 3 +
                       [line(action="terminate", status="success")], screens=4, size=(100, 200))
    base = Image.new("RGB", (100, 200), (240, 240, 240))
    shots = []
    for i in range(4):
        im = base.copy()
        im.paste((20 * i, 0, 0), (0, 0, 100, 6))  # the clock moved: inside the top 4% (8 px)
        shots.append(im)
    shots[2].paste((0, 0, 0), (40, 100, 50, 110))  # a change below the status bar: 0.5% of the pixels
    for i, im in enumerate(shots):
        im.save(folder / f"screenshot_{i}.png")
    (ep,) = import_agent_runs(tmp_path / "runs", tmp_path / "store")
    paths = [o.screenshot for o in ep.recorded_observations]
    assert paths[1] == paths[0] and paths[2] != paths[1] and paths[3] != paths[2]
    assert ep.provenance["same_screen_as_before"] == [1]
    assert read_episode(ep).kinds[:2] == ("noise", "effective")  # the first tap did nothing: now seen


def test_subgoal_labels_become_each_steps_ground_truth(tmp_path):
    from guimem.smg.segmenters import GroundTruthSegmenter

    write_run(tmp_path / "runs" / "r", [line(action="click", coordinate=[1, 2])] * 3 + [line(action="terminate", status="success")])
    cuts = {"r": [[0, 1, "open the day", "open_day"], [2, 3, "finish"]]}
    (ep,) = import_agent_runs(tmp_path / "runs", tmp_path / "store", subgoal_labels=cuts)
    assert [(s.subgoal.index, s.subgoal.type) for s in ep.steps] == [(0, "open_day"), (0, "open_day"), (1, "finish"),
                                                                     (1, "finish")]  # no type: the intent is the type
    assert [(sp.first, sp.last, sp.text) for sp in GroundTruthSegmenter().spans(ep)] == [(0, 1, "open the day"),
                                                                                         (2, 3, "finish")]
    for bad, field in [({"r": [[0, 1, "a"], [3, 3, "b"]]}, r"subgoal_labels\['r'\]\[1\]"),  # a gap
                       ({"r": [[0, 2, "a"]]}, r"subgoal_labels\['r'\]"),  # steps left over
                       ({"r": [[0, 1, ""], [2, 3, "b"]]}, r"subgoal_labels\['r'\]\[0\]"),  # an empty intent
                       ({"s": [[0, 3, "a"]]}, r"subgoal_labels\['s'\]")]:  # no such run
        with pytest.raises(DataError, match=field):
            import_agent_runs(tmp_path / "runs", tmp_path / "bad", subgoal_labels=bad)
        assert not (tmp_path / "bad").exists()


def test_the_bundled_samples_subgoal_labels_join(tmp_path):
    from guimem.core.io import read_json

    episodes = import_agent_runs(SAMPLE, tmp_path / "store", subgoal_labels=read_json(SAMPLE / "subgoal_labels.json"))
    assert all(s.subgoal is not None for e in episodes for s in e.steps)
    kinds = [{s.subgoal.type for s in e.steps} for e in episodes]
    assert {"open_app", "dismiss_dialog", "open_day"} <= set.intersection(*kinds)  # what retrieval can hit across runs
