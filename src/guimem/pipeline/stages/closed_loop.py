"""05_closed_loop's parameters (params.yaml ``closed_loop``): tasks and seeds, the memories compared, the
frozen actor (the ``actor`` group: ActorSpec), where it runs (``executor``: ExecutorSpec), and the step-level
action score."""

from __future__ import annotations

from guimem.core.policy import MODALITIES
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
    Stage,
    Text,
    check_executor,
)
from guimem.smg.memories import MEMORIES

STAGE = Stage("05_closed_loop", "closed_loop", {
    "seed": SEED, "n_seeds": POSITIVE, "max_tasks": COUNT,
    "memories": Items(Text((NO_MEMORY, *MEMORIES)), nonempty=True, unique=True),
    "modality": Text(tuple(m for m in MODALITIES if m != "none")), "k": COUNT, "history_len": COUNT,
    "max_steps": POSITIVE, "batch_size": COUNT, "executor": EXECUTOR_GROUP, "chunks_dir": OPTIONAL_PATH,
    "action_score_modalities": Items(Text(MODALITIES), nonempty=True, unique=True),
    "action_score_memory": Text(MEMORIES), "world_dir": PATH, "memories_dir": PATH, "retrieval_dir": PATH,
    "actor": ACTOR, "image_embedder": IMAGE_EMBEDDER, "text_embedder": TEXT_EMBEDDER,
    "cache_dir": PATH, "out_dir": PATH, "figures_dir": PATH, "metrics_path": PATH, "results_path": PATH,
}, (check_actor, check_executor), reporting=("executor",))
