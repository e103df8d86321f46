"""The success judge: verdicts on hand-made episodes, and that hidden state never reaches it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

import handmade_episodes as hm
from guimem.smg.judge import (
    LLMJudge,
    RuleJudge,
    acted_words,
    goal_keywords,
    judge_prompt,
    quoted_phrases,
    switch_goal,
    typing_mismatch,
)
from guimem.smg.segmenters import RuleSegmenter, rule_spans


def spans_of(ep):
    return [(s.first, s.last) for s in rule_spans(ep)]


@pytest.mark.parametrize("make, verdict", [
    (hm.dark_theme_episode, "yes"),  # the switch the goal names is on at the end
    (hm.wrong_switch_episode, "no"),  # ... and off here
    (hm.give_up_episode, "no"),  # declared impossible
    (hm.new_note_episode, "yes"),  # typed what the goal quotes
    (hm.search_episode, "yes"),  # acted on 'milk' and 'note'
    (hm.one_step_episode, "uncertain"),  # nothing of the goal to look for
], ids=lambda x: getattr(x, "__name__", x))
def test_episode_verdicts(make, verdict):
    assert RuleJudge().episode_verdict(make())[0] == verdict


def test_a_partly_typed_quote_is_a_failure():
    verdict, reason = RuleJudge().episode_verdict(hm.new_note_episode(body="buy"))
    assert verdict == "no" and "typed 'buy' where the goal says 'buy stamps'" in reason


def test_typing_what_the_goal_never_says_is_a_failure():
    assert typing_mismatch(hm.new_note_episode(body="sell lamps")) == "typed 'sell lamps', which the goal does not say"
    assert typing_mismatch(hm.new_note_episode()) is None


def test_ending_without_done_is_a_failure():
    ep = hm.search_episode()
    cut = replace(ep, steps=ep.steps[:-1], final=ep.steps[-1].observation)
    assert RuleJudge().episode_verdict(cut) == ("no", "the trajectory ended without 'done' or an answer")


def test_evidence_threshold_decides_between_yes_and_uncertain():
    ep = hm.search_episode()  # goal words: note, milk, about -> 'about' is never seen
    assert RuleJudge(evidence=0.5).episode_verdict(ep)[0] == "yes"
    assert RuleJudge(evidence=1.0).episode_verdict(ep)[0] == "uncertain"


def test_subgoal_verdicts_mark_a_span_that_changed_nothing():
    ep = hm.dark_theme_episode()
    spans = [(0, 0), (1, 1), (2, 3), (4, 7)]  # (2, 3) is the dead end: About phone, then back
    assert RuleJudge().judge(ep, spans).subgoals == ("yes", "yes", "no", "yes")
    assert RuleJudge().judge(ep, []).subgoals == ()


def test_last_subgoal_shares_the_episode_verdict():
    verdicts = RuleJudge().judge(hm.wrong_switch_episode(), spans_of(hm.wrong_switch_episode()))
    assert verdicts.episode == "no" and verdicts.subgoals[-1] == "no"
    assert verdicts.subgoals[:-1] == ("yes", "yes")


@pytest.mark.parametrize("make", hm.ALL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("success", [True, False, None])
def test_judge_never_reads_hidden_state(make, success):
    ep = make()
    tampered = hm.without_truth(ep, success=success, screen="settings/secret")
    judge = RuleJudge()
    assert judge.judge(tampered, spans_of(ep)) == judge.judge(ep, spans_of(ep))
    assert [s.success for s in RuleSegmenter(judge).segment(tampered)] == \
        [s.success for s in RuleSegmenter(judge).segment(ep)]


def test_goal_helpers():
    assert switch_goal("Turn on Dark theme") == ("Dark theme", "on")
    assert switch_goal("Turn off Show previews in Notes") == ("Show previews", "off")
    assert switch_goal("switch Wi-Fi off") == ("Wi-Fi", "off")
    assert switch_goal("Enable Spell check") == ("Spell check", "on")
    assert switch_goal("Delete the note 'Gift ideas'") is None
    assert goal_keywords("Delete the note 'Gift ideas' from the Notes") == ["note", "gift", "idea"]
    assert quoted_phrases("""Create a note titled 'Errands' that says "buy stamps" """) == ["Errands", "buy stamps"]


def test_acted_words_come_from_touches_typing_and_screens_reached():
    words = acted_words(hm.search_episode())
    assert {"note", "milk", "search", "grocerie"} <= words  # 'Groceries' stems to 'grocerie'
    assert "travel" not in words  # shown, never acted on


# ----------------------------------------------------------------------------- the LLM judge
@dataclass
class ScriptedLLM:
    """A stand-in for :class:`guimem.models.llm.LocalLLM` whose answer probabilities come from a list."""

    logps: list[tuple[float, float]]  # (log p of each yes spelling, log p of each no spelling), per call
    prompts: list = field(default_factory=list)

    def option_logprobs(self, messages, options, prefix=""):
        self.prompts.append(messages)
        yes, no = self.logps.pop(0)
        return {o: (yes if o.strip().lower() == "yes" else no) for o in options}


def test_llm_judge_reads_yes_no_probabilities_with_a_margin():
    ep = hm.dark_theme_episode()
    llm = ScriptedLLM([(-1.0, -3.0), (-3.0, -1.0), (-1.0, -1.2)])
    judge = LLMJudge(llm, margin=0.5)
    assert judge.judge(ep, spans_of(ep)).episode == "yes"
    assert judge.judge(ep, spans_of(ep)).episode == "no"
    third = judge.judge(ep, spans_of(ep))
    assert third.episode == "uncertain" and third.subgoals[-1] == "uncertain"
    assert third.subgoals[:-1] == RuleJudge().judge(ep, spans_of(ep)).subgoals[:-1]
    assert len(judge.scores) == 3 and judge.scores[0][0] > judge.scores[0][1]
    assert llm.prompts[0] == judge_prompt(ep)


def test_llm_judge_prompt_shows_no_hidden_state():
    ep = hm.without_truth(hm.dark_theme_episode(), success=True, screen="settings/secret")
    text = "\n".join(m["content"] for m in judge_prompt(ep))
    assert "secret" not in text and "tampered" not in text
    assert "Turn on Dark theme" in text and "Dark theme" in text
    assert judge_prompt(ep) == judge_prompt(hm.dark_theme_episode())
