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

REPO_ROOT = Path(__file__).resolve().parents[1]
DURATIONS = Path(__file__).resolve().parent / "durations.json"
DURATIONS_ENV = "GUIMEM_WRITE_TEST_DURATIONS"  # set to 1: a whole run rewrites DURATIONS with its own times
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


def pytest_collection_modifyitems(config, items):
    try:
        seconds = {str(k): float(v) for k, v in json.loads(DURATIONS.read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, TypeError, AttributeError):
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

    try:
        old = {str(k): float(v) for k, v in json.loads(DURATIONS.read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, TypeError, AttributeError):
        old = {}
    times = {f: t for f, t in {**old, **{f: round(t, 1) for f, t in _spent.items()}}.items()
             if (REPO_ROOT / f).is_file()}
    atomic_write_text(DURATIONS, json.dumps(dict(sorted(times.items(), key=lambda kv: -kv[1])), indent=1) + "\n")
