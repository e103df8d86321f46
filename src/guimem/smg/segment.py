"""Choosing a segmenter by name and running it over episodes.

A *subgoal* is a contiguous run of steps with one sub-intent (the paper's memory tuple
⟨s_from, s_to; text, effect, behaviour, successor, success⟩, :class:`guimem.core.data.Subgoal`).
Three segmenters share one signature, ``segment(episode) -> list[Subgoal]``: ``rule``,
``llm`` and ``ground_truth`` (:mod:`guimem.smg.segmenters`, :mod:`guimem.smg.llm_segmenter`).
"""

from __future__ import annotations

from typing import Sequence

from guimem.core.data import DataError, Episode, Subgoal
from guimem.core.progress import progress_bar
from guimem.models.llm import LocalLLM, load_llm
from guimem.smg.judge import Judge
from guimem.smg.llm_segmenter import LLMSegmenter
from guimem.smg.segmenters import GroundTruthSegmenter, RuleSegmenter, Segmenter

SEGMENTERS: tuple[str, ...] = ("rule", "llm", "ground_truth")


def make_segmenter(name: str, judge: Judge | None = None, llm: LocalLLM | None = None,
                   llm_mode: str = "guided") -> Segmenter:
    """The segmenter called ``name`` (one of :data:`SEGMENTERS`); ``llm`` (loaded when None) and
    ``llm_mode`` are for ``llm``."""
    if name == "rule":
        return RuleSegmenter(judge)
    if name == "ground_truth":
        return GroundTruthSegmenter(judge)
    if name == "llm":
        if llm is None:
            llm = load_llm()
        return LLMSegmenter(llm, judge, mode=llm_mode)
    raise DataError("segmenter", f"unknown segmenter {name!r}; expected one of {SEGMENTERS}")


def segment_episodes(episodes: Sequence[Episode], segmenter: Segmenter, progress: bool = True) -> list[Subgoal]:
    """All subgoals of ``episodes``, in episode order, from one segmenter."""
    out: list[Subgoal] = []
    for episode in progress_bar(episodes, desc=f"segment ({segmenter.name})", disable=not progress):
        out.extend(segmenter.segment(episode))
    return out
