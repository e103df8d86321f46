"""The one step-score table: does a policy's action match the demonstrated one, step by step, for
each way its memory is shown (none, text, image, both)?

This is the table SwitchMem routes on — which rendering of the same experience leads the
frozen actor to the better action — and the one every notebook and benchmark scores with.

    table = step_table(actor, examples, ["none", "text", "image"], MatchConfig(variant="aitw"))
    table["text"].scores()   # {"n_steps": ..., "step_accuracy": ..., "type_accuracy": ...}
    table["text"].step       # [n] bool, one per scored step

A step is scored under a modality only if its input carries that memory (``none`` always).
Any :class:`~guimem.core.policy.Policy` works: it is asked through ``act`` with each input reduced
to the modality's memory. A :class:`~guimem.core.policy.FeaturisingPolicy` (the miniature actor)
reads each input once and is shown every modality from those features — the same answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np

from guimem.core.data import Action
from guimem.core.policy import FeaturisingPolicy, Modality, Policy, PolicyInput, PolicyOutput, shows
from guimem.eval.action_match import MatchConfig, action_class, action_match


class Example(Protocol):
    """A demonstration step to score: what the policy sees and what the demonstrator did."""

    input: PolicyInput
    target: Action


@dataclass(frozen=True)
class StepHits:
    """One modality's column of the table: per scored step, whether the action and its type matched."""

    modality: Modality
    index: np.ndarray  # [n] int: positions, in the examples scored, of the steps carrying this memory
    step: np.ndarray  # [n] bool: the predicted action matches the demonstrated one
    type: np.ndarray  # [n] bool: its class matches (the action type; the rule's kind under AITW)
    actions: tuple[Action, ...] = ()  # [n]: the policy's actions

    def scores(self) -> dict[str, Any]:
        """``n_steps``, ``step_accuracy`` and ``type_accuracy`` (NaN when no step carries this memory)."""
        n = len(self.step)
        return {"n_steps": n, "step_accuracy": float(self.step.mean()) if n else float("nan"),
                "type_accuracy": float(self.type.mean()) if n else float("nan")}


def _answers(policy: Policy, inputs: Sequence[PolicyInput], modality: Modality, feats: list | None) -> list[Action]:
    """The policy's action for every input, shown the memory of ``modality``, in batches."""
    batch = max(1, int(getattr(policy, "batch_size", 1)))
    out: list[PolicyOutput] = []
    for lo in range(0, len(inputs), batch):
        if feats is not None:
            chunk = feats[lo:lo + batch]
            out += policy.act_features(chunk, [modality] * len(chunk))
        else:
            out += policy.act([x.with_modality(modality) for x in inputs[lo:lo + batch]])
    return [o.action for o in out]


def step_table(policy: Policy, examples: Sequence[Example], modalities: Sequence[Modality],
               match: MatchConfig) -> dict[Modality, StepHits]:
    """Every example scored under each of ``modalities`` (those whose input carries the memory)."""
    feats = [policy.featurise(ex.input) for ex in examples] if isinstance(policy, FeaturisingPolicy) else None
    table = {}
    for m in modalities:
        index = np.array([i for i, ex in enumerate(examples) if shows(ex.input, m)], dtype=int)
        kept = [examples[i] for i in index]
        preds = _answers(policy, [ex.input for ex in kept], m, None if feats is None else [feats[i] for i in index])
        table[m] = StepHits(
            modality=m, index=index,
            step=np.array([action_match(p, ex.target, ex.input.elements, match) for p, ex in zip(preds, kept)],
                          dtype=bool),
            type=np.array([action_class(p, match) == action_class(ex.target, match) for p, ex in zip(preds, kept)],
                          dtype=bool),
            actions=tuple(preds))
    return table

