"""04_actor's parameters (params.yaml ``actor``): the folds, the actor's shape (``model``: ActorConfig's
fields), its training (``training``: TrainConfig's), DAgger, the size knobs."""

from __future__ import annotations

from guimem.actors.mini.config import ActorConfig
from guimem.actors.mini.train import TrainConfig
from guimem.core.policy import MODALITIES
from guimem.pipeline.params import (
    BATCH,
    COUNT,
    FOLDS,
    IMAGE_EMBEDDER,
    INTEGER,
    LEARNING_RATE,
    MAX_LAYERS,
    MAX_WEIGHT,
    PATH,
    POSITIVE,
    PROBABILITY,
    SEED,
    TEXT_EMBEDDER,
    THREADS,
    WEIGHT,
    Flag,
    Group,
    Items,
    Number,
    Params,
    Stage,
    Text,
    check_folds,
    check_folds_within,
    episodes,
)
from guimem.smg.memories import MEMORIES

MODEL = Group(ActorConfig, {
    "hidden_size": Number(integer=True, lo=1, hi=8192), "num_hidden_layers": Number(integer=True, lo=1, hi=MAX_LAYERS),
    "num_attention_heads": POSITIVE, "intermediate_size": Number(integer=True, lo=1, hi=32768),
    "dropout": Number(lo=0.0, below=1.0), "max_memory_tokens": Number(integer=True, lo=1, hi=1 << 16),
    "max_history": COUNT, "mimetic_init": Number(lo=0.0, hi=100.0), "word_init_scale": Number(above=0.0, hi=1e3),
    "exact_match": Flag(), "pixel_match": Flag(), "role_channel": Flag(), "act_context": Flag(), "wide_type_head": Flag(),
    "type_loss_weight": WEIGHT, "history_words": Number(integer=True, lo=0, hi=64), "history_effect": Flag(),
    "done_match": Flag(), "quoted_spans": Flag(),
})
TRAIN = Group(TrainConfig, {
    "epochs": INTEGER, "batch_size": BATCH, "lr": LEARNING_RATE, "weight_decay": Number(lo=0.0, hi=1e3),
    "warmup_steps": COUNT, "modality_weights": Items(WEIGHT, length=len(MODALITIES)), "goal_dropout": PROBABILITY,
    "type_balance": Number(lo=0.0, hi=2.0), "wide_lr_scale": Number(above=0.0, hi=MAX_WEIGHT),
    "validation_share": Number(lo=0.0, below=1.0), "novel_glyphs": PROBABILITY,
})


def _actor(p: Params) -> None:
    """The world's episodes, the folds, TrainConfig and ActorConfig, built as the notebook builds them."""
    if p.upstream("base", "episodes", Text()) == "recorded":
        raise p.error("memories_dir", "the memories and retrievals are of recorded runs (base.episodes: recorded), "
                                      "and the miniature trains on the world's: name a Hugging Face VLM checkpoint "
                                      "folder as closed_loop.actor.actor_model and run the stages after "
                                      "retrieval_eval as targets (README: SwitchMem on recorded steps)")
    check_folds(p)
    config = p.build({k: f"training.{k}" for k in TRAIN.fields}, TrainConfig, **p["training"], model=p["model"])
    p.build({k: f"model.{k}" for k in MODEL.fields}, ActorConfig.check, ActorConfig(**config.model))
    _rates(p, config)


def _rates(p: Params, config: TrainConfig) -> None:
    """The training memories' folds are at most the training episodes; the wide head's rate at most 1."""
    check_folds_within(p, "k_folds", episodes(p, "n_train", "max_train_episodes"), "training episodes")
    if config.lr * config.wide_lr_scale > 1.0:
        raise p.error("training.wide_lr_scale", f"the wide head's learning rate lr x wide_lr_scale must be at most 1, "
                                             f"got {config.lr} x {config.wide_lr_scale}")
    if config.lr * config.weight_decay >= 1.0:
        raise p.error("training.weight_decay", f"lr x weight_decay must be below 1 (AdamW would flip every weight's "
                                            f"sign), got {config.lr} x {config.weight_decay}")


STAGE = Stage("04_actor", "actor", {
    "world_dir": PATH, "subgoals_dir": PATH, "memories_dir": PATH, "retrieval_dir": PATH, "out_dir": PATH,
    "image_embedder": IMAGE_EMBEDDER, "text_embedder": TEXT_EMBEDDER, "seed": SEED, "k_folds": FOLDS,
    "kinds_per_step": Number(integer=True, lo=1, hi=len(MEMORIES)), "model": MODEL, "training": TRAIN,
    "dagger_rounds": COUNT, "dagger_tasks": POSITIVE, "dagger_epochs": POSITIVE, "dagger_max_steps": POSITIVE,
    "dagger_beta": PROBABILITY,
    "max_train_episodes": COUNT, "max_eval_steps": COUNT, "torch_threads": THREADS, "cache_dir": PATH,
    "figures_dir": PATH, "plots_dir": PATH, "metrics_path": PATH, "results_path": PATH,
}, (_actor,), reporting=("max_eval_steps",))
