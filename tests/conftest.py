"""Shared test set-up: offline, headless, the repository root as a fixture, and a local Ray that
cannot start on a loaded machine reported as a skip with its reason (not as a failure)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Before anything imports transformers or matplotlib: nothing is fetched, nothing is shown.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

REPO_ROOT = Path(__file__).resolve().parents[1]
RAY_START_ATTEMPTS_ENV = "GUIMEM_RAY_START_ATTEMPTS"  # guimem.core.executor's (not imported here: it is cheap to skip)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (the folder holding pyproject.toml and dvc.yaml)."""
    return REPO_ROOT


# ----------------------------------------------------------------------------- Ray on a loaded machine
def ray_start_failure(err: BaseException) -> str | None:
    """Why a local Ray could not start, if that is what ``err`` says (directly, or from a notebook's cell)."""
    from guimem.core.executor import RayStartError

    if isinstance(err, RayStartError):
        return str(err)
    marker = "raised RayStartError: "  # guimem.pipeline.runner's words for a cell that raised it
    if type(err).__name__ == "NotebookError" and marker in str(err):
        return str(err).split(marker, 1)[1].split("\n", 1)[0]
    return None


def _skip_when_ray_cannot_start():
    """A hook's body: a test (or its fixture) whose local Ray did not start after every retry is skipped,
    with Ray's last error (``-ra`` shows it): the machine's load is not the code's fault."""
    try:
        return (yield)
    except Exception as err:
        reason = ray_start_failure(err)
        if reason is None:
            raise
        # Each start that fails costs about two minutes (Ray's fixed waits, two attempts): the later tests
        # that start Ray, here and in notebook kernels (they inherit the environment), skip at once.
        os.environ[RAY_START_ATTEMPTS_ENV] = "0"
        pytest.skip(f"this machine is too loaded for a local Ray: {reason:.400}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    return (yield from _skip_when_ray_cannot_start())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _skip_when_ray_cannot_start())


# ----------------------------------------------------------------------------- the tiny stage chains
@pytest.fixture(scope="session")
def actor_chain(tmp_path_factory):
    """``(folder, 04_actor's metrics)``: the tiny world through 04_actor, built once per session
    (tests/stage_chains.py); read it, never write into it."""
    from stage_chains import build_actor_chain, built_once

    return built_once(tmp_path_factory, "actor", build_actor_chain)


@pytest.fixture(scope="session")
def switchmem_chain(tmp_path_factory, actor_chain):
    """``(folder, results by notebook "05" ... "09")``: the actor chain, then 05_closed_loop and the
    four SwitchMem notebooks, built once per session; read it, never write into it."""
    from stage_chains import build_switchmem_chain, built_once

    return built_once(tmp_path_factory, "switchmem", build_switchmem_chain(actor_chain[0]))
