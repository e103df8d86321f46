"""What the corpus's cases share: catching the DataError, and naming the file it points at."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import pytest

from guimem.core.data import DataError


def error(call: Callable[[], Any]) -> DataError:
    """The DataError ``call()`` raises (the test fails if it raises nothing or anything else)."""
    with pytest.raises(DataError) as info:
        call()
    return info.value


def located(err: DataError, root: Path) -> str | None:
    """The file ``err`` names, relative to ``root`` (its ', line N' dropped)."""
    return None if err.path is None else os.path.relpath(err.path.split(", line ")[0], root)


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file of ``folder`` by name, with its bytes (to show a refused save wrote nothing)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
