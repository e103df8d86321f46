"""Where a stage runs: the repository root, found from anywhere inside it.

Kept apart from the runner so that a notebook's kernel imports only this (the runner imports
every stage's parameter checks, and with them every layer).
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT_MARKER = "dvc.yaml"  # the repository root is the nearest folder holding this file


def repo_root(start: str | os.PathLike[str] | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the working directory) holding ``dvc.yaml``."""
    here = Path(start if start is not None else os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ROOT_MARKER).is_file():
            return folder
    raise FileNotFoundError(f"{here}: no {ROOT_MARKER} here or in any parent folder (not inside the repository?)")


def enter_repo_root() -> Path:
    """From ``<repo>/notebooks`` (where JupyterLab starts a kernel) move to ``<repo>``; return the cwd.

    Call it in a notebook's first code cell so that its relative default paths resolve as
    they do under DVC. Anywhere else it changes nothing: under the runner the kernel already
    starts at the root, and a test's ``tmp_path`` stays where it is.
    """
    here = Path.cwd()
    if here.name == "notebooks" and not (here / ROOT_MARKER).is_file() and (here.parent / ROOT_MARKER).is_file():
        os.chdir(here.parent)
    return Path.cwd()
