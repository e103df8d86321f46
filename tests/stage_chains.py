"""The tiny pipelines the notebook tests of stages 04-09 read, each built once per test session.

Two chains, on one tiny world (12 training and 3 test episodes, master seed :data:`SMOKE_SEED`):

* :func:`build_actor_chain`: the world, its rule segmentation, 02_graph_build, 03_retrieval_eval, a
  tiny actor pretrained in ``pretrained/actor`` (:func:`pretrain_tiny`) and 04_actor, with
  ``params.yaml``'s sections on tiny sizes;
* :func:`build_switchmem_chain`: a copy of that, then 05_closed_loop and the four SwitchMem notebooks.

Several test files read them (the actor's, the SwitchMem notebooks', the Hugging Face actor's, the
off-process runs'), and ``make test`` spreads the files over worker processes: :func:`built_once`
builds a chain in the first worker that asks for it while the others wait on a file lock, then all
read the same folder. A test never writes into a chain's folder: it copies what it changes.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np
import yaml
from filelock import FileLock

PARAMS = Path(__file__).resolve().parents[1] / "params.yaml"
SMOKE_SEED = 913  # a master seed whose world once broke a teaching cell (00_world's demonstration)
CLOSED_LOOP_TINY = dict(max_tasks=2, n_seeds=2, max_steps=4, seed=SMOKE_SEED)


def built_once(tmp_path_factory, name: str, build: Callable[[Path], dict[str, Any]]) -> tuple[Path, dict[str, Any]]:
    """``(folder, results)`` of ``build(folder)``, run once per test session however many worker
    processes ask: the first builds under a lock in the session's shared temporary folder, the
    others wait and read its results (JSON) back. A build that failed is built again by the next
    asker, so every test that needs it reports the failure."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    root = tmp_path_factory.getbasetemp()
    root = root.parent if worker else root  # under xdist: the folder all the session's workers share
    folder, done = root / f"chain_{name}", root / f"chain_{name}.json"
    with FileLock(str(root / f"chain_{name}.lock")):
        if done.is_file():
            return folder, json.loads(done.read_text())
        shutil.rmtree(folder, ignore_errors=True)  # a half-built chain of a failed attempt
        folder.mkdir()
        results = build(folder)
        done.write_text(json.dumps(results))
        return folder, results


def params(section: str) -> dict[str, Any]:
    """``params.yaml``'s ``section``, as dvc passes it to the stage."""
    return yaml.safe_load(PARAMS.read_text())[section]


def embedders(tmp: Path) -> dict[str, str]:
    """The light embedders every tiny chain uses (no EfficientNet, no MiniLM)."""
    return dict(image_embedder="pixels", text_embedder="hashing", cache_dir=str(tmp / "cache"))


def actor_params(tmp: Path) -> dict[str, Any]:
    """04_actor's parameters as dvc passes them (params.yaml's actor section; the actor: pretrained/actor)."""
    return {**params("actor"), "seed": SMOKE_SEED}


def pretrain_tiny(tmp: Path) -> dict[str, Any]:
    """``make pretrain`` on tiny sizes into ``tmp/pretrained/actor``, the folder 04-09 read by default:
    params.yaml's pretrain section on two phones of 6 episodes, a 32-wide actor, 2 epochs and one
    DAgger round of 6 rollouts; the light embedders. Its model card."""
    from guimem.phone.config import WorldConfig
    from guimem.pipeline.pretrain import MemorySettings, PretrainConfig, pretrain

    section = params("pretrain")
    config = PretrainConfig(**{**section, "seed": SMOKE_SEED, "phones": (0, 5), "episodes_per_phone": 6, "k_folds": 2,
                               "model": {**section["model"], "hidden_size": 32, "intermediate_size": 64},
                               "training": {**section["training"], "epochs": 2}, "dagger_rounds": 1,
                               "dagger_tasks": 6, "dagger_epochs": 1, "dagger_max_steps": 8, "embed_workers": 1,
                               "torch_threads": 1})
    memory = MemorySettings.from_section({**params("graph_build"), "image_embedder": "pixels",
                                          "text_embedder": "hashing", "pca_dim": 8})
    return pretrain(config, WorldConfig.from_dict(params("world")["phone"]), memory, tmp / "pretrained" / "actor",
                    tmp / "pretrain", cache_dir=tmp / "cache", progress=False, command="tests/stage_chains.py")


def closed_loop_params(tmp: Path, actor: dict[str, Any] | None = None, **changed: Any) -> dict[str, Any]:
    """05_closed_loop's parameters as dvc passes them, on few tasks and steps (``actor``: ActorSpec fields)."""
    stage = params("closed_loop")
    return {**stage, **CLOSED_LOOP_TINY, **embedders(tmp), "actor": {**stage["actor"], **(actor or {})}, **changed}


def layer_analysis_params(tmp: Path, actor: dict[str, Any] | None = None,
                          layer_analysis: dict[str, Any] | None = None) -> dict[str, Any]:
    """06_layer_analysis's parameters as dvc passes them, on the tiny world (``layer_analysis``: keys
    of the section, its groups' fields merged into them)."""
    actor, layer_analysis = actor or {}, layer_analysis or {}
    section = params("layer_analysis")
    smoke = {"curve": {"folds": 2, "n_boot": 20}}
    groups = {name: {**section[name], **smoke.get(name, {}), **layer_analysis.get(name, {})}
              for name in ("preference", "probe", "curve")}
    rest = {k: v for k, v in layer_analysis.items() if k not in groups}
    return {**section, **groups, **embedders(tmp), "actor": {**params("closed_loop")["actor"], **actor},
            "seed": SMOKE_SEED, "history_len": 4, "k_folds": 2, **rest}


def routing_stats_params(tmp: Path, actor: dict[str, Any] | None = None) -> dict[str, Any]:
    """09_routing_stats's parameters as dvc passes them (closed_loop's where it takes those), on the tiny world."""
    return {**params("routing_stats"), **CLOSED_LOOP_TINY, **embedders(tmp), "history_len": 4, "k": 0,
            "batch_size": 0, "actor": {**params("closed_loop")["actor"], **(actor or {})}}


def run_switchmem_notebooks(tmp: Path, actor: dict[str, Any] | None = None,
                            layer_analysis: dict[str, Any] | None = None,
                            memories: list[str] | None = None) -> dict[str, dict]:
    """06_layer_analysis, 07_probe_router, 08_oracle_headroom and 09_routing_stats, in order, in ``tmp``
    (which holds the earlier stages' outputs), with params.yaml's sections as dvc passes them, the
    actor group ``actor`` (ActorSpec's fields: actor_model, coords, ...) given to 06 and 09, keys of
    06's ``layer_analysis`` (its groups' fields merged into them), and ``memories`` (default:
    params.yaml's) as the memories 06 records as the pool's, 07 and 08 route and 09 reports offline;
    09's closed loop routes ``routing_stats.memory`` (the SMG), which must be among them."""
    from nbsmoke import run_notebook

    from guimem.routing.records import StepRecords

    rule = params("layer_analysis")["preference"]["rule"]
    routed = {} if memories is None else {"memories": list(memories)}
    offline = {} if memories is None else {"offline_memories": list(memories)}
    out = {"06": run_notebook("06_layer_analysis", tmp,
                              **layer_analysis_params(tmp, actor, {**routed, **(layer_analysis or {})}))}
    # The tiny actor's two renderings tie on nearly every step (their samples share random numbers), which
    # 06 reports and 07 refuses to fit a probe on; so the pool's preferences are planted here — alternate
    # episodes prefer image and text — and 07-09 are run for their code paths, not their numbers.
    pool = StepRecords.load(tmp / "data" / "layer_analysis" / "pool")
    episodes = sorted(set(pool.episodes))
    image_wins = np.array([episodes.index(e) % 2 == 0 for e in pool.episodes])
    for by in pool.sampled.values():
        by["image"], by["text"] = np.where(image_wins, 0.75, 0.25), np.where(image_wins, 0.25, 0.75)
    pool.save(tmp / "data" / "layer_analysis" / "pool")
    section = params("probe_router")
    out["07"] = run_notebook("07_probe_router", tmp, **{**section, "seed": SMOKE_SEED, "rule": rule,
                                                         "router": {**section["router"], "epochs": 20}, **routed})
    out["08"] = run_notebook("08_oracle_headroom", tmp, **{**params("oracle_headroom"), "rule": rule, **routed})
    out["09"] = run_notebook("09_routing_stats", tmp, **{**routing_stats_params(tmp, actor), **offline})
    return out


def build_actor_chain(tmp: Path) -> dict[str, Any]:
    """A tiny world, segmented and turned into memories by 02/03, a tiny actor pretrained, then the
    04_actor notebook: its metrics."""
    from nbsmoke import run_notebook, tiny_segmented_world

    tiny_segmented_world(tmp, n_train=12, n_test=3, seed=SMOKE_SEED)
    run_notebook("02_graph_build", tmp, pca_dim=8, tau_sweep=[0.9], theta_sweep=[0.9], **embedders(tmp))
    run_notebook("03_retrieval_eval", tmp, ks=[1], tau_sweep=[0.9], **embedders(tmp))
    pretrain_tiny(tmp)
    return run_notebook("04_actor", tmp, **actor_params(tmp))


def build_switchmem_chain(actor_chain: Path) -> Callable[[Path], dict[str, Any]]:
    """A builder of the SwitchMem chain: a copy of ``actor_chain``'s folder, then 05_closed_loop on
    its actor and the four SwitchMem notebooks; results by notebook number ("05" ... "09")."""
    def build(tmp: Path) -> dict[str, Any]:
        from nbsmoke import run_notebook

        shutil.copytree(actor_chain, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.ipynb"))
        closed = run_notebook("05_closed_loop", tmp, **closed_loop_params(tmp))
        return {"05": closed, **run_switchmem_notebooks(tmp)}
    return build
