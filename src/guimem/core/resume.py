"""Finished chunks of heavy work, kept on disk by content key: a stage stopped midway (a killed job,
a lost cluster) runs again and computes only the chunks it had not finished.

:func:`cached_map` is :meth:`Executor.map <guimem.core.executor.LocalExecutor.map>` with a
:class:`ChunkCache`: each chunk's result is stored the moment it arrives, and a chunk whose key is
already stored is read back instead of run. A key is the hash of everything the result depends on:

* the task's ``fingerprint()`` — its parameters (the device its model runs on among them) and a
  digest of the files it loads (the actor's weights, the memories, the routers); a task that
  cannot say returns None, and its chunks are not kept (a warning says so);
* the code: every source file of this package as it was imported, the Python version and every
  installed distribution's version (:func:`code_fingerprint`), so an edit to the code or an
  upgrade never reads a result the old ones made. A worker checks that it runs the code the key
  names (:func:`check_same_code`, in a task's ``setup``): a cluster node with other code stops the
  job rather than storing its results under this key;
* the chunk itself (its pickled bytes).

A key that differs only where nothing changed is a miss: the cache can cost time. What it does not
see is the hardware: results computed on another GPU model (or CUDA version) are read back as
they are. Entries are never removed by this module; delete the folder to reclaim it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import pickle
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from guimem.core.data import DataError
from guimem.core.io import atomic_write_bytes

_MISSING = object()


def _code_fingerprint() -> str:
    package = Path(__file__).resolve().parent.parent
    h = hashlib.blake2b(digest_size=16)
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(f"python {sys.version}\0".encode())
    versions = {(d.metadata["Name"] or "").lower(): d.version for d in importlib.metadata.distributions()}
    for name, version in sorted(versions.items()):
        h.update(f"{name}={version}\0".encode())
    return h.hexdigest()


_CODE = _code_fingerprint()  # at import: the code this process runs is the code it imported


def code_fingerprint() -> str:
    """A digest of this package's source files (as imported), the Python version and every
    installed distribution's name and version."""
    return _CODE


def check_same_code(expected: str) -> None:
    """Raise a DataError unless this process runs the code ``expected`` names (a worker's check
    that the results it makes belong under its driver's keys)."""
    if expected != _CODE:
        raise DataError("code", "this worker runs other code or libraries than the process that sent it "
                                "the work (install the same guimem and requirements on every node)")


def tree_digest(*paths: str | os.PathLike, contents: bool = True) -> str:
    """A digest of the files under ``paths`` (a missing path counts as empty): their relative names
    and bytes, or with ``contents=False`` their size, inode and modification and change times (for
    trees too large to read, such as model weights or a screen store: a rewritten or copied file
    changes its change time, which no copy can carry over, so it misses)."""
    h = hashlib.blake2b(digest_size=16)
    for top in map(Path, paths):
        h.update(f"{top}\0".encode())
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else []
        for f in files:
            h.update(f.relative_to(top.parent).as_posix().encode() + b"\0")
            if contents:
                h.update(f.read_bytes())
            else:
                st = f.stat()
                h.update(f"{st.st_size}:{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}".encode())
            h.update(b"\0")
    return h.hexdigest()


class ChunkCache:
    """Results of finished chunks, one pickle per key under ``folder`` (written atomically)."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self.hits = self.stored = 0

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.pkl"

    def get(self, key: str) -> Any:
        """The stored result, or ``_MISSING`` (also for an entry that cannot be read back)."""
        try:
            value = pickle.loads(self._path(key).read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
            return _MISSING
        self.hits += 1
        return value

    def put(self, key: str, value: Any) -> None:
        atomic_write_bytes(self._path(key), pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        self.stored += 1


def chunk_key(fingerprint: str, chunk: Any) -> str:
    """The key of one chunk of a task whose fingerprint (with the code's) is ``fingerprint``."""
    h = hashlib.blake2b(digest_size=20)
    h.update(fingerprint.encode() + b"\0" + code_fingerprint().encode() + b"\0")
    h.update(pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL))
    return h.hexdigest()


def cached_map(executor: Any, task: Any, chunks: Sequence[Any], cache: ChunkCache | None) -> Iterator[Any]:
    """``executor.map(task, chunks)``, in order, reading the chunks ``cache`` holds and storing each
    new result as it arrives. Without a cache, or for a task whose ``fingerprint()`` is None, it is
    ``executor.map`` itself."""
    fingerprint = task.fingerprint() if cache is not None and hasattr(task, "fingerprint") else None
    if fingerprint is None:
        if cache is not None:
            warnings.warn(f"{type(task).__name__}: its inputs cannot be fingerprinted (see its fingerprint()), "
                          "so its chunks are not kept: a stopped run will start again from the beginning",
                          stacklevel=2)
        yield from executor.map(task, list(chunks))
        return
    keys = [chunk_key(fingerprint, chunk) for chunk in chunks]
    done = {i: value for i, key in enumerate(keys) if (value := cache.get(key)) is not _MISSING}
    todo = [i for i in range(len(chunks)) if i not in done]
    fresh = executor.map(task, [chunks[i] for i in todo]) if todo else iter(())
    for i in range(len(chunks)):
        if i in done:
            yield done.pop(i)
        else:  # todo is in chunk order, so the next fresh result is chunk i's
            value = next(fresh)
            cache.put(keys[i], value)
            yield value
