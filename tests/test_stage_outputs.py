"""A stage reruns only when something it reads changed.

DVC reruns a stage when a parameter it declares changes, or when a file it depends on changed.
So a parameter that only shapes a stage's own report (its ``reporting`` knobs in
:mod:`guimem.pipeline.params`: ``retrieval_eval.ks``, the sweeps, worker counts) must be declared
by that stage alone, and must leave every output a later stage reads byte-identical. The first
half is checked here, from ``dvc.yaml`` and with DVC itself; the second by running each stage's
notebook again with its reporting knobs changed (the ``*_reporting_knobs_change_nothing_later_stages_read``
tests beside each notebook's smoke run; 02's and 03's ``executor`` only acts on embedding, whose vectors
on a Ray are compared with the in-process ones in test_executor).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from guimem.pipeline.params import all_stages

ROOT = Path(__file__).resolve().parent.parent
DVC = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
SPEC_OF = {spec.section: spec for spec in all_stages().values()}


def declaring(key: str) -> set[str]:
    """The stages whose ``params:`` in dvc.yaml cover ``key`` (the key itself or a section above it)."""
    return {stage for stage, spec in DVC.items()
            if any(key == p or key.startswith(f"{p}.") for p in spec.get("params", []))}


def params_keys(node: dict, prefix: str = "") -> list[str]:
    out = []
    for k, v in node.items():
        out += params_keys(v, f"{prefix}{k}.") if isinstance(v, dict) else [f"{prefix}{k}"]
    return out


def test_every_stage_is_a_notebook_spec_and_its_reporting_knobs_are_its_own_parameters():
    from guimem.pipeline.report import HEADLINE_STAGE  # copies the others' numbers: tests/test_report.py

    assert set(DVC) - {HEADLINE_STAGE} == set(SPEC_OF)
    for section, spec in SPEC_OF.items():
        assert set(spec.reporting) <= set(PARAMS.get(section, {})), f"{section}: a reporting knob not in params.yaml"


def test_every_parameter_is_a_parameter_of_its_stages_notebook_and_declared_by_that_stage():
    """A key of a stage's params.yaml section is a parameter its notebook reads (a typo or a stale
    key would be passed to nothing), and every key, ``base`` included, is declared by some stage."""
    from guimem.pipeline.pretrain import SCHEMA

    for key in params_keys(PARAMS):
        section, _, name = key.partition(".")
        if section == SCHEMA.section:  # read by `make pretrain`, never by dvc repro (a stage may read a key of it)
            fields = SCHEMA.fields
            for part in name.split("."):
                assert part in fields, f"params.yaml: {key} is not a pretraining parameter"
                fields = getattr(fields[part], "fields", {})
            continue
        assert declaring(key), f"params.yaml: {key} is declared by no stage in dvc.yaml"
        if section in SPEC_OF:
            fields = SPEC_OF[section].fields
            for part in name.split("."):  # a group's key (``graph_build.graph.tau``) is a field of the group
                assert part in fields, f"params.yaml: {key} is not a parameter of {section}'s notebook"
                fields = getattr(fields[part], "fields", {})
            assert section in declaring(key), f"{key}: its own stage does not declare it"


@pytest.mark.parametrize("key", [f"{section}.{name}" for section, spec in SPEC_OF.items() for name in spec.reporting])
def test_a_reporting_knob_reruns_only_its_own_stage(key):
    assert declaring(key) == {key.partition(".")[0]}, f"{key} is declared by {sorted(declaring(key))}"


def _stages_with_changed_params(status: dict) -> set[str]:
    changed = set()
    for stage, entries in status.items():
        for entry in entries:
            if isinstance(entry, dict) and "params.yaml" in entry.get("changed deps", {}):
                changed.add(stage)
    return changed


@pytest.mark.slow
def test_dvc_itself_reruns_only_the_stages_that_declare_a_changed_parameter(tmp_path):
    """``dvc status`` in a copy of the project, after editing one parameter at a time."""
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(tmp_path / "p")], check=True)
    project = tmp_path / "p"
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy2(ROOT / name, project / name)
    cases = {"retrieval_eval.ks": [2], "graph_build.tau_sweep": [0.95], "actor.max_eval_steps": 7,
             "graph_build.image_embedder": "pixels", "base.seed": 3}
    for key, value in cases.items():
        edited = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
        section, name = key.split(".")
        edited[section][name] = value
        (project / "params.yaml").write_text(yaml.safe_dump(edited, sort_keys=False), encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "dvc", "status", "--json"], cwd=project, capture_output=True,
                              text=True, check=True)
        assert _stages_with_changed_params(json.loads(done.stdout)) == declaring(key), key
