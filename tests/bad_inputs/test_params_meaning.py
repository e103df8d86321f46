"""Parameters that pass their type but are wrong, and params files that cannot be read as written.

Each case edits a copy of the committed params.yaml (as a user writes YAML) and reads it as the
dvc.yaml stage command reads it. The outcome is exact: a DataError naming the params.yaml key
(``stage.key``) and the file, with a bounded message, raised before any kernel starts.
"""

from __future__ import annotations

import resource
import sys
import time

import pytest
import yaml

from guimem.core.data import DataError
from guimem.pipeline.params import MAX_MESSAGE, Items, Number, Text, shown
from guimem.pipeline.runner import (
    check_parameters,
    load_params_text,
    main,
    parse_value,
    read_parameters,
    yaml12_reading,
)
from params_support import REPO, edited_params, stage_inputs

pytestmark = pytest.mark.bad_input


def refusal(tmp_path, section: str, key: str, value: str, stage: str) -> DataError:
    """The DataError the stage's parameter check raises for ``section.key: value`` in params.yaml."""
    params = edited_params(tmp_path, section, key, value)
    with pytest.raises(DataError) as err:
        check_parameters(*stage_inputs(stage, params))
    assert err.value.path == str(params), err.value
    assert len(err.value.message) <= MAX_MESSAGE + 40
    return err.value


# ----------------------------------------------------------------------------- meaning, not only type
# (case id, dvc stage, (section, key, value as written in YAML), field named, words the message holds)
MEANING = [
    # sizes against what they size
    ("probe_pca_dim_above_hidden_size", "layer_analysis", ("layer_analysis.probe", "pca_dim", "1000000"),
     "layer_analysis.probe.pca_dim", "hidden size (64"),
    ("router_pca_dim_above_hidden_size", "probe_router", ("probe_router.probe", "pca_dim", "65"),
     "probe_router.probe.pca_dim", "hidden size (64"),
    ("graph_pca_dim_above_embedding", "graph_build", ("graph_build", "pca_dim", "1281"),
     "graph_build.pca_dim", "1280 dimensions"),
    ("real_graph_pca_dim_above_embedding", "real_graph", ("real_graph", "pca_dim", "1000000"),
     "real_graph.pca_dim", "1280 dimensions"),
    ("state_layer_beyond_the_actor", "probe_router", ("probe_router", "state_layer", "99"),
     "probe_router.state_layer", "layers 0..6"),
    ("state_layer_before_the_first", "probe_router", ("probe_router", "state_layer", "-8"),
     "probe_router.state_layer", "layers 0..6"),
    ("cv_folds_a_million", "layer_analysis", ("layer_analysis.curve", "folds", "1000000"),
     "layer_analysis.curve.folds", "must be in [2, 1000]"),
    ("cv_folds_above_the_pool", "layer_analysis", ("layer_analysis.curve", "folds", "241"),
     "layer_analysis.curve.folds", "240 memory episodes"),
    ("pool_folds_above_the_pool", "layer_analysis", ("layer_analysis", "k_folds", "300"),
     "layer_analysis.k_folds", "240 memory episodes"),
    # numbers that underflow or overflow
    ("temperature_underflows", "layer_analysis", ("layer_analysis.preference", "temperature", "1.0e-300"),
     "layer_analysis.preference.temperature", "must be in [0.001, 1000.0]"),
    ("split_weights_overflow", "recorded", ("recorded", "split", "[1.0e+308, 1.0e+308, 1.0e+308]"),
     "recorded.split", "item 0: must be in [0.0, 1000000.0]"),
    ("probe_c_vanishing", "layer_analysis", ("layer_analysis.probe", "c", "1.0e-300"), "layer_analysis.probe.c",
     "must be in"),
    ("gpus_per_worker_a_cluster", "closed_loop", ("closed_loop.executor", "gpus_per_worker", "1000.0"),
     "closed_loop.executor.gpus_per_worker", "must be in [0.0, 16.0]"),
    ("workers_a_million", "closed_loop", ("closed_loop.executor", "workers", "1000000"),
     "closed_loop.executor.workers", "[1, 1024]"),
    ("memory_image_huge", "graph_build", ("graph_build", "memory_image_width", "100000"),
     "graph_build.memory_image_width", "[1, 4096]"),
    ("world_image_width_huge", "world", ("world.phone", "image_width", "100000"), "world.phone.image_width", "at most 2048"),
    ("n_train_beyond_32_bits", "world", ("world.phone", "n_train", "100000000000000000000"), "world.phone.n_train", "must be in"),
    # executors: a blank or malformed address
    ("executor_ray_blank", "graph_build", ("graph_build", "executor", '"ray:   "'), "graph_build.executor",
     "expected no blank"),
    ("executor_ray_no_port", "closed_loop", ("closed_loop.executor", "address", '"localhost"'),
     "closed_loop.executor.address", "<host>:<port>"),
    ("executor_ray_bad_port", "layer_analysis", ("layer_analysis.executor", "address", '"host:99999"'),
     "layer_analysis.executor.address", "expected one of"),
    ("executor_ray_client_blank", "routing_stats", ("routing_stats.executor", "address", '"ray://"'),
     "routing_stats.executor.address", "expected one of"),
    ("executor_unknown_kind", "closed_loop", ("closed_loop.executor", "kind", "spark"),
     "closed_loop.executor.kind", "expected one of ['local', 'ray']"),
    ("executor_local_with_an_address", "routing_stats", ("routing_stats.executor", "address", "auto"),
     "routing_stats.executor.address", "local takes no address"),
    ("executor_local_padded", "recorded", ("recorded", "executor", '" local"'), "recorded.executor",
     "surrounding spaces"),
    ("path_with_a_newline", "segmentation", ("segmentation", "llm_cache_dir", '"a\\nb"'),
     "segmentation.llm_cache_dir", "control characters"),
    ("actor_model_blank", "closed_loop", ("closed_loop.actor", "actor_model", '"   "'),
     "closed_loop.actor.actor_model", "expected no blank"),
    ("ks_repeated", "retrieval_eval", ("retrieval_eval", "ks", "[1, 1, 3]"), "retrieval_eval.ks", "distinct"),
    # memories the upstream stage did not build
    ("router_of_an_unrecorded_memory", "probe_router", ("probe_router", "memories", "[smg, flat]"),
     "probe_router.memories", "item 1: 'flat' has no probe-pool records"),
    ("headroom_of_an_unrouted_memory", "oracle_headroom", ("oracle_headroom", "memories", "[action_graph]"),
     "oracle_headroom.memories", "'action_graph' has no router"),
    ("routed_memory_without_a_router", "routing_stats", ("routing_stats", "memory", "flat"),
     "routing_stats.memory", "'flat' has no router"),
    ("offline_memory_without_a_router", "routing_stats", ("routing_stats", "offline_memories", "[smg, flat]"),
     "routing_stats.offline_memories", "item 1: 'flat' has no router"),
]


@pytest.mark.parametrize("case, stage, edit, field, says", MEANING, ids=[c[0] for c in MEANING])
def test_a_value_of_the_right_type_but_no_meaning_is_refused(case, stage, edit, field, says, tmp_path):
    err = refusal(tmp_path, *edit, stage)
    assert err.field == field and says in err.message, err


# (case id, dvc stage run, (section, key, value), field named) -- a stage's relation to another section
UPSTREAM = [
    ("probe_memories_of_a_shrunk_analysis", "probe_router", ("layer_analysis", "memories", "[smg]"),
     "probe_router.memories"),
    ("routing_memory_not_played_by_05", "routing_stats", ("closed_loop", "memories", "[none, flat]"),
     "routing_stats.memory"),
    ("no_memory_not_played_by_05", "routing_stats", ("closed_loop", "memories", "[smg, flat]"),
     "routing_stats.memory"),
    ("state_layer_of_a_smaller_actor", "probe_router", ("closed_loop.actor", "actor_model", "SMALL"), None),
    ("base_episodes_unknown", "actor", ("base", "episodes", "elsewhere"), "base.episodes"),
]


@pytest.mark.parametrize("case, stage, edit, field", UPSTREAM, ids=[c[0] for c in UPSTREAM])
def test_a_stage_is_checked_against_what_its_upstream_stage_builds(case, stage, edit, field, tmp_path):
    if field is None:  # 07's default state_layer -1 stays valid; 3 is beyond a two-block actor (layers 0..2)
        from actor_fixtures import tiny_actor

        small = tmp_path / "small"
        tiny_actor().save(small)
        assert tiny_actor().config.num_hidden_layers == 2
        edit = (*edit[:2], str(small))
    params = edited_params(tmp_path, *edit)
    if field is None:
        text = params.read_text().replace("  state_layer: -1", "  state_layer: 3")
        params.write_text(text)
        field = "probe_router.state_layer"
    with pytest.raises(DataError) as err:
        check_parameters(*stage_inputs(stage, params))
    assert (err.value.field, err.value.path) == (field, str(params)), err.value


def test_the_committed_params_yaml_passes_every_new_check():
    for stage in ("world", "recorded", "actor", "layer_analysis", "probe_router", "oracle_headroom",
                  "routing_stats", "graph_build", "real_graph"):
        check_parameters(*stage_inputs(stage, REPO / "params.yaml"))


# ----------------------------------------------------------------------------- the file as written
# (case id, the line written into the world section (its phone group for a world.phone field), field named,
# words the message holds)
AMBIGUOUS = [
    ("octal_0400", "  n_train: 0400", "world.phone.n_train", "256"),
    ("octal_0o400", "  n_train: 0o400", "world.phone.n_train", "256"),
    ("leading_zero_08", "  n_train: 08", "world.phone.n_train", "8"),
    ("sexagesimal_1_30", "  n_train: 1:30", "world.phone.n_train", "90"),
    ("sexagesimal_negative", "  max_steps: -1:30", "world.phone.max_steps", "-90"),
    ("yes_is_a_bool_in_1_1", "  themes: yes", "world.phone.themes", "True"),
    ("off_is_a_bool_in_1_1", "  shuffle: off", "world.phone.shuffle", "False"),
    ("exponent_without_a_dot", "  dialog_prob: 1e-1", "world.phone.dialog_prob", "0.1"),
    ("duplicate_key_keeps_the_last", "  n_train: 400\n  n_train: 10", "world.phone.n_train", "given twice"),
    ("duplicate_key_quoted", "  n_train: 400\n  \"n_train\": 10", "world.phone.n_train", "given twice"),
    ("an_anchor", "  n_perturbed: &v 300", "world.n_perturbed", "anchor"),
    ("an_explicit_tag", "  n_train: !!float 400", "world.phone.n_train", "explicit tag"),
    ("a_set", "  n_test: !!set {a, b}", "world.phone.n_test", "explicit tag"),
    ("a_merge_key", "  <<: {n_train: 3}", "world", "merge key"),
    ("a_list_as_key", "  ? [a, b]\n  : 1", "world", "plain name"),
    ("yes_as_a_key", "  yes: 1", "world.(a key)", "True"),
]


@pytest.mark.parametrize("case, line, field, says", AMBIGUOUS, ids=[c[0] for c in AMBIGUOUS])
def test_a_scalar_or_key_yaml_reads_two_ways_is_refused_naming_it(case, line, field, says, tmp_path, capsys):
    lines = (REPO / "params.yaml").read_text().splitlines()
    if field.startswith("world.phone."):  # a WorldConfig field: written into the group, one level deeper
        header, line = "  phone:", "  " + line.replace("\n", "\n  ")
    else:
        header = "world:"
    at = lines.index(next(x for x in lines if x.startswith(header)))
    indent, key = line[:len(line) - len(line.lstrip())], line.split(":")[0].strip()
    lines = [x for x in lines if not (key.isidentifier() and x.startswith(f"{indent}{key}:"))]
    lines.insert(at + 1, line)
    params = tmp_path / "params.yaml"
    params.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        read_parameters([f"{params}:world"], [])
    assert (err.value.field, err.value.path) == (field, str(params)), err.value
    assert says in err.value.message and "(line " in err.value.message
    out = tmp_path / "reports" / "00_world.ipynb"
    argv = [str(REPO / "notebooks" / "00_world.py"), str(out), "-f", f"{params}:world", "--check"]
    assert main(argv) == 2  # the command line: status 2 and the error, no usage dump
    assert f"error: {params}: field '{field}'" in capsys.readouterr().err
    assert not out.parent.exists()


def test_an_alias_is_refused_before_anything_is_built(tmp_path):
    """Billion laughs: nine levels of nine aliases (9**9 items if expanded) in 1.5 KB."""
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"] + [
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    params = tmp_path / "params.yaml"
    text = (REPO / "params.yaml").read_text().replace("  n_perturbed: 300", "  n_perturbed: *a9")
    params.write_text("\n".join(levels) + "\n" + text)
    assert len("\n".join(levels)) < 1600
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(DataError) as err:
        read_parameters([f"{params}:world"], [])
    assert time.perf_counter() - start < 5  # (the old expansion took 30-100 s; 5: a loaded machine)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KiB: nothing expanded
    assert (err.value.field, err.value.path) == ("a0", str(params))  # the first anchor, before any alias
    assert "anchor (&a0)" in err.value.message


def test_an_alias_in_a_p_list_is_refused():
    with pytest.raises(ValueError, match="alias"):
        parse_value("[*a, 1]")
    with pytest.raises(ValueError, match="given twice"):
        parse_value("{a: 1, a: 2}")


def test_a_long_value_is_echoed_bounded_and_named(tmp_path):
    err = refusal(tmp_path, "world.phone", "start", '"' + "x" * 6000 + '"', "world")
    assert err.field == "world.phone.start" and len(str(err)) < len(str(tmp_path)) + 400
    err = refusal(tmp_path, "graph_build", "tau_sweep", "[" + ", ".join(["0.5"] * 3000) + ", 2.0]", "graph_build")
    assert err.field == "graph_build.tau_sweep" and len(err.message) <= MAX_MESSAGE + 40
    with pytest.raises(DataError) as info:  # a 6,000-character name (YAML refuses keys over 1024 itself)
        check_parameters(REPO / "notebooks" / "00_world.py", {"n" * 6000: 1})
    assert len(info.value.field) <= 120 and len(str(info.value)) < 600


def test_formatting_a_huge_value_is_bounded_in_time():
    nested: list = [0]
    for _ in range(25):
        nested = [nested, nested]  # 2**25 leaves if walked whole
    start = time.perf_counter()
    for field in (Number(), Text(), Items(Number())):
        assert len(field.problem(nested) or "") <= 200
    assert len(shown("y" * 10**6)) <= 80 and time.perf_counter() - start < 5  # (walked whole: minutes)


# ----------------------------------------------------------------------------- YAML 1.2 as DVC reads it
SCALARS = ["0400", "0o400", "08", "1:30", "190:20:30", "-1:30", "0:30", "yes", "no", "on", "off", "y", "n", "Yes",
           "1e3", "1.0e3", "1.0e+3", "1E3", "1e-300", "1_000", "0x1F", "0b101", ".5", "5.", "+1", "-0", "~", "null",
           "True", "TRUE", "tRue", ".inf", "-.inf", ".NaN", "0.", "._5", "1_0.5", "400", "0.9", "smg", "ray:auto",
           "12:30:00", "0", "-5", "+.inf", "1,000"]


@pytest.mark.parametrize("text", SCALARS)
def test_the_yaml_1_2_reading_is_what_dvcs_ruamel_yaml_reads(text):
    ruamel = pytest.importorskip("ruamel.yaml")
    theirs = ruamel.YAML(typ="safe").load(f"a: {text}\n")["a"]
    ours = yaml12_reading(text)
    assert type(ours) is type(theirs) and (ours == theirs or ours != ours)
    pyyaml = yaml.safe_load(f"a: {text}\n")["a"]
    agree = type(pyyaml) is type(theirs) and (pyyaml == theirs or pyyaml != pyyaml)
    if agree:
        assert load_params_text(f"a: {text}\n") == {"a": pyyaml}
    else:
        with pytest.raises(DataError, match="YAML 1.1"):
            load_params_text(f"a: {text}\n")


@pytest.mark.slow
def test_python_m_runner_check_refuses_an_ambiguous_value(tmp_path):
    import subprocess

    params = edited_params(tmp_path, "probe_router", "state_layer", "99")
    run = subprocess.run([sys.executable, "-m", "guimem.pipeline.runner", str(REPO / "notebooks" / "07_probe_router.py"),
                          str(tmp_path / "x.ipynb"), "-f", f"{params}:probe_router", "--check"],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert run.returncode == 2
    assert run.stderr.startswith(f"error: {params}: field 'probe_router.state_layer': the actor has layers 0..6")
