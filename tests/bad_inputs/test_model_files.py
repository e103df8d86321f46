"""Bad router folders (``Router.load``) and step-record folders (``StepRecords.load``), each with its
exact outcome: a :class:`DataError` naming the file (``router.json``, ``scorer.safetensors``,
``manifest.json``, ``steps.jsonl``, an array) and the field (a value, a tensor's name, a row's field),
or the folder read back unchanged. Both are built small and real (a router trained for a few steps,
records saved by :meth:`StepRecords.save`), then corrupted one way per case.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from bad_inputs.corpus import error, located
from guimem.routing.records import StepRecords
from guimem.routing.route_scores import label_free_tau, route_records
from guimem.routing.router import Router, RouterConfig, train_router

pytestmark = pytest.mark.bad_input

WEIGHTS = "scorer.safetensors"


# ============================================================================= a tiny real router
def router() -> Router:
    rng = np.random.default_rng(0)
    state, text, image = rng.normal(size=(12, 5)), rng.normal(size=(12, 3)), rng.normal(size=(12, 3))
    r = train_router(state, text, image, rng.normal(size=12), RouterConfig(hidden=4, epochs=5, seed=0))
    r.tau, r.info["state_layer"] = 0.25, 2
    return r


@pytest.fixture(scope="module")
def saved_router(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("saved") / "router"
    router().save(folder)
    return folder


@pytest.fixture
def router_folder(saved_router, tmp_path) -> Path:
    """A fresh copy of the saved router."""
    return Path(shutil.copytree(saved_router, tmp_path / "router"))


def meta(**values: Any) -> Callable[[Path], None]:
    """Set top-level values of router.json (a dotted key sets one inside ``config`` or ``info``)."""
    def mutate(folder: Path) -> None:
        m = json.loads((folder / "router.json").read_text())
        for key, value in values.items():
            *outer, last = key.split("__")
            (m[outer[0]] if outer else m)[last] = value
        (folder / "router.json").write_text(json.dumps(m))
    return mutate


def drop(key: str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        m = json.loads((folder / "router.json").read_text())
        del m[key]
        (folder / "router.json").write_text(json.dumps(m))
    return mutate


def tensors(change: Callable[[dict[str, torch.Tensor]], None]) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        t = load_file(folder / WEIGHTS)
        change(t)
        save_file(t, folder / WEIGHTS)
    return mutate


def poke(name: str, value: float) -> Callable[[dict[str, torch.Tensor]], None]:
    def change(t: dict[str, torch.Tensor]) -> None:
        t[name] = t[name].clone()
        t[name].view(-1)[0] = value
    return change


def write(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_bytes(data)


def cut(name: str, keep: int) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_bytes((folder / name).read_bytes()[:keep])


def flip_header_byte(name: str) -> Callable[[Path], None]:
    """A byte of the safetensors JSON header made invalid UTF-8."""
    def mutate(folder: Path) -> None:
        data = bytearray((folder / name).read_bytes())
        data[10] = 0xFF
        (folder / name).write_bytes(bytes(data))
    return mutate


def link_out(name: str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        shutil.move(folder / name, folder.parent / name)
        (folder / name).symlink_to(folder.parent / name)
    return mutate


NAN, INF = float("nan"), float("inf")

# (case id, mutation of a saved router, field, file)
ROUTER_CASES: list[tuple[str, Callable[[Path], None], str, str]] = [
    # router.json: the document and its scalars
    ("json_a_list", write("router.json", b"[]"), "router.json", "router.json"),
    ("json_truncated", cut("router.json", 30), "json", "router.json"),
    ("tau_nan", lambda f: (f / "router.json").write_text(re.sub(r'"tau": [^,}]+', '"tau": NaN',
                                                                  (f / "router.json").read_text())), "tau", "router.json"),
    ("tau_infinity", meta(tau=float("inf")), "tau", "router.json"),
    ("tau_a_string", meta(tau="0.25"), "tau", "router.json"),
    ("tau_a_bool", meta(tau=True), "tau", "router.json"),
    ("tau_null", meta(tau=None), "tau", "router.json"),
    ("tau_huge_int", meta(tau=10 ** 400), "tau", "router.json"),
    ("tau_missing", drop("tau"), "tau", "router.json"),
    ("rate_above_one", meta(train_image_rate=1.5), "train_image_rate", "router.json"),
    ("rate_a_string", meta(train_image_rate="half"), "train_image_rate", "router.json"),
    ("d_state_a_float", meta(d_state=5.0), "d_state", "router.json"),
    ("d_state_a_bool", meta(d_state=True), "d_state", "router.json"),
    ("d_candidate_zero", meta(d_candidate=0), "d_candidate", "router.json"),
    ("d_state_huge", meta(d_state=10 ** 12), "d_state", "router.json"),
    # the standardisation of the inputs
    ("std_zero", meta(state_std=[1.0, 0.0, 1.0, 1.0, 1.0]), "state_std[1]", "router.json"),
    ("std_negative", meta(cand_std=[1.0, -2.0, 1.0]), "cand_std[1]", "router.json"),
    ("std_tiny", meta(cand_std=[1e-300, 1.0, 1.0]), "cand_std[0]", "router.json"),
    ("mean_a_string", meta(state_mean=["0", 0, 0, 0, 0]), "state_mean[0]", "router.json"),
    ("mean_a_bool", meta(cand_mean=[True, 0, 0]), "cand_mean[0]", "router.json"),
    ("mean_nested", meta(cand_mean=[[0], 0, 0]), "cand_mean[0]", "router.json"),
    ("mean_too_short", meta(state_mean=[0.0]), "state_mean", "router.json"),
    ("mean_an_object", meta(state_mean={"a": 1}), "state_mean", "router.json"),
    ("std_huge_int", meta(state_std=[10 ** 400, 1, 1, 1, 1]), "state_std[0]", "router.json"),
    # the config
    ("config_a_list", meta(config=[]), "config", "router.json"),
    ("config_unknown_key", meta(config__depth=3), "config.depth", "router.json"),
    ("hidden_a_string", meta(config__hidden="4"), "config.hidden", "router.json"),
    ("hidden_a_float", meta(config__hidden=4.0), "config.hidden", "router.json"),
    ("hidden_huge", meta(config__hidden=10 ** 9), "config.hidden", "router.json"),
    ("lr_zero", meta(config__lr=0), "config.lr", "router.json"),
    ("epochs_a_bool", meta(config__epochs=True), "config.epochs", "router.json"),
    ("target_unknown", meta(config__target="oracle"), "config.target", "router.json"),
    ("weight_decay_negative", meta(config__weight_decay=-1), "config.weight_decay", "router.json"),
    # info: what later stages read from it
    ("info_a_list", meta(info=[1, 2]), "info", "router.json"),
    ("state_layer_a_string", meta(info__state_layer="last"), "info.state_layer", "router.json"),
    ("state_layer_a_float", meta(info__state_layer=2.5), "info.state_layer", "router.json"),
    ("target_scale_zero", meta(info__target_scale=0), "info.target_scale", "router.json"),
    # the weights
    ("weights_truncated", cut(WEIGHTS, 100), "weights", WEIGHTS),
    ("weights_header_only", cut(WEIGHTS, 8), "weights", WEIGHTS),
    ("weights_empty", write(WEIGHTS, b""), "weights", WEIGHTS),
    ("weights_header_not_utf8", flip_header_byte(WEIGHTS), "weights", WEIGHTS),
    ("weights_missing", lambda folder: (folder / WEIGHTS).unlink(), "weights", WEIGHTS),
    ("weight_nan", tensors(poke("net.0.weight", NAN)), "net.0.weight", WEIGHTS),
    ("weight_inf", tensors(poke("net.4.bias", INF)), "net.4.bias", WEIGHTS),
    ("weight_beyond_float32", tensors(lambda t: t.update({"net.4.bias": torch.full((1,), 1e300, dtype=torch.float64)})),
     "net.4.bias", WEIGHTS),
    ("weight_int64", tensors(lambda t: t.update({"net.2.bias": t["net.2.bias"].long()})), "net.2.bias", WEIGHTS),
    ("weight_bool", tensors(lambda t: t.update({"net.2.bias": t["net.2.bias"] > 0})), "net.2.bias", WEIGHTS),
    ("weight_float16", tensors(lambda t: t.update({"net.0.bias": t["net.0.bias"].half()})), "net.0.bias", WEIGHTS),
    ("weight_missing", tensors(lambda t: t.pop("net.2.weight")), "net.2.weight", WEIGHTS),
    ("weight_unknown", tensors(lambda t: t.update(extra=torch.zeros(2))), "extra", WEIGHTS),
    ("weight_wrong_shape", tensors(lambda t: t.update({"net.0.weight": torch.zeros(4, 8)})), "net.0.weight", WEIGHTS),
    ("hidden_bigger_than_weights", meta(config__hidden=8), "net.0.bias", WEIGHTS),
    ("d_state_bigger_than_weights", meta(d_state=6, state_mean=[0.0] * 6, state_std=[1.0] * 6), "net.0.weight",
     WEIGHTS),
    # files that lead out of the folder
    ("json_link_out", link_out("router.json"), "file", "router.json"),
    ("weights_link_out", link_out(WEIGHTS), "file", WEIGHTS),
]


@pytest.mark.parametrize("case, mutate, field, file", ROUTER_CASES, ids=[c[0] for c in ROUTER_CASES])
def test_a_broken_router_names_file_and_field(router_folder, case, mutate, field, file):
    mutate(router_folder)
    err = error(lambda: Router.load(router_folder))
    assert (err.field, located(err, router_folder)) == (field, file), str(err)


def big(name: str, value: float) -> Callable[[dict[str, torch.Tensor]], None]:
    """Every value of tensor ``name`` set to ``value`` (finite in float32)."""
    return lambda t: t.update({name: torch.full_like(t[name], value)})


# (case id, mutation of a saved router that still loads, field, file): finite values, each one checked
# at load, that overflow float32 once the router scores a step
OVERFLOW_CASES: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("state_mean_overflows", meta(state_mean=[0.0, 1e308, 0.0, 0.0, 0.0]), "state_mean[1]", "router.json"),
    ("cand_mean_overflows", meta(cand_mean=[-1e300, 0.0, 0.0]), "cand_mean[0]", "router.json"),
    ("std_far_below_the_inputs", meta(state_std=[1.0, 1.0, 1.0, 2e-8, 1.0], state_mean=[0.0] * 5), "state_std[3]",
     "router.json"),
    ("weights_overflow", tensors(big("net.2.weight", 3e38)), "weights", WEIGHTS),
]


def inputs(scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    return scale * rng.normal(size=(4, 5)), rng.normal(size=(4, 3)), rng.normal(size=(4, 3))


@pytest.mark.parametrize("case, mutate, field, file", OVERFLOW_CASES, ids=[c[0] for c in OVERFLOW_CASES])
def test_a_router_whose_scores_overflow_names_file_and_field(router_folder, case, mutate, field, file):
    mutate(router_folder)
    loaded = Router.load(router_folder)  # every value is finite: the folder loads
    err = error(lambda: loaded.score(*inputs(1e32)))  # a state of 1e32 / 2e-8 leaves float32 (3.4e38)
    assert (err.field, located(err, router_folder)) == (field, file), str(err)
    assert "float32" in err.message


def test_the_same_inputs_score_finitely_on_the_router_as_saved(saved_router):
    assert np.isfinite(Router.load(saved_router).score(*inputs(1e32))).all()  # the cases above fail by their change


def test_a_router_whose_normalisation_overflows_routes_nothing(router_folder):
    meta(state_mean=[1e308, 0.0, 0.0, 0.0, 0.0])(router_folder)
    loaded = Router.load(router_folder)
    records_ = records(n=4, d=3)
    records_.hidden["none"] = np.random.default_rng(3).normal(size=(4, 3, 5)).astype(np.float32)
    for call in (lambda: route_records(loaded, records_), lambda: label_free_tau(loaded, records_)):
        err = error(call)  # never NaN scores, each step sent to Text
        assert (err.field, located(err, router_folder)) == ("state_mean[0]", "router.json"), str(err)


def test_a_saved_router_loads_as_it_was_saved(router_folder):
    r, back = router(), Router.load(router_folder)
    assert (back.tau, back.train_image_rate, back.config, back.info) == (r.tau, r.train_image_rate, r.config, r.info)
    for name, w in r.scorer.state_dict().items():
        torch.testing.assert_close(back.scorer.state_dict()[name], w, rtol=0, atol=0)


def test_float64_router_weights_are_read_back_as_the_same_float32_scorer(router_folder, saved_router):
    tensors(lambda t: t.update({k: v.double() for k, v in t.items()}))(router_folder)
    back, same = Router.load(router_folder), Router.load(saved_router)
    for name, w in same.scorer.state_dict().items():
        torch.testing.assert_close(back.scorer.state_dict()[name], w, rtol=0, atol=0)


def test_an_older_router_without_info_or_some_settings_loads(router_folder):
    m = json.loads((router_folder / "router.json").read_text())
    del m["info"], m["config"]["weight_decay"]
    (router_folder / "router.json").write_text(json.dumps(m))
    back = Router.load(router_folder)
    assert back.info == {} and back.config.weight_decay == RouterConfig().weight_decay


# ============================================================================= tiny real step records
def records(n: int = 4, layers: int = 2, d: int = 3) -> StepRecords:
    rng = np.random.default_rng(1)
    rows = [{"episode_id": f"e{i // 2}", "step": i % 2, "memory_kind": "smg", "target": "tap",
             "target_type": "tap", "n_elements": 3 + i, "groups": ["first step"], "goal": "g"} for i in range(n)]
    hits = {"aitw": {c: rng.random(n) < 0.5 for c in ("none", "text", "image", "both")}}
    sampled = {"aitw": {c: rng.integers(0, 5, n) / 4 for c in ("text", "image")}}
    hidden = {c: rng.normal(size=(n, layers + 1, d)).astype(np.float32) for c in ("none", "text", "image")}
    cands = {c: rng.normal(size=(n, d)).astype(np.float32) for c in ("text", "image")}
    return StepRecords(rows, hits, sampled, hidden, cands, {"n_samples": 4, "temperature": 1.0, "seed": 0,
                                                            "actor": "MiniActor"})


@pytest.fixture(scope="module")
def saved_records(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("saved") / "records"
    records().save(folder)
    return folder


@pytest.fixture
def records_folder(saved_records, tmp_path) -> Path:
    return Path(shutil.copytree(saved_records, tmp_path / "records"))


def manifest(**values: Any) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        m = json.loads((folder / "manifest.json").read_text())
        m.update(values)
        (folder / "manifest.json").write_text(json.dumps(m))
    return mutate


def row(index: int, change: Callable[[dict], None]) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        lines = (folder / "steps.jsonl").read_text().splitlines()
        r = json.loads(lines[index])
        change(r)
        lines[index] = json.dumps(r)
        (folder / "steps.jsonl").write_text("\n".join(lines) + "\n")
    return mutate


def setting(key: str, value: Any) -> Callable[[dict], None]:
    """Set ``key`` of a row (dotted: inside hits/sampled)."""
    def change(r: dict) -> None:
        *outer, last = key.split(".")
        target = r
        for k in outer:
            target = target[k]
        target[last] = value
    return change


def npy(name: str, array: np.ndarray) -> Callable[[Path], None]:
    return lambda folder: np.save(folder / name, array)


# (case id, mutation of saved records, field, file)
RECORD_CASES: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("manifest_a_list", write("manifest.json", b"[]"), "manifest", "manifest.json"),
    ("format_true", manifest(format=True), "format", "manifest.json"),
    ("format_a_float", manifest(format=1.0), "format", "manifest.json"),
    ("n_steps_a_string", manifest(n_steps="4"), "n_steps", "manifest.json"),
    ("n_steps_a_float", manifest(n_steps=4.0), "n_steps", "manifest.json"),
    ("n_steps_negative", manifest(n_steps=-1), "n_steps", "manifest.json"),
    ("n_layers_a_bool", manifest(n_layers=True), "n_layers", "manifest.json"),
    ("d_model_zero", manifest(d_model=0), "d_model", "manifest.json"),
    ("rules_a_string", manifest(rules="aitw"), "rules", "manifest.json"),
    ("rules_duplicated", manifest(rules=["aitw", "aitw"]), "rules[1]", "manifest.json"),
    ("rule_a_number", manifest(rules=[1]), "rules[0]", "manifest.json"),
    ("candidates_duplicated", manifest(candidates=["text", "text"]), "candidates[1]", "manifest.json"),
    ("candidate_unknown", manifest(candidates=["audio"]), "candidates[0]", "manifest.json"),
    ("temperature_zero", manifest(temperature=0), "temperature", "manifest.json"),
    ("temperature_a_string", manifest(temperature="hot"), "temperature", "manifest.json"),
    ("n_samples_a_float", manifest(n_samples=2.5), "n_samples", "manifest.json"),
    ("rule_missing_from_rows", manifest(rules=["aitw", "learngui"]), "hits.learngui", "steps.jsonl"),
    # rows
    ("row_a_list", write("steps.jsonl", b"[]\n"), "steps.jsonl", "steps.jsonl"),
    ("hit_a_string", row(1, setting("hits.aitw.text", "false")), "hits.aitw.text", "steps.jsonl"),
    ("hit_a_number", row(0, setting("hits.aitw.none", 1)), "hits.aitw.none", "steps.jsonl"),
    ("hit_missing", row(0, lambda r: r["hits"]["aitw"].pop("both")), "hits.aitw.both", "steps.jsonl"),
    ("hits_a_list", row(0, setting("hits", [])), "hits.aitw", "steps.jsonl"),
    ("sampled_above_one", row(2, setting("sampled.aitw.image", 1.5)), "sampled.aitw.image", "steps.jsonl"),
    ("sampled_a_string", row(2, setting("sampled.aitw.text", "0.5")), "sampled.aitw.text", "steps.jsonl"),
    ("sampled_huge_int", row(2, setting("sampled.aitw.text", 10 ** 400)), "sampled.aitw.text", "steps.jsonl"),
    ("sampled_a_bool", row(2, setting("sampled.aitw.text", True)), "sampled.aitw.text", "steps.jsonl"),
    ("step_a_string", row(0, setting("step", "0")), "step", "steps.jsonl"),
    ("step_negative", row(0, setting("step", -1)), "step", "steps.jsonl"),
    ("n_elements_a_float", row(3, setting("n_elements", 2.5)), "n_elements", "steps.jsonl"),
    ("episode_id_a_number", row(3, setting("episode_id", 7)), "episode_id", "steps.jsonl"),
    ("memory_kind_empty", row(3, setting("memory_kind", "")), "memory_kind", "steps.jsonl"),
    ("groups_a_string", row(3, setting("groups", "first step")), "groups", "steps.jsonl"),
    ("target_type_missing", row(1, lambda r: r.pop("target_type")), "target_type", "steps.jsonl"),
    # arrays
    ("hidden_float64", npy("hidden_none.npy", np.zeros((4, 3, 3))), "hidden_none", "hidden_none.npy"),
    ("hidden_nan", npy("hidden_text.npy", np.full((4, 3, 3), np.nan, np.float32)), "hidden_text", "hidden_text.npy"),
    ("candidate_misshapen", npy("candidate_image.npy", np.zeros((4, 2), np.float32)), "candidate_image",
     "candidate_image.npy"),
    ("hidden_link_out", link_out("hidden_image.npy"), "hidden_image", "hidden_image.npy"),
]


@pytest.mark.parametrize("case, mutate, field, file", RECORD_CASES, ids=[c[0] for c in RECORD_CASES])
def test_broken_step_records_name_file_and_field(records_folder, case, mutate, field, file):
    mutate(records_folder)
    err = error(lambda: StepRecords.load(records_folder))
    assert (err.field, located(err, records_folder)) == (field, file), str(err)


def test_saved_step_records_load_as_they_were_saved(records_folder):
    r, back = records(), StepRecords.load(records_folder)
    assert back.rows == r.rows and back.meta == r.meta
    for rule in r.hits:
        for c in r.hits[rule]:
            np.testing.assert_array_equal(back.hits[rule][c], r.hits[rule][c])
        for c in r.sampled[rule]:
            np.testing.assert_array_equal(back.sampled[rule][c], r.sampled[rule][c])
    for c in r.hidden:
        np.testing.assert_array_equal(back.hidden[c], r.hidden[c])
