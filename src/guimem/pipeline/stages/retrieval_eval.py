"""03_retrieval_eval's parameters (params.yaml ``retrieval_eval``): hit@k, the anchors per query, the tau sweep."""

from __future__ import annotations

from guimem.pipeline.params import (
    COUNT,
    EXECUTOR,
    IMAGE_EMBEDDER,
    PATH,
    POSITIVE,
    REAL,
    TEXT_EMBEDDER,
    WORKERS,
    Items,
    Params,
    Stage,
    check_tau_sweep,
)
from guimem.smg.graph import GraphConfig


def _tau_sweep(p: Params) -> None:
    """Each swept tau makes a valid graph (theta is the saved memory's)."""
    check_tau_sweep(p, GraphConfig.theta)


STAGE = Stage("03_retrieval_eval", "retrieval_eval", {
    "world_dir": PATH, "subgoals_dir": PATH, "memories_dir": PATH, "out_dir": PATH,
    "image_embedder": IMAGE_EMBEDDER, "text_embedder": TEXT_EMBEDDER, "ks": Items(POSITIVE, nonempty=True, unique=True),
    "k_nodes": COUNT, "tau_sweep": Items(REAL), "max_test_episodes": COUNT, "cache_dir": PATH,
    "embed_workers": WORKERS, "executor": EXECUTOR, "figures_dir": PATH, "plots_dir": PATH,
    "metrics_path": PATH, "results_path": PATH,
}, (_tau_sweep,), reporting=("ks", "tau_sweep", "embed_workers", "executor"))
