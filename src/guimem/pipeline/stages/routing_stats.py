"""09_routing_stats's parameters (params.yaml ``routing_stats``): the routed memory, the offline ones, and
the closed loop (its tasks, seeds and budget are 05's, passed by dvc.yaml)."""

from __future__ import annotations

from guimem.eval.closed_loop import NO_MEMORY
from guimem.pipeline.actor_params import ACTOR, check_actor
from guimem.pipeline.params import (
    COUNT,
    EXECUTOR_GROUP,
    IMAGE_EMBEDDER,
    OPTIONAL_PATH,
    PATH,
    POSITIVE,
    SEED,
    TEXT_EMBEDDER,
    Items,
    Params,
    Stage,
    Text,
    check_executor,
    check_subset,
    shown,
)
from guimem.smg.memories import MEMORIES


def _routed_memory(p: Params) -> None:
    """The routed memory and the offline ones have routers from 07."""
    check_subset(p, "memory", "probe_router", "memories", "router (07_probe_router)")
    check_subset(p, "offline_memories", "probe_router", "memories", "router (07_probe_router)")


def _reused_traces(p: Params) -> None:
    """09 reuses 05's no-memory and text plays of its memory: 05 must play them."""
    played = p.upstream("closed_loop", "memories", Items(Text((NO_MEMORY, *MEMORIES))))
    if played is not None:
        for kind in (NO_MEMORY, p["memory"]):
            if kind not in played:
                raise p.error("memory", f"09 reuses 05's {kind!r} plays, but closed_loop.memories is {shown(list(played))}")
    if p.upstream("closed_loop", "modality", Text()) not in (None, "text"):
        raise p.error("memory", "09 reuses 05's text plays, but closed_loop.modality is not text")


STAGE = Stage("09_routing_stats", "routing_stats", {
    "world_dir": PATH, "memories_dir": PATH, "actor": ACTOR, "closed_loop_dir": PATH,
    "records_dir": PATH, "routers_dir": PATH, "out_dir": PATH, "memory": Text(MEMORIES),
    "offline_memories": Items(Text(MEMORIES), nonempty=True, unique=True), "seed": SEED, "n_seeds": POSITIVE,
    "max_tasks": COUNT, "max_steps": POSITIVE, "history_len": COUNT, "k": COUNT, "batch_size": COUNT,
    "executor": EXECUTOR_GROUP, "chunks_dir": OPTIONAL_PATH, "image_embedder": IMAGE_EMBEDDER,
    "text_embedder": TEXT_EMBEDDER, "cache_dir": PATH, "figures_dir": PATH, "metrics_path": PATH,
    "results_path": PATH,
}, (check_actor, check_executor, _routed_memory, _reused_traces), reporting=("executor",))
