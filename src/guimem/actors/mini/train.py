"""Training the miniature actor by behaviour cloning, and scoring it on held-out steps.

Examples pair a demonstration step with the experience a memory retrieves for it (memories
rebuilt in k folds, so a step never sees its own episode); :func:`train_actor` trains on them
with the memory modality redrawn every epoch. The frozen actor is scored under each modality by
:func:`guimem.eval.step_table.step_table`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import torch

from guimem.actors.mini.augment import redraw_inputs
from guimem.actors.mini.config import IGNORE, ActorConfig, history_tokens
from guimem.actors.mini.features import (
    Features,
    ImagePatcher,
    Targets,
    cell_of,
    collate,
    featurise,
    prompt_length,
    role_key,
    stack_targets,
    targets_for,
    type_index,
)
from guimem.actors.mini.model import GuiActor
from guimem.actors.mini.policy import MiniActor
from guimem.core.data import ACTION_TYPES, Action, DataError
from guimem.core.policy import MODALITIES, Modality
from guimem.core.progress import progress_bar
from guimem.eval.action_match import MatchConfig, action_match, paired_counts, step_accuracy
from guimem.models.tokenizer import Vocabulary
from guimem.train.examples import ActorExample

STRICT_MATCH = MatchConfig(variant="aitw", text_rule="token_f1", match_app_name=True)
"""Step matching used to score the actor: AITW touch rules, typed text by token F1, app names compared."""

UNDO_P = 0.05
"""A round of training from an actor (DAgger's) is undone only when its best epoch is significantly
worse on the validation steps than the weights it started from: more steps it breaks than it fixes,
at p < UNDO_P in the exact sign test on those (:func:`round_holds`). A higher score alone let one
validation step decide: on a 2-core Intel Xeon a round was undone at 0.5653 against 0.5682 (one step
of 352) while it raised held-out accuracy from 0.49 to 0.59, so the last bits of one machine's
training decided which actor every later stage played."""


def round_holds(start: np.ndarray, after: np.ndarray, p: float = UNDO_P) -> dict[str, Any]:
    """Whether a round's weights (``after``: each validation step right or wrong) hold against the
    weights it started from (``start``): the steps it fixes and breaks, the sign test's p-value, and
    ``holds`` — false only when it breaks more than it fixes at p < ``p``."""
    test = paired_counts(after, start)
    return {**test, "holds": not (test["broken"] > test["fixed"] and test["p_value"] < p)}


def majority_action(actions: Sequence[Action], grid: tuple[int, int]) -> Action:
    """The most frequent action of a training set: its commonest type, at the centre of that type's
    commonest cell of ``grid`` for touches (ties: first seen) — the baseline a policy must beat."""
    if not actions:
        raise DataError("actions", "no actions to take a majority of")
    kind = max(ACTION_TYPES, key=lambda t: sum(a.type == t for a in actions))
    if kind not in ("tap", "long_press", "swipe"):
        same = [a for a in actions if a.type == kind]
        return Action(kind, text=max(same, key=lambda a: sum(b.text == a.text for b in same)).text
                      if kind in ("type", "open_app") else None)
    cells = [cell_of(a.point, grid) for a in actions if a.type == kind]
    r, c = max(dict.fromkeys(cells), key=cells.count)  # 1-based
    point = ((c - 0.5) / grid[1], (r - 0.5) / grid[0])
    if kind == "swipe":
        return Action("swipe", point=point, end=(point[0], max(0.0, point[1] - 0.3)))
    return Action(kind, point=point)


@dataclass(frozen=True)
class TrainConfig:
    """Behaviour-cloning hyper-parameters (the model's own live in ``model``)."""

    epochs: int = 4  # passes over the examples
    batch_size: int = 32  # examples per optimizer step
    lr: float = 3e-3  # AdamW peak learning rate (linear warm-up, cosine decay)
    weight_decay: float = 0.01
    warmup_steps: int = 50  # optimizer steps of linear warm-up
    grad_clip: float = 1.0  # max global gradient norm
    modality_weights: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)  # none/text/image/both draw odds
    min_count: int = 2  # words seen fewer times share hash buckets
    n_hash_buckets: int = 64
    goal_dropout: float = 0.0  # chance per example and epoch that the goal is hidden (the memory must tell)
    novel_glyphs: float = 1.0  # share of training and validation steps whose bare icons are redrawn in unseen designs (guimem.actors.mini.augment)
    type_balance: float = 0.0  # action-type loss weights (count / mean count) ** -type_balance (0: unweighted)
    wide_lr_scale: float = 30.0  # the wide type head's learning rate, in multiples of ``lr``
    max_eval_examples: int = 512  # held-out examples scored after each epoch
    validation_share: float = 0.1  # training episodes kept out to select the checkpoint on (0: keep the last epoch)
    model: Mapping[str, Any] = field(default_factory=dict)  # ActorConfig overrides

    def __post_init__(self) -> None:
        object.__setattr__(self, "modality_weights", tuple(self.modality_weights))  # a list when read from YAML
        if self.epochs < 1 or self.batch_size < 1:
            raise DataError("epochs" if self.epochs < 1 else "batch_size", "must be >= 1")
        if not 0.0 <= self.novel_glyphs <= 1.0:
            raise DataError("novel_glyphs", f"expected a share in [0, 1], got {self.novel_glyphs!r}")
        if not 0.0 <= self.validation_share < 1.0:
            raise DataError("validation_share", f"expected a share in [0, 1), got {self.validation_share!r}")
        if len(self.modality_weights) != 4 or min(self.modality_weights) < 0 or sum(self.modality_weights) <= 0:
            raise DataError("modality_weights",
                            f"need 4 non-negative odds (none, text, image, both), got {self.modality_weights}")


@dataclass
class TrainHistory:
    """Per-epoch training record."""

    train_loss: list[float] = field(default_factory=list)  # mean loss over the epoch's batches
    eval_step_accuracy: list[float] = field(default_factory=list)  # held-out, modality as drawn
    eval_type_accuracy: list[float] = field(default_factory=list)
    validation_step_accuracy: list[float] = field(default_factory=list)  # the selection split, after each epoch
    selected: list[int] = field(default_factory=list)  # per call: the epoch whose weights were kept (0: the start)
    round_tests: list[dict[str, Any]] = field(default_factory=list)  # per call from an actor: round_holds
    seconds: list[float] = field(default_factory=list)  # wall time of the epoch (training only)
    examples_per_second: list[float] = field(default_factory=list)
    loss_terms: list[dict[str, float]] = field(default_factory=list)  # epoch means of each loss term

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) for k, v in self.__dict__.items()}


def corpus_texts(examples: Iterable[ActorExample]) -> Iterable[str]:
    """Every text the vocabulary is built from: goals, memory texts, UI labels."""
    for ex in examples:
        yield ex.input.goal
        if ex.input.memory_text:
            yield ex.input.memory_text
        for el in ex.input.elements:
            if el.text:
                yield el.text


def build_vocabulary(examples: Sequence[ActorExample], min_count: int = TrainConfig.min_count,
                     n_hash_buckets: int = TrainConfig.n_hash_buckets, effect: bool = False) -> Vocabulary:
    """The word vocabulary of a training set, with the special and history tokens (``effect``: the
    screen-changed tokens too)."""
    return Vocabulary.build(corpus_texts(examples), extra_tokens=history_tokens(effect), min_count=min_count,
                            n_hash_buckets=n_hash_buckets)


def draw_modalities(examples: Sequence[ActorExample], feats: Sequence[Features], weights: Sequence[float],
                    rng: np.random.Generator) -> list[Modality]:
    """A modality per example, drawn by ``weights`` among those its memory allows."""
    out: list[Modality] = []
    for f in feats:
        w = np.array([wt if f.has(m) else 0.0 for m, wt in zip(MODALITIES, weights)])
        out.append(MODALITIES[int(rng.choice(4, p=w / w.sum()))] if w.sum() > 0 else "none")
    return out


def without_goal(f: Features, t: Targets) -> tuple[Features, Targets]:
    """The prompt with its goal hidden (no goal tokens) and the labels that still apply (no span)."""
    hidden = replace(f, goal_ids=f.goal_ids[:0], goal="", goal_tokens=())
    return hidden, replace(t, span_start=IGNORE, span_end=IGNORE)


LENGTH_GROUP = 8
"""Batches per run sorted by prompt length in :func:`modality_batches` (the mega-batch of
``transformers``' ``LengthGroupedSampler``, which takes 50 on corpora far larger than ours): long
enough that a batch pads little, short enough that which examples share a batch stays a random
draw — a modality's ~800 examples per epoch make 3 or 4 runs. On a 2-core AMD EPYC (``torch_threads``
2) an epoch over 3,213 examples (the actor stage's, when it still trained) took 60 s with runs of 8 and 55 s with one sorted
run, where unsorted batches that also padded every screen to 40 element slots took 80 s."""


def modality_batches(modalities: Sequence[Modality], batch_size: int, rng: np.random.Generator,
                     lengths: Sequence[int] | None = None, group: int = LENGTH_GROUP) -> list[np.ndarray]:
    """Shuffled batches of example indices, each of one modality (a memory's tokens are shown or not
    for the whole batch).

    With ``lengths`` (each example's prompt length in tokens), batches are also of alike length: a
    modality's shuffled examples are cut into runs of ``group`` batches and each run is sorted,
    longest first, before it is cut — so attention, quadratic in the padded length, is not spent on
    padding. The batches are then shuffled, so the order of lengths is random too.
    """
    order = rng.permutation(len(modalities))
    batches = []
    for m in MODALITIES:
        members = order[[modalities[i] == m for i in order]] if len(order) else order
        if lengths is not None:
            run = group * batch_size
            members = np.concatenate([chunk[np.argsort([-lengths[i] for i in chunk], kind="stable")]
                                      for chunk in (members[lo:lo + run] for lo in range(0, len(members), run))]
                                     or [members])
        batches += [members[lo:lo + batch_size] for lo in range(0, len(members), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def train_actor(examples: Sequence[ActorExample], config: TrainConfig, seed: int,
                eval_examples: Sequence[ActorExample] = (), match: MatchConfig = STRICT_MATCH,
                progress: bool = True, init: MiniActor | None = None,
                history: "TrainHistory | None" = None,
                select_examples: Sequence[ActorExample] = ()) -> tuple[MiniActor, TrainHistory]:
    """Behaviour cloning: fit a :class:`GuiActor` to ``examples``; deterministic for ``seed``.

    A fresh model, its vocabulary built from ``examples`` — or, with ``init``, that actor's model
    and vocabulary trained on (a DAgger round: the aggregated examples, ``config.epochs`` more
    epochs, the curve appended to ``history``). Each epoch redraws every example's memory modality
    (``config.modality_weights`` over the modalities its memory allows). Held-out steps
    (``eval_examples``) are scored after every epoch with ``match``, for the curve only.

    A share ``config.novel_glyphs`` of the training and validation steps (a seeded draw) is shown
    with its bare icons redrawn in designs no phone shows, and its memory crops of them alike
    (:func:`guimem.actors.mini.augment.novel_glyphs`): a bare icon's function is then known only from
    the memory image, as on the evaluation phone. Held-out steps are shown as they are.

    With ``select_examples`` (a validation split of the *training* episodes, never test or memory)
    the weights kept are those of the epoch with the best step accuracy there (the later one on a
    tie) — with ``init``, unless that epoch is significantly worse there than the starting weights
    (:func:`round_holds`, appended to ``history.round_tests``): then the round is undone. The kept
    epoch is appended to ``history.selected`` (0: the start).
    """
    if not examples:
        raise DataError("examples", "no training examples")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    if init is None:
        vocab = build_vocabulary(examples, config.min_count, config.n_hash_buckets,
                                 effect=bool(dict(config.model).get("history_effect", False)))
        apps = sorted({ex.target.text for ex in examples if ex.target.type == "open_app" and ex.target.text})
        roles = sorted({role_key(el) for ex in examples for el in ex.input.elements})
        model_cfg = ActorConfig(**{**dict(config.model), "vocab_size": len(vocab), "app_names": apps,
                                   "widget_roles": roles,
                                   "type_class_weights": type_class_weights(examples, config.type_balance)})
        model = GuiActor(model_cfg)
    else:
        vocab, model, model_cfg = init.vocab, init.model, init.config
    patcher = ImagePatcher()
    redrawn = redraw_inputs(examples, config.novel_glyphs, seed, model_cfg.crop_size)
    feats = [featurise(inp, vocab, model_cfg, patcher)
             for inp in progress_bar(redrawn, total=len(examples), desc="featurise", disable=not progress)]
    targets = [targets_for(ex.target, f, model_cfg) for ex, f in zip(examples, feats)]
    held = list(eval_examples)[:config.max_eval_examples]
    held_feats = [featurise(ex.input, vocab, model_cfg, patcher) for ex in held]
    held_modalities = draw_modalities(held, held_feats, config.modality_weights, np.random.default_rng(seed + 1))
    val = list(select_examples)
    val_feats = [featurise(inp, vocab, model_cfg, patcher)
                 for inp in redraw_inputs(val, config.novel_glyphs, seed + 2, model_cfg.crop_size)]
    val_modalities = draw_modalities(val, val_feats, config.modality_weights, np.random.default_rng(seed + 2))

    def validation() -> np.ndarray:
        """``[n_validation]`` bool: each validation step right or wrong."""
        return _step_hits(MiniActor(model, vocab), val_feats, val_modalities, [ex.target for ex in val], match)

    start = (validation(), _weights(model)) if val and init is not None else None
    best: tuple[float, int, Any, Any] = (-math.inf, 0, None, None)  # score, epoch, weights, hits

    steps_per_epoch = math.ceil(len(examples) / config.batch_size) + len(MODALITIES) - 1  # at most (modality batches)
    total = config.epochs * steps_per_epoch
    # Adam moves a weight by about lr per step, so in a few hundred steps a weight from zero stays
    # near 1: too small for the wide head's logits to express decisions the facts make clear.
    wide = [p for n, p in model.named_parameters() if n.startswith("wide_type_head.")]
    deep = [p for n, p in model.named_parameters() if not n.startswith("wide_type_head.")]
    groups = [{"params": deep}] + ([{"params": wide, "lr": config.lr * config.wide_lr_scale}] if wide else [])
    opt = torch.optim.AdamW(groups, lr=config.lr, weight_decay=config.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _warmup_cosine(config.warmup_steps, total))
    history = history if history is not None else TrainHistory()
    bar = progress_bar(total=config.epochs * len(examples), desc="train actor", unit="ex", disable=not progress)
    for epoch in range(config.epochs):
        model.train()
        modalities = draw_modalities(examples, feats, config.modality_weights, rng)
        hide = rng.random(len(examples)) < config.goal_dropout  # [n] examples shown without their goal
        t0, losses, terms = time.perf_counter(), [], []
        lengths = [prompt_length(f, m) for f, m in zip(feats, modalities)]
        for idx in modality_batches(modalities, config.batch_size, rng, lengths):
            shown = [without_goal(feats[i], targets[i]) if hide[i] else (feats[i], targets[i]) for i in idx]
            batch = collate([f for f, _ in shown], [modalities[i] for i in idx], model_cfg, vocab)
            out = model(**batch, **stack_targets([t for _, t in shown]))
            opt.zero_grad(set_to_none=True)
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            opt.step()
            sched.step()
            losses.append(float(out.loss.detach()))
            terms.append({k: float(v) for k, v in out.losses.items()})
            bar.update(len(idx))
            bar.set_postfix(epoch=epoch + 1, loss=f"{losses[-1]:.3f}")
        seconds = time.perf_counter() - t0
        history.train_loss.append(float(np.mean(losses)))
        history.seconds.append(seconds)
        history.examples_per_second.append(len(examples) / seconds)
        names = sorted({k for t in terms for k in t})
        history.loss_terms.append({k: float(np.mean([t[k] for t in terms if k in t])) for k in names})
        if held:
            actor = MiniActor(model, vocab)
            scores = _held_out_scores(actor, held_feats, held_modalities, [ex.target for ex in held], match)
            history.eval_step_accuracy.append(scores["step_accuracy"])
            history.eval_type_accuracy.append(scores["type_accuracy"])
        if val:
            hits = validation()
            score = float(hits.mean())
            history.validation_step_accuracy.append(score)
            if score >= best[0]:
                best = (score, epoch + 1, _weights(model), hits)
    bar.close()
    if val:
        kept, weights = best[1], best[2]
        if start is not None:
            test = round_holds(start[0], best[3])
            history.round_tests.append(test)
            if not test["holds"]:
                kept, weights = 0, start[1]
        model.load_state_dict(weights)
        history.selected.append(kept)
    return MiniActor(model.eval(), vocab), history


def _weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A copy of the model's weights (a checkpoint kept in memory)."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def type_class_weights(examples: Sequence[ActorExample], balance: float) -> list[float] | None:
    """Per action type, ``(count / mean count) ** -balance`` over the types seen in ``examples``
    (0.5: inverse square root of frequency); unseen types get weight 1. ``None`` when ``balance`` is 0."""
    if balance == 0:
        return None
    counts = np.bincount([type_index(ex.target, "action") for ex in examples], minlength=len(ACTION_TYPES))
    mean = counts[counts > 0].mean()
    return [float((c / mean) ** -balance) if c else 1.0 for c in counts]


def _warmup_cosine(warmup: int, total: int) -> Callable[[int], float]:
    """Learning-rate multiplier: linear warm-up to 1, then cosine decay to 0.1."""
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))
    return factor


def _step_hits(actor: MiniActor, feats: Sequence[Features], modalities: Sequence[Modality],
               gold: Sequence[Action], match: MatchConfig) -> np.ndarray:
    """``[n]`` bool: whether the actor's action at each featurised prompt matches ``gold``."""
    preds = _predict(actor, feats, modalities)
    return np.array([action_match(p, t, f.elements, match) for p, t, f in zip(preds, gold, feats)], dtype=bool)


def _predict(actor: MiniActor, feats: Sequence[Features], modalities: Sequence[Modality]) -> list[Action]:
    """The actor's action at each featurised prompt, each shown the memory of its own modality."""
    preds: list[Action] = []
    for lo in range(0, len(feats), actor.batch_size):
        hi = lo + actor.batch_size
        preds += [o.action for o in actor.act_features(feats[lo:hi], modalities[lo:hi])]
    return preds


def _held_out_scores(actor: MiniActor, feats: Sequence[Features], modalities: Sequence[Modality],
                     gold: Sequence[Action], match: MatchConfig) -> dict[str, Any]:
    """Step and type accuracy of the actor in training on featurised held-out prompts, each shown
    the memory of its own modality (the training curve; scoring a frozen actor is
    :func:`guimem.eval.step_table.step_table`)."""
    return step_accuracy(_predict(actor, feats, modalities), list(gold), [f.elements for f in feats], match)
