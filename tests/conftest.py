"""Shared test set-up: offline, headless, and the repository root as a fixture."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Before anything imports transformers or matplotlib: nothing is fetched, nothing is shown.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (the folder holding pyproject.toml and dvc.yaml)."""
    return REPO_ROOT
