"""The closed loop's tables and sentences, on hand-made traces and tables."""

from __future__ import annotations

from guimem.eval.closed_loop import Trace
from guimem.eval.tables import (PAPER_SR, comparison_lines, ended_counts, in_short, markdown_table, mean_steps,
                               table_rows)

LABELS = {"none": "None", "smg": "Subgoal-Graph"}
TABLE = {"none": {"mean": 10.0, "std": 2.0, "per_seed": [8.0, 12.0]},
         "smg": {"mean": 15.0, "std": 1.0, "per_seed": [14.0, 16.0]}}


def trace(memory: str, ended: str, n: int) -> Trace:
    return Trace(episode="e", memory=memory, modality="text", seed=0, run=0, goal="g", steps=(None,) * n,
                 ended=ended, success=ended == "done")


def test_ended_counts_and_mean_steps_per_memory():
    traces = [trace("none", "done", 3), trace("none", "budget", 20), trace("smg", "impossible", 4)]
    assert ended_counts(traces, ["none", "smg"]) == {"none": {"done": 1, "impossible": 0, "budget": 1},
                                                     "smg": {"done": 0, "impossible": 1, "budget": 0}}
    assert mean_steps(traces, ["none", "smg", "flat"]) == {"none": 11.5, "smg": 4.0, "flat": 0.0}


def test_the_table_shows_each_memorys_paired_test_against_no_memory():
    paired = {"smg": {"fixed": 8, "broken": 1, "p_value": 0.0390625}}
    header, rows = table_rows(TABLE, PAPER_SR, ["none", "smg"], LABELS, paired)
    assert header[3] == "vs none (p)" and rows[0][3] == "—" and rows[1][3] == "+8 / −1, p = 0.039"
    md = markdown_table(TABLE, PAPER_SR, ["none", "smg"], LABELS, paired).splitlines()
    assert md[1] == "| --- | ---: | ---: | ---: | ---: |" and md[3].endswith("| +8 / −1, p = 0.039 | 45.30 |")


def test_markdown_table_and_sentences():
    md = markdown_table(TABLE, PAPER_SR, ["none", "smg"], LABELS)
    assert md.splitlines()[2] == "| None | 10.0 ± 2.0 | 2 | 34.19 |"
    lines = comparison_lines(TABLE, ["none", "smg"], LABELS)
    assert lines[0] == "Subgoal-Graph: +5.0 points vs no memory (above no memory); paper: +11.11"
    assert lines[1].endswith("Subgoal-Graph > None")
    ended = {"none": {"done": 5, "impossible": 0, "budget": 5}, "smg": {"done": 10, "impossible": 0, "budget": 0}}
    s = in_short(TABLE, ended, 10, ["none", "smg"], LABELS)
    assert s.startswith("In short: Subgoal-Graph is best here at 15.0% (+5.0 points over no memory, about 0 of 10")
    assert "None 50%, Subgoal-Graph 100%" in s
