"""Importers: files that lead out of their source, two screenshots at one step, sources and stores
that overlap (the source file or its images folder), a store left as its backup, step numbers out of
order, an episode named twice or changing its goal, boxes off the screen, and the command line's
failures as one line."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from PIL import Image

from guimem.core.store import load_episodes
from guimem.real.__main__ import main
from guimem.real.importers.agent_run import import_agent_runs
from guimem.real.importers.store import import_store
from tests.bad_inputs.corpus import error, located
from tests.recordings import (
    aitw_step, learngui_step, line, write_aitw, write_jsonl, write_learngui, write_run,
)

pytestmark = pytest.mark.bad_input

LINES = [line(action="click", coordinate=[1, 1]), line(action="terminate", status="success")]


def test_a_symlinked_screenshot_out_of_the_run_is_refused(tmp_path):
    run = write_run(tmp_path / "run", LINES)
    outside = tmp_path / "secret.png"
    Image.new("RGB", (40, 80), (1, 2, 3)).save(outside)
    (run / "screenshot_1.png").unlink()
    (run / "screenshot_1.png").symlink_to(outside)
    err = error(lambda: import_agent_runs(run, tmp_path / "store"))
    assert err.field == "screenshot_1.png" and "outside" in err.message and located(err, tmp_path) == "run"
    assert not (tmp_path / "store").exists()


def test_two_screenshot_names_for_one_step_are_refused(tmp_path):
    run = write_run(tmp_path / "run", LINES)
    shutil.copy(run / "screenshot_1.png", run / "screenshot_01.png")
    err = error(lambda: import_agent_runs(run, tmp_path / "store"))
    assert "step 1 has two screenshots" in err.message and located(err, tmp_path) == "run"
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("where", ["inside", "same"])
def test_a_store_that_overlaps_its_source_is_refused(tmp_path, where):
    runs = tmp_path / "runs"
    write_run(runs / "a", LINES)
    target = runs / "out" if where == "inside" else runs
    before = sorted(p.relative_to(tmp_path) for p in runs.rglob("*"))
    err = error(lambda: import_agent_runs(runs, target))
    assert err.field == "store" and "source" in err.message
    assert sorted(p.relative_to(tmp_path) for p in runs.rglob("*")) == before


def test_a_store_that_holds_its_source_is_refused(tmp_path):
    good = write_run(tmp_path / "top" / "run", LINES)
    import_agent_runs(good, tmp_path / "first")
    err = error(lambda: import_store(tmp_path / "first", tmp_path))
    assert err.field == "store" and "holds" in err.message


def test_a_store_left_as_only_its_backup_is_imported(tmp_path):
    import_agent_runs(write_run(tmp_path / "run", LINES), tmp_path / "first")
    os.rename(tmp_path / "first", tmp_path / ".first.old")
    eps = import_store(tmp_path / "first", tmp_path / "second")
    assert [e.id for e in eps] == [e.id for e in load_episodes(tmp_path / ".first.old")]


def test_the_cli_refuses_the_current_directory_and_the_source_in_one_line(tmp_path, capsys, monkeypatch):
    run = write_run(tmp_path / "run", LINES)
    monkeypatch.chdir(tmp_path)
    for dest in (".", str(tmp_path), "/", str(run)):
        assert main(["import", "agent_run", str(run), dest]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error:") and err.count("\n") == 1 and "Traceback" not in err


def test_the_cli_reports_an_os_error_as_one_line(tmp_path, capsys, monkeypatch):
    run = write_run(tmp_path / "run", LINES)
    import guimem.real.importers.common as common

    def refuse(*_a, **_k):
        raise PermissionError(13, "Permission denied", str(tmp_path / "ro" / "store"))

    monkeypatch.setattr(common, "save_episodes", refuse)
    assert main(["import", "agent_run", str(run), str(tmp_path / "ro" / "store")]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {tmp_path / 'ro' / 'store'}: Permission denied\n"


# ----------------------------------------------------------------------------- step order and identity
@pytest.mark.parametrize("ids, field, said", [
    ([2, 1, 3], "steps[0].step_id", "should be 1"),            # the list does not start where the steps do
    ([1, 1, 2], "steps[1].step_id", "step number 1 again"),    # a duplicate
    ([1, 3, 2], "steps[1].step_id", "out of order"),           # a swap
    ([1, 2, 4], "steps[2].step_id", "skips a number"),         # a gap
])
def test_learngui_step_ids_out_of_order_or_twice_are_refused(tmp_path, ids, field, said):
    from guimem.real.importers.learngui import import_learngui

    steps = [{**learngui_step(i, "CLICK[10,10]"), "step_id": n} for i, n in enumerate(ids)]
    src = write_learngui(tmp_path, {"ep1": {"instruction": "g", "steps": steps}})
    err = error(lambda: import_learngui(src, tmp_path / "store"))
    assert err.field == f"ep1.{field}" and said in err.message and located(err, tmp_path) == src.name
    assert not (tmp_path / "store").exists()


def test_aitw_step_ids_must_follow_the_order_of_the_steps(tmp_path):
    from guimem.real.importers.aitw import import_aitw

    src = write_aitw(tmp_path, {"general": [[aitw_step(step=0, step_id=1), aitw_step(step=1, step_id=0)]]})
    err = error(lambda: import_aitw(src, tmp_path / "store", images=tmp_path / "images"))
    assert err.field == "general[0].steps[1].step_id" and "out of order" in err.message
    ok = write_aitw(tmp_path / "ok", {"general": [[aitw_step(step=0, step_id=0), aitw_step(step=1, step_id=1)]]})
    assert len(import_aitw(ok, tmp_path / "store", images=tmp_path / "ok" / "images")[0].steps) == 2


def test_a_screenshot_beyond_the_after_screen_is_refused(tmp_path):
    run = write_run(tmp_path / "run", LINES, screens=3)  # screens 0..2 for 2 lines: fine
    shutil.copy(run / "screenshot_0.png", run / "screenshot_7.png")
    err = error(lambda: import_agent_runs(run, tmp_path / "store"))
    assert err.field == "screenshot_7.png" and "2 lines" in err.message and located(err, tmp_path) == "run"


def test_jsonl_episode_1_and_the_string_1_are_not_merged(tmp_path):
    from guimem.real.importers.jsonl import import_jsonl

    tap = {"type": "tap", "point": [0.5, 0.5]}
    src = write_jsonl(tmp_path, [{"episode": 1, "goal": "g", "screenshot": "shots/0.png", "action": tap},
                                 {"episode": "1", "screenshot": "shots/1.png", "action": tap}])
    err = error(lambda: import_jsonl(src, tmp_path / "store"))
    assert err.field == "line 2: episode" and "earlier line" in err.message and located(err, tmp_path) == src.name


@pytest.mark.parametrize("key, value", [("goal", "another goal"), ("app", "another app")])
def test_jsonl_a_later_line_that_changes_its_episodes_goal_or_app_is_refused(tmp_path, key, value):
    from guimem.real.importers.jsonl import import_jsonl

    tap = {"type": "tap", "point": [0.5, 0.5]}
    first = {"episode": "a", "goal": "g", "app": "settings", "screenshot": "shots/0.png", "action": tap}
    same = {"episode": "a", "goal": "g", "app": "settings", "screenshot": "shots/1.png", "action": tap}
    src = write_jsonl(tmp_path, [first, same, {**same, key: value}])
    err = error(lambda: import_jsonl(src, tmp_path / "store"))
    assert err.field == f"line 3: {key}" and "first line" in err.message
    src.write_text("\n".join(json.dumps(x) for x in (first, same)) + "\n")  # repeating them is fine
    assert len(import_jsonl(src, tmp_path / "store")[0].steps) == 2


@pytest.mark.parametrize("box", [[0.2, 1.0, 0.1, 0.1], [1.5, 0.2, 0.1, 0.1]])
def test_aitw_a_box_wholly_off_the_screen_is_refused(tmp_path, box):
    from guimem.real.importers.aitw import import_aitw

    src = write_aitw(tmp_path, {"general": [[aitw_step(annot_position=[0.1, 0.1, 0.2, 0.2, *box])]]})
    err = error(lambda: import_aitw(src, tmp_path / "store", images=tmp_path / "images"))
    assert err.field == "general[0].steps[0].annot_position[4:8]" and "off the screen" in err.message


# ----------------------------------------------------------------------------- files that lead out of their source
def _link_out(tmp_path: Path, target: Path) -> Path:
    """A PNG outside the source, and ``target`` made a symbolic link to it."""
    outside = tmp_path / "elsewhere" / "secret.png"
    outside.parent.mkdir(exist_ok=True)
    Image.new("RGB", (40, 80), (1, 2, 3)).save(outside)
    target.unlink()
    target.symlink_to(outside)
    return outside


def test_every_importer_refuses_a_screenshot_linked_out_of_its_source(tmp_path):
    from guimem.real.importers.aitw import import_aitw
    from guimem.real.importers.jsonl import import_jsonl
    from guimem.real.importers.learngui import import_learngui

    src = write_learngui(tmp_path / "lg", {"ep1": {"instruction": "g", "steps": [learngui_step(0, "CLICK[1,1]")]}})
    _link_out(tmp_path, tmp_path / "lg" / "screenshot" / "s0.png")
    err = error(lambda: import_learngui(src, tmp_path / "s1"))
    assert err.field == "ep1.steps[0].image_path" and "outside" in err.message

    src = write_aitw(tmp_path / "aitw", {"general": [[aitw_step()]]})
    _link_out(tmp_path, tmp_path / "aitw" / "images" / "general" / "9001_0.png")
    err = error(lambda: import_aitw(src, tmp_path / "s2", images=tmp_path / "aitw" / "images"))
    assert err.field == "general[0].steps[0].img_filename" and "outside" in err.message

    src = write_jsonl(tmp_path / "jl", [{"episode": "a", "goal": "g", "screenshot": "shots/0.png",
                                         "action": {"type": "tap", "point": [0.5, 0.5]}}])
    _link_out(tmp_path, tmp_path / "jl" / "shots" / "0.png")
    err = error(lambda: import_jsonl(src, tmp_path / "s3"))
    assert err.field == "line 1: screenshot" and "outside" in err.message
    assert not any((tmp_path / s).exists() for s in ("s1", "s2", "s3"))


def test_a_run_folder_or_action_file_linked_out_of_the_source_is_refused(tmp_path):
    elsewhere = write_run(tmp_path / "elsewhere" / "run", LINES)
    (tmp_path / "runs").mkdir()
    write_run(tmp_path / "runs" / "a", LINES)
    (tmp_path / "runs" / "b").symlink_to(elsewhere)
    err = error(lambda: import_agent_runs(tmp_path / "runs", tmp_path / "store"))
    assert err.field == "src" and "outside" in err.message

    run = write_run(tmp_path / "run", LINES)
    (run / "action.jsonl").unlink()
    (run / "action.jsonl").symlink_to(elsewhere / "action.jsonl")
    err = error(lambda: import_agent_runs(run, tmp_path / "store"))
    assert err.field == "action.jsonl" and "outside" in err.message
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("fmt", ["learngui", "aitw"])
@pytest.mark.parametrize("where", ["inside", "holds"])
def test_a_store_that_overlaps_the_images_folder_is_refused(tmp_path, fmt, where):
    from guimem.real.importers.aitw import import_aitw
    from guimem.real.importers.learngui import import_learngui

    if fmt == "learngui":
        src = write_learngui(tmp_path / "src", {"e": {"instruction": "g", "steps": [learngui_step(0, "CLICK[1,1]")]}})
        images = tmp_path / "src" / "screenshot"
        run = lambda store: import_learngui(src, store, images=images)  # noqa: E731
    else:
        src = write_aitw(tmp_path / "src", {"general": [[aitw_step()]]})
        images = tmp_path / "src" / "images"
        run = lambda store: import_aitw(src, store, images=images)  # noqa: E731
    store = images / "store" if where == "inside" else tmp_path
    before = sorted(p.relative_to(tmp_path) for p in images.rglob("*"))
    err = error(lambda: run(store))
    assert err.field == "store"
    assert sorted(p.relative_to(tmp_path) for p in images.rglob("*")) == before


# ----------------------------------------------------------------------------- the third red-team pass
def test_a_key_given_twice_in_an_action_line_is_refused_naming_the_file_and_line(tmp_path):
    """``{"action": "click", ..., "action": "long_press"}``: Python's JSON keeps the last, importing a
    click as a long press; which one the recorder meant is not knowable."""
    twice = '{"name": "mobile_use", "arguments": {"action": "click", "coordinate": [1, 1], "action": "long_press"}}'
    run = write_run(tmp_path / "runs" / "r", [twice, LINES[1]])
    err = error(lambda: import_agent_runs(tmp_path / "runs", tmp_path / "store"))
    assert "'action' is given twice" in err.message and err.path.endswith("action.jsonl, line 1")
    assert located(err, run) == "action.jsonl" and not (tmp_path / "store").exists()


@pytest.mark.parametrize("option", ["--labels", "--goals", "--subgoal-labels"])
def test_the_cli_refuses_a_labels_file_with_a_key_twice(tmp_path, capsys, option):
    write_run(tmp_path / "runs" / "r", LINES)
    labels = tmp_path / "labels.json"
    labels.write_text('{"r": ["home", "home"], "r": ["home", "settings"]}')
    assert main(["import", "agent_run", str(tmp_path / "runs"), str(tmp_path / "store"), option, str(labels)]) == 2
    assert capsys.readouterr().err == f"error: {labels}: field 'json': the key 'r' is given twice in one object\n"
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("option, content, field", [
    ("--labels", {"r": ["home"]}, "labels['r']"),
    ("--labels", {"nope": ["home", "home"]}, "labels"),
    ("--subgoal-labels", {"r": "one"}, "subgoal_labels['r']"),
    ("--goals", {"nope": "a goal"}, "goals"),
])
def test_the_cli_names_the_labels_or_goals_file_an_error_is_about(tmp_path, capsys, option, content, field):
    write_run(tmp_path / "runs" / "r", LINES)
    given = tmp_path / "given.json"
    given.write_text(json.dumps(content))
    assert main(["import", "agent_run", str(tmp_path / "runs"), str(tmp_path / "store"), option, str(given)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {given}: field '{field}") and err.count("\n") == 1, err
    assert not (tmp_path / "store").exists()


def test_the_cli_names_the_store_not_a_temporary_folder_when_the_destination_is_read_only(tmp_path, capsys):
    if os.geteuid() == 0:  # root writes through permissions: a read-only file system is what refuses it
        import guimem.core.io.folders as folders

        real = folders._fill

        def read_only(tmp, save):
            raise OSError(30, "Read-only file system", str(tmp / "manifest.json"))
        folders._fill = read_only
    else:
        real = None
        (tmp_path / "ro").mkdir()
        os.chmod(tmp_path / "ro", 0o555)
    try:
        run = write_run(tmp_path / "run", LINES)
        store = tmp_path / "ro" / "store"
        (tmp_path / "ro").mkdir(exist_ok=True)
        assert main(["import", "agent_run", str(run), str(store)]) == 2
    finally:
        if real is not None:
            folders._fill = real
        os.chmod(tmp_path / "ro", 0o755)
    err = capsys.readouterr().err
    assert err.startswith(f"error: {store}: field 'path': could not be saved: ") and ".tmp-" not in err.split("(at")[0]
    assert sorted(os.listdir(tmp_path / "ro")) == []


def _png_with_rows(width: int, height: int, rows: int) -> bytes:
    """A PNG whose header says ``height`` rows and whose (complete, valid) image data holds ``rows``."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\x00" + bytes([200]) * (width * 3) for _ in range(rows))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_a_png_whose_image_data_ends_early_is_refused_not_padded_with_black(tmp_path):
    run = write_run(tmp_path / "runs" / "r", LINES)
    (run / "screenshot_1.png").write_bytes(_png_with_rows(40, 80, 40))
    err = error(lambda: import_agent_runs(tmp_path / "runs", tmp_path / "store"))
    assert "its image data ends early (4,840 of 9,680 bytes: 40 of 80 rows missing)" in err.message, err
    assert "screenshot_1.png" in str(err) and not (tmp_path / "store").exists()
    (run / "screenshot_1.png").write_bytes(_png_with_rows(40, 80, 80))  # the same file with every row: imported
    assert len(import_agent_runs(tmp_path / "runs", tmp_path / "store")) == 1
