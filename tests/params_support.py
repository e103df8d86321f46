"""How the params tests read a stage as DVC runs it: the runner's arguments for a dvc.yaml stage with
a given params.yaml, the notebook and parameter values they give, and a copy of the committed
params.yaml with one value changed (as written in YAML)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from guimem.pipeline.params import Source
from guimem.pipeline.report import HEADLINE_STAGE
from guimem.pipeline.runner import read_parameters

REPO = Path(__file__).resolve().parents[1]
RUNNER = ("python", "-m", "guimem.pipeline.runner")
# dvc.yaml's notebook stages: all but the headline stage, which copies numbers (tests/test_report.py).
DVC_STAGES: dict[str, dict[str, Any]] = {
    name: stage for name, stage in yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"].items()
    if name != HEADLINE_STAGE}


# ----------------------------------------------------------------------------- a dvc.yaml stage's command

def stage_argv(stage: str, params_path: Path, output: Path) -> list[str]:
    """The runner's arguments for ``stage`` of dvc.yaml, as DVC runs it with ``params_path`` as params.yaml.

    ``-f params.yaml:...`` reads ``params_path`` (and so does ``-y``, which reads the file ``-f``
    names), the notebook path is made absolute and the executed notebook goes to ``output``.
    """
    assert "${" not in DVC_STAGES[stage]["cmd"], f"{stage}: DVC would paste a value into the shell command"
    tokens = shlex.split(DVC_STAGES[stage]["cmd"])
    assert tuple(tokens[:3]) == RUNNER, DVC_STAGES[stage]["cmd"]
    notebook, _, *options = tokens[3:]
    options = [f"{params_path}:{o.partition(':')[2]}" if o.startswith("params.yaml:") else o for o in options]
    return [str(REPO / notebook), str(output), *options]


def stage_inputs(stage: str, params_path: Path) -> tuple[Path, dict[str, Any], dict[str, Source]]:
    """The notebook, parameter values and their sources the runner reads for ``stage`` (see :func:`stage_argv`)."""
    notebook, _, *options = stage_argv(stage, params_path, Path("unused.ipynb"))
    specs, pairs, templates = [], [], []
    while options:
        flag, *options = options
        if flag == "-f":
            specs.append(options.pop(0))
        else:
            assert flag in ("-p", "-y"), flag
            (pairs if flag == "-p" else templates).append((options.pop(0), options.pop(0)))
    return Path(notebook), *read_parameters(specs, pairs, templates)


def edited_params(folder: Path, section: str, key: str, yaml_value: str) -> Path:
    """A copy of the committed params.yaml in ``folder`` with ``section.key`` set to ``yaml_value`` (as
    written in YAML; the key is added when the section lacks it). ``section`` is dotted for a group
    (``graph_build.graph``)."""
    lines = (REPO / "params.yaml").read_text().splitlines()
    start, end, indent = -1, len(lines), ""
    for part in section.split("."):
        start = next(i for i in range(start + 1, end) if re.match(rf"{indent}{part}:(\s|$)", lines[i]))
        indent += "  "
        end = next((i for i in range(start + 1, end) if not lines[i].startswith(indent)), end)
    at = next((i for i in range(start + 1, end) if lines[i].startswith(f"{indent}{key}:")), None)
    if at is None:
        lines.insert(start + 1, f"{indent}{key}: {yaml_value}")
    else:  # the key's line, and the item lines of a block list or the keys of a group under it
        after = next((i for i in range(at + 1, end) if not lines[i].startswith((f"{indent}- ", f"{indent}  "))), end)
        lines[at:after] = [f"{indent}{key}: {yaml_value}"]
    path = folder / "params.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path
