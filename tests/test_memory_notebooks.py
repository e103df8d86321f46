"""Smoke runs of 02_graph_build and 03_retrieval_eval on a tiny world ("it runs", then "the numbers are right")."""

import json

import numpy as np
import pytest
from PIL import Image

from guimem.core.store import load_episodes

TINY = dict(image_embedder="pixels", text_embedder="hashing", pca_dim=8, tau_sweep=[0.9, 0.97],
            theta_sweep=[0.8, 1.0])


@pytest.fixture(scope="module")
def stage_dir(tmp_path_factory):
    """A tiny world and its rule segmentation at the default paths, as 00 and 01 would leave them."""
    from nbsmoke import tiny_segmented_world

    return tiny_segmented_world(tmp_path_factory.mktemp("memory_nb"), n_train=10, n_test=3, seed=5077)


@pytest.fixture(scope="module")
def graph_build(stage_dir):
    from nbsmoke import run_notebook

    return run_notebook("02_graph_build", stage_dir, cache_dir=str(stage_dir / "cache"), **TINY)


@pytest.fixture(scope="module")
def retrieval_eval(stage_dir, graph_build):
    from nbsmoke import run_notebook

    return run_notebook("03_retrieval_eval", stage_dir, cache_dir=str(stage_dir / "cache"), ks=[1, 3],
                        tau_sweep=[0.9], image_embedder="pixels", text_embedder="hashing")


@pytest.mark.notebook
@pytest.mark.slow
def test_graph_build_notebook_runs(stage_dir, graph_build):
    out = stage_dir / "data" / "graph_build"
    for name in ("smg", "flat", "action_graph", "task_graph"):
        assert json.loads((out / name / "memory.json").read_text())["memory"] == name
        ids = [json.loads(line)["id"] for line in (out / name / "items.jsonl").read_text().splitlines()]
        assert ids and all(i.startswith(f"{name}:") for i in ids)
    assert len((out / "flat" / "items.jsonl").read_text().splitlines()) == graph_build["flat"]["items"]
    assert np.load(out / "projection" / "basis.npy").shape[0] == graph_build["image_dim"] == 8  # pca_dim rows
    for what in ("sweeps", "graph", "memory"):
        assert (stage_dir / "figures" / f"graph_build_{what}.png").stat().st_size > 10_000


@pytest.mark.notebook
@pytest.mark.slow
def test_graph_build_notebook_metrics(stage_dir, graph_build):
    m = graph_build
    n_subgoals = sum(1 for _ in open(stage_dir / "data" / "segmentation" / "memory.jsonl"))
    assert m["episodes"] == 10 and m["subgoals"] == n_subgoals == m["flat"]["items"]
    smg = m["smg"]
    assert smg["subgoals_seen"] == n_subgoals == smg["edges"] + smg["duplicates_dropped"]
    assert 0 < smg["nodes"] <= smg["screens_merged"] and 0 < smg["purity"] <= 1
    assert m["image_embedder"].startswith("pixels+pca8-") and m["image_dim"] == 8
    taus = m["tau_sweep"]
    assert taus[0]["nodes"] <= taus[1]["nodes"]  # a higher tau merges less
    thetas = m["theta_sweep"]
    assert thetas[0]["dedup_ratio"] >= thetas[1]["dedup_ratio"]  # a higher theta drops less
    assert m["task_graph"]["subgoals_seen"] == 10  # one edge offered per trajectory


@pytest.mark.notebook
@pytest.mark.slow
def test_retrieval_eval_notebook_runs(stage_dir, retrieval_eval):
    out = stage_dir / "data" / "retrieval_eval"
    test_steps = sum(len(e.steps) for e in load_episodes(stage_dir / "data" / "world" / "test"))
    for name in ("smg", "flat", "action_graph", "task_graph"):
        lines = (out / name / "steps.jsonl").read_text().splitlines()
        assert len(lines) == test_steps
        record = json.loads(lines[0])
        style = json.loads((stage_dir / "data" / "graph_build" / name / "memory.json").read_text())["style"]
        assert list(Image.open(out / name / record["image"]).size) == style["image_size"]  # the memory's own size
        assert record["text"].startswith("Past experience")
    for what in ("hits", "tau"):
        assert (stage_dir / "figures" / f"retrieval_eval_{what}.png").stat().st_size > 10_000


@pytest.mark.notebook
@pytest.mark.slow
def test_retrieval_eval_notebook_metrics(stage_dir, retrieval_eval):
    m = retrieval_eval
    test_steps = sum(len(e.steps) for e in load_episodes(stage_dir / "data" / "world" / "test"))
    assert m["steps"] == test_steps and m["test_episodes"] == 3
    for name, s in m["memories"].items():
        assert s["steps"] == test_steps
        assert 0 <= s["hit@1"] <= s["hit@3"] <= 1 and s["hit@shown"] <= 1
        assert s["items_shown"] <= 3 and s["tokens_mean"] > 0
    assert m["memories"]["flat"]["items_retrieved"] == 3.0
    assert m["tau_sweep"][0]["tau"] == 0.9


@pytest.mark.parametrize("stage, notebook", [("graph_build", "02_graph_build"), ("retrieval_eval", "03_retrieval_eval")])
def test_params_yaml_matches_the_notebook_defaults(repo_root, stage, notebook):
    import ast

    import yaml

    from nbsmoke import notebook_parameters

    from guimem.pipeline.params import Group, find_stage

    section = yaml.safe_load((repo_root / "params.yaml").read_text())[stage]
    defaults = {k: ast.literal_eval(v) for k, v in notebook_parameters(repo_root / "notebooks" / f"{notebook}.py").items()}
    assert set(section) <= set(defaults)
    for name, field in find_stage(notebook).fields.items():  # a group's defaults are its config's
        if isinstance(field, Group):
            defaults[name] = {k: defaults[name].get(k, getattr(field.config, k)) for k in section[name]}
    assert {k: defaults[k] for k in section} == section  # the notebook's defaults are the pipeline's


# Every reporting knob but ``executor`` is changed here. 02 and 03 hand the executor one job, embedding new
# screens (CachedImageEmbedder.embed_files), and test_executor shows that on a local Ray it gives the
# vectors it gives in process, in the same order; a stage notebook on a local Ray is run whole in
# test_off_process_stages. A Ray started in each of these two kernels as well cost the suite a minute.
@pytest.mark.notebook
@pytest.mark.slow
def test_graph_build_reporting_knobs_change_nothing_later_stages_read(stage_dir, graph_build, tmp_path):
    from nbsmoke import rerun_changes_only_the_report

    from guimem.pipeline.params import find_stage

    changed = dict(tau_sweep=[0.95], theta_sweep=[0.9], batch_size=3, embed_workers=1)
    assert set(changed) | {"executor"} == set(find_stage("02_graph_build").reporting)  # executor: see above
    # a fresh embedding cache, so that the rerun embeds every screen again, in process where the first run
    # used two worker processes (with the pixels embedder the batch size and worker count change nothing;
    # tests/test_embedding.py covers them for EfficientNet): the same vectors, the same memories
    rerun_changes_only_the_report("02_graph_build", stage_dir, tmp_path / "again",
                                  **{**TINY, **changed, "cache_dir": str(tmp_path / "fresh_cache")})


@pytest.mark.notebook
@pytest.mark.slow
def test_retrieval_eval_reporting_knobs_change_nothing_later_stages_read(stage_dir, retrieval_eval, tmp_path):
    from nbsmoke import rerun_changes_only_the_report

    from guimem.pipeline.params import find_stage

    changed = dict(ks=[2], tau_sweep=[0.95], embed_workers=1)
    assert set(changed) | {"executor"} == set(find_stage("03_retrieval_eval").reporting)  # executor: see above
    rerun_changes_only_the_report("03_retrieval_eval", stage_dir, tmp_path / "again", cache_dir=str(tmp_path / "fresh"),
                                  image_embedder="pixels", text_embedder="hashing", **changed)
