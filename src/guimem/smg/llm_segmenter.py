"""The language-model segmenter: SmolLM2 cuts a textual trajectory into subgoals.

SmolLM2-135M-Instruct (:mod:`guimem.models.llm`) reads a compact textual trajectory
(:func:`~guimem.smg.screens.trajectory_text`: one line per step, the screen's title and the
action in words) after two worked examples, and answers one line per subgoal,
``<first>-<last>: <intent>`` (by default *guided*: each line is started for it).
:func:`parse_llm_answer` is lenient about the form and strict about the meaning; an answer
without a single usable range is *unparseable*, counted, and that episode falls back to the
rule segmentation.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from guimem.core.data import DataError, Episode
from guimem.smg.annotate import span_intent
from guimem.smg.screens import blind, read_episode, trajectory_text
from guimem.smg.segmenters import SegmenterBase, Span, rule_spans, spans_from_starts

if TYPE_CHECKING:  # pragma: no cover
    from guimem.models.llm import LocalLLM
    from guimem.smg.judge import Judge


LLM_SYSTEM_PROMPT = (
    "You split a phone agent's trajectory into subgoals. A subgoal is a run of consecutive steps "
    "with one purpose, such as opening a screen, typing into a field, or changing a setting. "
    "Answer with one line per subgoal, in order, covering every step exactly once:\n"
    "<first step>-<last step>: <the subgoal in a few words>"
)
"""The system turn of the segmentation prompt."""

LLM_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("""Goal: send "hi" to Bob
Steps:
1. [Chats] tap an unlabeled icon at top right
2. [Search] type "Bob" into "Search"
3. [Search] tap "Bob" (list_item)
4. [Bob] tap "Message" (field)
5. [Bob] type "hi" into "Message"
6. [Bob] tap an unlabeled icon at bottom right
7. [Bob] done
End: [Bob]""",
     """1-3: open the chat with Bob
4-5: type the message "hi"
6-7: send the message"""),
    ("""Goal: Turn off Wi-Fi
Steps:
1. [the home screen] tap "Settings" (grid_cell)
2. [the home screen + 'Allow notifications?' window] tap "Don't allow" (button)
3. [Settings] swipe up on the list
4. [Settings] tap "Network" (list_item)
5. [Network] tap "Wi-Fi" (toggle)
6. [Network] done
End: [Network]""",
     """1-1: open Settings
2-2: dismiss the popup
3-4: open the Network page
5-6: turn off Wi-Fi"""),
)
"""Worked examples shown before the real trajectory (few-shot prompting): trajectory, answer."""


def segmentation_prompt(episode: Episode) -> list[dict[str, str]]:
    """The chat messages asking the LLM to segment ``episode`` (system, worked examples, trajectory)."""
    messages = [{"role": "system", "content": LLM_SYSTEM_PROMPT}]
    for trajectory, answer in LLM_EXAMPLES:
        messages += [{"role": "user", "content": trajectory}, {"role": "assistant", "content": answer}]
    return messages + [{"role": "user", "content": trajectory_text(episode)}]


_NUM_START, _NUM_END = r"(?<!\d)(?<!\d[.:])", r"(?!\d|[.:]\d)"  # not inside 6:40 or 4.2.1
_RANGE = re.compile(rf"(?:\bsteps?\s*)?{_NUM_START}(\d{{1,3}})\s*(?:-|–|—|\bto\b|\.\.|\bthrough\b)\s*(\d{{1,3}}){_NUM_END}",
                    re.I)
_SINGLE = re.compile(rf"\bsteps?\s*#?\s*(\d{{1,3}}){_NUM_END}", re.I)
_LINE_PREFIX = re.compile(r"^\s*(?:[-*•>#]+\s*|(?:subgoal|segment|part)\s*#?\d+\s*[:.)-]?\s*)", re.I)
_TRIM = " \t:;,.-–—()[]{}\"'`*"


@dataclass(frozen=True)
class ParsedAnswer:
    """What :func:`parse_llm_answer` made of an answer.

    ``status`` is ``ok`` (the lines tile every step in order), ``repaired`` (usable after fixes
    listed in ``problems``) or ``unparseable`` (no usable range; ``spans`` is empty).
    """

    spans: tuple[Span, ...]
    status: str
    problems: tuple[str, ...] = ()


def _parse_line(line: str) -> tuple[int, int, str] | None:
    """(first, last, intent) from one answer line (1-based steps), or None."""
    body = _LINE_PREFIX.sub("", line)
    m = _RANGE.search(body)
    if m is not None:
        first, last = int(m.group(1)), int(m.group(2))
    else:
        m = _SINGLE.search(body)
        if m is None:
            return None
        first = last = int(m.group(1))
    intent = (body[m.end():].strip(_TRIM) or body[:m.start()].strip(_TRIM))
    return first, last, re.sub(r"\s+", " ", intent)


def parse_llm_answer(answer: str, n_steps: int) -> ParsedAnswer:
    """Spans (0-based) from an LLM answer about a trajectory of ``n_steps`` steps.

    Lenient about form: bullets, ``Subgoal 2:`` prefixes, ``steps 3-5``, ``3 to 5``, ``3–5``,
    ``Step 6:`` and an intent before or after the range are all read. Strict about meaning:
    reversed ranges are flipped, ranges past the last step clipped or dropped, and the
    boundaries are the distinct first steps; a missing intent is left '' (the caller fills
    it). Each fix is named in ``problems``. No usable range at all: ``unparseable``.
    """
    found: list[tuple[int, int, str]] = []
    problems: list[str] = []
    for line in answer.splitlines():
        parsed = _parse_line(line)
        if parsed is None:
            if line.strip():
                problems.append(f"ignored line {line.strip()[:60]!r}")
            continue
        first, last, intent = parsed
        if first > last:
            problems.append(f"reversed range {first}-{last}")
            first, last = last, first
        if first < 1 or first > n_steps:
            problems.append(f"range {first}-{last} outside steps 1-{n_steps}")
            continue
        if last > n_steps:
            problems.append(f"range {first}-{last} clipped to {n_steps}")
            last = n_steps
        found.append((first, last, intent))
    if not found:
        return ParsedAnswer((), "unparseable", tuple(problems) or ("no step range found",))
    expected, tiles = 1, True
    for first, last, _ in found:
        tiles &= first == expected
        expected = last + 1
    if not (tiles and expected == n_steps + 1):
        problems.append("ranges do not tile the steps in order; boundaries taken from their first steps")
    texts: dict[int, str] = {}
    for first, _, intent in found:
        texts.setdefault(first - 1, intent)
    if 0 not in texts:
        problems.append("no range starts at step 1")
    spans = spans_from_starts(texts, n_steps, texts)
    if any(not s.text for s in spans):
        problems.append("missing intent")
    return ParsedAnswer(tuple(spans), "repaired" if problems else "ok", tuple(problems))


def answer_complete(answer: str, n_steps: int) -> bool:
    """Whether an answer already has a range reaching the last step (generation may stop)."""
    return any(p is not None and max(p[0], p[1]) >= n_steps for p in map(_parse_line, answer.splitlines()))


@dataclass
class LLMRecord:
    """One LLM call: the episode, the raw answer, its parse status and problems, and the time it took."""

    episode_id: str
    answer: str
    status: str
    problems: tuple[str, ...]
    seconds: float
    prompt_tokens: int


@dataclass
class LLMStats:
    """Every call of an :class:`LLMSegmenter`, for counting unparseable answers and timing."""

    records: list[LLMRecord] = field(default_factory=list)

    def count(self, status: str) -> int:
        """How many answers had ``status`` (ok, repaired, unparseable)."""
        return sum(r.status == status for r in self.records)

    def summary(self) -> dict[str, int]:
        """Counts of episodes and of each status (deterministic: no times)."""
        return {"episodes": len(self.records), "ok": self.count("ok"), "repaired": self.count("repaired"),
                "unparseable": self.count("unparseable")}


LLM_MODES: tuple[str, ...] = ("guided", "free")


class LLMSegmenter(SegmenterBase):
    """Boundaries and intents proposed by a local LLM; an unparseable answer falls back to :func:`rule_spans`.

    Two ways of asking (``mode``):

    - ``guided`` (default): the answer is written line by line. Each line is started for the
      model as ``"<next step>-"`` (the step after the previous line's end) and the model
      writes the rest: where the subgoal ends and what it is. Overlaps cannot happen, and
      generation stops at each line's end. A line whose end cannot be read, or lies before its
      start, ends the answer there.
    - ``free``: the model writes the whole answer; generation stops once a line reaches the
      last step. Small models tend to answer with overlapping windows (``1-3``, ``2-4``, ...).

    Either way the answer goes through :func:`parse_llm_answer`; intents the LLM left empty
    are filled with the rule intent of the same span. Every call is recorded in :attr:`stats`
    (raw answer, status, problems, seconds).
    """

    name = "llm"

    def __init__(self, llm: "LocalLLM", judge: "Judge | None" = None, mode: str = "guided",
                 tokens_per_line: int = 20, max_new_tokens: int = 256):
        super().__init__(judge)
        if mode not in LLM_MODES:
            raise DataError("mode", f"unknown LLM segmentation mode {mode!r}; expected one of {LLM_MODES}")
        self.llm, self.mode = llm, mode
        self.tokens_per_line, self.max_new_tokens = tokens_per_line, max_new_tokens
        self.stats = LLMStats()

    def _answer_free(self, messages: list[dict[str, str]], n: int) -> str:
        """The whole answer in one generation."""
        budget = min(self.max_new_tokens, 8 + self.tokens_per_line * n)
        return self.llm.generate(messages, max_new_tokens=budget, stop=lambda text: answer_complete(text, n))

    def _answer_guided(self, messages: list[dict[str, str]], n: int) -> str:
        """The answer line by line, each line started as ``"<next step>-"`` for the model."""
        answer, first = self.llm.start(messages), 1
        lines: list[str] = []
        while first <= n:
            head = f"{first}-"
            answer.write(head)
            line = head + answer.generate(self.tokens_per_line).split("\n", 1)[0]
            lines.append(line)
            if not answer.text.endswith("\n"):
                answer.write("\n")
            parsed = _parse_line(line)
            if parsed is None or parsed[1] < first:
                break  # the format broke: the answer so far is parsed as it is
            first = parsed[1] + 1
        return "".join(f"{line}\n" for line in lines)

    def spans(self, episode: Episode) -> list[Span]:
        """Ask the LLM; parse; fall back to the rule spans when nothing usable came back."""
        ep, n = blind(episode), len(episode.steps)
        messages = segmentation_prompt(ep)
        start = time.perf_counter()
        answer = self._answer_guided(messages, n) if self.mode == "guided" else self._answer_free(messages, n)
        seconds = time.perf_counter() - start
        parsed = parse_llm_answer(answer, n)
        self.stats.records.append(LLMRecord(episode.id, answer, parsed.status, parsed.problems, seconds,
                                            self.llm.count_tokens(messages)))
        if parsed.status == "unparseable":
            return rule_spans(ep)
        reading = read_episode(ep)  # once: each span's intent reads it
        return [s if s.text else replace(s, text=span_intent(ep, s.first, s.last, reading)) for s in parsed.spans]
