"""The miniature actor: vocabulary, prompt layout, hidden states, save/load, decoding, training.

Every model here is a tiny randomly initialised one built from a config (2 layers, d=32,
a 32x16-pixel screen): the properties tested do not depend on size.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from actor_fixtures import BUTTONS
from guimem.actors.mini.config import (
    ACT_CONTEXT_SLOTS,
    DIRECTIONS,
    IGNORE,
    N_ROLE_SPECIAL,
    SEG_ACT,
    SEG_ELEMENT,
    SEG_GOAL,
    SEG_HISTORY,
    SEG_MEMORY_CROP,
    SEG_MEMORY_IMAGE,
    SEG_MEMORY_TEXT,
    SEG_SCREEN,
    ActorConfig,
)
from guimem.actors.mini.features import (
    MEMORY_MATCH,
    N_MATCH,
    act_context_ids,
    cell_of,
    collate,
    element_words,
    featurise,
    match_ids,
    memory_match_ids,
    pixel_alike,
    pixel_match_ids,
    prompt_length,
    role_index,
    targets_for,
    touched,
)
from guimem.actors.mini.decoding import decode
from guimem.actors.mini.model import GuiActor, decision_facts
from guimem.actors.mini.policy import MiniActor
from guimem.actors.mini.tiny import TINY
from guimem.actors.mini.train import (
    TrainConfig,
    build_vocabulary,
    modality_batches,
    round_holds,
    train_actor,
    type_class_weights,
)
from guimem.core.data import ACTION_TYPES, Action, DataError, Episode, Observation, Step, UIElement
from guimem.core.describe import swipe_direction
from guimem.core.policy import MODALITIES, PolicyInput
from guimem.core.store import load_episodes, save_episodes
from guimem.models.tokenizer import ACT, Vocabulary, find_span, span_text, tokenize
from guimem.smg.memories import MEMORY_CROPS
from guimem.train.examples import ActorExample
from guimem.train.folds import (
    assign_folds,
    build_kfold_examples,
    fold_memories,
    task_folds,
    validation_split,
)

torch.set_num_threads(1)


def screen(colour=(230, 230, 230), mark=None) -> Image.Image:
    """A 90x180 phone screen, optionally with a filled square at normalized ``mark``."""
    img = Image.new("RGB", (90, 180), colour)
    if mark is not None:
        x, y = mark[0] * 90, mark[1] * 180
        ImageDraw.Draw(img).rectangle([x - 12, y - 12, x + 12, y + 12], fill=(200, 30, 30))
    return img


def an_input(memory: str = "both", goal: str = 'Rename "Yoga" to Errands') -> PolicyInput:
    """A PolicyInput with history and the memory of ``memory`` modality."""
    full = PolicyInput(screen(), BUTTONS, goal, (Action("tap", point=(0.2, 0.1)), Action("back")),
                       "1. succeeded | did: tap \"Display\" (button)", screen(mark=(0.25, 0.1)))
    return full.with_modality(memory)


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    return build_vocabulary([ActorExample(an_input(), Action("back"))], min_count=1, n_hash_buckets=8)


@pytest.fixture(scope="module")
def model(vocab) -> GuiActor:
    torch.manual_seed(0)
    return GuiActor(ActorConfig(vocab_size=len(vocab), app_names=["Notes", "Shop"], **TINY)).eval()


# ----------------------------------------------------------------------------- tokenizer
def test_tokenize_keeps_offsets_numbers_and_quotes():
    text = 'Set the alarm to 7:30, call it "Gym Time"!'
    toks = tokenize(text)
    assert [t.word for t in toks] == ["set", "the", "alarm", "to", "7:30", ",", "call", "it", '"', "gym", "time", '"',
                                      "!"]
    assert all(text[t.start:t.end].lower() == t.word for t in toks)
    i, j = find_span(toks, "gym time")
    assert span_text(text, toks, i, j) == "Gym Time"  # original case comes back
    assert find_span(toks, "gym day") is None and find_span(toks, "") is None


def test_vocabulary_hashes_unseen_words_stably_and_round_trips(tmp_path):
    v = Vocabulary.build(["a b b c c"], extra_tokens=["[H:tap]"], min_count=2, n_hash_buckets=16)
    assert v.tokens[:3] == ("[PAD]", "[ACT]", "[H:tap]") and "b" in v and "a" not in v
    assert v.id("zebra") == v.id("zebra") >= len(v.tokens) and v.id("zebra") < len(v)
    v.save(tmp_path / "vocab.json")
    w = Vocabulary.load(tmp_path / "vocab.json")
    assert w.tokens == v.tokens and w.id("zebra") == v.id("zebra")
    (tmp_path / "bad.json").write_text('{"format": 1, "tokens": ["[ACT]"], "n_hash_buckets": 4}')
    with pytest.raises(DataError, match="tokens"):
        Vocabulary.load(tmp_path / "bad.json")


# ----------------------------------------------------------------------------- prompt layout
@pytest.mark.parametrize("memory", MODALITIES)
def test_prompt_holds_exactly_the_memory_parts_asked_for(vocab, model, memory):
    cfg = model.config
    f = featurise(an_input("both"), vocab, cfg)
    batch = collate([f], [memory], cfg, vocab)
    seg = batch["segment_ids"][0]
    parts = (SEG_ELEMENT, SEG_SCREEN, SEG_GOAL, SEG_HISTORY, SEG_MEMORY_TEXT, SEG_MEMORY_IMAGE, SEG_MEMORY_CROP, SEG_ACT)
    count = {s: int((seg == s).sum()) for s in parts}
    assert count[SEG_ELEMENT] == len(BUTTONS) and count[SEG_ACT] == 1
    assert count[SEG_SCREEN] == cfg.n_screen_patches == 8
    assert count[SEG_GOAL] == len(tokenize(an_input().goal)) and count[SEG_HISTORY] == 4
    assert count[SEG_MEMORY_TEXT] == (len(f.memory_text_ids) if memory in ("text", "both") else 0)
    assert len(f.memory_text_ids) == len(tokenize(an_input().memory_text)) > 0
    assert count[SEG_MEMORY_IMAGE] == (8 if memory in ("image", "both") else 0)
    assert count[SEG_MEMORY_CROP] == (MEMORY_CROPS if memory in ("image", "both") else 0)
    # the element slots open the prompt (as many as the screen has elements), then screen, goal, history,
    # memory, [ACT] last; beside a fuller screen, its empty slots are padding
    assert seg[:len(BUTTONS) + 1].tolist() == [SEG_ELEMENT] * 3 + [SEG_SCREEN]
    fuller = featurise(replace(an_input("both"), elements=BUTTONS + BUTTONS[:2]), vocab, cfg)
    padded = collate([f, fuller], [memory, memory], cfg, vocab)
    assert padded["segment_ids"][0, :6].tolist() == [SEG_ELEMENT] * 3 + [0, 0, SEG_SCREEN]
    assert padded["attention_mask"][0, :5].tolist() == [1, 1, 1, 0, 0]
    assert prompt_length(f, memory) == int(batch["attention_mask"].sum()) == int(padded["attention_mask"][0].sum())
    order = [int(s) for s in seg if s]
    assert order == sorted(order) and order[-1] == SEG_ACT
    assert int(batch["input_ids"][0, -1]) == vocab.id(ACT)
    # elements carry their label words (the label-free icon none) and their pixels; memory patches no words
    words = batch["element_words"][0]
    assert int((words[seg == SEG_ELEMENT] > 0).any(-1).sum()) == 2
    assert not bool((words[seg != SEG_ELEMENT] > 0).any())
    assert bool((batch["crop_pixels"][0][seg == SEG_ELEMENT] > 0).any())


def test_exact_match_codes_follow_goal_and_shown_memory(vocab, model):
    cfg = model.config
    f = featurise(an_input("both", goal="Open the display page"), vocab, cfg)
    for memory, memory_level in (("none", 0), ("text", 2), ("image", 0), ("both", 2)):
        fuller = featurise(replace(an_input("both"), elements=BUTTONS + BUTTONS[:2]), vocab, cfg)
        codes = collate([f, fuller], [memory] * 2, cfg, vocab)["match_ids"][0, :cfg.max_elements]
        assert int(codes[0]) == 1 + N_MATCH * 2 + memory_level  # "Display": in the goal and the memory
        assert int(codes[1]) == 1  # "Sound": in neither
        assert codes[2:5].tolist() == [0, 0, 0]  # the label-free icon and the empty slots carry no code
    words = torch.tensor([[vocab.id("display"), vocab.id("sound"), 0], [0, 0, 0]])
    partial = match_ids(words, torch.tensor([vocab.id("sound")]), None, vocab)
    assert partial.tolist() == [1 + N_MATCH * 1, 0]


def test_pixel_alike_finds_a_remembered_glyph_in_any_theme_and_nothing_in_an_empty_slot():
    from PIL import ImageDraw

    from guimem.phone.render import draw_icon

    def crop(glyph, fg, bg):
        im = Image.new("RGB", (26, 26), bg)
        draw_icon(ImageDraw.Draw(im), glyph, (0, 0, 26, 26), fg, bg)
        return torch.from_numpy(np.asarray(im.resize((16, 16), Image.Resampling.BOX))).reshape(1, -1)

    live = torch.cat([crop("search@6", (20, 20, 20), (250, 250, 250)), crop("trash@6", (20, 20, 20), (250, 250, 250)),
                      torch.full((1, 3 * 16 * 16), 200, dtype=torch.uint8)])  # a flat element: nothing to match
    remembered = torch.cat([crop("search@6", (240, 240, 240), (30, 30, 60)),  # the same glyph, dark theme
                            torch.full((1, 3 * 16 * 16), 128, dtype=torch.uint8)])  # an empty crop slot
    alike = pixel_alike(live, remembered)
    assert alike[0, 0] == 3 and alike[1, 0] < 3  # the same design matches; another does not
    assert alike[:, 1].tolist() == [0, 0, 0] and alike[2].tolist() == [0, 0]
    ids = pixel_match_ids(alike)
    assert ids[0, 0] == 1 + 2 and ids[1, 0] == 1 + int(alike[1, 0]) - 1 and ids[:, 1].tolist() == [0, 0, 0]


def test_pixel_match_codes_reach_the_prompt_only_with_the_image_shown(vocab, model):
    cfg = model.config
    f = featurise(an_input(), vocab, cfg)
    assert f.pixel_alike is not None and f.pixel_alike.shape == (len(BUTTONS), MEMORY_CROPS)
    for memory in MODALITIES:
        batch = collate([f], [memory], cfg, vocab)
        seg, codes = batch["segment_ids"][0], batch["pixel_match_ids"][0]
        assert bool((codes > 0).any()) == (memory in ("image", "both")) or not bool((f.pixel_alike > 0).any())
        assert not bool((codes[(seg != SEG_ELEMENT) & (seg != SEG_MEMORY_CROP)] > 0).any())
    off = ActorConfig(**{**cfg.to_dict(), "pixel_match": False})
    assert "pixel_match_ids" not in collate([f], ["both"], off, vocab)


def test_memory_text_words_flag_whether_the_goal_holds_them(vocab, model):
    cfg = model.config
    f = featurise(an_input("both", goal="Open the display page"), vocab, cfg)
    for memory in MODALITIES:
        batch = collate([f], [memory], cfg, vocab)
        seg, codes, ids = batch["segment_ids"][0], batch["match_ids"][0], batch["input_ids"][0]
        on_text = seg == SEG_MEMORY_TEXT
        assert bool(on_text.any()) == (memory in ("text", "both"))
        assert not bool((codes[(seg != SEG_ELEMENT) & ~on_text] > 0).any())  # screen, goal, history, image: no code
        for word, code in zip(ids[on_text].tolist(), codes[on_text].tolist()):
            if word in (vocab.id('"'), vocab.id("|"), vocab.id("."), vocab.id("(")):
                assert code == 0
            elif word == vocab.id("display"):
                assert code == MEMORY_MATCH + 1
            elif word in (vocab.id("succeeded"), vocab.id("tap")):
                assert code == MEMORY_MATCH
    words = torch.tensor([vocab.id("tap"), vocab.id('"'), vocab.id("display")])
    assert memory_match_ids(words, torch.tensor([vocab.id("display")]), vocab).tolist() == [
        MEMORY_MATCH, 0, MEMORY_MATCH + 1]


def test_an_element_reads_its_role_with_state_its_words_and_its_cell():
    roles = ["list_item", "toggle:on"]
    row = UIElement("r", "list_item", "Wi-Fi", bounds=(0.0, 0.0, 1.0, 0.5), clickable=True)
    toggle = UIElement("t", "toggle", "", "on", bounds=(0.5, 0.25, 1.0, 0.5), clickable=True, selected=True)
    odd = UIElement("x", "slider", "", bounds=(0.0, 0.75, 0.5, 1.0))  # a role not in the list
    assert [role_index(e, roles) for e in (row, toggle, odd)] == [N_ROLE_SPECIAL, N_ROLE_SPECIAL + 1, 1]
    assert role_index(replace(toggle, selected=False), roles) == 1  # switched off: another role key
    assert element_words(row) == "Wi-Fi" and element_words(toggle) == ""  # a switch's on/off is its state
    assert element_words(UIElement("s", "icon", "", "Search", bounds=(0, 0, 0.1, 0.1))) == "Search"
    assert cell_of(toggle.center, (4, 2)) == (2, 2) and cell_of((1.0, 1.0), (4, 2)) == (4, 2)


def test_act_context_ids_hold_the_last_two_types_most_recent_first():
    width = 1 + len(ACTION_TYPES)
    assert act_context_ids(()).tolist() == [0, width]  # first step: "none" in both slots
    one = (Action("tap", point=(0.5, 0.5)),)
    assert act_context_ids(one).tolist() == [1 + ACTION_TYPES.index("tap"), width]
    three = one + (Action("type", text="hi"), Action("enter"))
    assert act_context_ids(three).tolist() == [1 + ACTION_TYPES.index("enter"), width + 1 + ACTION_TYPES.index("type")]
    assert len(act_context_ids(three)) == ACT_CONTEXT_SLOTS


def test_role_and_context_inputs_reach_the_act_token(vocab, model):
    cfg = model.config
    f = featurise(an_input("none"), vocab, cfg)
    other = featurise(PolicyInput(screen(), BUTTONS, an_input().goal, (Action("back"),)), vocab, cfg)
    assert f.history_ids.tolist() != other.history_ids.tolist()
    # same history tokens, different context: only the [ACT] token's embedding changes
    swapped = type(f)(**{**f.__dict__, "act_context": other.act_context})
    with torch.no_grad():
        a = model(**collate([f], ["none"], cfg, vocab), output_hidden_states=True).act_hidden_states[0, 0]
        b = model(**collate([swapped], ["none"], cfg, vocab), output_hidden_states=True).act_hidden_states[0, 0]
    assert not torch.allclose(a, b)
    off = ActorConfig(**{**cfg.to_dict(), "role_channel": False, "act_context": False})
    batch = collate([f], ["none"], off, vocab)
    assert "role_ids" not in batch and "act_context_ids" not in batch


def test_decision_facts_are_the_last_types_and_the_roles_on_screen():
    width = 1 + len(ACTION_TYPES)
    n_facts = 2 * width + N_ROLE_SPECIAL + 3  # three known roles
    seg = torch.tensor([[SEG_ELEMENT, SEG_ELEMENT, SEG_ELEMENT, SEG_GOAL, SEG_ACT]])
    roles = torch.tensor([[0, N_ROLE_SPECIAL + 2, N_ROLE_SPECIAL + 2, 0, 0]])  # one role, twice; an empty slot
    context = act_context_ids((Action("tap", point=(0.5, 0.5)),))[None]  # last: tap; second-to-last: none
    facts = decision_facts(roles, seg, context, n_facts)[0]
    on = torch.nonzero(facts).flatten().tolist()
    assert on == [1 + ACTION_TYPES.index("tap"), width, 2 * width + N_ROLE_SPECIAL + 2]
    assert set(facts.tolist()) <= {0.0, 1.0}


def test_wide_type_head_reads_the_facts_and_starts_at_zero(vocab, model):
    cfg = model.config
    assert model.wide_type_head is not None and not bool(model.wide_type_head.weight.any())
    f = featurise(an_input("none"), vocab, cfg)
    batch = collate([f], ["none"], cfg, vocab)
    with torch.no_grad():
        before = model(**batch).type_logits
        model.wide_type_head.weight[ACTION_TYPES.index("back"), int(batch["act_context_ids"][0, 0])] = 5.0
        after = model(**batch).type_logits
        model.wide_type_head.weight.zero_()
    delta = (after - before)[0]
    assert float(delta[ACTION_TYPES.index("back")]) == pytest.approx(5.0)
    assert float(delta.abs().sum()) == pytest.approx(5.0)


def test_type_class_weights_follow_inverse_frequency():
    ex = [ActorExample(an_input("none"), Action("tap", point=(0.5, 0.5)))] * 9 + [ActorExample(an_input("none"),
                                                                                                Action("back"))]
    assert type_class_weights(ex, 0.0) is None
    w = type_class_weights(ex, 0.5)
    tap, back = ACTION_TYPES.index("tap"), ACTION_TYPES.index("back")
    assert w[tap] == pytest.approx((9 / 5) ** -0.5) and w[back] == pytest.approx((1 / 5) ** -0.5)
    assert all(v == 1.0 for i, v in enumerate(w) if i not in (tap, back))


def test_missing_memory_modality_is_refused(vocab, model):
    f = featurise(an_input("text"), vocab, model.config)
    with pytest.raises(DataError, match="modality"):
        collate([f], ["image"], model.config, vocab)


# ----------------------------------------------------------------------------- hidden states
def test_hidden_states_at_the_final_prompt_token(vocab, model):
    cfg = model.config
    inputs = [an_input(m) for m in MODALITIES]  # different lengths: padded rows
    feats = [featurise(x, vocab, cfg) for x in inputs]
    batch = collate(feats, [x.modality for x in inputs], cfg, vocab)
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True)
        embedded = model.embed(*(batch[k] for k in ("input_ids", "patch_pixels", "crop_pixels", "element_words",
                                                    "element_boxes", "segment_ids", "position_ids", "row_ids",
                                                    "col_ids", "match_ids", "role_ids", "act_context_ids")))
    last = (batch["segment_ids"] == SEG_ACT).long().argmax(1)  # the [ACT] position of every row
    assert (last == batch["attention_mask"].cumsum(1).argmax(1)).all()  # ... its last real position
    assert out.act_hidden_states.shape == (4, cfg.num_hidden_layers + 1, cfg.hidden_size)
    assert len(out.hidden_states) == cfg.num_hidden_layers + 1
    for b in range(4):
        assert int(batch["segment_ids"][b, last[b]]) == SEG_ACT
        for layer, h in enumerate(out.hidden_states):
            torch.testing.assert_close(out.act_hidden_states[b, layer], h[b, last[b]])
        torch.testing.assert_close(out.act_hidden_states[b, 0], embedded[b, last[b]])  # index 0 = embeddings
    # the policy returns one [n_layers + 1, d_model] array per step, the same as a batch of one
    actor = MiniActor(model, vocab)
    many = actor.act(inputs, output_hidden_states=True)
    for x, o in zip(inputs, many):
        one = actor.act([x], output_hidden_states=True)[0]
        assert o.hidden_states.shape == (cfg.num_hidden_layers + 1, cfg.hidden_size)
        np.testing.assert_allclose(o.hidden_states, one.hidden_states, atol=1e-5)  # padding changes nothing
        assert o.action == one.action
    assert actor.act(inputs)[0].hidden_states is None


# ----------------------------------------------------------------------------- save / load
def test_save_load_round_trip_gives_identical_outputs(tmp_path, vocab, model):
    actor = MiniActor(model, vocab)
    actor.save(tmp_path / "actor")
    actor.save(tmp_path / "actor")  # overwriting an existing folder is atomic too
    assert sorted(p.name for p in (tmp_path / "actor").iterdir()) == [".guimem-kind", "config.json", "model.safetensors", "vocab.json"]
    back = MiniActor.load(tmp_path / "actor")
    assert back.config.model_type == "guimem_actor" and back.config.app_names == ["Notes", "Shop"]
    inputs = [an_input(m) for m in MODALITIES]
    for a, b in zip(actor.act(inputs, True), back.act(inputs, True)):
        assert a.action == b.action
        np.testing.assert_array_equal(a.hidden_states, b.hidden_states)
    for name, p in model.state_dict().items():
        torch.testing.assert_close(back.model.state_dict()[name], p, rtol=0, atol=0)
    (tmp_path / "actor" / "vocab.json").unlink()
    with pytest.raises(DataError, match="vocab.json"):
        MiniActor.load(tmp_path / "actor")


def test_auto_classes_know_the_actor(tmp_path, model):
    from transformers import AutoConfig, AutoModel

    model.save_pretrained(tmp_path)
    assert type(AutoConfig.from_pretrained(tmp_path)) is ActorConfig
    assert type(AutoModel.from_pretrained(tmp_path)) is GuiActor


# ----------------------------------------------------------------------------- targets, decoding
def test_targets_and_decoding_agree(vocab, model):
    cfg = model.config
    f = featurise(an_input("none"), vocab, cfg)
    t = targets_for(Action("type", text="yoga"), f, cfg)
    assert (t.span_start, t.span_end) == (2, 2)  # rename " yoga: goal tokens, counted from the goal's first
    assert targets_for(Action("type", text="absent words"), f, cfg).span_start == IGNORE
    assert targets_for(Action("tap", point=(0.8, 0.6)), f, cfg).element == 1  # "Sound" holds the point
    assert targets_for(Action("tap", point=(0.7, 0.3)), f, cfg).element == IGNORE  # nothing there
    wide = UIElement("w", "list_item", "Wide row", bounds=(0.0, 0.5, 1.0, 0.75), clickable=True)
    label = UIElement("l", "text", "Caption", bounds=(0.0, 0.55, 0.5, 0.7))
    assert touched(Action("swipe", point=(0.2, 0.6), end=(0.2, 0.3)), (wide, label)) == 1  # the innermost under it
    assert touched(Action("tap", point=(0.2, 0.6)), (wide, label)) == 0  # a tap: the clickable one
    assert targets_for(Action("open_app", text="Shop"), f, cfg).app == 1
    assert swipe_direction(Action("swipe", point=(0.5, 0.8), end=(0.5, 0.2))) == "up"
    assert swipe_direction(Action("swipe", point=(0.5, 0.5), end=(0.9, 0.6))) == "right"
    # logits that put all mass on the targets decode back to the demonstrated actions
    batch = collate([f] * 3, ["none"] * 3, cfg, vocab)
    with torch.no_grad():
        out = model(**batch)
    big = 50.0
    out.type_logits[:] = 0
    out.type_logits[0, 3] = out.type_logits[1, 2] = out.type_logits[2, 7] = big  # type, swipe, open_app
    assert out.span_start_logits.shape == (3, len(f.goal_tokens))  # one logit per goal token
    out.span_start_logits[0, 2] = big
    out.span_end_logits[0, 2] = big
    out.pointer_logits[1, 1] = big
    out.direction_logits[1, DIRECTIONS.index("up")] = big
    out.app_logits[2, 1] = big
    typed, swiped, opened = decode(out, [f] * 3, cfg)
    assert typed == Action("type", text="Yoga")  # the goal's own casing
    assert swiped.point == pytest.approx(BUTTONS[1].center)  # on the centre of the element pointed at
    assert swiped.end == pytest.approx((0.75, 0.625 - cfg.swipe_length))
    assert opened == Action("open_app", text="Shop")
    fuller = featurise(replace(an_input("none"), elements=BUTTONS + BUTTONS[:2]), vocab, cfg)
    with torch.no_grad():
        logits = model(**collate([f, fuller], ["none"] * 2, cfg, vocab)).pointer_logits
    assert logits.shape == (2, len(BUTTONS) + 2)  # the fuller screen's slots
    assert bool((logits[0, len(BUTTONS):] <= -1e8).all())  # empty slots are never pointed at


@pytest.mark.parametrize("memory", MODALITIES)
def test_an_answer_does_not_depend_on_the_batch_it_is_in(vocab, model, memory):
    """A batch pads to its fullest screen and longest goal and prompt; a prompt's logits are those it
    has alone (padding is masked, and no position code spans segments)."""
    cfg = model.config
    f = featurise(an_input("both"), vocab, cfg)
    other = featurise(replace(an_input("both", goal="Open the sound page and turn it all the way down"),
                              elements=BUTTONS + BUTTONS[:2], memory_text="a much longer memory " * 8), vocab, cfg)
    with torch.no_grad():
        alone = model(**collate([f], [memory], cfg, vocab))
        mixed = model(**collate([f, other], [memory, "both"], cfg, vocab))
    n_goal = len(f.goal_tokens)
    assert mixed.pointer_logits.shape[1] > alone.pointer_logits.shape[1]
    assert mixed.span_start_logits.shape[1] > n_goal
    for name in ("type_logits", "direction_logits", "app_logits"):
        torch.testing.assert_close(getattr(mixed, name)[0], getattr(alone, name)[0], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(mixed.pointer_logits[0, :len(BUTTONS)], alone.pointer_logits[0], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(mixed.span_end_logits[0, :n_goal], alone.span_end_logits[0], atol=1e-5, rtol=1e-4)
    assert decode(mixed, [f, other], cfg)[0] == decode(alone, [f], cfg)[0]


# ----------------------------------------------------------------------------- training
def colour_task(n: int, seed: int) -> list[ActorExample]:
    """A trivially learnable mapping: the screen's colour says which action to take."""
    rng = np.random.default_rng(seed)
    acts = [(screen((220, 40, 40)), Action("back")), (screen((40, 40, 220)), Action("home")),
            (screen((40, 200, 40)), Action("tap", point=(0.75, 0.6)))]
    out = []
    for i in range(n):
        img, act = acts[int(rng.integers(3))]
        out.append(ActorExample(PolicyInput(img, BUTTONS, "do it", (), "remembered text", screen()), act, f"e{i}", 0,
                                "smg"))
    return out


def test_training_learns_a_trivial_mapping_and_is_deterministic():
    cfg = TrainConfig(epochs=6, batch_size=8, lr=3e-3, warmup_steps=5, min_count=1, model=TINY)
    data = colour_task(48, 0)
    actor, hist = train_actor(data, cfg, seed=3, eval_examples=colour_task(24, 1), progress=False)
    assert hist.train_loss[-1] < 0.5 * hist.train_loss[0]
    assert hist.eval_step_accuracy[-1] == 1.0 and len(hist.eval_type_accuracy) == 6
    again, hist2 = train_actor(data, cfg, seed=3, eval_examples=colour_task(24, 1), progress=False)
    assert hist2.train_loss == hist.train_loss
    for name, p in actor.model.state_dict().items():
        torch.testing.assert_close(again.model.state_dict()[name], p, rtol=0, atol=0)
    other, hist3 = train_actor(data, cfg, seed=4, progress=False)
    assert hist3.train_loss != hist.train_loss


def test_the_checkpoint_kept_is_the_best_on_validation_and_a_round_that_does_not_hold_it_is_undone():
    cfg = TrainConfig(epochs=4, batch_size=8, lr=3e-3, warmup_steps=5, min_count=1, model=TINY)
    data, validation = colour_task(48, 0), colour_task(24, 2)
    actor, hist = train_actor(data, cfg, seed=3, progress=False, select_examples=validation)
    assert len(hist.validation_step_accuracy) == 4 and len(hist.selected) == 1
    best = max(range(4), key=lambda e: (hist.validation_step_accuracy[e], e))
    assert hist.selected == [best + 1]
    # a "round" that can only make it worse (labels flipped): its start is kept, bit for bit
    flipped = [dataclasses.replace(ex, target=Action("home" if ex.target.type == "back" else "back")) for ex in data]
    before = {k: v.clone() for k, v in actor.model.state_dict().items()}
    after, hist = train_actor(flipped, dataclasses.replace(cfg, epochs=2), seed=4, progress=False, init=actor,
                              history=hist, select_examples=validation)
    assert hist.selected[-1] == 0
    for name, p in after.model.state_dict().items():
        torch.testing.assert_close(p, before[name], rtol=0, atol=0)


def test_a_round_is_undone_only_when_it_is_significantly_worse_on_validation():
    start = np.array([True] * 200 + [False] * 152)  # 352 validation steps, as the actor stage has
    one_fewer = start.copy()
    one_fewer[0] = False  # one step broken: the score is lower, and nothing says the round is worse
    assert round_holds(start, one_fewer) == {"fixed": 0, "broken": 1, "p_value": 1.0, "holds": True}
    mixed = start.copy()
    mixed[:12], mixed[200:205] = False, True  # 12 broken, 5 fixed: p = 0.14
    assert round_holds(start, mixed)["holds"]
    worse = start.copy()
    worse[:20] = False  # 20 broken, none fixed: p < 1e-5
    test = round_holds(start, worse)
    assert not test["holds"] and test["broken"] == 20 and test["p_value"] < 1e-5
    assert round_holds(start, ~start | start)["holds"]  # better: kept whatever its p


def test_validation_split_keeps_whole_tasks_out():
    episodes = [SimpleNamespace(id=f"e{i}", goal=f"goal {i % 7}") for i in range(21)]  # 7 tasks, 3 episodes each
    learn, held = validation_split(episodes, 0.1, seed=0)
    assert len(held) == 3 and len(learn) == 18  # one whole task: the nearest to 10% of 21 episodes
    assert not {e.goal for e in learn} & {e.goal for e in held}
    assert [e.id for e in learn] == [e.id for e in episodes if e not in held]  # order kept
    assert validation_split(episodes, 0.1, seed=0) == (learn, held)
    assert len(validation_split(episodes, 0.3, seed=1)[1]) == 6  # two tasks: 6 of 21 is nearest 30% in whole tasks
    assert validation_split(episodes, 0.0, 0) == (episodes, [])
    with pytest.raises(DataError, match="validation_share"):
        validation_split(episodes, 1.0, 0)


def test_modality_batches_are_uniform_and_cover_every_example():
    mods = ["none", "text", "text", "both", "image", "none", "text"] * 5
    batches = modality_batches(mods, 4, np.random.default_rng(0))
    assert sorted(int(i) for b in batches for i in b) == list(range(len(mods)))
    assert all(len({mods[i] for i in b}) == 1 and len(b) <= 4 for b in batches)


def test_length_grouped_batches_pad_little_and_stay_a_random_draw():
    rng = np.random.default_rng(1)
    mods = list(rng.choice(MODALITIES, 400))
    lengths = [int(x) for x in rng.integers(50, 400, 400)]
    plain = modality_batches(mods, 8, np.random.default_rng(0))
    grouped = modality_batches(mods, 8, np.random.default_rng(0), lengths, group=10)
    assert sorted(int(i) for b in grouped for i in b) == list(range(400))
    assert all(len({mods[i] for i in b}) == 1 and len(b) <= 8 for b in grouped)

    def padding(batches):
        return sum(len(b) * max(lengths[i] for i in b) - sum(lengths[i] for i in b) for b in batches)

    assert padding(grouped) < padding(plain) / 4

    # runs of 10 batches are sorted, not the whole set: another seed puts other examples together, where
    # one sorted run would batch the same examples each epoch
    def shared(group):
        sets = [{tuple(sorted(int(i) for i in b)) for b in modality_batches(mods, 8, np.random.default_rng(seed),
                                                                             lengths, group=group)}
                for seed in (0, 2)]
        return len(sets[0] & sets[1])

    assert shared(10) < 10 < 30 < shared(400)


# ----------------------------------------------------------------------------- k-fold examples
def test_kfold_examples_never_show_a_step_its_own_task(tmp_path):
    episodes, images = [], {}
    for e in range(6):
        shot = f"s{e}.png"
        images[shot] = screen((20 * e, 100, 100))
        steps = tuple(Step(Observation(shot, BUTTONS), a) for a in (Action("tap", point=(0.2, 0.1)), Action("done")))
        episodes.append(Episode(f"ep{e}", "settings", f"goal {e % 3}", steps, Observation(shot, BUTTONS), True))
    save_episodes(episodes, images, tmp_path / "store")
    episodes = load_episodes(tmp_path / "store")

    class Recorder:
        def __init__(self, kind, eps):
            self.kind, self.ids = kind, {e.id for e in eps}

        def retrieve(self, screenshot, goal, k=None):
            return SimpleNamespace(ids=tuple(sorted(self.ids)))

        def render_text(self, retrieved):
            return f"{self.kind}: " + " ".join(retrieved.ids)

        def render_image(self, retrieved):
            return screen()

    examples = build_kfold_examples(episodes, tmp_path / "store", Recorder, ["smg", "flat"], k_folds=3, seed=0,
                                    kinds_per_step=None, progress=False)
    assert len(examples) == 6 * 2 * 2  # every step, once per kind
    for ex in examples:
        assert ex.input.memory_text.startswith(ex.memory_kind)
        seen = set(ex.input.memory_text.split(": ")[1].split())
        own_task = {e.id for e in episodes if e.goal == episodes[int(ex.episode_id[2:])].goal}  # ep0 and ep3, ...
        assert not own_task & seen and len(seen) == 4  # built from the two other folds: two tasks of two episodes
        assert ex.input.history == tuple(s.action for s in episodes[0].steps[:ex.step])
    assert [ex.episode_id for ex in examples][::4] == [e.id for e in episodes]
    folds = assign_folds([e.id for e in episodes], 3, 0)
    assert sorted(np.bincount(list(folds.values()))) == [2, 2, 2]
    by_task = task_folds(episodes, 3, 0)
    assert {by_task[f"ep{e}"] for e in (0, 3)} == {by_task["ep0"]} and sorted(set(by_task.values())) == [0, 1, 2]
    with pytest.raises(DataError, match="k_folds"):
        assign_folds(["a", "b"], 1, 0)


def test_fold_memories_hold_the_experience_of_the_steps_own_phone_in_the_other_folds():
    steps = (Step(Observation("s.png", BUTTONS), Action("done")),)
    episodes = [Episode(f"ep{e}", "settings", f"goal {e % 4}", steps, Observation("s.png", BUTTONS), True,
                        provenance={"variant": e % 2}) for e in range(8)]  # phones 0 and 1, two tasks each

    def factory(kind, eps):
        return sorted(e.id for e in eps)

    cells, memories = fold_memories(episodes, factory, ["smg"], k_folds=2, seed=0)
    assert set(cells.values()) == set(memories) and len(memories) == 4  # 2 phones x 2 folds
    folds = task_folds(episodes, 2, 0)
    for e in episodes:
        shown = memories[cells[e.id]]["smg"]
        assert cells[e.id] == (e.provenance["variant"], folds[e.id])
        assert shown == sorted(o.id for o in episodes if o.phone == e.phone and folds[o.id] != folds[e.id])
        assert e.goal not in {o.goal for o in episodes if o.id in shown}
    recorded = [Episode(f"r{e}", "app", f"goal {e}", steps, Observation("s.png", BUTTONS), True) for e in range(4)]
    assert {e.phone for e in recorded} == {None}  # recordings that name no variant: one phone
    assert len(fold_memories(recorded, factory, ["smg"], 2, 0)[1]) == 2


# ----------------------------------------------------------------------------- the 04_actor notebook
# The tiny chain it runs in (world, 02, 03, a tiny pretraining, 04) is built once per session:
# tests/stage_chains.py. 04 is a leaf: no later stage reads what it writes.
@pytest.mark.notebook
@pytest.mark.slow
def test_actor_notebook_runs(actor_chain):
    tmp, _ = actor_chain
    back = MiniActor.load(tmp / "pretrained" / "actor")
    assert back.config.num_hidden_layers == 6 and back.config.hidden_size == 32
    assert not (tmp / "data" / "actor").exists()  # 04 meets the actor; it saves none
    for what in ("training_curves", "accuracy_by_condition", "memory_effect"):
        assert (tmp / "figures" / f"actor_{what}.png").stat().st_size > 10_000


@pytest.mark.notebook
@pytest.mark.slow
def test_actor_notebook_metrics(actor_chain):
    tmp, m = actor_chain
    card = m["actor"]["pretraining"]
    assert card["seed"] == 913 and card["corpus"]["phones"] == [0, 5] and card["corpus"]["episodes"] == 12
    assert m["actor"]["layers"] == 6 and m["actor"]["d_model"] == 32
    competence = m["competence_none"]
    assert competence["clean"]["steps"] + competence["noisy episodes"]["steps"] == m["held_out_steps"]
    for split in competence.values():
        if split["steps"]:
            assert split["element"] <= split["aitw"] and 0.0 <= split["type"] <= 1.0
    contest = m["modality_contest"]["overall"]
    assert contest["steps"] == m["held_out_steps"] and 0.0 <= contest["non_tied_share"] <= 1.0
    assert contest["oracle"] >= contest["best_fixed"]
    conditions = {"none"} | {f"{k}/{x}" for k in ("smg", "flat", "action_graph", "task_graph")
                             for x in ("text", "image", "both")}
    assert set(m["step_accuracy"]) == conditions
    assert all(0.0 <= v <= 1.0 for v in m["step_accuracy"].values())
    assert 0.0 <= m["majority_action"]["step_accuracy"] <= 1.0
    assert m["held_out_steps"] == sum(len(e.steps) for e in load_episodes(tmp / "data" / "world" / "test"))


def test_crops_of_one_image_are_cached_per_box_list():
    from guimem.actors.mini.features import ImagePatcher

    patcher = ImagePatcher()
    img = screen(mark=(0.25, 0.1))
    boxes = [(0.0, 0.0, 0.1, 0.1)] * 12  # a long list: the cache key must hold all of it
    a = patcher.crops(img, boxes + [(0.0, 0.0, 0.5, 0.2)], 4)
    b = patcher.crops(img, boxes + [(0.5, 0.5, 1.0, 1.0)], 4)
    assert not torch.equal(a[-1], b[-1])
    assert torch.equal(patcher.crops(img, boxes + [(0.0, 0.0, 0.5, 0.2)], 4), a)
