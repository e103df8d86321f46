"""The headline table and the experiments table print one readable row per number."""

from __future__ import annotations

import pytest

from guimem.core.data import DataError
from guimem.pipeline.report import experiments_table, fmt, main, metrics_table, read_headlines, revisions, stage_order

WIDTH = 100  # the terminal the README promises these fit


def _rev(name, params, metrics, experiments=None):
    return {"rev": name, "name": None if name == "workspace" else name, "error": None, "experiments": experiments,
            "data": {"params": {"params.yaml": {"data": params}},
                     "metrics": {f"metrics/{stage}.json": {"data": m} for stage, m in metrics.items()}}}


def _exp(name, params, metrics, status="Success"):
    data = _rev(name, params, metrics)["data"] | {"status": status}
    return {"revs": [{"rev": name, "name": name, "error": None, "data": data}]}


BASE = {"base": {"seed": 0}, "graph_build": {"graph": {"tau": 0.9}, "tau_sweep": [0.8, 0.9]}}
HEADLINE = {"retrieval_eval": {"smg_hit@1": 0.5097, "flat_hit@1": 0.52, "steps": 875},
            "actor": {"step_accuracy_action_graph_text": 0.52916, "held_out_steps": 875}}


def test_fmt_rounds_floats_and_writes_lists_bools_and_nulls_compactly():
    assert [fmt(0.529166), fmt(875), fmt(True), fmt(None), fmt([0.8, 0.85]), fmt("rule")] == [
        "0.5292", "875", "true", "null", "[0.8,0.85]", "rule"]


def test_metrics_table_has_one_row_per_number_and_fits_the_terminal():
    table = metrics_table(HEADLINE).splitlines()
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


def test_experiments_table_shows_only_what_an_experiment_changed():
    changed = {**BASE, "graph_build": {**BASE["graph_build"], "graph": {"tau": 0.85}}}  # a key of a group
    moved = {**HEADLINE, "retrieval_eval": {**HEADLINE["retrieval_eval"], "smg_hit@1": 0.4869}}
    shown = [_rev("workspace", BASE, HEADLINE),
             _rev("main", BASE, HEADLINE, experiments=[_exp("bushy-tau", changed, moved),
                                                        _exp("queued-one", changed, moved, status="Queued"),
                                                        _exp("half-done", changed, moved, status="Running")])]
    assert [r[0] for r in revisions(shown)] == ["workspace", "main", "bushy-tau"]  # DVC names no workspace
    table = experiments_table(shown).splitlines()
    assert table[0].split() == ["workspace", "main", "bushy-tau"]
    assert [line.split() for line in table[1:3]] == [
        ["param", "graph_build.graph.tau", "0.9", "0.9", "0.85"],
        ["metric", "retrieval_eval.smg_hit@1", "0.5097", "0.5097", "0.4869"]]
    assert table[3].startswith("(make baseline records")  # how to leave this machine's drift out
    assert max(map(len, table)) <= WIDTH
    everything = experiments_table(shown, all_rows=True)
    assert "param graph_build.tau_sweep" in everything and "[0.8,0.9]" in everything


def test_with_a_baseline_an_experiment_is_compared_with_this_machines_run_alone():
    drifted = {**HEADLINE, "actor": {**HEADLINE["actor"], "step_accuracy_action_graph_text": 0.5101}}  # another CPU
    changed = {**BASE, "graph_build": {**BASE["graph_build"], "graph": {"tau": 0.85}}}
    moved = {**drifted, "retrieval_eval": {**drifted["retrieval_eval"], "smg_hit@1": 0.4869}}
    shown = [_rev("workspace", changed, moved),
             _rev("main", BASE, HEADLINE, experiments=[_exp("baseline", BASE, drifted), _exp("bushy-tau", changed, moved)])]
    table = experiments_table(shown).splitlines()
    assert table[0].split() == ["baseline", "bushy-tau"]  # neither the workspace nor HEAD
    assert [line.split() for line in table[1:3]] == [  # only what the experiment changed: not the drift
        ["param", "graph_build.graph.tau", "0.9", "0.85"], ["metric", "retrieval_eval.smg_hit@1", "0.5097", "0.4869"]]
    assert table[-1] == "baseline vs main (the committed run): 1 rows differ (make verify: within the seed spread?)"
    assert max(map(len, table)) <= WIDTH
    alone = [_rev("main", BASE, HEADLINE, experiments=[_exp("baseline", BASE, HEADLINE)])]
    assert experiments_table(alone).splitlines() == [
        "no experiment besides the baseline", "", "baseline vs main (the committed run): the same numbers"]


def test_a_revision_without_a_name_is_titled_by_its_short_hash():
    entry = _rev("x", BASE, HEADLINE) | {"rev": "996e3291f0c3a0b6c8a1d2e4f5a6b7c8d9e0f1a2", "name": None}
    assert [r[0] for r in revisions([entry])] == ["996e329"]


def test_experiments_table_says_when_nothing_differs():
    same = [_rev("workspace", BASE, HEADLINE), _rev("main", BASE, HEADLINE)]
    assert experiments_table(same) == "the revisions do not differ in any parameter or headline metric"
    assert experiments_table([]) == "no revision to show"


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
