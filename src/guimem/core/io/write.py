"""Atomic file writes: a crash at any instant leaves the old or the new file, never half of one.

:func:`atomic_write_bytes` / :func:`atomic_write_text` / :func:`write_json` / :func:`write_jsonl`
write a temporary file in the same folder, flush and fsync it, then ``os.replace`` it over the
target (and fsync the folder's entry). A file save refuses a target that is a folder; leftovers
of interrupted saves (``.<name>.tmp-*``) are removed by the next save of the same target.

Saves into one folder take turns (:func:`saving`): an exclusive lock on a file in that folder,
held for the whole save, so two processes saving the same target (or two targets side by side)
never remove each other's temporary files. A save that fails on the file system (a full disk, a
read-only folder) is a :class:`DataError` naming the destination, never a raw ``OSError``. A
stage's headline metrics and its full results are written as JSON by :func:`write_metrics` and
:func:`write_stage_results`. The underscored helpers are shared with the folder saves
(:mod:`guimem.core.io.folders`).
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import numpy as np

from guimem.core.data import DataError

_TMP = ".tmp-"  # infix of temporary names: .<name>.tmp-XXXX

SAVE_LOCK = ".guimem-save.lock"
"""The file in a folder that saves into it lock (:func:`saving`); removed when the save ends."""


def _fsync_folder(folder: Path) -> None:
    """Flush ``folder``'s entries (renames into it) to disk; a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def _make_parent(path: Path) -> None:
    """Create the folder ``path`` goes in; a file standing where a folder must be is a :class:`DataError`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise DataError("path", "cannot be created: a file stands where one of its folders must be", str(path)) from None
    except OSError as err:  # a read-only file system, no permission, a full disk
        raise unwritable(err, path) from err


def _usual_mode(folder: bool) -> int:
    """The permissions a plain ``open``/``mkdir`` would give under the current umask (mkstemp and
    mkdtemp make private 0600/0700 entries, which a saved store must not keep)."""
    umask = os.umask(0)
    os.umask(umask)
    return (0o777 if folder else 0o666) & ~umask


# ----------------------------------------------------------------------------- one save at a time
class _FolderLock:
    """This process's hold on one folder's save lock: a thread lock (threads of one process take
    turns, and a save inside a save of the same folder re-enters) and the ``flock`` of the first."""

    def __init__(self) -> None:
        self.thread_lock = threading.RLock()
        self.depth = 0
        self.fd: int | None = None


_FOLDER_LOCKS: dict[str, _FolderLock] = {}
_FOLDER_LOCKS_GUARD = threading.Lock()


def _lock_file(path: Path) -> int | None:
    """An open descriptor holding the exclusive ``flock`` of the lock file ``path`` (created if
    absent), or None where the file system has no locks. A holder removes the file before it lets
    go, so a waiter that wakes on a removed file opens the new one and waits again."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as err:
            os.close(fd)
            if err.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                try:  # no locks here: saves are not serialised (docs/CONVENTIONS.md), and no file stays behind
                    os.unlink(path)
                except OSError:
                    pass
                return None
            raise
        held = os.fstat(fd)
        try:
            now = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
            return fd
        os.close(fd)  # the holder before us removed this file: lock the one there now


@contextmanager
def saving(folder: str | os.PathLike) -> Iterator[None]:
    """Hold the save lock of ``folder`` (the folder a target is saved *into*) for the ``with`` block.

    Every save of a file or folder takes it, from its first check to its last rename, so saves
    into one folder, from any number of processes and threads, run one after another; a
    read-modify-write (adding episodes to a store) holds it around both. Re-entrant within a
    thread. Readers take no lock (:func:`guimem.core.io.read_whole`)."""
    key = os.path.realpath(folder)
    with _FOLDER_LOCKS_GUARD:
        lock = _FOLDER_LOCKS.setdefault(key, _FolderLock())
    with lock.thread_lock:
        if lock.depth == 0:
            lock.fd = _lock_file(Path(key) / SAVE_LOCK)
        lock.depth += 1
        try:
            yield
        finally:
            lock.depth -= 1
            if lock.depth == 0 and lock.fd is not None:
                try:
                    os.unlink(Path(key) / SAVE_LOCK)
                except OSError:
                    pass
                os.close(lock.fd)
                lock.fd = None


class UnwritableError(DataError):
    """A save the file system refused (a full disk, a read-only folder): names the destination."""

    def __init__(self, target: str, why: str, at: str | None = None):
        self.target, self.why, self.at_file = target, why, at
        super().__init__("path", f"could not be saved: {why}" + (f" (at {at})" if at else ""), target)

    def moved(self, tmp: Path, target: Path) -> "UnwritableError":
        """The same refusal of a file written inside the temporary folder ``tmp``, named as the save
        of ``target`` it was part of (a file inside ``tmp`` named by its place in ``target``)."""
        at = self.at_file if self.at_file is not None else self.target
        inside = Path(at).is_relative_to(tmp)
        return UnwritableError(str(target), self.why, str(target / Path(at).relative_to(tmp)) if inside else at)


def unwritable(err: OSError, target: Path) -> UnwritableError:
    """The :class:`DataError` for a save of ``target`` that the file system refused (``err``): it
    names the destination, and the file the system named where that was another one."""
    why = err.strerror or str(err) or type(err).__name__
    other = next((str(f) for f in (err.filename, err.filename2) if f is not None and str(f) != str(target)), None)
    return UnwritableError(str(target), why, other)


def _clean_leftovers(target: Path) -> None:
    """Remove temporary siblings ``.<name>.tmp-*`` that interrupted saves of ``target`` left behind
    (called under :func:`saving`: no other save of the target is under way)."""
    if not target.parent.is_dir():
        return
    prefix = f".{target.name}{_TMP}"  # matched literally: a name may hold glob characters ("run[1]")
    for p in target.parent.iterdir():
        if not p.name.startswith(prefix):
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file in the same folder, fsync, rename)."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        raise DataError("path", "is a folder; refusing to replace it with a file", str(path))
    _make_parent(path)
    try:
        with saving(path.parent):
            _clean_leftovers(path)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}{_TMP}")
            try:
                os.chmod(tmp, _usual_mode(folder=False))
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            _fsync_folder(path.parent)
    except OSError as err:
        raise unwritable(err, path) from err
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path`` atomically; text that cannot be encoded is refused first."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise DataError("text", f"cannot be written as UTF-8 ({err.reason} at character {err.start})",
                        str(path)) from None
    return atomic_write_bytes(path, data)


def json_text(obj: Any, indent: int | None = None, sort_keys: bool = True) -> str:
    """``obj`` as JSON text ending in a newline; NaN and infinities are refused (JSON has none)."""
    try:
        return json.dumps(obj, indent=indent, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError as err:
        raise DataError("json", f"not valid JSON: {err}") from None


def write_json(path: str | os.PathLike, obj: Any, indent: int | None = 1, sort_keys: bool = True) -> Path:
    """Write ``obj`` as one JSON document, atomically."""
    try:
        return atomic_write_text(path, json_text(obj, indent=indent, sort_keys=sort_keys))
    except UnwritableError:
        raise
    except DataError as err:
        raise err.at(str(path)) from None


def write_jsonl(path: str | os.PathLike, rows: Iterable[Any], sort_keys: bool = True) -> Path:
    """Write one JSON document per line, atomically."""
    try:
        return atomic_write_text(path, "".join(json_text(r, sort_keys=sort_keys) for r in rows))
    except UnwritableError:
        raise
    except DataError as err:
        raise err.at(str(path)) from None


def finite_or_null(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float replaced by ``None`` (JSON's null), recursively."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_or_null(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_or_null(v) for v in obj]
    return obj


def write_metrics(path: str | os.PathLike, metrics: Mapping[str, Any]) -> Path:
    """A headline metrics file (a stage's, or the pipeline's ``metrics/headline.json`` that DVC reads):
    flat, one number (or string, bool, null) per key, so that each prints as one readable row or
    column; the tables behind them go to :func:`write_stage_results`. Indented, keys sorted, and a
    metric that could not be computed (NaN: no step to average over) written as ``null``, since
    JSON has no NaN. A nested value raises a DataError naming its key, and nothing is written."""
    for key, value in metrics.items():
        if not isinstance(key, str) or not key:
            raise DataError("metrics", f"a metric's name must be a non-empty string, got {key!r:.60}", str(path))
        if value is not None and not isinstance(value, (bool, int, float, str, np.bool_, np.number)):
            raise DataError(key, f"a headline metric is one number, string or bool, got {type(value).__name__}; "
                                 "tables belong in the stage's results file", str(path))
    return write_json(path, finite_or_null(dict(metrics)), indent=2)


def write_stage_results(path: str | os.PathLike, results: Mapping[str, Any]) -> Path:
    """A stage's full results (every table and count behind its headline metrics and figures), as
    indented JSON with keys sorted and NaN written as ``null``. Not a DVC metric: a reader opens it,
    ``git diff`` compares it."""
    return write_json(path, finite_or_null(dict(results)), indent=2)
