"""The Hugging Face VLM actor on a tiny randomly initialised Qwen2-VL (its answer parser: test_parsing.py).

No download: ``tiny_random_qwen2_vl`` builds the model from a config (2 decoder layers,
d_model 32, a one-block vision tower), its tokenizer is a byte-level BPE without merges
built with ``tokenizers`` (one token per byte plus Qwen's special tokens) and its chat
template a short Qwen-style one. A tiny LLaVA checks a second family, loaded from a folder.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from PIL import Image

import guimem.actors.hf.policy as hf_policy
from guimem.actors.hf.parsing import FALLBACK_ACTION, parse_answer
from guimem.actors.hf.policy import HFVLMActor
from guimem.actors.hf.prompts import split_at_prefix_end, system_prompt
from guimem.actors.hf.tiny import save_tiny_random_llava, tiny_random_qwen2_vl
from guimem.core.data import Action, DataError
from guimem.core.policy import MODALITIES, PolicyInput

torch.set_num_threads(1)

K = (1000.0, 1000.0)  # the relative_1000 frame


# ============================================================================ the tiny model
@pytest.fixture(scope="module")
def tiny():
    return tiny_random_qwen2_vl()


def _input(goal: str = "open the settings", modality: str = "none", history=()) -> PolicyInput:
    screen = Image.new("RGB", (90, 160), (30, 120, 200))
    memory = Image.new("RGB", (60, 60), (250, 250, 0))
    full = PolicyInput(screen, (), goal, tuple(history), memory_text="tap Settings, then Display",
                       memory_image=memory)
    return full.with_modality(modality)


# ----------------------------------------------------------------------------- prompt
@pytest.mark.parametrize("modality", MODALITIES)
def test_prompt_shows_the_memory_as_chosen(tiny, modality):
    actor = HFVLMActor.from_model(*tiny)
    inp = _input(modality=modality, history=[Action("tap", point=(0.5, 0.25))])
    text, images, _ = actor.prompt(inp)
    assert ("tap Settings, then Display" in text) == (modality in ("text", "both"))
    n_images = 2 if modality in ("image", "both") else 1
    assert text.count("<|image_pad|>") == len(images) == n_images
    assert images[0].size == (90, 160)  # the current screen comes first: it belongs to the shared prefix
    assert "guimem: end of the shared prefix" not in text
    assert "Goal: open the settings" in text and '1. {"action": "tap", "point": [500, 250]}' in text
    assert text.startswith("<|im_start|>system\nYou operate an Android phone")
    assert text.endswith("<|im_start|>assistant\n")
    enc, _ = actor.encode([inp])
    image_tokens = int((enc["input_ids"] == tiny[1].image_token_id).sum())
    assert image_tokens == sum(int(g.prod()) // 4 for g in enc["image_grid_thw"])  # every patch merged 2x2
    assert tiny[1].tokenizer.decode(enc["input_ids"][0, -1]) == "\n"  # the final prompt token


def test_absolute_resized_frame_is_the_processor_resize(tiny):
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    actor = HFVLMActor.from_model(*tiny, coords="absolute_resized")
    height, width = smart_resize(160, 90, factor=28, min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 16)
    assert actor.frame(_input().screenshot) == (width, height) != (90, 160)
    assert f"Current screen ({width} x {height} pixels)" in actor.prompt(_input())[0]
    assert HFVLMActor.from_model(*tiny, coords="absolute_original").frame(_input().screenshot) == (90, 160)
    assert "0 to 1000" in HFVLMActor.from_model(*tiny).system
    assert "click(start_box='(x,y)')" in system_prompt("uitars", "absolute_resized")


def test_bad_settings_are_refused(tiny):
    with pytest.raises(DataError, match="coords"):
        HFVLMActor.from_model(*tiny, coords="pixels")
    with pytest.raises(DataError, match="answer_format"):
        HFVLMActor.from_model(*tiny, answer_format="xml")
    with pytest.raises(DataError, match="batch_size"):
        HFVLMActor.from_model(*tiny, batch_size=0)
    processor = copy.copy(tiny[1])
    processor.chat_template = None  # the tokenizer's template is used instead
    assert HFVLMActor.from_model(tiny[0], processor).prompt(_input())[0].endswith("<|im_start|>assistant\n")
    processor.tokenizer = copy.copy(tiny[1].tokenizer)
    processor.tokenizer.chat_template = None
    with pytest.raises(DataError, match="chat_template"):
        HFVLMActor.from_model(tiny[0], processor)


# ----------------------------------------------------------------------------- hidden states
def test_hidden_states_are_every_layer_at_the_final_prompt_token(tiny):
    model, _ = tiny
    actor = HFVLMActor.from_model(*tiny, max_new_tokens=4)
    inp = _input(modality="both")
    out = actor.act([inp], output_hidden_states=True)[0]
    assert out.hidden_states.shape == (actor.n_layers + 1, actor.d_model) == (3, 32)
    enc, _ = actor.encode([inp])
    with torch.no_grad():
        ref = model(**enc, output_hidden_states=True)
        manual = torch.stack(ref.hidden_states, dim=1)[0, :, -1].numpy()  # [n_layers+1, d_model] at the last token
        np.testing.assert_allclose(out.hidden_states, manual, atol=1e-5)
        assert not np.allclose(out.hidden_states, torch.stack(ref.hidden_states, dim=1)[0, :, -2].numpy())
        # index 0 is the embedding output: the final prompt token's embedding row
        embedding = model.get_input_embeddings()(enc["input_ids"][:, -1])[0].numpy()
        np.testing.assert_allclose(out.hidden_states[0], embedding, atol=1e-6)
        # the last index is after the final norm: the LM head turns it into the next-token logits
        logits = model.lm_head(torch.from_numpy(out.hidden_states[-1]))
        np.testing.assert_allclose(logits.numpy(), ref.logits[0, -1].numpy(), atol=1e-4)
    assert actor.act([inp])[0].hidden_states is None


def test_a_left_padded_batch_equals_single_runs(tiny):
    single = HFVLMActor.from_model(*tiny, max_new_tokens=6)
    batched = HFVLMActor.from_model(*tiny, max_new_tokens=6, batch_size=2)
    inputs = [_input("a short goal", "none"), _input("a much longer goal that pads the other one", "both")]
    one = [single.act([i], output_hidden_states=True)[0] for i in inputs]
    two = batched.act(inputs, output_hidden_states=True)
    assert two[0].info["prompt_tokens"] < two[1].info["prompt_tokens"]
    for a, b in zip(one, two):
        np.testing.assert_allclose(a.hidden_states, b.hidden_states, atol=1e-4)
        assert a.raw == b.raw


# ----------------------------------------------------------------------------- one prefix, several memory suffixes
@pytest.fixture(scope="module")
def families(tiny, tmp_path_factory):
    """The two families whose prefix sharing is checked: Qwen2-VL (M-RoPE positions, images as
    variable grids of patches) and LLaVA (1-D positions, a CLIP tower on fixed-size crops)."""
    llava = HFVLMActor(save_tiny_random_llava(str(tmp_path_factory.mktemp("llava"))), max_new_tokens=10,
                       device="cpu", dtype=torch.float32)
    return {"qwen2_vl": HFVLMActor.from_model(*tiny, max_new_tokens=10), "llava": llava}


def _steps() -> list[PolicyInput]:
    """Three steps of different lengths and screens (a batch pads their prefixes and suffixes apart)."""
    colours = [(30, 120, 200), (200, 30, 30), (10, 10, 10)]
    goals = ["open the settings", "mute the chat", "a much longer goal that pads the other prompts"]
    history = [(), (Action("back"),), (Action("tap", point=(0.5, 0.25)), Action("type", text="hello"))]
    return [PolicyInput(Image.new("RGB", (90, 160), c), (), g, h, memory_text=f"tap Settings, then item {i}",
                        memory_image=Image.new("RGB", (60, 60 + 30 * i), (250, 250, i * 100)))
            for i, (c, g, h) in enumerate(zip(colours, goals, history))]


@pytest.mark.parametrize("modality", MODALITIES)
def test_every_rendering_continues_the_same_prefix(tiny, modality):
    actor = HFVLMActor.from_model(*tiny)
    inp = _input(modality=modality, history=[Action("back")])
    prefix, suffix, images, _ = actor.prompt_parts(inp)
    assert prefix == actor.prompt_parts(_input(modality="none", history=[Action("back")]))[0]
    assert prefix.endswith("Current screen:\n<|vision_start|><|image_pad|><|vision_end|>")
    assert "Goal: open the settings" in prefix and "1. {\"action\": \"back\"}" in prefix
    assert ("tap Settings, then Display" in suffix) == (modality in ("text", "both"))
    assert suffix.count("<|image_pad|>") == len(images) - 1 == (modality in ("image", "both"))
    assert suffix.endswith("What is the next action?<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.parametrize("family", ["qwen2_vl", "llava"])
@pytest.mark.parametrize("batch_size", [1, 3])
def test_a_continued_prefix_answers_as_a_full_pass(families, family, batch_size):
    """Greedy answers and the final prompt token's hidden states of every layer, with the prefix's KV
    cache reused for all four renderings, equal a full pass on each whole prompt (one at a time)."""
    actor = copy.copy(families[family])  # the same model, another batch size
    actor.batch_size = batch_size
    steps = _steps()
    shared = actor.act_conditions(steps, MODALITIES, MODALITIES)
    for modality in MODALITIES:
        for step, got in zip(steps, shared[modality]):
            full = actor.act([step.with_modality(modality)], output_hidden_states=True)[0]
            assert got.raw == full.raw and got.info["prompt_tokens"] == full.info["prompt_tokens"]
            np.testing.assert_allclose(got.hidden_states, full.hidden_states, atol=1e-5)
    states = actor.continued_states(actor.open_prefix(steps), steps)  # the router's read: no decoding
    for step, state in zip(steps, states):
        np.testing.assert_allclose(state, actor.act([step], output_hidden_states=True)[0].hidden_states, atol=1e-5)
    # the renderings reach the model: their states differ, so the equality above is not vacuous
    assert not np.allclose(shared["text"][0].hidden_states[-1], shared["image"][0].hidden_states[-1], atol=1e-3)


@pytest.mark.parametrize("family", ["qwen2_vl", "llava"])
def test_the_split_prompt_is_tokenized_as_the_whole_one(families, family):
    """A prompt's prefix and suffix, each encoded on its own and joined, are the tokens the processor
    gives the whole prompt: sharing the prefix changes nothing the model reads."""
    actor = families[family]
    assert actor.shares_prefix
    for modality in MODALITIES:
        step = _steps()[2].with_modality(modality)
        prompt, images, _ = actor.prompt(step)
        whole = actor.processor(text=[prompt], images=images, return_tensors="pt")
        split, _ = actor.encode([step])
        assert split["input_ids"].tolist() == whole["input_ids"].tolist()
        torch.testing.assert_close(split["pixel_values"], whole["pixel_values"])


def test_m_rope_positions_are_what_makes_a_continued_image_right(families, monkeypatch):
    """With plain 1-D positions on the cache (what a text-only continuation would use), Qwen2-VL's
    memory image lands elsewhere: the state moves away from the full pass. The check above can fail."""
    actor, step = families["qwen2_vl"], _steps()[0].with_modality("image")
    full = actor.act([step], output_hidden_states=True)[0].hidden_states
    right = actor.continue_prefix(actor.open_prefix([step]), [step], output_hidden_states=True)[0].hidden_states
    np.testing.assert_allclose(right, full, atol=1e-5)

    def plain(model, tokens, images):
        return (tokens["attention_mask"].cumsum(-1) - 1).clamp(min=0)

    monkeypatch.setattr(hf_policy, "full_positions", plain)
    wrong = actor.continue_prefix(actor.open_prefix([step]), [step], output_hidden_states=True)[0].hidden_states
    assert np.abs(wrong - full).max() > 10 * 1e-5  # ten times the tolerance the equality is checked at


def test_a_prefix_is_only_continued_by_its_own_steps(families):
    actor = families["llava"]
    steps = _steps()
    shared = actor.open_prefix(steps[:2])
    with pytest.raises(DataError, match="row 1 does not continue"):
        actor.continue_prefix(shared, [steps[0], steps[2]])
    other_screen = PolicyInput(Image.new("RGB", (90, 160), (0, 255, 0)), (), steps[1].goal, steps[1].history,
                               steps[1].memory_text, steps[1].memory_image)  # the same text, another screenshot
    with pytest.raises(DataError, match="row 1 does not continue"):
        actor.continue_prefix(shared, [steps[0], other_screen])
    with pytest.raises(DataError, match="2 inputs continue a prefix of 1"):
        actor.continue_prefix(actor.open_prefix(steps[:1]), steps[:2])


def test_a_continuation_that_fails_midway_leaves_the_prefix_whole(families, monkeypatch):
    """A pass that grew some layers of the cache and then failed (out of memory, say) is rewound layer
    by layer: the next continuation answers as a full pass."""
    actor = families["qwen2_vl"]
    step = _steps()[1].with_modality("text")
    shared = actor.open_prefix([step])
    real = actor.model.generate

    def fails_after_growing(**kwargs):
        cache = kwargs["cache"]
        for i, layer in enumerate(cache.layers[:1]):  # the first layer grows by three tokens, the others not
            keys = torch.cat([layer.keys, layer.keys[..., -3:, :]], dim=-2)
            cache.update(keys[..., -3:, :], keys[..., -3:, :], i)
        raise torch.cuda.OutOfMemoryError("out of memory")

    monkeypatch.setattr(actor.model, "generate", fails_after_growing)
    with pytest.raises(torch.cuda.OutOfMemoryError):
        actor.continue_prefix(shared, [step])
    assert [layer.get_seq_length() for layer in shared.cache.layers] == [shared.length] * len(shared.cache.layers)
    monkeypatch.setattr(actor.model, "generate", real)
    again = actor.continue_prefix(shared, [step], output_hidden_states=True)[0]
    np.testing.assert_allclose(again.hidden_states, actor.act([step], output_hidden_states=True)[0].hidden_states,
                               atol=1e-5)


def test_a_template_that_puts_every_image_first_is_answered_whole(families):
    """LLaVA-1.5's template renders every image before the text: no prefix holds the screenshot alone,
    so the actor shares none and answers each rendering as a whole prompt (the processor's own)."""
    base = families["llava"]
    processor = copy.copy(base.processor)
    processor.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
        "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>\n{% endif %}{% endfor %}"
        "{% for c in m['content'] %}{% if c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
        "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    actor = HFVLMActor.from_model(base.model, processor, max_new_tokens=6)
    assert not actor.shares_prefix
    step = _steps()[0].with_modality("both")
    prompt, images, _ = actor.prompt(step)
    assert prompt.count("<image>") == 2 and prompt.index("<image>") < prompt.index("Goal:")
    whole = processor(text=[prompt], images=images, return_tensors="pt")
    assert actor.encode([step])[0]["input_ids"].tolist() == whole["input_ids"].tolist()
    assert isinstance(actor.act([step])[0].action, Action)
    with pytest.raises(DataError, match="chat_template"):
        actor.open_prefix([step])
    from guimem.routing.policy import SwitchMemPolicy

    assert not SwitchMemPolicy(actor, None, tau=0.0).sharing


def test_a_template_that_drops_the_prefix_marker_is_refused():
    with pytest.raises(DataError, match="chat_template"):
        split_at_prefix_end("<|im_start|>user\nno marker here")


# ----------------------------------------------------------------------------- generation
def test_random_model_answers_are_actions_or_flagged_errors(tiny):
    actor = HFVLMActor.from_model(*tiny, max_new_tokens=8)
    outs = actor.act([_input(m) for m in MODALITIES])
    for out in outs:
        assert isinstance(out.raw, str) and isinstance(out.action, Action)
        if "parse_error" in out.info:
            assert out.action == FALLBACK_ACTION
        else:
            assert out.action == parse_answer(out.raw, tuple(out.info["frame"]))
    flagged = actor.to_output("no idea", K)
    assert flagged.action == FALLBACK_ACTION and "no action found" in flagged.info["parse_error"]
    good = actor.to_output('{"action": "tap", "point": [250, 750]}', K)
    assert good.action == Action("tap", point=(0.25, 0.75)) and "parse_error" not in good.info


def test_a_model_taught_one_answer_is_parsed_end_to_end():
    model, processor = tiny_random_qwen2_vl()
    actor = HFVLMActor.from_model(model, processor, max_new_tokens=48, system="Act.")
    inp = _input()
    prompt, images, _ = actor.prompt(inp)
    answer = '{"action": "tap", "point": [250, 750]}'
    full = processor(text=[prompt + answer + "<|im_end|>"], images=[images], return_tensors="pt")
    n_prompt = processor(text=[prompt], images=[images], return_tensors="pt")["input_ids"].shape[1]
    labels = full["input_ids"].clone()
    labels[:, :n_prompt] = -100  # learn the answer only
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(80):  # converged with a margin of ~6 logits on every answer token
        loss = model(**full, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    out = actor.act([inp], output_hidden_states=True)[0]
    assert out.raw == answer, (out.raw, float(loss))
    assert out.action == Action("tap", point=(0.25, 0.75)) and "parse_error" not in out.info


# ----------------------------------------------------------------------------- another family, from a folder
def test_loads_a_saved_llava_from_a_folder(tmp_path):
    """A second family (LLaVA: CLIP tower, Llama text model), loaded by path with the Auto classes."""
    save_tiny_random_llava(str(tmp_path))
    actor = HFVLMActor(str(tmp_path), coords="absolute_resized", max_new_tokens=4, device="cpu", dtype=torch.float32)
    assert actor.frame(_input().screenshot) == (28.0, 28.0)  # fixed-size processor: read off pixel_values
    out = actor.act([_input(modality="both")], output_hidden_states=True)[0]
    assert out.hidden_states.shape == (4, 32)  # 3 layers + the embedding
    assert isinstance(out.action, Action) and isinstance(out.raw, str)


# ----------------------------------------------------------------------------- SwitchMem on a Hugging Face actor
def test_the_switchmem_functions_run_on_a_hugging_face_actor(tiny, tmp_path):
    """The four SwitchMem stages' functions on the tiny Qwen2-VL: step records (hits, samples, hidden
    states, candidates) in the same on-disk format, the probe's layer curve, the router and its τ,
    Table 1 and the headroom groups, and the routed policy — what a GPU run with a real VLM does."""
    from guimem.train.examples import ActorExample
    from guimem.eval.action_match import MatchConfig
    from guimem.routing.route_scores import route_records, routing_statistics, table_one, where_image_helps
    from guimem.routing.policy import SwitchMemPolicy
    from guimem.routing.probe import CurveConfig, ProbeConfig, layer_curve
    from guimem.routing.records import SampledPreference, StepRecords, collect_records
    from guimem.routing.router import RouterConfig, calibrate_tau, train_router

    model, processor = tiny
    actor = HFVLMActor.from_model(model, processor, max_new_tokens=6, batch_size=2)
    memory = Image.new("RGB", (90, 200), (120, 60, 60))
    targets = [Action("tap", point=(0.5, 0.5)), Action("back"), Action("done")]
    examples = [ActorExample(PolicyInput(_input(f"goal {i}").screenshot, (), f"goal {i}", (), f"1. tap item {i}", memory),
                             targets[i % 3], f"ep{i // 2}", i % 2, "smg") for i in range(6)]
    rules = {"aitw": MatchConfig("aitw"), "learngui": MatchConfig("learngui", screen_size_px=(90, 180))}
    rec = collect_records(actor, examples, rules, SampledPreference(2), seed=0, batch_size=3, progress=False)
    assert rec.hidden["text"].shape == (6, actor.n_layers + 1, actor.d_model)
    assert rec.candidates["image"].shape == (6, actor.d_model)
    rec.save(tmp_path / "rec")
    back = StepRecords.load(tmp_path / "rec")
    np.testing.assert_array_equal(back.hidden["image"], rec.hidden["image"])
    labels = np.arange(6) % 2 == 0  # the random model's preferences may all tie: the path, not the signal
    curve = layer_curve(rec.shift(), labels, rec.episodes, ProbeConfig(pca_dim=4), CurveConfig(3, 10))
    assert len(curve) == actor.n_layers + 1
    router = train_router(rec.hidden["none"][:, -1], rec.candidates["text"], rec.candidates["image"],
                          np.linspace(-1, 1, 6), RouterConfig(hidden=4, epochs=5))
    scores, image = route_records(router, rec)
    router.tau = calibrate_tau(scores, 0.5)
    table = table_one(rec, {"switchmem": router.route(scores)}, ["aitw", "learngui"])
    assert set(table) == {"aitw", "learngui"} and 0.0 <= table["aitw"]["switchmem"] <= 1.0
    assert where_image_helps(rec, image)["step position"]
    outs = SwitchMemPolicy(actor, router).act([ex.input for ex in examples])
    assert [o.info["modality"] for o in outs] == ["image" if s >= router.tau else "text" for s in scores]
    assert routing_statistics([[o.info["modality"] == "image" for o in outs]])["trajectories"] == 1
