"""Stage parameters: every spec matches its notebook, the committed params.yaml passes, and each
kind of check (type, range, choice, relation, name) refuses with the params.yaml key or the -p name."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import nbformat
import pytest
import yaml

from guimem.core.data import DataError
from guimem.phone.config import WorldConfig
from guimem.pipeline.params import (
    CALLER,
    COMMAND_LINE,
    Flag,
    Group,
    Items,
    Number,
    Params,
    Source,
    Stage,
    Text,
    all_stages,
    config_fields,
    find_stage,
)
from guimem.pipeline.runner import check_parameters, main, notebook_defaults, read_parameters
from params_support import DVC_STAGES, REPO, edited_params, stage_argv

STAGES = all_stages()


# ----------------------------------------------------------------------------- specs, notebooks, params.yaml
@pytest.mark.parametrize("stem", sorted(STAGES))
def test_each_spec_names_exactly_its_notebooks_parameters(stem):
    assert set(STAGES[stem].fields) == set(notebook_defaults(REPO / "notebooks" / f"{stem}.py"))


@pytest.mark.parametrize("stem", sorted(STAGES))
def test_each_notebooks_own_defaults_pass_its_spec(stem):
    check_parameters(REPO / "notebooks" / f"{stem}.py", {})


def test_every_dvc_stage_runs_a_specified_notebook_with_its_params_section():
    runs = {}
    for name, stage in DVC_STAGES.items():
        tokens = shlex.split(stage["cmd"])
        sections = [t.partition(":")[2] for t in tokens if t.startswith("params.yaml:")]
        runs[Path(tokens[3]).stem] = sections
    assert runs == {stem: [spec.section] for stem, spec in STAGES.items()}
    sections = {"base", "pretrain", *(s.section for s in STAGES.values())}  # pretrain: `make pretrain`'s, no stage's
    assert set(yaml.safe_load((REPO / "params.yaml").read_text())) == sections


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


@pytest.mark.parametrize("stem", sorted(STAGES))
def test_params_yaml_the_configs_defaults_and_the_notebook_agree(stem):
    """A notebook run by hand is the pipeline's run: each key of the stage's params.yaml section is
    the notebook's default, and each key of a group (``{}`` in the notebook) its config's default."""
    section = yaml.safe_load((REPO / "params.yaml").read_text())[STAGES[stem].section]
    defaults = {k: ast.literal_eval(v) for k, v in notebook_defaults(REPO / "notebooks" / f"{stem}.py").items()}
    for name, field in STAGES[stem].fields.items():
        if isinstance(field, Group):
            assert defaults[name] == {}, f"{stem}: the group {name} holds {defaults[name]}, not its config's defaults"
            defaults[name] = {k: _plain(getattr(field.config, k)) for k in section.get(name, {})}  # else from -p
    assert {k: defaults[k] for k in section} == section


def document_value(document: dict, key: str):
    for part in key.split("."):
        document = document[part]
    return document


@pytest.mark.parametrize("stage", sorted(DVC_STAGES))
def test_every_key_a_command_reads_is_one_of_the_stages_params(stage):
    """DVC reruns a stage when a key under its ``params:`` changes: every key ``-y`` reads is there
    (itself or a section holding it), and no command holds a ``${...}`` for DVC to paste into a shell."""
    spec = DVC_STAGES[stage]
    assert "${" not in spec["cmd"], stage
    tokens = shlex.split(spec["cmd"])
    keys = [k for flag, t in zip(tokens[:-2], tokens[2:]) if flag == "-y" for k in re.findall(r"\{([\w.]+)\}", t)]
    listed = [p if isinstance(p, str) else next(iter(p)) for p in spec.get("params", [])]
    missing = [k for k in keys if not any(k == p or k.startswith(p + ".") for p in listed)]
    assert keys or stage in {"headline"}, stage
    assert not missing, f"{stage}: its command reads {missing}, which its params: do not list"


@pytest.mark.parametrize("stage", sorted(DVC_STAGES))
def test_a_value_two_stages_share_is_the_notebooks_default_too(stage):
    """Each ``-y name {section.key}`` of a stage's command (history_len from actor.model.max_history,
    09's tasks and seeds from closed_loop) is the notebook's own default, and each ``-y group
    {section.group}`` (06's and 09's actor from closed_loop.actor) its config's: a run by hand agrees."""
    document = yaml.safe_load((REPO / "params.yaml").read_text())
    tokens = shlex.split(DVC_STAGES[stage]["cmd"])
    notebook = REPO / tokens[3]
    defaults = {k: ast.literal_eval(v) for k, v in notebook_defaults(notebook).items()}
    fields = STAGES[notebook.stem].fields
    shared = 0
    for flag, name, value in zip(tokens[:-2], tokens[1:-1], tokens[2:]):
        if flag != "-y" or not (found := re.fullmatch(r"\{([\w.]+)\}", value)):
            continue
        if isinstance(fields.get(name), Group):
            assert defaults.get(name) == {}, f"{tokens[3]}: the group {name} has a default of its own"
            default = {k: _plain(getattr(fields[name].config, k)) for k in document_value(document, found[1])}
        elif name in defaults:
            default = defaults[name]
        else:
            continue
        value = document
        for part in found[1].split("."):
            value = value[part]
        assert default == value, f"{tokens[3]}: {name} = {default!r}, params.yaml {found[1]}: {value!r}"
        shared += 1
    assert shared or stage in {"world", "recorded", "segmentation", "graph_build", "real_graph"}, stage


@pytest.mark.parametrize("stage", sorted(DVC_STAGES))
def test_the_committed_params_yaml_passes_every_stage_as_dvc_runs_it(stage, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    out = tmp_path / "report.ipynb"
    assert main([*stage_argv(stage, Path("params.yaml"), out), "--check"]) == 0, capsys.readouterr().err
    assert not out.exists()


# ----------------------------------------------------------------------------- one value
@pytest.mark.parametrize("field, value, why", [
    (Number(integer=True), 3, None),
    (Number(integer=True), 3.0, "expected an integer, got float 3.0"),
    (Number(integer=True), "1e3", "expected an integer, got str '1e3'"),
    (Number(integer=True), True, "expected an integer, got bool True"),
    (Number(integer=True, lo=0), -1, "must be in [0, inf], got -1"),
    (Number(), 1, None),
    (Number(), float("nan"), "expected a finite number, got nan"),
    (Number(), float("inf"), "expected a finite number, got inf"),
    (Number(lo=0.0, hi=1.0), 1.5, "must be in [0.0, 1.0], got 1.5"),
    (Number(above=0.0), 0.0, "must be > 0.0, got 0.0"),
    (Number(above=0.0), 1e-9, None),
    (Flag(), False, None),
    (Flag(), "no", "expected true or false, got str 'no'"),
    (Flag(), 1, "expected true or false, got int 1"),
    (Text(), "", "expected a non-empty string, got str ''"),
    (Text(), 3, "expected a non-empty string, got int 3"),
    (Text(empty=True), "", None),  # "": none (an optional path)
    (Text(empty=True), None, "expected a non-empty string, got NoneType None"),
    (Text(("a", "b")), "c", "expected one of ['a', 'b'], got 'c'"),
    (Text(("a",), pattern=r"x-\d+"), "x-12", None),
    (Text(("a",), pattern=r"x-\d+", shown=("a", "x-<n>")), "x-", "expected one of ['a', 'x-<n>'], got 'x-'"),
    (Items(Number()), (0.5, 1), None),
    (Items(Number()), 0.5, "expected a list, got float 0.5"),
    (Items(Number(), length=4), [1, 1, 1], "expected 4 items, got 3: [1, 1, 1]"),
    (Items(Number(), nonempty=True), [], "expected at least one item, got an empty list"),
    (Items(Number(lo=0.0)), [1.0, -1.0], "item 1: must be in [0.0, inf], got -1.0"),
    (Items(Text(), unique=True), ["a", "a"], "expected distinct items, got ['a', 'a']"),
])
def test_each_field_refuses_with_a_reason(field, value, why):
    assert field.problem(value) == why


def test_embedder_names_follow_the_factories():
    image, text = (STAGES["02_graph_build"].fields[k] for k in ("image_embedder", "text_embedder"))
    good = ["efficientnet_lite0", "efficientnet_lite0-squash", "efficientnet_lite0-pad", "pixels", "pixels-8x16",
            "hf:models/dino"]
    assert [image.problem(v) for v in good] == [None] * len(good)
    assert [image.problem(v) is None for v in ("resnet", "pixels-0x16", "pixels-8", "hf:", "efficientnet")] == [False] * 5
    assert image.problem("resnet").startswith("expected one of ['efficientnet_lite0', ")
    assert [text.problem(v) is None for v in ("minilm", "hashing", "hashing-64", "hashing-0", "bert")] == \
        [True, True, True, False, False]


def test_world_fields_are_typed_by_the_configs_defaults():
    fields = config_fields(WorldConfig)
    assert set(fields) == {f for f in WorldConfig.__dataclass_fields__}
    assert fields["themes"].problem("no") is not None and fields["n_train"].problem(3.0) is not None
    assert fields["dialog_prob"].problem(1) is None and fields["unseen_templates"].problem(["a"]) is None


# ----------------------------------------------------------------------------- naming a value where it was set
def test_a_source_names_the_section_key_and_file_or_how_the_value_came():
    assert Source("params.yaml", "world").error("themes", "bad").args == ("params.yaml: field 'world.themes': bad",)
    err = COMMAND_LINE.error("seed", "bad")
    assert (err.field, err.path, err.message) == ("seed", None, "bad (passed with -p)")
    assert CALLER.error("seed", "bad").message == "bad (passed to run_notebook)"


def test_read_parameters_records_where_each_value_came_from(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("world:\n  n_train: 10\n  n_test: 4\n")
    params, sources = read_parameters([f"{path}:world"], [("n_test", "5"), ("seed", "0")])
    assert params == {"n_train": 10, "n_test": 5, "seed": 0}
    assert sources == {"n_train": Source(str(path), "world"), "n_test": COMMAND_LINE, "seed": COMMAND_LINE}


def test_a_group_field_given_with_p_joins_the_group_and_is_named_where_it_was_set(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("closed_loop:\n  actor:\n    actor_model: mini\n    batch_size: 64\n")
    params, sources = read_parameters([f"{path}:closed_loop"], [("actor.batch_size", "8"), ("executor.kind", "ray")])
    assert params == {"actor": {"actor_model": "mini", "batch_size": 8}, "executor": {"kind": "ray"}}
    assert sources["actor"] == Source(str(path), "closed_loop") and sources["actor.batch_size"] == COMMAND_LINE
    assert sources["executor"] == sources["executor.kind"] == COMMAND_LINE
    notebook = REPO / "notebooks" / "05_closed_loop.py"
    values, where = read_parameters([f"{path}:closed_loop"], [("actor.batch_size", "0")])
    with pytest.raises(DataError, match=r"field 'actor.batch_size': must be in .* \(passed with -p\)"):
        check_parameters(notebook, values, where)
    values, where = read_parameters([f"{path}:closed_loop"], [("actor.coords", "pixels")])
    with pytest.raises(DataError, match=r"field 'actor.coords': expected one of"):
        check_parameters(notebook, values, where)
    with pytest.raises(ValueError, match="given whole and its field"):
        read_parameters([], [("actor", "{batch_size: 8}"), ("actor.batch_size", "8")])
    path.write_text("closed_loop:\n  n_seeds: 3\n")
    with pytest.raises(ValueError, match="not a group but int 3"):
        read_parameters([f"{path}:closed_loop"], [("n_seeds.x", "1")])


def test_a_bad_value_is_named_where_it_was_set(tmp_path):
    notebook = REPO / "notebooks" / "00_world.py"
    path = edited_params(tmp_path, "world.phone", "themes", '"no"')
    with pytest.raises(DataError) as err:
        check_parameters(notebook, *read_parameters([f"{path}:world"], []))
    assert (err.value.field, err.value.path) == ("world.phone.themes", str(path))
    with pytest.raises(DataError) as err:
        check_parameters(notebook, *read_parameters([], [("phone", '{themes: "no"}')]))
    assert (err.value.field, err.value.path, err.value.message) == (
        "phone.themes", None, "expected true or false, got str 'no' (passed with -p)")
    with pytest.raises(DataError) as err:
        check_parameters(notebook, {"phone": {"themes": "no"}})
    assert err.value.message.endswith("(passed to run_notebook)")


@pytest.mark.parametrize("stem, section", [("05_closed_loop", "closed_loop"), ("06_layer_analysis", "layer_analysis"),
                                           ("09_routing_stats", "routing_stats")])
def test_recorded_episodes_refuse_the_miniature_actor_before_anything_runs(stem, section, tmp_path):
    """The miniature knows only the world's phones: on recorded steps (base.episodes: recorded) 05, 06
    and 09 refuse it, naming the field, and accept a Hugging Face checkpoint folder."""
    from actor_fixtures import tiny_actor
    from guimem.actors.hf.tiny import save_tiny_random_llava

    path = edited_params(tmp_path, "base", "episodes", "recorded")
    notebook = REPO / "notebooks" / f"{stem}.py"
    tiny_actor().save(tmp_path / "miniature")
    for miniature in ("pretrained/actor", str(tmp_path / "miniature")):  # the committed folder, or any saved one
        with pytest.raises(DataError) as err:
            check_parameters(notebook, *read_parameters([f"{path}:{section}"], [("actor.actor_model", miniature)]))
        assert err.value.field == "actor.actor_model" and "cannot read recorded steps" in err.value.message
    vlm = save_tiny_random_llava(str(tmp_path / "vlm"))
    check_parameters(notebook, *read_parameters([f"{path}:{section}"], [("actor.actor_model", vlm)]))
    world = edited_params(tmp_path, "base", "episodes", "world")
    check_parameters(notebook, *read_parameters([f"{world}:{section}"], [("actor.actor_model", "pretrained/actor")]))


def test_the_miniature_is_not_met_on_recorded_steps(tmp_path):
    """04 meets the miniature on the world's held-out steps; on recorded runs it says so before it
    starts (a recorded run names 05-09 as targets, with a VLM folder)."""
    path = edited_params(tmp_path, "base", "episodes", "recorded")
    with pytest.raises(DataError) as err:
        check_parameters(REPO / "notebooks" / "04_actor.py", *read_parameters([f"{path}:actor"], []))
    assert err.value.field == "world_dir" and "base.episodes: recorded" in err.value.message
    world = edited_params(tmp_path, "base", "episodes", "world")
    check_parameters(REPO / "notebooks" / "04_actor.py", *read_parameters([f"{world}:actor"], []))


def test_a_typo_is_named_with_the_closest_parameter(tmp_path):
    path = edited_params(tmp_path, "world", "n_perturbd", "10")
    with pytest.raises(DataError) as err:
        check_parameters(REPO / "notebooks" / "00_world.py", *read_parameters([f"{path}:world"], []))
    assert (err.value.field, err.value.path) == ("world.n_perturbd", str(path))
    assert "not a parameter of 00_world; did you mean 'n_perturbed'?" in err.value.message
    path = edited_params(tmp_path, "world.phone", "n_trian", "10")  # a group's field
    with pytest.raises(DataError) as err:
        check_parameters(REPO / "notebooks" / "00_world.py", *read_parameters([f"{path}:world"], []))
    assert (err.value.field, err.value.path) == ("world.phone.n_trian", str(path))
    assert "not a WorldConfig field of 00_world's phone; did you mean 'n_train'?" in err.value.message


def _stage_notebook(folder: Path, stem: str, source: str) -> Path:
    """A notebook called like a stage, with ``source`` as its parameters cell."""
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = ["parameters"]
    path = folder / f"{stem}.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    return path


def test_a_notebook_default_that_is_bad_missing_or_not_a_literal_names_the_notebook(tmp_path):
    spec_source = (REPO / "notebooks" / "01_segmentation.py")
    cell = "\n".join(f"{k} = {v}" for k, v in notebook_defaults(spec_source).items())
    bad = _stage_notebook(tmp_path, "01_segmentation", cell.replace('segmenter = "rule"', 'segmenter = "rules"'))
    with pytest.raises(DataError) as err:
        check_parameters(bad, {})
    assert (err.value.field, err.value.path) == ("segmenter", str(bad))
    assert err.value.message.endswith("got 'rules' (the notebook's default)")
    missing = _stage_notebook(tmp_path, "01_segmentation", cell.replace("max_episodes = 0", ""))
    with pytest.raises(DataError, match="field 'max_episodes': missing: 01_segmentation needs it"):
        check_parameters(missing, {})
    computed = _stage_notebook(tmp_path, "01_segmentation", cell.replace("max_episodes = 0", "max_episodes = int('0')"))
    with pytest.raises(DataError, match="field 'max_episodes': the default \"int\\('0'\\)\" is not a Python literal"):
        check_parameters(computed, {})


# ----------------------------------------------------------------------------- the code's configs, renamed
def test_a_config_error_is_renamed_to_the_parameter_and_list_item():
    p = Params({"tau_sweep": [0.9, 2.0]}, {"tau_sweep": Source("params.yaml", "graph_build")})

    def config(tau: float) -> float:
        if tau > 1:
            raise DataError("tau", f"must be in [-1.0, 1.0], got {tau}")
        return tau

    assert p.build({"tau": "tau_sweep"}, config, 0.9, item=0) == 0.9
    with pytest.raises(DataError) as err:
        p.build({"tau": "tau_sweep"}, config, 2.0, item=1)
    assert (err.value.field, err.value.path, err.value.message) == (
        "graph_build.tau_sweep", "params.yaml", "item 1: must be in [-1.0, 1.0], got 2.0")

    def other() -> None:
        raise DataError("graph.tau", "bad")

    with pytest.raises(DataError, match="field 'graph_build.tau_sweep': bad"):  # matched by its last part
        p.build({"tau": "tau_sweep"}, other)

    def unmapped() -> None:
        raise DataError("screen_height", "bad")

    with pytest.raises(DataError, match="field 'graph_build.tau_sweep': screen_height: bad"):
        p.build({"tau": "tau_sweep"}, unmapped)


def test_a_stage_is_found_by_its_notebook_and_loads_its_schema_alone():
    assert find_stage("02_graph_build") is STAGES["02_graph_build"]
    assert [find_stage(s) for s in ("graph_build", "99_graph_build", "02_actor", "02_graph_build.py")] == [None] * 4


def test_a_stage_runs_its_checks_after_every_field_passes():
    seen = []
    stage = Stage("99_x", "x", {"n": Number(integer=True, lo=1)}, (lambda p: seen.append(p["n"]),))
    stage.validate({"n": 2})
    with pytest.raises(DataError, match="field 'n': must be in"):
        stage.validate({"n": 0})
    assert seen == [2]


@pytest.mark.parametrize("stem", ["05_closed_loop", "06_layer_analysis", "09_routing_stats"])
def test_gpus_are_reserved_only_on_ray_and_said_before_anything_loads(stem):
    notebook = REPO / "notebooks" / f"{stem}.py"
    check_parameters(notebook, {"executor": {"kind": "ray", "workers": 2, "gpus_per_worker": 0.5}})
    with pytest.raises(DataError, match="field 'executor.gpus_per_worker': only Ray workers reserve GPUs"):
        check_parameters(notebook, {"executor": {"gpus_per_worker": 1.0}})  # with the default kind: local
    with pytest.raises(DataError, match="field 'executor.address': local takes no address"):
        check_parameters(notebook, {"executor": {"address": "auto"}})
