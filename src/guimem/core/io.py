"""Writing files and folders so that a crash never leaves half of one: the one atomic writer."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from guimem.core.data import DataError


def _fsync_dir(folder: Path) -> None:
    """Flush every file under ``folder`` to disk before it is renamed into place."""
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            with open(p, "rb") as f:
                os.fsync(f.fileno())


def atomic_write_dir(target: Path, write: Any) -> Path:
    """Fill a fresh sibling temp folder with ``write(folder)`` and swap it in for ``target``.

    The previous folder is moved aside to ``.<name>.old`` before the new one is renamed in and
    deleted after, so at every instant either ``target`` or its backup is a complete folder
    (:func:`readable_dir` falls back to the backup).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    backup = target.parent / f".{target.name}.old"
    try:
        write(tmp)
        _fsync_dir(tmp)
        if backup.exists() and target.exists():
            shutil.rmtree(backup)  # a stale backup from an earlier crash; target is complete
        if target.exists():
            os.replace(target, backup)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if not target.exists() and backup.exists():
            os.replace(backup, target)
        raise
    shutil.rmtree(backup, ignore_errors=True)
    return target


def readable_dir(target: Path) -> Path:
    """``target``, or its backup left by a save that crashed between the two renames."""
    if target.is_dir():
        return target
    backup = target.parent / f".{target.name}.old"
    if backup.is_dir():
        return backup
    raise DataError(target.name, "no saved memory here", str(target))
