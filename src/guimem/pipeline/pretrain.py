"""Pretraining the frozen actor once, outside the pipeline (``make pretrain``).

Both papers study a frozen, pretrained actor that the memory method never trains: its competence
comes from pretraining, and memory supplies what an unfamiliar app demands. The miniature actor is
made the same way. :func:`pretrain` generates a corpus of its own on *training phones only* (the
variants in ``pretrain.phones``, never one of the pipeline's evaluation phones), cuts it into subgoals
with the rule segmenter, gives every training step the experience retrieved for it from memories of
its own phone's *other* tasks (k folds by task, :mod:`guimem.train.folds`), trains the actor by
behaviour cloning and then DAgger on its own rollouts (:mod:`guimem.actors.mini.train`,
:mod:`guimem.train.dagger`), and saves it with a model card. The pipeline reads the committed
result and never trains it (``dvc.yaml``: stage ``actor`` depends on the folder, nothing writes it).

What the corpus takes from ``params.yaml``: ``pretrain`` (this module's :class:`PretrainConfig`),
the phone's behaviour and the demonstrator's noise from ``world.phone`` (the phones themselves and the
corpus size are pretraining's own), the judge's evidence share from ``segmentation``, and how memories
are built, retrieved and rendered from ``graph_build`` — the frozen actor learns to read memory as the
pipeline renders it. Tasks are drawn from the training parameter combinations of the seen templates
(:func:`guimem.phone.demonstrator.split_combos`, a fixed hash split), so no test task of any world
seed is ever pretrained on.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from guimem.actors.mini.config import ActorConfig
from guimem.actors.mini.policy import ACTOR_KIND, CARD_JSON, CARD_README, MiniActor
from guimem.actors.mini.train import STRICT_MATCH, TrainConfig, train_actor
from guimem.core.data import DataError, Episode
from guimem.core.io.folders import check_replaceable
from guimem.core.policy import MODALITIES
from guimem.core.store import load_episodes
from guimem.eval.action_match import ELEMENT_EXACT
from guimem.eval.closed_loop import replay_world_config
from guimem.eval.step_table import step_table
from guimem.models.embedding import cached_image_embedder, cached_text_embedder, embed_screenshots, fit_projection
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import generate_dataset
from guimem.pipeline.params import (
    BATCH,
    COUNT,
    FOLDS,
    LEARNING_RATE,
    MAX_LAYERS,
    MAX_WEIGHT,
    POSITIVE,
    PROBABILITY,
    SEED,
    THREADS,
    WEIGHT,
    WORKERS,
    Flag,
    Group,
    Items,
    Number,
    Params,
    Source,
    Stage,
)
from guimem.pipeline.paths import repo_root
from guimem.pipeline.runner import check_parameters, read_parameters, read_params_file
from guimem.pipeline.verify import machine
from guimem.smg.index import NodeSearch
from guimem.smg.judge import RuleJudge
from guimem.smg.memories import MEMORIES, RenderStyle, build_memory
from guimem.smg.retrieval_config import RetrievalConfig
from guimem.smg.segment import make_segmenter, segment_episodes
from guimem.train.dagger import run_dagger
from guimem.train.folds import build_kfold_examples, fold_memories, validation_split



@dataclasses.dataclass(frozen=True)
class PretrainConfig:
    """``params.yaml: pretrain``: the corpus, the actor's shape and its training (bounds: :data:`SCHEMA`)."""

    seed: int = 0  # the corpus, the folds, the initialisation, the batch order: not base.seed
    phones: tuple[int, ...] = (0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11)  # training phones (variant indices), none an evaluation phone
    episodes_per_phone: int = 150  # demonstrations per phone (its memory: the other tasks')
    k_folds: int = 8  # a step reads its phone's memory rebuilt without its own fold of tasks
    kinds_per_step: int = 1  # memory kinds drawn per training step
    model: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # ActorConfig's fields over its defaults
    training: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # TrainConfig's fields over its defaults
    dagger_rounds: int = 2  # rounds of the actor's own rollouts, relabelled by the expert
    dagger_tasks: int = 300  # training tasks rolled out per round
    dagger_epochs: int = 2  # epochs over every example so far, per round
    dagger_max_steps: int = 20  # step budget of a rollout
    dagger_beta: float = 0.5  # share of a rollout's actions the expert carries out
    embed_workers: int = 2  # processes embedding the corpus's screens (vectors do not depend on it)
    torch_threads: int = 2  # CPU threads for training

    def __post_init__(self) -> None:
        object.__setattr__(self, "phones", tuple(self.phones))

    def actor_config(self) -> ActorConfig:
        return ActorConfig(**self.model)

    def train_config(self) -> TrainConfig:
        return TrainConfig(**self.training, model=self.model)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "phones": list(self.phones), "model": dict(self.model),
                "training": dict(self.training)}


def _phones(p: Params) -> None:
    """Distinct variant indices holding 0, the reference design."""
    phones = p["phones"]
    if not phones or len(set(phones)) != len(phones) or 0 not in phones:
        raise p.error("phones", f"must be distinct variant indices holding 0 (the reference design), got {list(phones)}")


def _configs(p: Params) -> None:
    """TrainConfig and ActorConfig build from ``training`` and ``model``; the wide head's rate at most 1."""
    config = p.build({k: f"training.{k}" for k in TRAIN.fields}, TrainConfig, **p["training"], model=p["model"])
    p.build({k: f"model.{k}" for k in MODEL.fields}, ActorConfig.check, ActorConfig(**config.model))
    if config.lr * config.wide_lr_scale > 1.0:
        raise p.error("training.wide_lr_scale", f"the wide head's learning rate lr x wide_lr_scale must be at most 1, "
                                                f"got {config.lr} x {config.wide_lr_scale}")
    if config.lr * config.weight_decay >= 1.0:
        raise p.error("training.weight_decay", f"lr x weight_decay must be below 1 (AdamW would flip every weight's "
                                               f"sign), got {config.lr} x {config.weight_decay}")


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
    "epochs": POSITIVE, "batch_size": BATCH, "lr": LEARNING_RATE, "weight_decay": Number(lo=0.0, hi=1e3),
    "warmup_steps": COUNT, "modality_weights": Items(WEIGHT, length=len(MODALITIES)), "goal_dropout": PROBABILITY,
    "type_balance": Number(lo=0.0, hi=2.0), "wide_lr_scale": Number(above=0.0, hi=MAX_WEIGHT),
    "validation_share": Number(lo=0.0, below=1.0), "novel_glyphs": PROBABILITY,
})
SCHEMA = Stage("pretrain", "pretrain", {
    "seed": SEED, "phones": Items(Number(integer=True, lo=0, hi=1 << 16)), "episodes_per_phone": POSITIVE,
    "k_folds": FOLDS, "kinds_per_step": Number(integer=True, lo=1, hi=len(MEMORIES)), "model": MODEL, "training": TRAIN,
    "dagger_rounds": COUNT, "dagger_tasks": POSITIVE, "dagger_epochs": POSITIVE, "dagger_max_steps": POSITIVE,
    "dagger_beta": PROBABILITY, "embed_workers": WORKERS, "torch_threads": THREADS,
}, (_phones, _configs))
"""What ``params.yaml: pretrain`` may hold, checked as a stage's section is (each bound declared here once)."""


@dataclasses.dataclass(frozen=True)
class MemorySettings:
    """How the corpus's memories are built, retrieved and rendered: ``params.yaml: graph_build``'s own."""

    image_embedder: str = "efficientnet_lite0"
    text_embedder: str = "minilm"
    pca_dim: int = 64
    graph: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # tau, theta
    retrieval: RetrievalConfig = RetrievalConfig()
    style: RenderStyle = RenderStyle()
    search: NodeSearch = NodeSearch()

    @classmethod
    def from_section(cls, g: Mapping[str, Any]) -> "MemorySettings":
        return cls(g.get("image_embedder", cls.image_embedder), g.get("text_embedder", cls.text_embedder),
                   g.get("pca_dim", cls.pca_dim), dict(g.get("graph") or {}), RetrievalConfig(**(g.get("retrieval") or {})),
                   RenderStyle(max_items=g.get("max_items", 3), max_actions=g.get("max_actions", 4),
                               image_size=(g.get("memory_image_width", 180), g.get("memory_image_height", 405))),
                   NodeSearch(kind=g.get("node_index", "auto"), exact_below=g.get("exact_below", 20_000)))

    def to_dict(self) -> dict[str, Any]:
        return {"image_embedder": self.image_embedder, "text_embedder": self.text_embedder, "pca_dim": self.pca_dim,
                "graph": dict(self.graph), "retrieval": dataclasses.asdict(self.retrieval),
                "max_items": self.style.max_items, "max_actions": self.style.max_actions,
                "image_size": list(self.style.image_size)}


def corpus_world(config: PretrainConfig, phone: WorldConfig) -> WorldConfig:
    """The pretraining corpus's world: the pipeline's phone and demonstrator (``phone``) on
    ``config.phones``, ``episodes_per_phone`` training episodes each, no test and no memory split.
    A phone that is one of the pipeline's evaluation phones is refused: its glyph designs and words
    are what only experience may teach."""
    leaked = sorted(set(config.phones) & set(phone.eval_variants))
    if leaked:
        raise DataError("pretrain.phones", f"holds the pipeline's evaluation phone(s) {leaked} (world.phone: every "
                                           f"variant below {phone.variants} but {list(phone.train_variants)}); "
                                           "pretraining never sees an evaluation phone")
    variants = max(max(config.phones) + 1, phone.variants)  # the evaluation phones stay out: never all trained on
    return dataclasses.replace(phone, variants=variants, train_variants=tuple(config.phones),
                               n_train=config.episodes_per_phone * len(config.phones), n_test=0, n_memory=0)


def read_settings(params_path: str | os.PathLike) -> tuple[PretrainConfig, WorldConfig, MemorySettings, float]:
    """Everything :func:`pretrain` takes from ``params_path`` (see the module's docstring); a bad value
    is a :class:`DataError` naming the file and the key. The sections it reads beside its own
    (``world``, ``segmentation``, ``graph_build``) are checked as their stages check them."""

    path = str(params_path)
    params = read_params_file(path)
    notebooks = repo_root(Path(__file__)) / "notebooks"
    for stem, read in (("00_world", "world"), ("01_segmentation", "segmentation"), ("02_graph_build", "graph_build")):
        check_parameters(notebooks / f"{stem}.py", *read_parameters([f"{path}:{read}"], []))  # as their stages do
    section = params.get("pretrain") or {}
    if not isinstance(section, Mapping):
        raise DataError("pretrain", f"expected a mapping of parameters, got {type(section).__name__}", path)
    defaults = PretrainConfig().to_dict()
    values = {**defaults, **section}
    SCHEMA.validate(values, dict.fromkeys(section, Source(path, section="pretrain")),
                    Source(path, section="pretrain", how="its default"), params)
    config = PretrainConfig(**values)
    phone = WorldConfig.from_dict((params.get("world") or {}).get("phone") or {}, path)
    try:
        corpus_world(config, phone)  # refuses an evaluation phone
    except DataError as err:
        raise DataError(err.field, err.message, path) from None
    memory = MemorySettings.from_section(params.get("graph_build") or {})
    evidence = float((params.get("segmentation") or {}).get("judge_evidence", RuleJudge.evidence))
    return config, phone, memory, evidence


def pretrain(config: PretrainConfig, phone: WorldConfig, memory: MemorySettings, out: str | os.PathLike,
             work: str | os.PathLike, judge_evidence: float = RuleJudge.evidence,
             cache_dir: str | os.PathLike | None = ".cache/guimem/embeddings", progress: bool = True,
             command: str = "") -> dict[str, Any]:
    """Generate the corpus under ``work``, train the actor on it and save it to ``out`` with its
    model card (:data:`CARD_JSON`, :data:`CARD_README`); return the card."""
    started, commit = time.time(), _commit()  # the code that runs, before anything can change it
    torch.set_num_threads(config.torch_threads)
    world = corpus_world(config, phone)
    root = Path(work) / "world"
    stats = generate_dataset(world, root, seed=config.seed, progress=progress)
    train_root = root / "train"
    episodes = load_episodes(train_root, verify_images=False)
    segmenter = make_segmenter("rule", judge=RuleJudge(evidence=judge_evidence))
    subgoals: dict[str, list] = {}
    for s in segment_episodes(episodes, segmenter, progress):
        subgoals.setdefault(s.episode_id, []).append(s)

    raw = cached_image_embedder(memory.image_embedder, cache_dir, workers=config.embed_workers)
    texts = cached_text_embedder(memory.text_embedder, cache_dir)
    screens = sorted({s.screenshot for e in episodes for s in e.steps})
    vectors = embed_screenshots(raw, train_root, screens, progress=progress)
    images = fit_projection(raw, np.stack([vectors[s] for s in screens]), memory.pca_dim) if memory.pca_dim else raw
    queries = embed_screenshots(images, train_root, screens)

    def build(kind: str, shared: Sequence[Episode]):
        return build_memory(kind, shared, [s for e in shared for s in subgoals.get(e.id, [])], train_root, images,
                            texts, style=memory.style, search=memory.search, **memory.graph,
                            **memory.retrieval.settings(kind))

    shape, training = config.actor_config(), config.train_config()
    folds = fold_memories(episodes, build, MEMORIES, config.k_folds, config.seed)
    examples = build_kfold_examples(episodes, train_root, build, MEMORIES, config.k_folds, config.seed,
                                    config.kinds_per_step, shape.max_history, query_vectors=queries, folds=folds,
                                    progress=progress)
    learn, validate = validation_split(episodes, training.validation_share, config.seed)
    kept_out = {e.id for e in validate}
    selection = [ex for ex in examples if ex.episode_id in kept_out]
    examples = [ex for ex in examples if ex.episode_id not in kept_out]
    actor, history = train_actor(examples, training, config.seed, select_examples=selection, progress=progress)
    bc_epochs = len(history.train_loss)

    def train_on(aggregated, r, start):
        return train_actor(aggregated, dataclasses.replace(training, epochs=config.dagger_epochs),
                           config.seed + 1 + r, init=start, history=history, select_examples=selection,
                           progress=progress)[0]

    actor, examples, dagger = run_dagger(actor, examples, train_on, learn, folds,
                                         replay_world_config(train_root, config.dagger_max_steps),
                                         config.dagger_rounds, config.dagger_tasks, config.seed,
                                         training.modality_weights, shape.max_history, progress, config.dagger_beta)
    card = {
        "command": command, "commit": commit, "seed": config.seed,
        "pretrain": config.to_dict(), "memory": memory.to_dict(),
        "world": world.to_dict(), "judge_evidence": judge_evidence,
        "corpus": {"phones": list(config.phones), "episodes": len(episodes),
                   "steps": sum(len(e.steps) for e in episodes), "success_rate": stats["train"]["success_rate"],
                   "learn_episodes": len(learn), "validation_episodes": len(validate),
                   "examples": len(examples), "dagger_examples": sum(r["kept"] for r in dagger)},
        "parameters": sum(p.numel() for p in actor.model.parameters()),
        "validation": validation_scores(actor, selection),
        "history": {"behaviour_cloning_epochs": bc_epochs, "train_loss": _rounded(history.train_loss),
                    "validation_step_accuracy": _rounded(history.validation_step_accuracy),
                    "selected": list(history.selected), "dagger": dagger},
        "machine": machine(), "torch": torch.__version__, "seconds": round(time.time() - started, 1),
    }
    actor.save(out, card={CARD_JSON: json.dumps(card, indent=1, sort_keys=True) + "\n", CARD_README: card_text(card)})
    return card


def validation_scores(actor: MiniActor, selection: Sequence) -> dict[str, Any]:
    """Step accuracy on the validation tasks (held out of learning, on the training phones) with no
    memory and with each rendering of the memory drawn for them, by the AITW rule and element-exact."""
    out: dict[str, Any] = {"steps": len(selection)}
    for name, rule in (("aitw", STRICT_MATCH), ("element", ELEMENT_EXACT)):
        table = step_table(actor, list(selection), ["none", "text", "image"], rule)
        out[name] = {m: round(float(h.step.mean()), 4) for m, h in table.items()}
        out[name]["type_none"] = round(float(table["none"].type.mean()), 4)
    return out


def card_text(card: Mapping[str, Any]) -> str:
    """The model card for people (:data:`CARD_README` beside the weights)."""
    c, v = card["corpus"], card["validation"]
    rows = "\n".join(f"| {rule} | {s['none']:.3f} | {s['text']:.3f} | {s['image']:.3f} | {s['type_none']:.3f} |"
                     for rule, s in ((r, v[r]) for r in ("aitw", "element")))
    return (f"# The frozen miniature actor\n\n"
            f"Made by `{card['command'] or 'make pretrain'}` at commit `{card['commit']}`, pretraining seed "
            f"{card['seed']}, on {card['machine']} in {card['seconds'] / 60:.0f} minutes (torch {card['torch']}). "
            f"The pipeline reads it and never trains it; `make pretrain` makes it again.\n\n"
            f"**Corpus.** {c['episodes']} demonstrations ({c['steps']} steps, demonstrator success {c['success_rate']:.2f}) "
            f"on the training phones {c['phones']}, never an evaluation phone; {c['learn_episodes']} episodes learned "
            f"from, {c['validation_episodes']} (whole tasks) kept to choose checkpoints on; {c['examples']} examples "
            f"in the end, {c['dagger_examples']} of them from DAgger.\n\n"
            f"**Model.** {card['parameters']:,} parameters; shape and training in `{CARD_JSON}` (`pretrain`).\n\n"
            f"**Validation** ({v['steps']} steps of tasks held out of learning, on the training phones; step accuracy):\n\n"
            f"| rule | no memory | text | image | type (no memory) |\n|---|---|---|---|---|\n{rows}\n")


def _rounded(values: Sequence[float]) -> list[float]:
    return [round(float(x), 4) for x in values]


def _commit() -> str:
    """The commit the code was at (``+`` when the working tree differed from it); empty outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=30)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True,
                               check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m guimem.pipeline.pretrain", description=__doc__.split("\n\n")[0])
    parser.add_argument("--params", default="params.yaml", help="the parameter file (its pretrain section and more)")
    parser.add_argument("--out", default="pretrained/actor", help="where the actor and its model card are saved")
    parser.add_argument("--work", default=".cache/guimem/pretrain", help="where the corpus is generated (not tracked)")
    parser.add_argument("--cache-dir", default=".cache/guimem/embeddings", help="content-hash embedding cache")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        config, phone, memory, evidence = read_settings(args.params)
        check_replaceable(Path(args.out), ACTOR_KIND)  # before the run: a folder it may not replace is said now
        card = pretrain(config, phone, memory, args.out, args.work, evidence, args.cache_dir,
                        command="python -m guimem.pipeline.pretrain " + " ".join(sys.argv[1:] if argv is None else argv))
    except DataError as err:
        print(f"pretrain: {err}", file=sys.stderr)
        return 2
    print(card_text(card))
    return 0


if __name__ == "__main__":
    sys.exit(main())
