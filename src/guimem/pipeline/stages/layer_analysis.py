"""06_layer_analysis's parameters (params.yaml ``layer_analysis``): the renderings compared, the probe pool's
folds, the sampled preference, the probe and its cross-validation, where the actor runs."""

from __future__ import annotations

from guimem.actors.hf.parsing import ANSWER_FORMATS, COORD_CONVENTIONS
from guimem.eval.action_match import VARIANTS
from guimem.pipeline.params import (
    BATCH,
    COUNT,
    EXECUTOR,
    FOLDS,
    GPUS,
    IMAGE_EMBEDDER,
    INVERSE_STRENGTH,
    OPTIONAL_PATH,
    PATH,
    POSITIVE,
    SEED,
    TEMPERATURE,
    TEXT_EMBEDDER,
    THREADS,
    TOKENS,
    WORKERS,
    Items,
    Number,
    Params,
    Stage,
    Text,
    check_executor,
    check_folds,
    check_folds_within,
    check_probe_dim,
    episodes,
)
from guimem.smg.memories import MEMORIES


def _pool_folds(p: Params) -> None:
    """The pool's memory folds and the probe's CV folds are at most its episodes."""
    pool = episodes(p, "n_memory", "max_pool_episodes")
    check_folds_within(p, "k_folds", pool, "memory episodes of the probe pool")
    check_folds_within(p, "cv_folds", pool, "memory episodes of the probe pool")


STAGE = Stage("06_layer_analysis", "layer_analysis", {
    "world_dir": PATH, "subgoals_dir": PATH, "memories_dir": PATH, "retrieval_dir": PATH, "actor_model": Text(),
    "actor_dir": PATH, "hf_coords": Text(COORD_CONVENTIONS), "hf_answer_format": Text(ANSWER_FORMATS),
    "hf_max_new_tokens": TOKENS, "history_len": COUNT,
    "out_dir": PATH, "image_embedder": IMAGE_EMBEDDER, "text_embedder": TEXT_EMBEDDER, "seed": SEED,
    "memories": Items(Text(MEMORIES), nonempty=True, unique=True), "k_folds": FOLDS,
    "n_samples": Number(integer=True, lo=1, hi=1024), "temperature": TEMPERATURE, "rule": Text(VARIANTS),
    "pca_dim": POSITIVE, "probe_c": INVERSE_STRENGTH, "cv_folds": FOLDS, "n_boot": Number(integer=True, lo=1, hi=10**6),
    "max_pool_episodes": COUNT, "max_eval_steps": COUNT, "batch_size": BATCH, "torch_threads": THREADS,
    "executor": EXECUTOR, "workers": WORKERS, "gpus_per_worker": GPUS, "chunks_dir": OPTIONAL_PATH, "cache_dir": PATH,
    "figures_dir": PATH, "plots_dir": PATH, "metrics_path": PATH, "results_path": PATH,
}, (check_folds, check_executor, _pool_folds, check_probe_dim),
    reporting=("cv_folds", "n_boot", "executor", "workers", "gpus_per_worker"))
