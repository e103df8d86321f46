"""04_actor's parameters (params.yaml ``actor``): the frozen actor's folder (05's ``closed_loop.actor.actor_model``),
the sample of held-out steps. The actor's shape and training are pretraining's (params.yaml ``pretrain``,
:mod:`guimem.pipeline.pretrain`), never a stage's."""

from __future__ import annotations

from pathlib import Path

from guimem.actors.mini.policy import CARD_FILES
from guimem.pipeline.actor_params import check_pretrained_phones, names_miniature
from guimem.pipeline.params import COUNT, PATH, SEED, THREADS, Params, Stage, Text


def _actor(p: Params) -> None:
    """04 meets the miniature on the world's held-out steps: not a Hugging Face VLM, not recorded runs."""
    if p.upstream("base", "episodes", Text()) == "recorded":
        raise p.error("world_dir", "04 meets the miniature actor on the world's held-out steps, and the episodes are "
                                   "recorded runs (base.episodes: recorded): name a Hugging Face VLM checkpoint folder "
                                   "as closed_loop.actor.actor_model and run the stages after retrieval_eval as targets "
                                   "(README: SwitchMem on recorded steps)")
    if not names_miniature(p["actor_dir"]):
        raise p.error("actor_dir", f"04 meets the miniature actor: expected a folder saved by `make pretrain` "
                                   f"(pretrained/actor), got {p['actor_dir']!r:.80}")
    missing = sorted(n for n in CARD_FILES if Path(p["actor_dir"]).is_dir() and not (Path(p["actor_dir"]) / n).is_file())
    if missing:
        raise p.error("actor_dir", f"the miniature in {p['actor_dir']} has no model card ({', '.join(missing)}): "
                                   "04 shows how it was made; save it with `make pretrain`")
    check_pretrained_phones(p, p["actor_dir"], "actor_dir")


STAGE = Stage("04_actor", "actor", {
    "world_dir": PATH, "retrieval_dir": PATH, "actor_dir": PATH, "seed": SEED, "max_eval_steps": COUNT,
    "torch_threads": THREADS, "figures_dir": PATH, "plots_dir": PATH, "metrics_path": PATH, "results_path": PATH,
}, (_actor,), reporting=("max_eval_steps",))
