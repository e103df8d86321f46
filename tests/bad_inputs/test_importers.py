"""Importers: files that lead out of their source, two screenshots at one step, sources and stores
that overlap, a store left as its backup, and the command line's failures as one line."""

from __future__ import annotations

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
from tests.test_importers import line, write_run

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
