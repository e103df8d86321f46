"""Hugging Face checkpoint folders that are not what they say, each with its exact outcome
(:mod:`guimem.models.hf_checkpoint`): a :class:`DataError` naming the folder (or its file) and the field,
and for weights that do not match the config the first tensors concerned. Built from the tiny random
LLaVA of ``guimem.actors.hf.tiny`` (and a tiny CLIP vision tower for the ``hf:`` image embedder), never
downloaded, then changed one way per case.

The cases that would run for ever or ask at the terminal cannot here: a config describing a million
layers is stopped while the model is built (a budget of tensors proportional to the weights), a chat
template by the work budget of its render, and a folder naming its own code is refused before
``transformers`` reads it (and every ``from_pretrained`` passes ``trust_remote_code=False``).
"""

from __future__ import annotations

import builtins
import io
import json
import shutil
from pathlib import Path
from typing import Any, Callable

import jinja2
import pytest
import torch
from PIL import Image
from safetensors.torch import load_file, save_file

from bad_inputs.corpus import error
from guimem.core.data import DataError
from guimem.models.hf_checkpoint import TemplateBudget

pytestmark = pytest.mark.bad_input

WEIGHTS = "model.safetensors"
LAYER = "language_model.model.layers"  # the tiny LLaVA's text layers, as its weights name them
LOADED = "model.language_model.layers"  # ... and as the loaded model (and transformers' report) names them


# ============================================================================= a tiny real checkpoint
@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    from guimem.actors.hf.tiny import save_tiny_random_llava

    return Path(save_tiny_random_llava(str(tmp_path_factory.mktemp("saved") / "llava")))  # 3 text layers


@pytest.fixture
def folder(saved, tmp_path) -> Path:
    """A fresh copy of the saved checkpoint."""
    return Path(shutil.copytree(saved, tmp_path / "llava"))


def load(folder: Path) -> Any:
    from guimem.actors.hf.policy import HFVLMActor

    return HFVLMActor(str(folder), device="cpu", dtype=torch.float32, max_new_tokens=2)


def config(**values: Any) -> Callable[[Path], None]:
    """Set values of config.json (``a__b`` sets ``b`` inside ``a``)."""
    def mutate(folder: Path) -> None:
        c = json.loads((folder / "config.json").read_text())
        for key, value in values.items():
            *outer, last = key.split("__")
            (c[outer[0]] if outer else c)[last] = value
        (folder / "config.json").write_text(json.dumps(c))
    return mutate


def drop(*prefixes: str) -> Callable[[Path], None]:
    """Cut every tensor whose name starts with one of ``prefixes`` out of the weights."""
    def mutate(folder: Path) -> None:
        tensors = load_file(folder / WEIGHTS)
        kept = {k: v for k, v in tensors.items() if not k.startswith(prefixes)}
        assert len(kept) < len(tensors)
        save_file(kept, folder / WEIGHTS, metadata={"format": "pt"})
    return mutate


def write(name: str, text: str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        (folder / name).write_text(text)
    return mutate


def both(*mutations: Callable[[Path], None]) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        for m in mutations:
            m(folder)
    return mutate


# ============================================================================= weights that do not match the config
ATTENTION = tuple(f"{LAYER}.1.self_attn.{p}_proj" for p in "qkvo")

# (case id, mutation, field, what the message names: the first tensors, or the config's culprit)
MODEL_CASES: list[tuple[str, Callable[[Path], None], str, list[str]]] = [
    ("config_claims_five_layers_over_three", config(text_config__num_hidden_layers=5), "weights",
     ["18 tensors the config describes are missing", f"{LOADED}.3.input_layernorm.weight",
      f"{LOADED}.3.mlp.down_proj.weight", f"{LOADED}.3.mlp.gate_proj.weight", "and 15 more"]),
    ("one_layers_attention_cut_out", drop(*ATTENTION), "weights",
     ["4 tensors the config describes are missing", f"{LOADED}.1.self_attn.k_proj.weight",
      f"{LOADED}.1.self_attn.o_proj.weight", f"{LOADED}.1.self_attn.q_proj.weight", "and 1 more"]),
    ("the_vision_tower_cut_out", drop("vision_tower.encoder."), "weights",
     ["16 tensors the config describes are missing", "model.vision_tower.encoder.layers.0.layer_norm1.bias"]),
    ("config_claims_two_layers_over_three", config(text_config__num_hidden_layers=2), "weights",
     ["9 tensors of the weights are not in the model", "they would be dropped",
      f"{LOADED}.2.input_layernorm.weight", f"{LOADED}.2.mlp.down_proj.weight"]),
    ("config_claims_wider_layers", config(text_config__intermediate_size=128), "weights",
     ["9 tensors have another shape", f"{LOADED}.0.mlp.down_proj.weight (weights [32, 64], config [32, 128])"]),
    ("weights_missing_and_unexpected", both(config(text_config__num_hidden_layers=2), drop(f"{LAYER}.0.mlp.")),
     "weights", ["3 tensors the config describes are missing", f"{LOADED}.0.mlp.down_proj.weight",
                 "9 tensors of the weights are not in the model", f"{LOADED}.2.input_layernorm.weight"]),
    # a config describing far more than the weights hold: stopped while the model is built
    ("a_million_layers", config(text_config__num_hidden_layers=1_000_000), "text_config.num_hidden_layers",
     ["far larger than its weights", "the weights hold 57 tensors", "text_config.num_hidden_layers = 1000000"]),
    ("a_million_wide", config(text_config__hidden_size=1_000_000), "text_config.hidden_size",
     ["far larger than its weights", "text_config.hidden_size = 1000000"]),
    ("a_billion_words", config(text_config__vocab_size=10**9), "text_config.vocab_size",
     ["far larger than its weights"]),
    ("a_million_vision_layers", config(vision_config__num_hidden_layers=1_000_000), "vision_config.num_hidden_layers",
     ["far larger than its weights"]),
]


@pytest.mark.parametrize("case, mutate, field, named", MODEL_CASES, ids=[c[0] for c in MODEL_CASES])
def test_weights_that_do_not_match_the_config_are_refused_by_name(folder, case, mutate, field, named):
    mutate(folder)
    err = error(lambda: load(folder))
    assert (err.field, err.path) == (field, str(folder)), str(err)
    assert all(name in err.message for name in named), err.message


def test_tied_weights_missing_from_the_file_are_not_refused(folder):
    """A checkpoint that ties its output layer to its embedding stores the embedding once: transformers
    ties the two and takes the output layer off its MISSING report, and the actor loads."""
    config(tie_word_embeddings=True, text_config__tie_word_embeddings=True)(folder)
    drop("language_model.lm_head.")(folder)
    model = load(folder).model
    assert model.lm_head.weight is model.model.language_model.embed_tokens.weight


# ============================================================================= weights files
def shards(folder: Path, split: int, overlap: bool = False) -> dict[str, Any]:
    """Cut the weights into two shards and an index (the second shard holding the first's last tensor
    too when ``overlap``); returns the index."""
    tensors = load_file(folder / WEIGHTS)
    names = sorted(tensors)
    first, second = names[:split], names[split - 1 if overlap else split:]
    for name, part in (("model-1.safetensors", first), ("model-2.safetensors", second)):
        save_file({k: tensors[k] for k in part}, folder / name, metadata={"format": "pt"})
    (folder / WEIGHTS).unlink()
    index = {"metadata": {}, "weight_map": {k: "model-1.safetensors" for k in first}
             | {k: "model-2.safetensors" for k in names[split:]}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return index


def test_a_sharded_checkpoint_loads_as_the_whole_one(saved, folder):
    shards(folder, 20)
    whole, sharded = load(saved).model.state_dict(), load(folder).model.state_dict()
    assert whole.keys() == sharded.keys() and all(torch.equal(whole[k], sharded[k]) for k in whole)


def test_a_tensor_in_two_shards_is_refused(folder):
    index = shards(folder, 20, overlap=True)
    twice = sorted(index["weight_map"])[19]
    err = error(lambda: load(folder))
    assert (err.field, err.path) == (twice, str(folder / "model-2.safetensors")) and "two shards" in err.message


def index_names(shard: str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        shards(folder, 20)
        index = json.loads((folder / "model.safetensors.index.json").read_text())
        index["weight_map"] = {k: shard for k in index["weight_map"]}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return mutate


# (case id, mutation, field, file)
FILE_CASES: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("no_safetensors_but_a_pickle", lambda f: (f / WEIGHTS).rename(f / "pytorch_model.bin"), "weights", "."),
    ("index_names_a_missing_shard", index_names("model-9.safetensors"), "weights", "model-9.safetensors"),
    ("index_names_a_shard_outside", index_names("../model.safetensors"), "weight_map",
     "model.safetensors.index.json"),
    ("index_weight_map_empty", both(index_names("x"), write("model.safetensors.index.json", '{"weight_map": {}}')),
     "weight_map", "model.safetensors.index.json"),
    ("config_names_weights_outside", config(transformers_weights="../secret.safetensors"), "transformers_weights",
     "config.json"),
]


@pytest.mark.parametrize("case, mutate, field, file", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_weights_files_that_cannot_be_read_as_said_are_refused(folder, case, mutate, field, file):
    mutate(folder)
    err = error(lambda: load(folder))
    assert (err.field, err.path) == (field, str(folder if file == "." else folder / file)), str(err)


# ============================================================================= code of the checkpoint's own
PLANTED = "import pathlib\npathlib.Path({marker!r}).write_text('planted code ran')\n"  # transformers would run a copy


def plant(json_name: str, model_type: str = "llava", nested: str | None = None) -> Callable[[Path], None]:
    """Plant a module that marks the folder when imported, and name it in ``json_name``'s auto_map
    (inside ``nested`` when given)."""
    def mutate(folder: Path) -> None:
        (folder / "evil.py").write_text(PLANTED.format(marker=str(folder / "RAN")))
        document = json.loads((folder / json_name).read_text())
        auto_map = {"AutoConfig": "evil.EvilConfig", "AutoModelForImageTextToText": "evil.EvilModel",
                    "AutoProcessor": "evil.EvilProcessor", "AutoTokenizer": ["evil.EvilTokenizer", None]}
        (document.setdefault(nested, {}) if nested else document)["auto_map"] = auto_map
        if json_name == "config.json":
            document["model_type"] = model_type
        (folder / json_name).write_text(json.dumps(document))
    return mutate


# (case id, mutation, field, file)
REMOTE_CODE_CASES: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("config_auto_map", plant("config.json"), "auto_map", "config.json"),
    ("config_auto_map_of_an_unknown_model", plant("config.json", "evil"), "auto_map", "config.json"),
    ("text_config_auto_map", plant("config.json", nested="text_config"), "text_config.auto_map", "config.json"),
    ("tokenizer_auto_map", plant("tokenizer_config.json"), "auto_map", "tokenizer_config.json"),
    ("processor_auto_map", plant("processor_config.json"), "auto_map", "processor_config.json"),
]


@pytest.fixture
def answers_yes(monkeypatch) -> list[str]:
    """A terminal whose user answers ``y`` to "run the custom code? [y/N]": the prompts asked (none
    may be) are recorded, and a ``y`` would run the planted file."""
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n" * 10))
    asked: list[str] = []

    def answer(prompt: str = "") -> str:
        asked.append(prompt)
        return "y"

    monkeypatch.setattr(builtins, "input", answer)
    return asked


@pytest.mark.parametrize("case, mutate, field, file", REMOTE_CODE_CASES, ids=[c[0] for c in REMOTE_CODE_CASES])
def test_a_checkpoint_naming_its_own_code_is_refused_without_a_prompt(folder, answers_yes, case, mutate, field,
                                                                       file):
    mutate(folder)
    err = error(lambda: load(folder))
    assert (err.field, err.path) == (field, str(folder / file)) and "auto_map" in err.message, str(err)
    assert answers_yes == [] and not (folder / "RAN").exists()


@pytest.mark.parametrize("model_type", ["llava", "evil"])
def test_past_the_auto_map_check_transformers_runs_no_code_and_asks_nothing(folder, answers_yes, monkeypatch,
                                                                           model_type):
    """Every from_pretrained passes trust_remote_code=False: with the folder check switched off, a
    config naming its own code for a model transformers ships loads transformers' own classes, and one
    for a model it does not ship is refused; neither prompts nor runs the planted file."""
    import guimem.models.hf_checkpoint as hf_checkpoint

    monkeypatch.setattr(hf_checkpoint, "_auto_map", lambda document: None)
    plant("config.json", model_type)(folder)
    if model_type == "llava":
        assert type(load(folder).model).__module__.startswith("transformers.")
    else:
        err = error(lambda: load(folder))
        assert (err.field, err.path) == ("actor_model", str(folder)) and isinstance(err.__cause__, ValueError)
    assert answers_yes == [] and not (folder / "RAN").exists()


# ============================================================================= chat templates
def template(text: str) -> Callable[[Path], None]:
    return write("chat_template.jinja", text)


# (case id, template, the error behind the DataError, words of its message)
TEMPLATE_CASES: list[tuple[str, str, type, str]] = [
    ("nested_loops", "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}",
     TemplateBudget, "more than 100000 steps"),
    ("nested_loops_writing_nothing", "{% for a in messages %}{% for b in range(99999) %}{% for c in range(99999) %}"
     "{% endfor %}{% endfor %}{% endfor %}", TemplateBudget, "more than 100000 steps"),
    ("a_billion_long_range", "{% for a in range(10**9) %}{% endfor %}", TemplateBudget, "past the"),
    ("a_recursive_loop", "{% for m in messages recursive %}{{ loop(range(99999)) }}{% endfor %}", RecursionError,
     "RecursionError"),
    ("a_recursive_macro", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", RecursionError, "RecursionError"),
    ("a_string_repeated", "{{ 'x' * 10**9 }}", TemplateBudget, "a repetition"),
    ("a_list_repeated_then_joined", "{{ (['x' * 1000] * 1000) | join('y' * 1000) }}", TemplateBudget, "join filter"),
    ("a_string_doubled_in_a_loop", "{% set ns = namespace(s='ab') %}{% for i in range(64) %}"
     "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}", TemplateBudget, "past the"),
    ("a_replace_that_doubles", "{% set ns = namespace(s='ab') %}{% for i in range(64) %}"
     "{% set ns.s = ns.s | replace('a', 'aa') %}{% endfor %}", TemplateBudget, "replace filter"),
    ("a_huge_power", "{{ 10 ** (10 ** 10) }}", TemplateBudget, "a power over 4096 bits"),
    ("a_huge_width", "{{ '%0999999999d' % 1 }}", TemplateBudget, "a width or precision"),
    ("a_huge_centre", "{{ messages | string | center(10**9) }}", TemplateBudget, "center filter"),
    ("lorem_ipsum_for_ever", "{{ lipsum(100000, max=100000) }}", TemplateBudget, "lipsum"),
    ("probes_class", "{{ messages.__class__.__mro__ }}", jinja2.exceptions.SecurityError, "SecurityError"),
    ("probes_subclasses", "{{ ''.__class__.__mro__[1].__subclasses__() }}", jinja2.exceptions.SecurityError,
     "SecurityError"),
    ("not_jinja", "{% for %}", jinja2.TemplateSyntaxError, "TemplateSyntaxError"),
    ("raises", "{{ raise_exception('this template refuses every chat') }}", jinja2.TemplateError,
     "this template refuses every chat"),
    ("too_long", "x" * 200_001, TemplateBudget, "200001 characters long"),
]


@pytest.mark.parametrize("case, text, cause, words", TEMPLATE_CASES, ids=[c[0] for c in TEMPLATE_CASES])
def test_a_chat_template_that_does_not_finish_or_escapes_is_refused(folder, case, text, cause, words):
    template(text)(folder)
    err = error(lambda: load(folder))
    assert (err.field, err.path) == ("chat_template", str(folder)) and words in err.message, str(err)
    assert isinstance(err.__cause__, cause), repr(err.__cause__)


QWEN2_VL_TEMPLATE = (  # Qwen2-VL-7B-Instruct's own chat template
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}"
    "<|im_end|>\n{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' or 'image' in "
    "content or 'image_url' in content %}{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}"
    "Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>{% elif content['type'] "
    "== 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}"
    "Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>{% elif 'text' in content "
    "%}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}"
    "<|im_start|>assistant\n{% endif %}")
TOOL_STYLE_TEMPLATE = (  # the constructs of tool-calling templates: macros, filters, namespaces, slices, loop.*
    "{%- macro text(c) -%}{%- if c is string -%}{{ c | trim }}{%- else -%}{%- for p in c if p.type == 'text' -%}"
    "{{ p.text }}{%- endfor -%}{%- endif -%}{%- endmacro -%}{%- set ns = namespace(last=-1) -%}"
    "{%- for m in messages[::-1] -%}{%- if ns.last < 0 and m.role == 'user' -%}"
    "{%- set ns.last = messages | length - loop.index0 - 1 -%}{%- endif -%}{%- endfor -%}"
    "{%- for m in messages -%}<|{{ m.role }}|>{{ text(m.content) | replace('  ', ' ') }}"
    "{%- if loop.index0 == ns.last %} (last user turn of {{ messages | map(attribute='role') | join(', ') }})"
    "{%- endif -%}{{ '\\n' }}{%- endfor -%}{{ {'n': messages | length} | tojson }}"
    "{%- if add_generation_prompt %}<|assistant|>{% endif -%}")


@pytest.mark.parametrize("text", ["tiny", QWEN2_VL_TEMPLATE, TOOL_STYLE_TEMPLATE], ids=["tiny", "qwen2_vl", "tools"])
def test_a_real_chat_template_renders_within_the_budget_as_transformers_renders_it(text):
    """The bound changes nothing a template computes: the actor's probe chat renders to the same text
    under the budget as in transformers' own sandbox."""
    from transformers.utils.chat_template_utils import render_jinja_template

    from guimem.actors.hf.parsing import DEFAULT_ANSWER_FORMAT
    from guimem.actors.hf.policy import _probe
    from guimem.actors.hf.prompts import build_messages, system_prompt
    from guimem.actors.hf.tiny import TINY_CHAT_TEMPLATE
    from guimem.models.hf_checkpoint import bounded_render, check_chat_template

    text = TINY_CHAT_TEMPLATE if text == "tiny" else text
    messages, _ = build_messages(_probe(), system_prompt(DEFAULT_ANSWER_FORMAT, "relative_1000"),
                                 DEFAULT_ANSWER_FORMAT, (1000.0, 1000.0), show_frame=False, mark_prefix_end=True)
    ours = bounded_render(text, messages=messages, tools=None, documents=None, add_generation_prompt=True)
    theirs = render_jinja_template([messages], chat_template=text, add_generation_prompt=True)[0][0]
    assert ours == theirs and "Goal: open the settings" in ours
    check_chat_template(text, messages, "here")


def test_a_template_failing_on_a_later_step_is_a_data_error(folder):
    """The budget is checked on the probe step; a template that fails only on another step's chat is
    still a DataError naming the template, never a raw jinja error."""
    from guimem.core.policy import PolicyInput

    template("{% for m in messages %}{% for c in m.content %}{% if 'settle' in c.get('text', '') %}"
             "{{ raise_exception('goal refused') }}{% endif %}{{ c.get('text', '') }}{% endfor %}{% endfor %}")(folder)
    actor = load(folder)
    step = PolicyInput(Image.new("RGB", (56, 56)), (), "settle the bill", ())
    err = error(lambda: actor.prompt(step))
    assert (err.field, err.path) == ("chat_template", str(folder)) and "goal refused" in err.message


# ============================================================================= the hf: image embedder
@pytest.fixture(scope="module")
def saved_vision(tmp_path_factory) -> Path:
    """A tiny CLIP vision tower (2 layers) and its image processor, as an ``hf:`` folder holds them."""
    from transformers import CLIPVisionConfig, CLIPVisionModel
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    folder = tmp_path_factory.mktemp("saved") / "clip"
    torch.manual_seed(0)
    CLIPVisionModel(CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     image_size=28, patch_size=14)).save_pretrained(folder)
    CLIPImageProcessorPil(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}).save_pretrained(folder)
    return folder


@pytest.fixture
def vision(saved_vision, tmp_path) -> Path:
    return Path(shutil.copytree(saved_vision, tmp_path / "clip"))


def test_the_hf_image_embedder_loads_a_whole_folder(vision):
    from guimem.models.embedding.embedders import HFImageEmbedder

    assert HFImageEmbedder(str(vision)).embed([Image.new("RGB", (40, 60), "red")]).shape == (1, 16)


# (case id, mutation, field, file, words of the message)
EMBEDDER_CASES: list[tuple[str, Callable[[Path], None], str, str, str]] = [
    ("a_layer_cut_out", drop("encoder.layers.1."), "weights", ".",
     "16 tensors the config describes are missing from the weights (they would be drawn at random): "
     "encoder.layers.1.layer_norm1.bias, encoder.layers.1.layer_norm1.weight, encoder.layers.1.layer_norm2.bias"),
    ("config_claims_three_layers", config(num_hidden_layers=3), "weights", ".",
     "16 tensors the config describes are missing from the weights (they would be drawn at random): "
     "encoder.layers.2.layer_norm1.bias"),
    ("a_million_layers", config(num_hidden_layers=1_000_000), "num_hidden_layers", ".", "far larger"),
    ("auto_map", plant("config.json"), "auto_map", "config.json", "auto_map"),
    ("processor_not_an_object", write("preprocessor_config.json", "[]"), "preprocessor_config.json",
     "preprocessor_config.json", "JSON object"),
]


@pytest.mark.parametrize("case, mutate, field, file, words", EMBEDDER_CASES, ids=[c[0] for c in EMBEDDER_CASES])
def test_the_hf_image_embedder_refuses_a_folder_that_is_not_what_it_says(vision, answers_yes, case, mutate, field,
                                                                         file, words):
    from guimem.models.embedding.embedders import HFImageEmbedder

    mutate(vision)
    err = error(lambda: HFImageEmbedder(str(vision)))
    assert (err.field, err.path) == (field, str(vision if file == "." else vision / file)) and words in err.message
    assert answers_yes == [] and not (vision / "RAN").exists()


def test_an_unloadable_folder_keeps_the_original_error_as_cause(folder):
    (folder / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "nonsense"}}')
    err = error(lambda: load(folder))
    assert (err.field, err.path) == ("actor_model", str(folder)) and err.__cause__ is not None
    assert not isinstance(err.__cause__, DataError)
