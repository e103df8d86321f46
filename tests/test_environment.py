"""The environment files agree with each other and with what is installed.

requirements.lock is the source of truth (``make lock`` writes it and environment.yml from
the venv); pyproject.toml declares what the project needs; requirements-nodeps.txt pins the
packages installed without their dependencies.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)$")


def read_pins(path: Path) -> dict[str, str]:
    """``{canonical name: version}`` from a file of ``name==version`` lines (comments allowed)."""
    pins: dict[str, str] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = PIN.match(line)
        assert match, f"{path.name}:{number}: expected 'name==version', got {raw!r}"
        name = canonicalize_name(match[1])
        assert name not in pins, f"{path.name}:{number}: {name} pinned twice"
        pins[name] = match[2]
    return pins


@pytest.fixture(scope="module")
def lock() -> dict[str, str]:
    return read_pins(ROOT / "requirements.lock")


@pytest.fixture(scope="module")
def nodeps() -> dict[str, str]:
    return read_pins(ROOT / "requirements-nodeps.txt")


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_lock_pins_torch_to_the_release_pyproject_asks_for(lock, pyproject):
    reqs = {canonicalize_name(r.name): r for r in map(Requirement, pyproject["project"]["dependencies"])}
    assert str(reqs["torch"].specifier) == "==2.13.0"
    assert lock["torch"] == "2.13.0"  # no local label: the same pin matches the CPU wheel and PyPI


def test_lock_covers_every_declared_dependency(lock, nodeps, pyproject):
    declared = {canonicalize_name(Requirement(r).name) for r in pyproject["project"]["dependencies"]}
    assert declared - set(lock) == set()
    assert set(nodeps) & set(lock) == set(), "a --no-deps package must not also be in requirements.lock"
    assert "guimem" not in lock


def test_environment_yml_does_not_drift_from_the_lock(lock):
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    deps = env["dependencies"]
    assert "python=3.11" in deps and "pip" in deps
    pip_section = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    pinned = [line for line in pip_section if not line.startswith("-")]
    env_pins = {canonicalize_name(PIN.match(p)[1]): PIN.match(p)[2] for p in pinned}
    assert len(env_pins) == len(pinned)
    assert env_pins == lock
    assert "-e ." in pip_section


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def test_installed_versions_match_the_pins(lock, nodeps):
    wrong = {}
    for name, pinned in {**lock, **nodeps}.items():
        have = _installed(name)
        # torch's CPU wheel is 2.13.0+cpu: the local label is not part of the pin
        if have is None or Version(have).public != Version(pinned).public:
            wrong[name] = f"pinned {pinned}, installed {have}"
    assert wrong == {}, "run 'make setup' (or 'make lock' after installing on purpose)"


def test_the_project_is_installed_from_this_checkout():
    import guimem

    assert Path(guimem.__file__).resolve().is_relative_to(ROOT / "src"), guimem.__file__


def test_dvc_config_turns_analytics_and_update_checks_off():
    config = configparser.ConfigParser()
    config.read(ROOT / ".dvc" / "config")
    assert config.getboolean("core", "analytics") is False
    assert config.getboolean("core", "check_update") is False


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```(?:bash|sh)?\n(.*?)```", readme, re.S)
    assert block, "README.md must open with a code block holding the two commands"
    commands = [line.split("#")[0].strip() for line in block[1].splitlines() if line.split("#")[0].strip()]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if line.strip() and not line.startswith("#") and not line.startswith("set ") and not line.startswith("cd ")]
    assert commands[-2:] == ["make repro", "make test"]
    assert ci == [commands[-1]]
