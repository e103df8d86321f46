"""Bad actor folders (``MiniActor.load``) and save targets (``MiniActor.save``), each with its exact
outcome: a :class:`DataError` naming the file (``config.json``, ``model.safetensors``, ``vocab.json``,
or the folder when a file is missing) and the field (a config value, a tensor's name, a vocabulary
field), or the actor read back unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
from safetensors.torch import load_file, save_file

from bad_inputs.corpus import error
from guimem.actors.mini.config import ActorConfig
from guimem.actors.mini.model import GuiActor
from guimem.actors.mini.policy import MiniActor
from guimem.actors.mini.tiny import TINY
from guimem.core.io import MARKER
from guimem.models.tokenizer import Vocabulary

pytestmark = pytest.mark.bad_input

WEIGHTS = "model.safetensors"


def actor() -> MiniActor:
    vocab = Vocabulary(["[PAD]", "[ACT]", "open", "notes"], n_hash_buckets=4)
    torch.manual_seed(0)
    config = ActorConfig(vocab_size=len(vocab), app_names=["Notes", "Shop"], widget_roles=["button"], **TINY)
    return MiniActor(GuiActor(config), vocab)


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("saved") / "actor"
    actor().save(folder)
    return folder


@pytest.fixture
def folder(saved, tmp_path) -> Path:
    """A fresh copy of the saved actor."""
    return Path(shutil.copytree(saved, tmp_path / "actor"))


# ============================================================================= mutations
def config(**values: Any) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        c = json.loads((folder / "config.json").read_text())
        c.update(values)
        (folder / "config.json").write_text(json.dumps(c))
    return mutate


def weights(change: Callable[[dict[str, torch.Tensor]], None]) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        tensors = load_file(folder / WEIGHTS)
        change(tensors)
        save_file(tensors, folder / WEIGHTS, metadata={"format": "pt"})
    return mutate


def poke(name: str, value: float) -> Callable[[dict[str, torch.Tensor]], None]:
    def change(tensors: dict[str, torch.Tensor]) -> None:
        tensors[name] = tensors[name].clone()
        tensors[name].view(-1)[0] = value
    return change


def write(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_bytes(data)


def cut(name: str, keep: int) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_bytes((folder / name).read_bytes()[:keep])


def remove(name: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).unlink()


def link_out(name: str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        shutil.move(folder / name, folder.parent / name)
        (folder / name).symlink_to(folder.parent / name)
    return mutate


def vocab(**values: Any) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        v = json.loads((folder / "vocab.json").read_text())
        v.update(values)
        (folder / "vocab.json").write_text(json.dumps(v))
    return mutate


# (case id, mutation of a saved actor, field, file ("." = the folder itself))
CASES: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("config_missing", remove("config.json"), "config.json", "."),
    ("weights_missing", remove(WEIGHTS), WEIGHTS, "."),
    ("vocab_missing", remove("vocab.json"), "vocab.json", "."),
    ("config_malformed", write("config.json", b'{"model_type": '), "json", "config.json"),
    ("config_a_list", write("config.json", b"[]"), "model_type", "config.json"),
    ("config_of_another_model", config(model_type="bert"), "model_type", "config.json"),
    ("hidden_size_negative", config(hidden_size=-4), "hidden_size", "config.json"),
    ("layers_a_string", config(num_hidden_layers="six"), "num_hidden_layers", "config.json"),
    ("heads_do_not_divide", config(num_attention_heads=3), "num_attention_heads", "config.json"),
    ("screen_not_whole_patches", config(screen_height=30), "screen_height", "config.json"),
    ("config_more_words_than_weights", config(vocab_size=50), "embed.words.weight", WEIGHTS),
    ("config_more_apps_than_weights", config(app_names=["Notes", "Shop", "Clock"]), "app_head.bias", WEIGHTS),
    ("weights_truncated", cut(WEIGHTS, 5000), "weights", WEIGHTS),
    ("weights_header_only", cut(WEIGHTS, 8), "weights", WEIGHTS),
    ("weights_empty", write(WEIGHTS, b""), "weights", WEIGHTS),
    ("weights_not_safetensors", write(WEIGHTS, b"PK\x03\x04 a zip, say"), "weights", WEIGHTS),
    ("weight_missing", weights(lambda t: t.pop("type_head.bias")), "type_head.bias", WEIGHTS),
    ("weight_unknown", weights(lambda t: t.update(bogus=torch.zeros(3))), "bogus", WEIGHTS),
    ("weight_wrong_shape", weights(lambda t: t.update({"type_head.bias": torch.zeros(11)})), "type_head.bias",
     WEIGHTS),
    ("weight_nan", weights(poke("type_head.weight", float("nan"))), "type_head.weight", WEIGHTS),
    ("weight_inf", weights(poke("ln_final.weight", float("inf"))), "ln_final.weight", WEIGHTS),
    ("vocab_truncated", cut("vocab.json", 20), "json", "vocab.json"),
    ("vocab_a_list", write("vocab.json", b"[]"), "vocabulary", "vocab.json"),
    ("vocab_one_word_more", vocab(tokens=["[PAD]", "[ACT]", "open", "notes", "shop"]), "vocab_size", "vocab.json"),
    ("vocab_buckets_zero", vocab(n_hash_buckets=0), "n_hash_buckets", "vocab.json"),
    # issue 24: every weight of the dtype the config implies, every config value typed and in range, names distinct
    ("weight_int64", weights(lambda t: t.update({"type_head.bias": t["type_head.bias"].long()})), "type_head.bias",
     WEIGHTS),
    ("weight_bool", weights(lambda t: t.update({"ln_final.bias": t["ln_final.bias"] > 0})), "ln_final.bias", WEIGHTS),
    ("weight_float16", weights(lambda t: t.update({"ln_final.weight": t["ln_final.weight"].half()})),
     "ln_final.weight", WEIGHTS),
    ("weight_beyond_float32", weights(lambda t: t.update({"type_head.bias": torch.full_like(t["type_head.bias"], 1e300, dtype=torch.float64)})),
     "type_head.bias", WEIGHTS),
    ("weights_header_not_utf8", lambda f: (f / WEIGHTS).write_bytes(
        (f / WEIGHTS).read_bytes()[:10] + b"\xff" + (f / WEIGHTS).read_bytes()[11:]), "weights", WEIGHTS),
    ("app_names_duplicated", config(app_names=["Notes", "Notes"]), "app_names[1]", "config.json"),
    ("app_names_a_string", config(app_names="Notes"), "app_names", "config.json"),
    ("app_name_a_number", config(app_names=["Notes", 3]), "app_names[1]", "config.json"),
    ("widget_roles_duplicated", config(widget_roles=["button", "button"]), "widget_roles[1]", "config.json"),
    ("dtype_bfloat16", config(dtype="bfloat16"), "dtype", "config.json"),
    ("torch_dtype_int64", config(torch_dtype="int64"), "torch_dtype", "config.json"),
    ("dropout_one", config(dropout=1.0), "dropout", "config.json"),
    ("dropout_a_string", config(dropout="0"), "dropout", "config.json"),
    ("layer_norm_eps_zero", config(layer_norm_eps=0), "layer_norm_eps", "config.json"),
    ("layer_norm_eps_infinite", config(layer_norm_eps=float("inf")), "layer_norm_eps", "config.json"),
    ("swipe_length_negative", config(swipe_length=-0.3), "swipe_length", "config.json"),
    ("swipe_length_huge_int", config(swipe_length=10 ** 400), "swipe_length", "config.json"),
    ("hidden_size_a_float", config(hidden_size=32.0), "hidden_size", "config.json"),
    ("hidden_size_a_bool", config(hidden_size=True), "hidden_size", "config.json"),
    ("max_element_words_huge", config(max_element_words=10 ** 9), "max_element_words", "config.json"),
    ("max_history_negative", config(max_history=-1), "max_history", "config.json"),
    ("exact_match_a_string", config(exact_match="yes"), "exact_match", "config.json"),
    ("role_channel_a_number", config(role_channel=1), "role_channel", "config.json"),
    ("type_class_weights_too_few", config(type_class_weights=[1.0, 2.0]), "type_class_weights", "config.json"),
    ("type_class_weight_negative", config(type_class_weights=[1.0] * 9 + [-1.0]), "type_class_weights[9]",
     "config.json"),
    ("type_loss_weight_a_string", config(type_loss_weight="1"), "type_loss_weight", "config.json"),
    ("vocab_format_true", vocab(format=True), "format", "vocab.json"),
    ("vocab_format_a_float", vocab(format=1.0), "format", "vocab.json"),
    ("vocab_word_duplicated", vocab(tokens=["[PAD]", "[ACT]", "open", "open"]), "tokens", "vocab.json"),
    ("vocab_word_a_number", vocab(tokens=["[PAD]", "[ACT]", "open", 4]), "tokens", "vocab.json"),
    ("vocab_buckets_a_float", vocab(n_hash_buckets=4.0), "n_hash_buckets", "vocab.json"),
    ("config_link_out", link_out("config.json"), "file", "config.json"),
    ("weights_link_out", link_out(WEIGHTS), "file", WEIGHTS),
    ("vocab_link_out", link_out("vocab.json"), "file", "vocab.json"),
]


@pytest.mark.parametrize("case, mutate, field, file", CASES, ids=[c[0] for c in CASES])
def test_a_broken_actor_folder_names_file_and_field(folder, case, mutate, field, file):
    mutate(folder)
    err = error(lambda: MiniActor.load(folder))
    assert (err.field, os.path.relpath(err.path, folder)) == (field, file), str(err)


def test_no_actor_folder(tmp_path):
    err = error(lambda: MiniActor.load(tmp_path / "none"))
    assert (err.field, err.path) == ("path", str(tmp_path / "none"))
    (tmp_path / "a-file").write_text("x")
    assert error(lambda: MiniActor.load(tmp_path / "a-file")).path == str(tmp_path / "a-file")


def test_float64_weights_are_read_back_as_the_same_float32_actor(folder, saved):
    weights(lambda t: t.update({k: v.double() for k, v in t.items()}))(folder)
    back = MiniActor.load(folder)
    for name, w in MiniActor.load(saved).model.state_dict().items():
        torch.testing.assert_close(back.model.state_dict()[name], w, rtol=0, atol=0)


def test_a_crashed_save_is_read_from_its_backup(folder):
    folder.rename(folder.parent / ".actor.old")  # the moment between the two renames of a save
    assert MiniActor.load(folder).config.app_names == ["Notes", "Shop"]


# ============================================================================= save targets
def test_save_refuses_a_folder_it_did_not_write_and_keeps_it(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "table.csv").write_text("a,b")
    err = error(lambda: actor().save(tmp_path / "results"))
    assert (err.field, err.path) == ("path", str(tmp_path / "results"))
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["table.csv"]


def test_save_refuses_a_store_of_another_kind(tmp_path):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / MARKER).write_text("guimem.memory\n")
    err = error(lambda: actor().save(tmp_path / "memory"))
    assert (err.field, err.path) == ("path", str(tmp_path / "memory")) and "guimem.memory store" in err.message


def test_save_refuses_an_actor_without_its_marker(folder):
    (folder / MARKER).unlink()
    err = error(lambda: actor().save(folder))
    assert (err.field, err.path) == ("path", str(folder)) and "did not write" in err.message


# ============================================================================= a Hugging Face checkpoint folder
@pytest.fixture(scope="module")
def saved_hf(tmp_path_factory) -> Path:
    from guimem.actors.hf.tiny import save_tiny_random_llava

    folder = tmp_path_factory.mktemp("saved") / "llava"
    save_tiny_random_llava(str(folder))
    return folder


def text_config(value: Any) -> Callable[[Path], None]:
    return config(text_config=value)


# (case id, mutation of a local checkpoint folder, field, file ("." = the folder itself))
HF_CASES: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("weights_truncated", cut(WEIGHTS, 5000), "weights", WEIGHTS),
    ("weights_header_only", cut(WEIGHTS, 8), "weights", WEIGHTS),
    ("weights_not_safetensors", write(WEIGHTS, b"PK\x03\x04 a zip, say"), "weights", WEIGHTS),
    ("config_truncated", cut("config.json", 20), "json", "config.json"),
    ("config_a_list", write("config.json", b"[]"), "config.json", "config.json"),
    ("processor_config_a_string", write("processor_config.json", b'"x"'), "processor_config.json",
     "processor_config.json"),
    ("tokenizer_config_not_utf8", write("tokenizer_config.json", b'{"a": "\xff"}'), "file", "tokenizer_config.json"),
    ("text_config_a_number", text_config(5), "actor_model", "."),
]


@pytest.mark.parametrize("case, mutate, field, file", HF_CASES, ids=[c[0] for c in HF_CASES])
def test_a_broken_hugging_face_checkpoint_names_file_and_field(saved_hf, tmp_path, case, mutate, field, file):
    from guimem.actors.hf.policy import HFVLMActor

    folder = Path(shutil.copytree(saved_hf, tmp_path / "llava"))
    mutate(folder)
    err = error(lambda: HFVLMActor(str(folder), device="cpu", dtype=torch.float32))
    assert (err.field, os.path.relpath(err.path, folder)) == (field, file), str(err)
