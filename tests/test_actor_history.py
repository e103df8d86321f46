"""What the miniature actor's history says when asked to (``ActorConfig.history_words``,
``history_effect``, ``done_match``, ``quoted_spans``): what each earlier action touched or typed,
whether the screen changed after it, which goal words the history has done, and typed text that
never runs across a quote. Off (the defaults), the history is the type and a 3x3 cell as before."""

from __future__ import annotations

import pytest
import torch
from PIL import Image

from actor_fixtures import BUTTONS
from guimem.actors.mini.config import DONE_MATCH, EFFECT_TOKENS, ActorConfig
from guimem.actors.mini.decoding import valid_spans
from guimem.actors.mini.features import collate, featurise, history_ids
from guimem.actors.mini.model import GuiActor
from guimem.actors.mini.tiny import TINY
from guimem.actors.mini.train import build_vocabulary
from guimem.core.data import Action, DataError, UIElement
from guimem.core.policy import PolicyInput
from guimem.models.tokenizer import span_text
from guimem.train.examples import ActorExample

MUTE = UIElement("m", "switch", "Mute", description="off", bounds=(0.0, 0.3, 1.0, 0.4), clickable=True)
MUTED = UIElement("m", "switch", "Mute", description="on", bounds=(0.0, 0.3, 1.0, 0.4), clickable=True)
SCREEN = Image.new("RGB", (90, 180), (230, 230, 230))
GOAL = "Turn on Mute and type 'see you at 5'"
HISTORY = (Action("tap", point=(0.25, 0.12)), Action("tap", point=(0.5, 0.35)), Action("type", text="see you"))
SCREENS = (BUTTONS, (*BUTTONS, MUTE), (*BUTTONS, MUTED))  # the tap on Display changed nothing visible; Mute did


def an_input(screens=SCREENS) -> PolicyInput:
    return PolicyInput(SCREEN, (*BUTTONS, MUTED), GOAL, HISTORY, history_screens=screens)


def vocab():
    return build_vocabulary([ActorExample(an_input(), Action("done"))], min_count=1, n_hash_buckets=8, effect=True)


def words(ids: torch.Tensor, v) -> list[str]:
    return [v.tokens[i] if i < len(v.tokens) else "#" for i in ids.tolist()]


def test_off_the_history_is_the_type_and_a_cell_of_each_action():
    v = vocab()
    assert words(history_ids(an_input(), v, ActorConfig(**TINY)), v) == [
        "[H:tap]", "[H:at_0_0]", "[H:tap]", "[H:at_1_1]", "[H:type]", "[H:-]"]


def test_on_each_action_says_what_it_touched_or_typed_and_whether_the_screen_changed():
    v = vocab()
    config = ActorConfig(**{**TINY, "history_words": 3, "history_effect": True})
    assert words(history_ids(an_input(), v, config), v) == [
        "[H:tap]", "[H:at_0_0]", "display", "[H:changed]",  # Mute appeared after it
        "[H:tap]", "[H:at_1_1]", "mute", "[H:changed]",  # Mute went from off to on
        "[H:type]", "[H:-]", "see", "you", "[H:same]"]  # nothing changed on the screen
    same = an_input(screens=(BUTTONS, BUTTONS, (*BUTTONS, MUTED)))
    assert words(history_ids(same, v, config), v)[3] == EFFECT_TOKENS[1]
    unknown = an_input(screens=())  # a caller that does not pass the screens: refused, not a silently shorter history
    with pytest.raises(DataError, match="history_screens"):
        history_ids(unknown, v, config)
    assert words(history_ids(unknown, v, ActorConfig(**TINY)), v)[:2] == ["[H:tap]", "[H:at_0_0]"]  # off: not needed


def test_done_match_needs_history_words():
    with pytest.raises(DataError, match="done_match"):
        ActorConfig(**{**TINY, "done_match": True}).check()


def test_done_match_marks_the_goal_words_the_history_did():
    v = vocab()
    config = ActorConfig(**{**TINY, "vocab_size": len(v), "history_words": 3, "done_match": True})
    f = featurise(an_input(), v, config)
    batch = collate([f], ["none"], config, v)
    goal = batch["segment_ids"][0] == 3  # SEG_GOAL
    codes = dict(zip(words(batch["input_ids"][0][goal], v), batch["match_ids"][0][goal].tolist()))
    assert codes["mute"] == codes["see"] == DONE_MATCH + 1 and codes["turn"] == codes["5"] == DONE_MATCH
    assert codes["'"] == 0  # punctuation: no code
    model = GuiActor(config).eval()
    assert model.embed.match.num_embeddings == DONE_MATCH + 2
    with torch.no_grad():
        assert torch.isfinite(model(**batch).type_logits).all()


def test_quoted_spans_never_cross_a_quote():
    v = vocab()
    f = featurise(an_input(), v, ActorConfig(**{**TINY, "vocab_size": len(v)}))
    free = valid_spans(f, ActorConfig(**TINY))
    quoted = valid_spans(f, ActorConfig(**{**TINY, "quoted_spans": True}))
    texts = {span_text(f.goal, f.goal_tokens, j, k) for j, k in quoted.nonzero().tolist()}
    assert "see you at 5" in texts and "Mute" in texts
    assert not any("'" in t for t in texts)
    assert (quoted & ~free).sum() == 0 and free.sum() > quoted.sum()
