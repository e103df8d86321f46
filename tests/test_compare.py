"""What experiments changed (``make compare``): one readable row per parameter and headline number,
read from every stage's metrics file at each revision, not only from what DVC reports."""

from __future__ import annotations

import hashlib

from guimem.pipeline.compare import experiments_table, revisions, with_stage_metrics

WIDTH = 100  # the terminal the README promises these fit


def _sha(name):
    return hashlib.sha1(name.encode()).hexdigest()  # a revision's 40-hex hash, as DVC gives it


def _rev(name, params, metrics, experiments=None):
    """A commit (or the workspace) as ``dvc exp show --json`` (DVC 3) lists it."""
    return {"rev": "workspace" if name == "workspace" else _sha(name), "name": None if name == "workspace" else name,
            "error": None, "experiments": experiments,
            "data": {"params": {"params.yaml": {"data": params}},
                     "metrics": {f"metrics/{stage}.json": {"data": m} for stage, m in metrics.items()}}}


def _exp(name, params, metrics, state="success"):
    """An experiment group of one run, its state in the group's executor (DVC 3)."""
    data = _rev(name, params, metrics)["data"]
    return {"name": name, "executor": {"state": state, "name": None, "local": None},
            "revs": [{"rev": _sha(name), "name": name, "error": None, "data": data, "experiments": None}]}


BASE = {"base": {"seed": 0}, "graph_build": {"graph": {"tau": 0.9}, "tau_sweep": [0.8, 0.9]}}
HEADLINE = {"retrieval_eval": {"smg_hit@1": 0.5097, "flat_hit@1": 0.52, "steps": 875},
            "actor": {"step_accuracy_action_graph_text": 0.52916, "held_out_steps": 875}}


def test_experiments_table_shows_only_what_an_experiment_changed():
    changed = {**BASE, "graph_build": {**BASE["graph_build"], "graph": {"tau": 0.85}}}  # a key of a group
    moved = {**HEADLINE, "retrieval_eval": {**HEADLINE["retrieval_eval"], "smg_hit@1": 0.4869}}
    shown = [_rev("workspace", BASE, HEADLINE),
             _rev("main", BASE, HEADLINE, experiments=[_exp("bushy-tau", changed, moved),
                                                        _exp("queued-one", changed, moved, state="queued"),
                                                        _exp("half-done", changed, moved, state="running")])]
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


def test_make_compare_reads_every_stages_metrics_at_each_finished_revision():
    shown = [_rev("workspace", BASE, {"headline": {"switchmem": 0.6}}),
             _rev("main", BASE, {"headline": {"switchmem": 0.6}},
                  experiments=[_exp("bushy-tau", BASE, {}), _exp("queued-one", BASE, {}, state="queued"),
                               _exp("half-done", BASE, {}, state="running"), _exp("broke", BASE, {}, state="failed")])]
    files = {"workspace": HEADLINE, _sha("main"): HEADLINE,
             _sha("bushy-tau"): {**HEADLINE, "retrieval_eval": {**HEADLINE["retrieval_eval"], "smg_hit@1": 0.4869}}}
    read = []
    filled = with_stage_metrics(shown, lambda rev: read.append(rev) or files[rev])
    assert read == ["workspace", _sha("main"), _sha("bushy-tau")]  # not the queued, running or failed ones
    assert [r[0] for r in revisions(filled)] == ["workspace", "main", "bushy-tau"]
    assert revisions(filled)[0][2] == {f"{s}.{k}": v for s, m in HEADLINE.items() for k, v in m.items()}
    assert experiments_table(filled).splitlines()[1].split() == ["metric", "retrieval_eval.smg_hit@1", "0.5097",
                                                                 "0.5097", "0.4869"]
    assert shown[0]["data"]["metrics"] == {"metrics/headline.json": {"data": {"switchmem": 0.6}}}  # not changed
