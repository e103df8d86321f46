"""Progress bars and notes (guimem.core.progress) and how a stage's runner shows them
(guimem.pipeline.terminal): on the runner's terminal, never in the report."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import tqdm.std

from guimem.core.progress import NOTE_PREFIX, STAGE_ENV, note, progress_bar
from guimem.pipeline.scrub import scrub_notebook
from guimem.pipeline.terminal import StageTerminal, elapsed, shown

FINISHED = "\rwork:   0%|          | 0/3 [00:00<?, ?x/s]\rwork: 100%|██████████| 3/3 [00:03<00:00, 0.99x/s]\n"


def test_a_stage_draws_a_short_text_bar_on_stderr(monkeypatch, capsys):
    monkeypatch.setenv(STAGE_ENV, "04_actor")
    bar = progress_bar(range(3), desc="work", unit="x", disable=None)  # None: someone watches a stage
    assert type(bar) is tqdm.std.tqdm and list(bar) == [0, 1, 2]
    err = capsys.readouterr().err
    assert shown(err.rstrip("\n")).startswith("work: 100%|██████████| 3/3 [")  # a 10-cell bar


def test_outside_a_stage_a_bar_nobody_watches_is_hidden_when_asked(monkeypatch, capsys):
    monkeypatch.delenv(STAGE_ENV, raising=False)
    assert list(progress_bar(range(3), desc="work", disable=None)) == [0, 1, 2]  # stderr is no terminal here
    assert list(progress_bar(range(2), desc="off", disable=True)) == [0, 1]
    assert capsys.readouterr().err == ""


def test_a_note_is_a_prefixed_line_on_stderr(capsys):
    note("2 of 3 plays read back\nfrom the cache")
    said = capsys.readouterr()
    assert said.out == "" and said.err == f"{NOTE_PREFIX}2 of 3 plays read back\n{NOTE_PREFIX}from the cache\n"


def test_the_runner_says_finished_bars_and_notes_a_line_each_and_nothing_else():
    out = io.StringIO()
    with StageTerminal("04_actor", cells=2, stream=out, live=False) as terminal:
        terminal.on_cell_execute()
        for piece in (FINISHED[:20], FINISHED[20:], "model.py:3: UserWarning: careful\n",
                      f"{NOTE_PREFIX}3 of 3 plays read", " back\n", "\rhalf:  50%|#####     | 1/2 [00:01<00:01]"):
            terminal.write(piece)
    assert out.getvalue().splitlines() == ["work: 100%|██████████| 3/3 [00:03<00:00, 0.99x/s]",
                                           f"{NOTE_PREFIX}3 of 3 plays read back"]  # the warning is the report's


def test_a_note_printed_after_a_bar_on_its_line_is_still_said():
    out = io.StringIO()
    with StageTerminal("x", cells=1, stream=out, live=False) as terminal:
        terminal.write("\rwork:  50%|#####     | 1/2 [00:02<00:02, 0.5x/s]" + NOTE_PREFIX + "hello\n")
    assert out.getvalue().splitlines() == ["work:  50%|#####     | 1/2 [00:02<00:02, 0.5x/s]", f"{NOTE_PREFIX}hello"]


def test_on_a_terminal_one_line_moves_with_the_cell_and_the_kernels_bar():
    out = io.StringIO()
    with StageTerminal("04_actor", cells=3, stream=out, live=True) as terminal:
        terminal.on_cell_execute()
        terminal.on_cell_execute()
        terminal.write("\rtrain:  40%|####      | 4/10 [00:04<00:06, 1.00ex/s]")
        assert "04_actor: cell 2/3 [00:00], train:  40%|####      | 4/10" in shown(out.getvalue().rstrip())
        terminal.write("\rtrain: 100%|##########| 10/10 [00:10<00:00, 1.00ex/s]\n")
        terminal.write("\rquick: 100%|##########| 10/10 [00:01<00:00, 9.00ex/s]\n")  # too short to be said
        terminal.on_cell_execute()
    lines = [shown(line) for line in out.getvalue().split("\n")]
    assert "train: 100%|##########| 10/10 [00:10<00:00, 1.00ex/s]" in lines  # left above the moving line
    assert not any(line.startswith("quick") for line in lines)
    assert lines[-2].startswith("04_actor: cell 3/3 [00:00]") and "train" not in lines[-2]


@pytest.mark.parametrize("name, kept", [("stderr", "careful\n"), ("stdout", f"{NOTE_PREFIX}printed\ncareful\n")])
def test_the_report_keeps_no_note_on_stderr(name, kept):
    text = f"{NOTE_PREFIX}printed\ncareful\n"
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "source": "",
                     "outputs": [{"output_type": "stream", "name": name, "text": text}]}], "metadata": {}}
    scrub_notebook(nb)
    assert nb["cells"][0]["outputs"][0]["text"] == kept


def test_only_core_progress_imports_tqdm():
    """Every bar goes through progress_bar, so that a stage's runner can show it (and the report drop it);
    the runner's own moving line is the other user."""
    root = Path(__file__).resolve().parents[1] / "src" / "guimem"
    direct = [p.relative_to(root).as_posix() for p in sorted(root.rglob("*.py"))
              if re.search(r"^\s*(from tqdm|import tqdm)", p.read_text(encoding="utf-8"), re.M)]
    assert direct == ["core/progress.py", "pipeline/terminal.py"]


@pytest.mark.parametrize("bar, seconds", [("w: 100%|#| 3/3 [00:03<00:00, 1x/s]", 3), ("12it [01:02, 11.12s/it]", 62),
                                           ("w:  50%|#| 1/2 [1:00:05<1:00:05]", 3605), ("no time", 0)])
def test_elapsed_reads_a_bars_time_block(bar, seconds):
    assert elapsed(bar) == seconds


def test_a_nested_bar_draws_no_cursor_moves_in_a_stage(monkeypatch, capsys):
    monkeypatch.setenv(STAGE_ENV, "x")
    for _ in progress_bar(range(2), desc="outer"):
        for _ in progress_bar(range(3), desc="inner", leave=False):
            pass
    assert "\x1b[" not in capsys.readouterr().err


def test_a_nested_bars_redraws_are_not_said_as_finished():
    out = io.StringIO()  # what tqdm writes for a bar at position 1 (another notebook's own tqdm)
    redraw = "\n\rinner:  50%|#####     | 1/2 [00:03<00:03, 0.3x/s]\x1b[A"
    with StageTerminal("x", cells=1, stream=out, live=False) as terminal:
        terminal.write("\router:  10%|#         | 1/10 [00:01<00:09, 1.0x/s]" + redraw + redraw
                       + "\router:  20%|##        | 2/10 [00:04<00:16, 0.5x/s]" + redraw)
    assert out.getvalue() == ""


def test_a_note_after_unfinished_text_on_its_line_or_ending_in_crlf_is_said():
    out = io.StringIO()
    with StageTerminal("x", cells=1, stream=out, live=False) as terminal:
        terminal.write("loading..." + NOTE_PREFIX + "one\n" + NOTE_PREFIX + "two\r\n")
    assert out.getvalue().splitlines() == [f"{NOTE_PREFIX}one", f"{NOTE_PREFIX}two"]


def test_a_cells_unfinished_line_is_forgotten_when_the_next_cell_starts():
    out = io.StringIO()
    with StageTerminal("x", cells=2, stream=out, live=False) as terminal:
        terminal.on_cell_execute()
        terminal.write("\rhalf:  50%|#####     | 1/2 [00:05<00:05, 0.2x/s]")  # the cell failed mid-bar
        terminal.on_cell_execute()
        terminal.write("model.py:3: UserWarning: careful\n")
    assert out.getvalue() == ""


class _Gone(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError("the reader went away")


def test_a_terminal_that_fails_a_write_is_dropped_and_the_stage_goes_on():
    for live in (False, True):
        terminal = StageTerminal("x", cells=1, stream=_Gone(), live=live)
        terminal.on_cell_execute()
        assert terminal.write(f"{NOTE_PREFIX}hello\n") == len(NOTE_PREFIX) + 6
        terminal.write("\rwork:  50%|#####     | 1/2 [00:05<00:05, 0.2x/s]")
        terminal.flush()
        terminal.close()


def test_the_moving_line_never_counts_past_its_total():
    out = io.StringIO()
    with StageTerminal("x", cells=1, stream=out, live=True) as terminal:
        terminal.on_cell_execute()
        terminal.on_cell_execute()  # one more than counted
    assert shown(out.getvalue().rstrip()).startswith("x: cell 2/2 [")


def test_the_report_keeps_text_written_before_a_note_on_its_line():
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "source": "",
                     "outputs": [{"output_type": "stream", "name": "stderr",
                                  "text": f"loading...{NOTE_PREFIX}2 of 2 read back\ndone\n"}]}], "metadata": {}}
    scrub_notebook(nb)
    assert nb["cells"][0]["outputs"][0]["text"] == "loading...\ndone\n"
