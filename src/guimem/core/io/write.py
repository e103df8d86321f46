"""Atomic file writes: a crash at any instant leaves the old or the new file, never half of one.

:func:`atomic_write_bytes` / :func:`atomic_write_text` / :func:`write_json` / :func:`write_jsonl`
write a temporary file in the same folder, flush and fsync it, then ``os.replace`` it over the
target (and fsync the folder's entry). A file save refuses a target that is a folder; leftovers
of interrupted saves (``.<name>.tmp-*``) are removed by the next save of the same target. A
stage's headline metrics and its full results are written as JSON by :func:`write_metrics` and
:func:`write_stage_results`. The underscored helpers are shared with the folder saves
(:mod:`guimem.core.io.folders`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from guimem.core.data import DataError

_TMP = ".tmp-"  # infix of temporary names: .<name>.tmp-XXXX


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


def _usual_mode(folder: bool) -> int:
    """The permissions a plain ``open``/``mkdir`` would give under the current umask (mkstemp and
    mkdtemp make private 0600/0700 entries, which a saved store must not keep)."""
    umask = os.umask(0)
    os.umask(umask)
    return (0o777 if folder else 0o666) & ~umask


def _clean_leftovers(target: Path) -> None:
    """Remove temporary siblings ``.<name>.tmp-*`` that interrupted saves of ``target`` left behind
    (one save of a target at a time: a second, concurrent save of the same target is not supported)."""
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
    except DataError as err:
        raise err.at(str(path)) from None


def write_jsonl(path: str | os.PathLike, rows: Iterable[Any], sort_keys: bool = True) -> Path:
    """Write one JSON document per line, atomically."""
    try:
        return atomic_write_text(path, "".join(json_text(r, sort_keys=sort_keys) for r in rows))
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
