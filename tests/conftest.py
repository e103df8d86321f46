"""Shared test set-up: offline, headless, the repository root as a fixture, a local Ray that
cannot start on a loaded machine reported as a skip with its reason (not as a failure), and the
test files ordered longest first for the worker processes."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

# Before anything imports transformers or matplotlib: nothing is fetched, nothing is shown.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
# One compute thread per process (torch's, through OpenMP): `make test` runs one worker process more
# than the machine has cores, and each starts more (notebook kernels, spawned workers), so a second
# thread per process only contends for the cores, and OpenMP's idle threads spin on them.
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
DURATIONS = Path(__file__).resolve().parent / "durations.json"
DURATIONS_ENV = "GUIMEM_WRITE_TEST_DURATIONS"  # set to 1: a run that passes writes its files' times into DURATIONS
RAY_START_ATTEMPTS_ENV = "GUIMEM_RAY_START_ATTEMPTS"  # guimem.core.executor's (not imported here: it is cheap to skip)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (the folder holding pyproject.toml and dvc.yaml)."""
    return REPO_ROOT


# ----------------------------------------------------------------------------- longest files first
# `make test` hands whole files to its worker processes (--dist loadfile, --no-loadscope-reorder: in
# the order collected; a worker is given its next file when at most two of its tests are left). In
# xdist's default order (most tests first) the notebook files of a minute or more come last, and one
# worker runs them while the others wait. Collected longest first (by tests/durations.json: each
# file's seconds in a measured run), the short files fill the gaps at the end and the workers finish
# at about the same time (on 2 cores the machine was 97% busy on average over the whole run). A file's
# time includes building a shared stage chain when it is the first to ask for it, so the numbers are
# a schedule's, not each file's own cost. They only order the files: a stale or missing entry costs
# balance, never a result.
def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _durations() -> dict[str, float]:
    """tests/durations.json's seconds by file; empty when it is missing or not such a mapping."""
    try:
        return {str(k): float(v) for k, v in json.loads(DURATIONS.read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def pytest_collection_modifyitems(config, items):
    seconds = _durations()
    if not seconds:
        return  # no usable times: the collected order
    unknown = sorted(seconds.values())[len(seconds) // 2] if seconds else 0.0  # a new file: the median
    first = {}
    for i, item in enumerate(items):
        first.setdefault(_file_of(item.nodeid), i)
    items.sort(key=lambda item: (-seconds.get(_file_of(item.nodeid), unknown), first[_file_of(item.nodeid)]))


_spent: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    _spent[_file_of(report.nodeid)] += report.duration  # set-up, call and tear-down; workers' reports too


def pytest_sessionfinish(session, exitstatus):
    """With GUIMEM_WRITE_TEST_DURATIONS=1, a run that passed writes the times of the files it ran to
    tests/durations.json over those of earlier runs (files no longer in tests/ dropped), in the
    controller only: ``GUIMEM_WRITE_TEST_DURATIONS=1 make test``. A run of parts of files (-k, -m,
    --deselect, --lf, --sw) writes nothing."""
    opt = session.config.option
    parts = (opt.keyword, opt.markexpr, getattr(opt, "deselect", None), getattr(opt, "lf", False),
             getattr(opt, "stepwise", False))
    whole_files = exitstatus == 0 and not any(parts)
    if os.environ.get(DURATIONS_ENV) != "1" or not whole_files or os.environ.get("PYTEST_XDIST_WORKER") or not _spent:
        return
    from guimem.core.io import atomic_write_text

    times = {f: t for f, t in {**_durations(), **{f: round(t, 1) for f, t in _spent.items()}}.items()
             if (REPO_ROOT / f).is_file()}
    atomic_write_text(DURATIONS, json.dumps(dict(sorted(times.items(), key=lambda kv: -kv[1])), indent=1) + "\n")


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
def llm_cache(repo_root) -> Path:
    """The repository's copy of SmolLM2 converted from its GGUF file (``.cache/guimem/llm``), made
    once however many worker processes ask: on a fresh clone the first converts it (about 45 s of
    CPU) while the others wait on a file lock, then all read the copy (each converted it before)."""
    from filelock import FileLock

    from guimem.models.llm import load_llm

    folder = repo_root / ".cache" / "guimem" / "llm"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder.parent / "llm.lock")):
        load_llm(cache_dir=folder)  # converts and writes the copy where it is missing; reads it back otherwise
    return folder


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
