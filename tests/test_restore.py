"""`make restore`, the README's way back to the committed parameters, never deletes an output.

A fresh clone has no DVC cache and there is no DVC remote, so the committed ``dvc.lock`` names
outputs this clone's cache never held. ``git checkout HEAD -- dvc.lock && dvc checkout`` (the
recipe the README once gave) then removes the workspace's outputs and restores nothing. The
Makefile's recipe (read from the Makefile itself, so this tests what users run) goes back through
``dvc repro`` instead: every output is rebuilt or restored, none is lost.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

STAGE = """stages:
  make:
    cmd: python -c "import yaml, pathlib; p = yaml.safe_load(open('params.yaml'))['value']; d = pathlib.Path('out'); d.mkdir(exist_ok=True); (d / 'value.txt').write_text(str(p))"
    params:
    - value
    outs:
    - out
"""


def recipe(target: str) -> list[str]:
    """The shell lines of a Makefile target (its recipe), as make would run them."""
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    out = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        out.append(line.strip())
    return out


def sh(cmd: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"{cmd!r} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


@pytest.fixture
def fresh_clone(tmp_path: Path) -> Path:
    """A committed project whose stage ran at ``value: 1``, cloned: the clone has no cache and no outputs."""
    origin = tmp_path / "origin"
    origin.mkdir()
    (origin / "params.yaml").write_text("value: 1\n")
    (origin / "dvc.yaml").write_text(STAGE)
    sh("git init -q && dvc init -q && dvc repro -q && git add -A && git commit -qm reference", origin)
    sh(f"git clone -q {origin} clone", tmp_path)
    clone = tmp_path / "clone"
    assert not (clone / "out").exists() and not (clone / ".dvc" / "cache").exists()
    return clone


def test_the_make_restore_recipe_brings_back_the_committed_parameters_and_deletes_nothing(fresh_clone):
    commands = recipe("restore")
    assert commands and not any("dvc checkout" in c for c in commands)
    sh("sed -i 's/value: 1/value: 2/' params.yaml && dvc repro -q", fresh_clone)  # an experiment
    assert (fresh_clone / "out" / "value.txt").read_text() == "2"
    sh(" && ".join(commands), fresh_clone)
    assert (fresh_clone / "out" / "value.txt").read_text() == "1"  # rebuilt, never left missing
    assert sh("git status --porcelain params.yaml", fresh_clone).stdout == ""


def test_the_recipe_it_replaces_deletes_outputs_on_a_clone_without_the_cache(fresh_clone):
    """Why the README does not give ``dvc checkout``: the committed outputs were never in this clone's
    cache, so it fails, and the experiment's outputs (which the cache does hold) are gone from the
    workspace."""
    sh("sed -i 's/value: 1/value: 2/' params.yaml && dvc repro -q", fresh_clone)
    done = sh("git checkout HEAD -- params.yaml dvc.lock && dvc checkout", fresh_clone, check=False)
    assert done.returncode != 0 and not (fresh_clone / "out" / "value.txt").exists()
