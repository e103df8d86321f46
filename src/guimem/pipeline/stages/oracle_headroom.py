"""08_oracle_headroom's parameters (params.yaml ``oracle_headroom``): the routed memories and the step rule."""

from __future__ import annotations

from guimem.eval.action_match import VARIANTS
from guimem.pipeline.params import PATH, Items, Params, Stage, Text, check_subset
from guimem.smg.memories import MEMORIES


def _routed_memories(p: Params) -> None:
    """Each memory has a router from 07."""
    check_subset(p, "memories", "probe_router", "memories", "router (07_probe_router)")


STAGE = Stage("08_oracle_headroom", "oracle_headroom", {
    "records_dir": PATH, "routers_dir": PATH, "memories": Items(Text(MEMORIES), nonempty=True, unique=True),
    "rule": Text(VARIANTS), "figures_dir": PATH, "metrics_path": PATH, "results_path": PATH,
}, (_routed_memories,))
