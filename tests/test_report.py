"""The headline table and the experiments table print one readable row per number."""

from __future__ import annotations

import pytest

from guimem.core.data import DataError
from guimem.pipeline.report import fmt, main, metrics_table, read_headlines, stage_order

WIDTH = 100  # the terminal the README promises these fit


STAGE_METRICS = {"retrieval_eval": {"smg_hit@1": 0.5097, "flat_hit@1": 0.52, "steps": 875},
            "actor": {"step_accuracy_action_graph_text": 0.52916, "held_out_steps": 875}}


def test_fmt_rounds_floats_and_writes_lists_bools_and_nulls_compactly():
    assert [fmt(0.529166), fmt(875), fmt(True), fmt(None), fmt([0.8, 0.85]), fmt("rule")] == [
        "0.5292", "875", "true", "null", "[0.8,0.85]", "rule"]


def test_metrics_table_has_one_row_per_number_and_fits_the_terminal():
    table = metrics_table(STAGE_METRICS).splitlines()
    assert table[0].split() == ["stage", "metric", "value"]
    assert [line.split() for line in table[1:]] == [
        ["retrieval_eval", "smg_hit@1", "0.5097"], ["retrieval_eval", "flat_hit@1", "0.52"],
        ["retrieval_eval", "steps", "875"], ["actor", "step_accuracy_action_graph_text", "0.5292"],
        ["actor", "held_out_steps", "875"]]
    assert max(map(len, table)) <= WIDTH


def test_metrics_table_flattens_a_nested_file_committed_before_the_headlines_were_flat():
    assert metrics_table({"world": {"episodes": {"train": 400}}}).splitlines()[1].split() == [
        "world", "episodes.train", "400"]


def test_read_headlines_follows_the_pipeline_order_and_names_a_bad_file(tmp_path):
    (tmp_path / "actor.json").write_text('{"a": 1}')
    (tmp_path / "world.json").write_text('{"b": 2}')
    assert list(read_headlines(tmp_path, ("world", "segmentation", "actor"))) == ["world", "actor"]
    (tmp_path / "world.json").write_text("[1]")
    with pytest.raises(DataError, match="world.json"):
        read_headlines(tmp_path, ("world",))


def test_the_stage_order_is_the_pipelines():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert stage_order(root) == ("world", "recorded", "segmentation", "graph_build", "retrieval_eval", "actor", "closed_loop",
                                 "layer_analysis", "probe_router", "oracle_headroom", "routing_stats", "real_graph")


def test_the_command_prints_the_workspace_metrics(tmp_path, monkeypatch, capsys):
    (tmp_path / "dvc.yaml").write_text("stages:\n  world: {cmd: 'true'}\n")
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "world.json").write_text('{"train_episodes": 400}')
    monkeypatch.chdir(tmp_path)
    assert main(["metrics"]) == 0
    assert capsys.readouterr().out.split() == ["stage", "metric", "value", "world", "train_episodes", "400"]


def test_report_writes_the_results_then_the_headlines_as_the_io_writers_do(tmp_path, capsys):
    from guimem.core.io import write_metrics, write_stage_results
    from guimem.pipeline.report import report

    results, metrics = {"b": [1, 2], "a": {"x": float("nan")}}, {"steps": 875, "smg_hit@1": 0.5097, "p": None}
    report(tmp_path / "results" / "s.json", results, tmp_path / "metrics" / "s.json", metrics)
    write_stage_results(tmp_path / "r.json", results)
    write_metrics(tmp_path / "m.json", metrics)
    assert (tmp_path / "results" / "s.json").read_bytes() == (tmp_path / "r.json").read_bytes()
    assert (tmp_path / "metrics" / "s.json").read_bytes() == (tmp_path / "m.json").read_bytes()
    assert [line.split() for line in capsys.readouterr().out.splitlines()[1:]] == [
        ["s", "steps", "875"], ["s", "smg_hit@1", "0.5097"], ["s", "p", "null"]]


def test_report_refuses_a_nested_headline(tmp_path):
    from guimem.pipeline.report import report

    with pytest.raises(DataError, match="nested|one number"):
        report(tmp_path / "r.json", {}, tmp_path / "m.json", {"table": {"a": 1}})
    assert not (tmp_path / "m.json").exists()

# ----------------------------------------------------------------------------- the headline file DVC reads
def test_headline_copies_its_numbers_from_the_stages_and_names_what_is_missing():
    from guimem.pipeline.report import HEADLINE, headline

    stages = {stage: {metric: 0.5 + i / 100 for i, (_, (s, metric)) in enumerate(HEADLINE.items()) if s == stage}
              for stage, _ in HEADLINE.values()}
    stages["closed_loop"]["success_rate_flat"] = 9.0  # the stage's other numbers stay out
    got = headline(stages)
    assert list(got) == list(HEADLINE) and all(got[n] == stages[s][m] for n, (s, m) in HEADLINE.items())
    with pytest.raises(DataError, match=r"metrics/probe_router\.json.*no metrics of stage probe_router"):
        headline({k: v for k, v in stages.items() if k != "probe_router"})
    stages["closed_loop"].pop("success_rate_smg")
    with pytest.raises(DataError, match=r"metrics/closed_loop\.json.*'success_rate_smg'"):
        headline(stages)


def test_the_headline_command_writes_the_file_dvc_reads(tmp_path, monkeypatch, capsys, repo_root):
    import json

    from guimem.pipeline.report import HEADLINE

    for stage in {s for s, _ in HEADLINE.values()}:
        (tmp_path / f"{stage}.json").write_text(json.dumps({m: 1.5 for s, m in HEADLINE.values() if s == stage}))
    monkeypatch.chdir(repo_root)
    out = tmp_path / "out" / "headline.json"
    assert main(["headline", "--metrics", str(tmp_path), "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == dict.fromkeys(sorted(HEADLINE), 1.5)
    assert capsys.readouterr().out.splitlines()[1].split() == ["headline", sorted(HEADLINE)[0], "1.5"]
    (tmp_path / "closed_loop.json").unlink()
    out.unlink()
    assert main(["headline", "--metrics", str(tmp_path), "--out", str(out)]) == 1
    assert "closed_loop.json" in capsys.readouterr().err and not out.exists()  # nothing written


def test_dvc_reads_only_the_headline_file_and_its_stage_depends_on_every_file_it_copies(repo_root):
    import yaml

    from guimem.pipeline.report import HEADLINE, HEADLINE_STAGE

    dvc = yaml.safe_load((repo_root / "dvc.yaml").read_text())
    assert dvc["metrics"] == ["metrics/headline.json"]
    stage = dvc["stages"][HEADLINE_STAGE]
    assert {f"metrics/{s}.json" for s, _ in HEADLINE.values()} <= set(stage["deps"])
    assert stage["outs"] == [{"metrics/headline.json": {"cache": False}}]
    assert HEADLINE_STAGE not in stage_order(repo_root)  # its numbers are copies: verify and make metrics skip it


def test_dvc_metrics_show_fits_the_terminal(repo_root):
    import os
    import subprocess
    import sys

    shown = subprocess.run([sys.executable, "-m", "dvc", "metrics", "show"], cwd=repo_root, capture_output=True,
                           text=True, env={**os.environ, "COLUMNS": "120"}, timeout=120)
    assert shown.returncode == 0, shown.stderr
    from guimem.pipeline.report import HEADLINE

    lines = shown.stdout.splitlines()
    assert lines[0].split() == ["Path", *sorted(HEADLINE)] and lines[1].split()[0] == "metrics/headline.json"
    assert len(lines) == 2 and max(map(len, lines)) <= 120
