"""02_graph_build's parameters (params.yaml ``graph_build``): the embedders, the graph's thresholds
(``graph``: GraphConfig's ``tau`` and ``theta``), the four memories' retrieval (``retrieval``:
RetrievalConfig's fields) and rendering, the sweeps."""

from __future__ import annotations

from guimem.models.embedding import HashingTextEmbedder, PixelEmbedder
from guimem.pipeline.params import (
    BATCH,
    COUNT,
    EXECUTOR,
    GRAPH,
    IMAGE_EMBEDDER,
    INTEGER,
    PATH,
    REAL,
    SIDE,
    TEXT_EMBEDDER,
    WORKERS,
    Group,
    Items,
    Params,
    Stage,
    Text,
    check_image_pca,
    check_tau_sweep,
    graph_config,
    thresholds,
)
from guimem.smg.index import NODE_INDEXES
from guimem.smg.memories import RenderStyle, make_memory
from guimem.smg.retrieval_config import KIND_FIELDS, RetrievalConfig

_STAND_INS = (PixelEmbedder(1, 1), HashingTextEmbedder(1))  # a memory built only to run its constructor's checks
_THRESHOLDS = {"tau": "graph.tau", "theta": "graph.theta"}
RETRIEVAL = Group(RetrievalConfig, {"k_nodes": INTEGER, "flat_k": INTEGER, "task_k": INTEGER, "task_alpha": REAL,
                                    "rank_by": Text()})  # each memory's constructor checks its own


def _memories(p: Params) -> None:
    """The four memories, built as the notebook builds them (empty), with its RenderStyle."""
    width, height = p["memory_image_width"], p["memory_image_height"]
    short_side = "memory_image_width" if width <= height - width // 4 else "memory_image_height"  # the one too small
    style = p.build({"max_items": "max_items", "max_actions": "max_actions", "image_size": short_side}, RenderStyle,
                    max_items=p["max_items"], max_actions=p["max_actions"], image_size=(width, height))
    recall = RetrievalConfig(**p["retrieval"])
    for name, args in KIND_FIELDS.items():
        names = {**_THRESHOLDS, **{a: f"retrieval.{f}" for a, f in args.items()}}
        p.build(names, make_memory, name, *_STAND_INS, style=style, **p["graph"], **recall.settings(name))


def _graph_sweeps(p: Params) -> None:
    """Each swept tau (at theta) and theta (at tau) makes a valid graph."""
    tau, theta = thresholds(p)
    check_tau_sweep(p, theta)
    for i, t in enumerate(p["theta_sweep"]):
        p.build({"theta": "theta_sweep"}, graph_config, p, tau, t, item=i)


STAGE = Stage("02_graph_build", "graph_build", {
    "world_dir": PATH, "subgoals_dir": PATH, "out_dir": PATH, "image_embedder": IMAGE_EMBEDDER,
    "text_embedder": TEXT_EMBEDDER, "pca_dim": COUNT, "graph": GRAPH, "retrieval": RETRIEVAL,
    "max_items": INTEGER, "max_actions": INTEGER, "memory_image_width": SIDE, "memory_image_height": SIDE,
    "node_index": Text(NODE_INDEXES), "exact_below": COUNT,
    "tau_sweep": Items(REAL), "theta_sweep": Items(REAL), "max_memory_episodes": COUNT, "batch_size": BATCH,
    "embed_workers": WORKERS, "executor": EXECUTOR, "cache_dir": PATH, "figures_dir": PATH, "plots_dir": PATH,
    "metrics_path": PATH, "results_path": PATH,
}, (_memories, _graph_sweeps, check_image_pca),
    reporting=("tau_sweep", "theta_sweep", "batch_size", "embed_workers", "executor"))
