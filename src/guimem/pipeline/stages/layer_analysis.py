"""06_layer_analysis's parameters (params.yaml ``layer_analysis``): the renderings compared, the probe pool's
folds, the sampled preference, the probe and its cross-validation, where the actor runs."""

from __future__ import annotations

from guimem.eval.action_match import VARIANTS
from guimem.pipeline.actor_params import ACTOR, check_actor, check_probe_dim
from guimem.pipeline.params import (
    COUNT,
    EXECUTOR_GROUP,
    FOLDS,
    IMAGE_EMBEDDER,
    OPTIONAL_PATH,
    PATH,
    PROBE,
    SEED,
    TEMPERATURE,
    TEXT_EMBEDDER,
    Group,
    Items,
    Number,
    Params,
    Stage,
    Text,
    check_executor,
    check_folds,
    check_folds_within,
    episodes,
)
from guimem.routing.probe import CurveConfig
from guimem.routing.records import MAX_SAMPLES, SampledPreference
from guimem.smg.memories import MEMORIES

PREFERENCE = Group(SampledPreference, {"n_samples": Number(integer=True, lo=1, hi=MAX_SAMPLES),
                                       "temperature": TEMPERATURE, "rule": Text(VARIANTS)})
CURVE = Group(CurveConfig, {"folds": FOLDS, "n_boot": Number(integer=True, lo=1, hi=10**6)})


def _pool_folds(p: Params) -> None:
    """The pool's memory folds and the probe's CV folds are at most its episodes."""
    pool = episodes(p, "n_memory", "max_pool_episodes")
    check_folds_within(p, "k_folds", pool, "memory episodes of the probe pool")
    if pool is not None and p["curve"].get("folds", CurveConfig.folds) > pool:
        raise p.error("curve.folds", f"must be at most the {pool} memory episodes of the probe pool it splits by "
                                     f"episode, got {p['curve'].get('folds', CurveConfig.folds)}")


STAGE = Stage("06_layer_analysis", "layer_analysis", {
    "world_dir": PATH, "subgoals_dir": PATH, "memories_dir": PATH, "retrieval_dir": PATH, "actor": ACTOR,
    "history_len": COUNT, "out_dir": PATH, "image_embedder": IMAGE_EMBEDDER,
    "text_embedder": TEXT_EMBEDDER, "seed": SEED, "memories": Items(Text(MEMORIES), nonempty=True, unique=True),
    "k_folds": FOLDS, "preference": PREFERENCE, "probe": PROBE, "curve": CURVE, "max_pool_episodes": COUNT,
    "max_eval_steps": COUNT, "executor": EXECUTOR_GROUP, "chunks_dir": OPTIONAL_PATH, "cache_dir": PATH,
    "figures_dir": PATH, "plots_dir": PATH, "metrics_path": PATH, "results_path": PATH,
}, (check_folds, check_actor, check_executor, _pool_folds, check_probe_dim), reporting=("curve", "executor"))
