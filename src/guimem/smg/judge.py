"""The success judge: did a trajectory (and each of its subgoals) succeed?

The judge sees what a real judge would see — the screens' UI trees, the actions and the
goal — and nothing else: every judge works on :func:`guimem.smg.screens.blind` copies, so
``Episode.success``, the true screen types, the ground-truth labels and the provenance
cannot reach it. Verdicts are ``yes``, ``no`` or ``uncertain``.

:class:`RuleJudge` (the default) decides the episode from how it ended, from what the
agent acted on and from the final screen, and each subgoal from its visible effect:

- ended with ``impossible``, or without ``done`` (the step budget ran out): ``no``;
- ended with ``done``: ``no`` when the agent typed text that contradicts the goal (text the
  goal never says, or only part of a phrase it quotes); for a goal that asks to switch
  something on or off, the switch's state on the final screen decides (when it is shown);
  otherwise ``yes`` when at least ``evidence`` of the goal's key words are among the words
  the agent acted on (labels it touched, text it typed, screens it reached) or that newly
  appeared on the final screen, else ``uncertain``;
- a subgoal: the last one shares the episode's verdict; an earlier one is ``no`` when it
  left the screen exactly as it found it (a dead end undone, a tap on nothing), else ``yes``.

:class:`LLMJudge` asks SmolLM2 the episode question instead and reads its yes/no
probabilities (the subgoal verdicts stay rule-based).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol, Sequence

import numpy as np

from guimem.core.data import Episode, UIElement
from guimem.models.llm import LocalLLM
from guimem.smg.annotate import screen_at
from guimem.smg.screens import (
    blind,
    choice_states,
    element_name,
    looks_same,
    read_episode,
    screen_contexts,
    trajectory_text,
)

JUDGES: tuple[str, ...] = ("rule", "llm")  # the success judges: RuleJudge, LLMJudge

STOPWORDS = frozenset("""a an the to of in on for and or with from into onto at by as is it its this that
be my me your you then than so up out off all any some set turn make go open find show app screen
please new called named titled say says add remove delete create start send share restore pin mark
star rename mute label search change choose select""".split())
"""Words never counted as goal evidence: function words and task verbs (the words the agent acts *with*)."""

SWITCH_GOAL = re.compile(r"\b(?:turn|switch|toggle|set)\s+(on|off)\s+(?:the\s+)?(.+?)(?:\s+in\s+.*)?$"
                         r"|\b(?:turn|switch|set)\s+(?:the\s+)?(.+?)\s+(on|off)\b"
                         r"|\b(enable|disable)\s+(?:the\s+)?(.+?)(?:\s+in\s+.*)?$", re.I)


@dataclass(frozen=True)
class Verdicts:
    """A judge's verdict on an episode and on each of its subgoals, with the episode's reason."""

    episode: str
    subgoals: tuple[str, ...]
    reason: str = ""


class Judge(Protocol):
    """Judges an episode cut into spans ``(first, last)``."""

    name: str

    def judge(self, episode: Episode, spans: Sequence[tuple[int, int]]) -> Verdicts:
        """Verdicts for the episode and for each span."""
        ...


# ----------------------------------------------------------------------------- evidence
_WORD = re.compile(r"[a-z0-9][a-z0-9'&:-]*")


def _stem(word: str) -> str:
    """A crude plural-folding stem: ``notes`` -> ``note`` (enough to match goal and screen words)."""
    word = word.strip("'")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def words(text: str) -> set[str]:
    """The stemmed, lower-cased words of a text."""
    return {_stem(w) for w in _WORD.findall(text.lower())}


def goal_keywords(goal: str) -> list[str]:
    """The goal's content words (stemmed, lower-cased, in order, no duplicates): no stopwords, no task verbs."""
    out: list[str] = []
    for w in _WORD.findall(goal.lower()):
        w = _stem(w)
        if w and w not in STOPWORDS and w not in out:
            out.append(w)
    return out


def quoted_phrases(goal: str) -> list[str]:
    """Text the goal puts in quotes, e.g. ``'buy stamps'``."""
    return [a or b for a, b in re.findall(r"'([^']+)'|\"([^\"]+)\"", goal)]


def switch_goal(goal: str) -> tuple[str, str] | None:
    """(thing, 'on'|'off') when the goal asks to switch something, e.g. ``turn on Wi-Fi``; else None."""
    m = SWITCH_GOAL.search(goal.strip().rstrip("."))
    if m is None:
        return None
    if m.group(1):
        return m.group(2).strip(), m.group(1).lower()
    if m.group(3):
        return m.group(3).strip(), m.group(4).lower()
    return m.group(6).strip(), "on" if m.group(5).lower() == "enable" else "off"


def switch_state(elements: Sequence[UIElement], thing: str) -> str | None:
    """The state word ('on'/'off') of the switch named like ``thing`` on this screen, or None."""
    want = thing.lower()
    by_id = {e.id: e for e in elements}
    for cid, state in choice_states(elements).items():
        name = element_name(by_id[cid], elements).lower()
        if name and (name == want or name in want or want in name) and state in ("on", "off"):
            return state
    return None


def acted_words(episode: Episode) -> set[str]:
    """Words of what the agent acted on: the labels it touched, the text it typed, the apps it
    opened, and the screens and windows its actions led to."""
    ep = blind(episode)
    r = read_episode(ep)
    out: set[str] = set()
    for step, target in zip(ep.steps, r.targets):
        if target is not None:
            out |= words(f"{element_name(target, step.elements)} {target.description}")
        if step.action.text:
            out |= words(step.action.text)
    for ctx in r.contexts[1:]:
        out |= words(f"{ctx.name} {ctx.overlay or ''}")
    return out


def new_final_words(episode: Episode) -> set[str]:
    """Words on the final screen that no earlier, different-looking screen of the same name
    showed: what the actions produced there."""
    ep = blind(episode)
    screens = ep.observations  # the last: the final screen, or the last one recorded
    contexts = screen_contexts(screens)
    final = words(" ".join(f"{e.text} {e.description}" for e in screens[-1].elements))
    earlier = set()
    for obs, ctx in zip(screens[:-1], contexts[:-1]):
        if ctx.name == contexts[-1].name and not looks_same(obs, screens[-1]):
            earlier |= words(" ".join(f"{e.text} {e.description}" for e in obs.elements))
    return final - earlier


def typing_mismatch(episode: Episode) -> str | None:
    """Why the typed text contradicts the goal (typed what the goal never says, or only part of a
    quoted phrase), or None."""
    goal = episode.goal.lower()
    typed = [s.action.text.strip() for s in episode.steps if s.action.type == "type" and s.action.text.strip()]
    for t in typed:
        if t.lower() not in goal:
            return f"typed '{t}', which the goal does not say"
    for q in quoted_phrases(episode.goal):
        partial = [t for t in typed if t.lower() in q.lower() and t.lower() != q.lower()]
        if partial and not any(t.lower() == q.lower() for t in typed):
            return f"typed '{partial[-1]}' where the goal says '{q}'"
    return None


# ----------------------------------------------------------------------------- the rule judge
@dataclass
class RuleJudge:
    """Verdicts from how the episode ended, what the agent acted on, and the final screen."""

    evidence: float = 0.5  # share of the goal's key words the agent must have acted on for a "yes"
    name: str = "rule"

    def episode_verdict(self, episode: Episode) -> tuple[str, str]:
        """(verdict, reason) for the whole episode."""
        ep = blind(episode)
        last = ep.steps[-1].action.type
        if last == "impossible":
            return "no", "the agent declared the task impossible"
        if last not in ("done", "answer"):  # an answer ends a task as done does
            return "no", "the trajectory ended without 'done' or an answer"
        mismatch = typing_mismatch(ep)
        if mismatch is not None:
            return "no", mismatch
        switch = switch_goal(ep.goal)
        if switch is not None:
            state = switch_state(ep.observations[-1].elements, switch[0])  # the final screen, or the last recorded
            if state is not None:
                where = "the final screen" if ep.final_recorded else "the last screen recorded"
                return ("yes" if state == switch[1] else "no"), f"'{switch[0]}' is {state} on {where}"
        keys = goal_keywords(ep.goal)
        if not keys:
            return "uncertain", "the goal has no key words to look for"
        seen = acted_words(ep) | new_final_words(ep)
        share = sum(k in seen for k in keys) / len(keys)
        if share >= self.evidence:
            return "yes", f"{share:.0%} of the goal's key words were acted on or appeared at the end"
        return "uncertain", f"only {share:.0%} of the goal's key words were acted on or appeared at the end"

    def subgoal_verdict(self, episode: Episode, first: int, last: int) -> str:
        """``no`` when a span left the screen exactly as it found it, else ``yes`` (two screens
        read, whatever the episode's length)."""
        return "no" if looks_same(screen_at(episode, first), screen_at(episode, last + 1)) else "yes"

    def judge(self, episode: Episode, spans: Sequence[tuple[int, int]]) -> Verdicts:
        """Verdicts for the episode and each span; the last span shares the episode's verdict."""
        ep = blind(episode)
        verdict, reason = self.episode_verdict(ep)
        subgoals = [self.subgoal_verdict(ep, a, b) for a, b in spans[:-1]] + ([verdict] if spans else [])
        return Verdicts(verdict, tuple(subgoals), reason)


# ----------------------------------------------------------------------------- the LLM judge
LLM_JUDGE_SYSTEM = ("You check whether a phone agent completed its task. Read the goal, the agent's "
                    "actions and what the final screen shows. Answer with one word: yes or no.")
"""The system turn of the judge prompt."""


def judge_prompt(episode: Episode) -> list[dict[str, str]]:
    """The chat messages asking whether ``episode`` reached its goal."""
    ep = blind(episode)
    where = screen_contexts(ep.observations)[-1].words()
    last = ep.observations[-1]
    shown = sorted({(e.text or e.description).strip() for e in last.elements if (e.text or e.description).strip()})
    which = "final screen" if ep.final_recorded else "last screen recorded (the final one was not)"
    final = f"The {which} is [{where}] and shows: {', '.join(shown[:30])}."
    return [{"role": "system", "content": LLM_JUDGE_SYSTEM},
            {"role": "user", "content": f"{trajectory_text(ep)}\n{final}\nDid the agent complete the goal? yes or no?"}]


YES_WORDS, NO_WORDS = ("yes", "Yes", " yes", " Yes"), ("no", "No", " no", " No")  # spellings of the answer's first word


@dataclass
class LLMJudge:
    """The episode verdict from a local LLM; subgoal verdicts (except the last) from :class:`RuleJudge`.

    The model is not asked to write: its next-token probabilities after the question decide.
    ``yes`` when the answer is more likely to start with *yes* than with *no* by at least
    ``margin`` (in log-probability), ``no`` for the reverse, ``uncertain`` in between. Each
    episode's pair of log-probabilities is kept in ``scores``.
    """

    llm: LocalLLM
    rules: RuleJudge = field(default_factory=RuleJudge)
    margin: float = 0.5  # log-probability gap needed for a yes or a no
    name: str = "llm"
    scores: list[tuple[float, float]] = field(default_factory=list)  # (log p(yes), log p(no)) per episode

    def episode_verdict(self, episode: Episode) -> tuple[str, str]:
        """(verdict, reason) for the whole episode, from the LLM's yes/no probabilities."""
        logp = self.llm.option_logprobs(judge_prompt(blind(episode)), YES_WORDS + NO_WORDS)
        yes = float(np.logaddexp.reduce([logp[w] for w in YES_WORDS]))
        no = float(np.logaddexp.reduce([logp[w] for w in NO_WORDS]))
        self.scores.append((yes, no))
        verdict = "yes" if yes - no >= self.margin else "no" if no - yes >= self.margin else "uncertain"
        return verdict, f"log p(yes) {yes:.2f}, log p(no) {no:.2f}"

    def judge(self, episode: Episode, spans: Sequence[tuple[int, int]]) -> Verdicts:
        """Ask the LLM about the episode; the last span shares its verdict."""
        ep = blind(episode)
        verdict, reason = self.episode_verdict(ep)
        subgoals = [self.rules.subgoal_verdict(ep, a, b) for a, b in spans[:-1]] + ([verdict] if spans else [])
        return Verdicts(verdict, tuple(subgoals), reason)
