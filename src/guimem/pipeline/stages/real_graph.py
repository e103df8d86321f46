"""10_real_graph's parameters (params.yaml ``real_graph``): the embedders' projection, the graph's thresholds
(``graph``: GraphConfig's ``tau`` and ``theta``) and the tau sweep."""

from __future__ import annotations

from guimem.pipeline.params import (
    COUNT,
    GRAPH,
    IMAGE_EMBEDDER,
    PATH,
    REAL,
    TEXT_EMBEDDER,
    Items,
    Params,
    Stage,
    check_image_pca,
    check_tau_sweep,
    graph_config,
    thresholds,
)


def _real_graph(p: Params) -> None:
    """The graph's thresholds and each swept tau make valid graphs."""
    tau, theta = thresholds(p)
    p.build({"tau": "graph.tau", "theta": "graph.theta"}, graph_config, p, tau, theta)
    check_tau_sweep(p, theta)


STAGE = Stage("10_real_graph", "real_graph", {
    "recorded_dir": PATH, "image_embedder": IMAGE_EMBEDDER, "text_embedder": TEXT_EMBEDDER, "pca_dim": COUNT,
    "graph": GRAPH, "tau_sweep": Items(REAL, nonempty=True), "out_dir": PATH, "cache_dir": PATH,
    "figures_dir": PATH, "plots_dir": PATH, "metrics_path": PATH, "results_path": PATH,
}, (_real_graph, check_image_pca), reporting=("tau_sweep",))
