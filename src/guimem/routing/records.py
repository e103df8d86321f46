"""What SwitchMem learns from and is scored on: per step, the frozen actor run under every memory
condition, its action scores, its sampled action preferences and its hidden states.

For every step (a :class:`~guimem.train.examples.ActorExample`: the input carries the top-1
retrieved demonstration rendered as text *and* as an image) :func:`collect_records` runs the
actor four times — no memory, text, image, both — and keeps

* ``hits[rule][condition]``: whether its (greedy) action matches the demonstrated one under each
  step rule (``aitw``, ``learngui``);
* ``sampled[rule][condition]``: for text and image, the share of ``n_samples`` actions drawn from
  the actor (:func:`guimem.actors.mini.decoding.sample_decode`) that match — the *sampled action
  preference* of SwitchMem is ``sampled[rule]["image"] - sampled[rule]["text"]``, and a step is
  *non-tied* where it is not zero. Both renderings draw with the same seed (:func:`step_seed`:
  common random numbers), so equal distributions give equal samples;
* ``hidden[condition]``: ``[n_steps, n_layers + 1, d_model]`` float32, the hidden state of every
  layer at the final prompt token, for the memory-free, the text and the image prompt;
* ``candidates[modality]``: ``[n_steps, d_model]``, the actor's own embedding of each memory
  rendering before any transformer block (:meth:`~guimem.actors.mini.policy.MiniActor.memory_embeddings`):
  what a router may read without running either memory prompt.

On disk (:meth:`StepRecords.save`, one folder of kind ``guimem.step_records``, written atomically)::

    manifest.json            format, n_steps, n_layers, d_model, rules, n_samples, temperature, actor
    steps.jsonl              one row per step: episode_id, step, memory_kind, target, groups, hits, sampled
    hidden_<condition>.npy   float32 [n_steps, n_layers + 1, d_model], condition in none, text, image
    candidate_<modality>.npy float32 [n_steps, d_model], modality in text, image

Index 0 of the layer axis is the embedding layer's output and index ``n_layers`` the last block's;
the same layout holds for a Hugging Face actor (there ``d_model`` is the model's hidden size). The
format is read back by :meth:`StepRecords.load`, which checks every shape against the manifest.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from guimem.core.data import DataError
from guimem.core.io import (
    atomic_write_dir,
    check_number,
    file_inside,
    read_json,
    read_jsonl,
    read_npy,
    read_whole,
    write_json,
    write_jsonl,
)
from guimem.core.policy import Modality, PolicyInput, PolicyOutput
from guimem.core.progress import progress_bar
from guimem.eval.action_match import VARIANTS, MatchConfig, action_match
from guimem.eval.modality import information_groups, step_groups

RECORDS_KIND = "guimem.step_records"
RECORDS_FORMAT = 1
CONDITIONS: tuple[Modality, ...] = ("none", "text", "image", "both")
"""The memory conditions every step is run under."""
HIDDEN_CONDITIONS: tuple[Modality, ...] = ("none", "text", "image")
"""The conditions whose hidden states are kept: the memory-free state and the two renderings."""
SAMPLED_CONDITIONS: tuple[Modality, ...] = ("text", "image")
"""The conditions whose sampled actions give the preference."""
CANDIDATES: tuple[Modality, ...] = ("text", "image")
ROW_FIELDS: tuple[str, ...] = ("episode_id", "step", "memory_kind", "target_type", "groups", "n_elements", "hits",
                               "sampled")
"""The fields every row of ``steps.jsonl`` must have (what the routing stages read)."""
MAX_SAMPLES = 1024  # actions drawn per step and rendering: each one a decode


@dataclass(frozen=True)
class SampledPreference:
    """How a step's modality preference is measured (params.yaml ``layer_analysis.preference``):
    ``n_samples`` actions drawn from the actor at ``temperature`` under the text and under the image
    rendering, each matched to the demonstrated action; the preference is the image's share of
    matches minus the text's under the step rule ``rule``. The records keep both rules' shares, so
    ``rule`` only says which one the probe and the routers learn from (07 and 08 read it too)."""

    n_samples: int = 8
    temperature: float = 1.0
    rule: str = "aitw"  # one of guimem.eval.action_match.VARIANTS

    def __post_init__(self) -> None:
        check_number(self.n_samples, "n_samples", 1, MAX_SAMPLES, integer=True)
        check_number(self.temperature, "temperature", 1e-3, 1e3)  # below, large logits overflow; above, uniform
        if self.rule not in VARIANTS:
            raise DataError("rule", f"expected one of {list(VARIANTS)}, got {self.rule!r:.60}")


@dataclass
class StepRecords:
    """The records of a set of steps (see the module docstring); arrays aligned with ``rows``."""

    rows: list[dict[str, Any]]  # per step: episode_id, step, memory_kind, target, groups, n_elements
    hits: dict[str, dict[str, np.ndarray]]  # rule -> condition -> [n] bool
    sampled: dict[str, dict[str, np.ndarray]]  # rule -> text/image -> [n] float in [0, 1]
    hidden: dict[str, np.ndarray]  # none/text/image -> [n, n_layers + 1, d_model] float32
    candidates: dict[str, np.ndarray]  # text/image -> [n, d_model] float32
    meta: dict[str, Any] = field(default_factory=dict)  # n_samples, temperature, actor, ...

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def n_layers(self) -> int:
        return int(self.hidden["text"].shape[1]) - 1

    @property
    def d_model(self) -> int:
        return int(self.hidden["text"].shape[2])

    @property
    def rules(self) -> tuple[str, ...]:
        return tuple(self.hits)

    @property
    def episodes(self) -> np.ndarray:
        """``[n]`` the episode id of each step (the group of cross-validation by episode)."""
        return np.array([r["episode_id"] for r in self.rows])

    def preference(self, rule: str = "aitw") -> np.ndarray:
        """``[n]`` the sampled action preference: image's sampled score minus text's (> 0: image)."""
        return self.sampled[rule]["image"] - self.sampled[rule]["text"]

    def shift(self, layer: int | None = None) -> np.ndarray:
        """The signed hidden-state shift ``h_I - h_T``: ``[n, n_layers + 1, d]``, or ``[n, d]`` at ``layer``."""
        delta = self.hidden["image"] - self.hidden["text"]
        return delta if layer is None else delta[:, layer]

    def group(self, name: str) -> np.ndarray:
        """``[n]`` bool: the steps in step group ``name`` (:data:`guimem.eval.modality.STEP_GROUPS` or
        :data:`~guimem.eval.modality.INFORMATION_GROUPS`)."""
        return np.array([name in r["groups"] for r in self.rows], dtype=bool)

    def of_memory(self, kind: str) -> "StepRecords":
        """The records of the steps whose memory is ``kind`` (``smg``, ``task_graph``, ...)."""
        return self.subset(np.array([r["memory_kind"] == kind for r in self.rows], dtype=bool))

    def non_tied(self, rule: str = "aitw") -> "StepRecords":
        """The records of the steps whose sampled preference under ``rule`` is not tied."""
        return self.subset(self.preference(rule) != 0)

    def subset(self, mask: np.ndarray) -> "StepRecords":
        """The records of the steps where ``mask`` (``[n]`` bool) holds."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (len(self),):
            raise ValueError(f"mask of shape {mask.shape} for {len(self)} steps")
        return StepRecords([r for r, m in zip(self.rows, mask) if m],
                           {rule: {c: v[mask] for c, v in by.items()} for rule, by in self.hits.items()},
                           {rule: {c: v[mask] for c, v in by.items()} for rule, by in self.sampled.items()},
                           {c: v[mask] for c, v in self.hidden.items()},
                           {c: v[mask] for c, v in self.candidates.items()}, dict(self.meta))

    # ------------------------------------------------------------------ disk
    def save(self, path: str | os.PathLike) -> Path:
        """Write the folder described in the module docstring, atomically (see :func:`atomic_write_dir`)."""
        n = len(self)
        arrays = {f"hidden_{c}": self.hidden[c] for c in HIDDEN_CONDITIONS}
        arrays |= {f"candidate_{c}": v for c, v in self.candidates.items()}
        arrays |= {f"hits.{r}.{c}": v for r, by in self.hits.items() for c, v in by.items()}
        arrays |= {f"sampled.{r}.{c}": v for r, by in self.sampled.items() for c, v in by.items()}
        for name, v in arrays.items():
            if len(v) != n:
                raise DataError(name, f"{len(v)} rows for {n} steps")
        rows = []
        for i, r in enumerate(self.rows):
            rows.append({**r, "hits": {rule: {c: bool(v[i]) for c, v in by.items()} for rule, by in self.hits.items()},
                         "sampled": {rule: {c: float(v[i]) for c, v in by.items()}
                                     for rule, by in self.sampled.items()}})
        manifest = {"format": RECORDS_FORMAT, "n_steps": n, "n_layers": self.n_layers, "d_model": self.d_model,
                    "rules": list(self.rules), "conditions": list(CONDITIONS),
                    "hidden_conditions": list(HIDDEN_CONDITIONS), "candidates": sorted(self.candidates),
                    **self.meta}

        def write(folder: Path) -> None:
            write_json(folder / "manifest.json", manifest)
            write_jsonl(folder / "steps.jsonl", rows)
            for c in HIDDEN_CONDITIONS:
                np.save(folder / f"hidden_{c}.npy", np.ascontiguousarray(self.hidden[c], dtype=np.float32))
            for c, v in self.candidates.items():
                np.save(folder / f"candidate_{c}.npy", np.ascontiguousarray(v, dtype=np.float32))

        return atomic_write_dir(Path(path), write, kind=RECORDS_KIND,
                                owned=("manifest.json", "steps.jsonl", "hidden_*.npy", "candidate_*.npy"))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "StepRecords":
        """Read a folder written by :meth:`save`; every manifest value and row field of its type and
        range (rules and candidates distinct names, hits true or false, sampled shares in [0, 1]),
        every array's dtype and shape checked against the manifest; else a :class:`DataError`."""
        def read(folder: Path) -> "StepRecords":
            where = str(folder / "manifest.json")
            manifest = read_json(file_inside(folder, "manifest.json", "file", where))
            if not isinstance(manifest, dict):
                raise DataError("manifest", f"expected an object, got {type(manifest).__name__}", where)
            fmt = manifest.get("format")
            if type(fmt) is not int or fmt != RECORDS_FORMAT:  # true and 1.0 equal 1 but are no format
                raise DataError("format", f"expected step records format {RECORDS_FORMAT}, got {fmt!r:.40}", where)
            for key in ("n_steps", "n_layers", "d_model", "rules"):
                if key not in manifest:
                    raise DataError(key, "missing", where)
            n = int(check_number(manifest["n_steps"], "n_steps", 0, None, integer=True, path=where))
            layers = int(check_number(manifest["n_layers"], "n_layers", 0, None, integer=True, path=where))
            d = int(check_number(manifest["d_model"], "d_model", 1, None, integer=True, path=where))
            rules = _names(manifest["rules"], "rules", None, where)
            candidates = _names(manifest.get("candidates", []), "candidates", CANDIDATES, where)
            for key, lo, integer in (("n_samples", 0, True), ("seed", None, True), ("temperature", 0, False)):
                if key in manifest:
                    check_number(manifest[key], key, lo, None, integer=integer, path=where)
            if "temperature" in manifest and not manifest["temperature"] > 0:
                raise DataError("temperature", f"must be > 0, got {manifest['temperature']!r}", where)
            rows = []
            steps = str(folder / "steps.jsonl")
            for line, row in read_jsonl(file_inside(folder, "steps.jsonl", "file", steps)):
                rows.append(_row(row, rules, f"{steps}, line {line}"))
            if len(rows) != n:
                raise DataError("n_steps", f"the manifest says {n}, steps.jsonl holds {len(rows)}", str(folder))
            hits = {rule: {c: np.array([r["hits"][rule][c] for r in rows], dtype=bool) for c in CONDITIONS}
                    for rule in rules}
            sampled = {rule: {c: np.array([r["sampled"][rule][c] for r in rows], dtype=np.float64)
                              for c in SAMPLED_CONDITIONS} for rule in rules}
            for r in rows:
                del r["hits"], r["sampled"]
            def array(name: str, shape: tuple[int, ...]) -> np.ndarray:
                file = file_inside(folder, f"{name}.npy", name, str(folder / f"{name}.npy"))
                return read_npy(file, name, np.float32, shape)
            hidden = {c: array(f"hidden_{c}", (n, layers + 1, d)) for c in HIDDEN_CONDITIONS}
            cands = {c: array(f"candidate_{c}", (n, d)) for c in candidates}
            meta = {k: v for k, v in manifest.items() if k not in ("format", "n_steps", "n_layers", "d_model", "rules",
                                                                   "conditions", "hidden_conditions", "candidates")}
            return cls(rows, hits, sampled, hidden, cands, meta)
        return read_whole(path, read, "step records folder")


def _names(raw: Any, field: str, allowed: Sequence[str] | None, where: str) -> list[str]:
    """A manifest's list of distinct non-empty names (each among ``allowed`` where given)."""
    if not isinstance(raw, list):
        raise DataError(field, f"expected a list of names, got {type(raw).__name__}", where)
    for i, name in enumerate(raw):
        if not isinstance(name, str) or not name or (allowed is not None and name not in allowed):
            want = "a non-empty name" if allowed is None else f"one of {list(allowed)}"
            raise DataError(f"{field}[{i}]", f"expected {want}, got {name!r:.60}", where)
        if name in raw[:i]:
            raise DataError(f"{field}[{i}]", f"{name!r:.60} is named twice", where)
    return list(raw)


def _row(row: Any, rules: Sequence[str], where: str) -> dict[str, Any]:
    """One row of ``steps.jsonl``, every field :data:`ROW_FIELDS` names of its type and range."""
    if not isinstance(row, dict):
        raise DataError("steps.jsonl", f"expected an object, got {type(row).__name__}", where)
    missing = [k for k in ROW_FIELDS if k not in row]
    if missing:
        raise DataError(missing[0], "missing", where)
    for key in ("episode_id", "memory_kind", "target_type"):
        if not isinstance(row[key], str) or not row[key]:
            raise DataError(key, f"expected a non-empty string, got {row[key]!r:.60}", where)
    check_number(row["step"], "step", 0, None, integer=True, path=where)
    check_number(row["n_elements"], "n_elements", 0, None, integer=True, path=where)
    if not isinstance(row["groups"], list) or not all(isinstance(g, str) for g in row["groups"]):
        raise DataError("groups", f"expected a list of group names, got {row['groups']!r:.60}", where)
    for name, conditions in (("hits", CONDITIONS), ("sampled", SAMPLED_CONDITIONS)):
        by_rule = row[name]
        for rule in rules:
            values = by_rule.get(rule) if isinstance(by_rule, dict) else None
            if not isinstance(values, dict):
                raise DataError(f"{name}.{rule}", "missing, or not an object of conditions", where)
            for c in conditions:
                field, value = f"{name}.{rule}.{c}", values.get(c)
                if name == "hits" and not isinstance(value, bool):
                    raise DataError(field, f"expected true or false, got {value!r:.60}", where)
                if name == "sampled":  # a share of samples that match
                    values[c] = float(check_number(value, field, 0, 1, path=where))
    return row


def concat(parts: Sequence[StepRecords]) -> StepRecords:
    """Several records as one, in order; they must have the same rules, candidates, layers and width."""
    if not parts:
        raise ValueError("nothing to concatenate")
    first = parts[0]
    for p in parts[1:]:
        if (p.rules, sorted(p.candidates), p.hidden["text"].shape[1:]) != (
                first.rules, sorted(first.candidates), first.hidden["text"].shape[1:]):
            raise DataError("records", "records of different rules, candidates or hidden-state shapes")
    return StepRecords([r for p in parts for r in p.rows],
                       {rule: {c: np.concatenate([p.hits[rule][c] for p in parts]) for c in CONDITIONS}
                        for rule in first.rules},
                       {rule: {c: np.concatenate([p.sampled[rule][c] for p in parts]) for c in SAMPLED_CONDITIONS}
                        for rule in first.rules},
                       {c: np.concatenate([p.hidden[c] for p in parts]) for c in HIDDEN_CONDITIONS},
                       {c: np.concatenate([p.candidates[c] for p in parts]) for c in first.candidates},
                       dict(first.meta))


# ----------------------------------------------------------------------------- collecting
def step_seed(seed: int, memory_kind: str, episode_id: str, step: int) -> int:
    """The sampling seed of one step (with one memory's retrieval): a hash, so its draws do not depend
    on which other steps are collected with it or in which batch. The text and the image rendering
    draw with the *same* seed (common random numbers): where the two distributions are equal, their
    samples are equal and the step is tied, so a preference comes from what the rendering changed,
    not from the luck of two independent draws."""
    digest = hashlib.blake2b(f"{seed}|{memory_kind}|{episode_id}|{step}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


def _policy_outputs(policy: Any, inputs: Sequence[PolicyInput], feats: list | None, modality: Modality,
                    hidden: bool, n_samples: int, seeds: Sequence[int], temperature: float,
                    greedy: list[PolicyOutput] | None = None) -> list[PolicyOutput]:
    """One batch of the policy's answers under ``modality``, with hidden states and samples as asked
    (``greedy``: the answers, already given by a prefix-sharing actor; only the samples are drawn)."""
    if feats is not None:
        gens = [torch.Generator().manual_seed(s) for s in seeds] if n_samples else None
        return policy.act_features(feats, [modality] * len(feats), hidden, n_samples=n_samples, generator=gens,
                                   temperature=temperature)
    shown = [x.with_modality(modality) for x in inputs]
    outputs = greedy if greedy is not None else policy.act(shown, output_hidden_states=hidden)
    if n_samples:
        drawn = policy.sample(shown, n_samples, seeds, temperature)
        outputs = [PolicyOutput(o.action, o.hidden_states, o.raw, {**o.info, "samples": d})
                   for o, d in zip(outputs, drawn)]
    return outputs


def collect_records(policy: Any, examples: Sequence[Any], rules: Mapping[str, MatchConfig],
                    preference: SampledPreference, seed: int = 0, batch_size: int = 64,
                    progress: bool = True) -> StepRecords:
    """Run ``policy`` on every example under every condition and keep what SwitchMem needs.

    ``examples`` carry ``input`` (with the memory as text *and* image), ``target``, ``episode_id``,
    ``step`` and ``memory_kind``. ``rules`` names the step rules (``{"aitw": MatchConfig("aitw"),
    "learngui": ...}``); ``preference`` how many actions are drawn, at what temperature. A featurising
    policy (the miniature actor) reads each input once and is run
    from its features; one that shares prompt prefixes (a Hugging Face VLM: ``act_conditions``) runs
    each batch's prefixes once for the four conditions; any other must offer
    ``act(..., output_hidden_states=True)``; all of them ``sample`` (for ``n_samples > 0``) and
    ``memory_embeddings``.
    """
    n_samples, temperature = preference.n_samples, preference.temperature
    for ex in examples:
        if ex.input.memory_text is None or ex.input.memory_image is None:
            raise DataError("memory", f"step {ex.episode_id}/{ex.step} needs its memory as text and as image")
    featurising = hasattr(policy, "featurise") and hasattr(policy, "act_features")
    sharing = not featurising and bool(getattr(policy, "shares_prefix", False))
    inputs = [ex.input for ex in examples]
    targets = [ex.target for ex in examples]
    hits = {r: {c: np.zeros(len(examples), dtype=bool) for c in CONDITIONS} for r in rules}
    sampled = {r: {c: np.zeros(len(examples)) for c in SAMPLED_CONDITIONS} for r in rules}
    hidden: dict[str, list[np.ndarray]] = {c: [] for c in HIDDEN_CONDITIONS}
    cands: dict[str, list[np.ndarray]] = {c: [] for c in CANDIDATES}
    bar = progress_bar(total=len(examples), desc="layer analysis", disable=not progress)
    for lo in range(0, len(examples), batch_size):
        chunk = list(range(lo, min(lo + batch_size, len(examples))))
        feats = [policy.featurise(inputs[i]) for i in chunk] if featurising else None
        # a prefix-sharing actor answers the four conditions on one pass of the chunk's shared prefixes
        greedy = (policy.act_conditions([inputs[i] for i in chunk], CONDITIONS, HIDDEN_CONDITIONS)
                  if sharing else None)
        for c in CONDITIONS:
            n_s = n_samples if c in SAMPLED_CONDITIONS else 0
            seeds = [step_seed(seed, examples[i].memory_kind, examples[i].episode_id, examples[i].step) for i in chunk]
            outs = _policy_outputs(policy, [inputs[i] for i in chunk], feats, c, c in HIDDEN_CONDITIONS, n_s, seeds,
                                   temperature, None if greedy is None else greedy[c])
            for i, o in zip(chunk, outs):
                for r, cfg in rules.items():
                    hits[r][c][i] = action_match(o.action, targets[i], inputs[i].elements, cfg)
                    if n_s:
                        sampled[r][c][i] = np.mean([action_match(a, targets[i], inputs[i].elements, cfg)
                                                    for a in o.info["samples"]])
            if c in HIDDEN_CONDITIONS:
                hidden[c] += [o.hidden_states for o in outs]
        for c in CANDIDATES:
            cands[c].append(policy.memory_embeddings(feats if featurising else [inputs[i] for i in chunk], c))
        bar.update(len(chunk))
    bar.close()
    groups_step = step_groups(inputs, targets)
    groups_info = information_groups(inputs, targets)
    rows = []
    for i, ex in enumerate(examples):
        groups = sorted({g for g, m in groups_step.items() if m[i]} | {g for g, m in groups_info.items() if m[i]})
        row = {"episode_id": ex.episode_id, "step": int(ex.step), "memory_kind": ex.memory_kind,
               "target": ex.target.describe(), "target_type": ex.target.type, "groups": groups,
               "n_elements": len(ex.input.elements), "goal": ex.input.goal}
        rows.append(row)
    d = {c: np.stack(v).astype(np.float32) if v else np.zeros((0, 1, 1), np.float32) for c, v in hidden.items()}
    meta = {"n_samples": n_samples, "temperature": temperature, "seed": seed,
            "actor": type(policy).__name__}
    return StepRecords(rows, hits, sampled, d,
                       {c: np.concatenate(v).astype(np.float32) for c, v in cands.items()}, meta)
