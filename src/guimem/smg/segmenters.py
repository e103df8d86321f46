"""Segmenters that cut a trajectory into subgoals from what an agent sees (rules) or from labels.

Every segmenter produces :class:`Span` s; :func:`build_subgoals` turns them into subgoals with
``effect`` (a sentence from the UI-tree diff), ``behaviour`` (the action pattern, e.g.
``scroll x2, tap``) and ``success`` from a success judge (:mod:`guimem.smg.judge`).

- ``rule`` (default): reads only what an agent sees — the UI trees before and after each
  action and the actions themselves. Never the ground-truth labels, the true screen type
  (``Observation.screen``), ``Episode.success`` or the provenance: it works on
  :func:`~guimem.smg.screens.blind` copies.
- ``ground_truth``: the world's :class:`~guimem.core.data.SubgoalLabel` runs (analysis, upper bound).

The language-model segmenter is in :mod:`guimem.smg.llm_segmenter`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Protocol, Sequence

from guimem.core.data import DataError, Episode, Subgoal
from guimem.core.describe import (
    FIELD_ROLES,
)
from guimem.smg.annotate import behaviour_of, effect_of, span_intent
from guimem.smg.judge import Judge, RuleJudge
from guimem.smg.screens import Reading, blind, read_episode, screen_contexts


@dataclass(frozen=True)
class Span:
    """A proposed subgoal: steps ``first..last`` (inclusive, 0-based) and its intent text."""

    first: int
    last: int
    text: str


def check_spans(spans: Sequence[Span], n_steps: int, episode_id: str = "") -> None:
    """Raise :class:`DataError` unless ``spans`` tile steps ``0..n_steps-1`` in order."""
    expected = 0
    for i, span in enumerate(spans):
        if span.first != expected or span.last < span.first:
            raise DataError(f"spans[{i}]", f"episode {episode_id!r}: expected a span starting at step {expected}, "
                            f"got {span.first}..{span.last}")
        expected = span.last + 1
    if expected != n_steps:
        raise DataError("spans", f"episode {episode_id!r}: spans cover steps 0..{expected - 1} "
                        f"but the episode has {n_steps} steps")


def spans_from_starts(starts: Iterable[int], n_steps: int, texts: Mapping[int, str] | None = None) -> list[Span]:
    """Spans tiling ``0..n_steps-1`` that begin at ``starts`` (0 added, out-of-range dropped)."""
    cut = sorted({0} | {s for s in starts if 0 < s < n_steps})
    ends = cut[1:] + [n_steps]
    return [Span(s, e - 1, (texts or {}).get(s, "")) for s, e in zip(cut, ends)]


def build_subgoals(episode: Episode, spans: Sequence[Span], verdicts: Sequence[str]) -> list[Subgoal]:
    """Subgoals for ``spans`` of ``episode`` with effect, behaviour, successor and the judge's ``verdicts``."""
    check_spans(spans, len(episode.steps), episode.id)
    if len(verdicts) != len(spans):
        raise DataError("verdicts", f"{len(verdicts)} verdicts for {len(spans)} spans of episode {episode.id!r}")
    obs = episode.observations
    contexts = screen_contexts(obs)
    subgoals = []
    for i, (span, verdict) in enumerate(zip(spans, verdicts)):
        a, b = span.first, span.last + 1
        actions = tuple(s.action for s in episode.steps[a:b])
        subgoals.append(Subgoal(
            episode_id=episode.id, index=i, first_step=span.first, last_step=span.last,
            from_screenshot=obs[a].screenshot, to_screenshot=obs[b].screenshot, text=span.text,
            effect=effect_of(obs[a], obs[b], contexts[a], contexts[b]), behaviour=behaviour_of(actions),
            success=verdict, successor=i + 1 if i + 1 < len(spans) else None,
            goal=episode.goal, app=episode.app, actions=actions))
    return subgoals


# ============================================================================= segmenters
class Segmenter(Protocol):
    """Proposes spans for an episode; :meth:`segment` adds annotations and verdicts."""

    name: str

    def spans(self, episode: Episode) -> list[Span]:
        """The episode cut into spans tiling all of its steps."""
        ...

    def segment(self, episode: Episode) -> list[Subgoal]:
        """The episode's subgoals, annotated and judged."""
        ...


class SegmenterBase:
    """Shared :meth:`segment`: spans from the subclass, verdicts from the judge."""

    name = ""

    def __init__(self, judge: Judge | None = None):
        self.judge = judge if judge is not None else RuleJudge()

    def spans(self, episode: Episode) -> list[Span]:  # pragma: no cover - abstract
        raise NotImplementedError

    def segment(self, episode: Episode) -> list[Subgoal]:
        """The episode's subgoals, annotated, with the judge's per-subgoal verdicts."""
        spans = self.spans(episode)
        verdicts = self.judge.judge(blind(episode), [(s.first, s.last) for s in spans])
        return build_subgoals(episode, spans, verdicts.subgoals)


class GroundTruthSegmenter(SegmenterBase):
    """Spans from the world's :class:`~guimem.core.data.SubgoalLabel` runs (analysis only)."""

    name = "ground_truth"

    def spans(self, episode: Episode) -> list[Span]:
        """One span per run of equal label index; every step must carry a label."""
        spans: list[Span] = []
        for i, step in enumerate(episode.steps):
            if step.subgoal is None:
                raise DataError(f"steps[{i}].subgoal", f"episode {episode.id!r} has an unlabelled step; "
                                "the ground-truth segmenter needs every step labelled")
            if spans and episode.steps[spans[-1].first].subgoal.index == step.subgoal.index:
                spans[-1] = replace(spans[-1], last=i)
            else:
                spans.append(Span(i, i, step.subgoal.text))
        return spans


def _continues(ep: Episode, r: Reading, i: int, j: int) -> bool:
    """Whether effective step ``i`` continues the subgoal of the effective step ``j`` before it
    (only noise between them): typing after its field tap, enter after typing, the same control pressed again."""
    steps, a = ep.steps, ep.steps[i].action
    prev = steps[j].action
    if a.type == "enter":
        return prev.type == "type"
    if a.type == "type":
        if prev.type == "type" or (r.targets[j] is not None and r.targets[j].role in FIELD_ROLES):
            return True
        run_end = i
        while run_end + 1 < len(steps) and steps[run_end + 1].action.type == "type":
            run_end += 1
        submitted = run_end + 1 < len(steps) and steps[run_end + 1].action.type == "enter"
        return prev.type == "tap" and submitted  # open search, type, submit: one search
    if a.type in ("tap", "long_press") and prev.type == a.type:  # pressing the same control again
        same = r.targets[i] is not None and r.targets[i] == r.targets[j]
        return same and r.contexts[j] == r.contexts[i] == r.contexts[i + 1]
    return False


def rule_spans(episode: Episode) -> list[Span]:
    """Cut an episode by what its steps did to the screen (see :class:`RuleSegmenter`)."""
    ep = blind(episode)
    r = read_episode(ep)
    groups: list[list[int]] = []
    pending: list[int] = []  # noise, scrolls and detours waiting for the step they led to
    for i, kind in enumerate(r.kinds):
        only_noise = all(r.kinds[k] == "noise" for k in pending)
        if kind in ("noise", "scroll", "detour"):
            pending.append(i)
        elif kind == "end" and ep.steps[i].action.type == "done" and groups:
            groups[-1].extend(pending + [i])
            pending = []
        elif kind == "effective" and groups and only_noise and _continues(ep, r, i, groups[-1][-1]):
            groups[-1].extend(pending + [i])
            pending = []
        else:
            groups.append(pending + [i])
            pending = []
    if pending:
        groups.append(pending)
    return [Span(g[0], g[-1], span_intent(ep, g[0], g[-1], r)) for g in groups]


class RuleSegmenter(SegmenterBase):
    """Boundaries from the screens and the actions only (never the labels or the true screen types).

    Each step is read as *effective* (the screen changed), *noise* (nothing visible
    changed), a *scroll*, part of a *detour* (it entered a screen or menu and a ``back``
    left the screen exactly as before) or the *end* (``done``/``impossible``). A subgoal
    ends with an effective step: noise, scrolls and detours join the effective step that
    follows them; typing and ``enter`` join the field tap (or the search opened) before them;
    pressing the same control again joins the previous press (noise in between is absorbed);
    ``done`` joins the last subgoal, while ``impossible`` gives up on a new one. A scroll
    after which a window appears counts as effective. Leftover noise at the end of an
    episode (wandering) forms its own subgoal.
    """

    name = "rule"

    def spans(self, episode: Episode) -> list[Span]:
        """The episode's rule spans with their intents."""
        return rule_spans(episode)
