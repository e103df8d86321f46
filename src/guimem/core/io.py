"""Reading and writing files: the one atomic writer, and readers that name the file of bad bytes.

**Writing.** Every file and folder guimem saves goes through this module, so a crash at any
instant leaves the old or the new version readable, never half of one:

* :func:`atomic_write_bytes` / :func:`atomic_write_text` / :func:`write_json` /
  :func:`write_jsonl`: a temporary file in the same folder, flushed and fsynced, then
  ``os.replace``-d over the target (and the folder's entry fsynced).
* :func:`atomic_write_dir`: a fresh sibling temporary folder filled by ``write(folder)``, every
  file fsynced, then swapped in. The previous folder is first moved aside to ``.<name>.old``
  and deleted once the new one is in place, so at every instant the target or its backup is
  complete; :func:`readable_dir` falls back to the backup. Entries of the old folder that are
  not the kind's own (a user's notes, a README) are carried into the new one.
* :func:`atomic_write_dirs`: several sibling folders as one save (a split's train, test and
  memory): a journal written after every new folder is complete is the commit point, so after a
  crash the set is all old or all new, and the next save (or :func:`readable_dir`) follows it.

A save **never destroys what it did not write**: a folder save stamps its folder with a marker
file (:data:`MARKER`) naming the *kind* of store (``guimem.episodes``, ``guimem.memory_graph``,
...), and refuses, writing nothing, to replace a target that exists and is not a store of the
same kind (an empty folder is fine: there is nothing to lose). A file save refuses a target
that is a folder. Leftovers of interrupted saves (``.<name>.tmp-*``) are removed by the next
save of the same target.

**Reading.** :func:`read_json` and :func:`read_jsonl` turn every way a file can be bad — missing,
a folder, not UTF-8, malformed, nested too deep, numbers too large — into a
:class:`~guimem.core.data.DataError` naming the file (and the line), never a bare
``RecursionError`` or ``OverflowError``. :func:`check_finite` refuses NaN and infinities in a
loaded array.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import math
import os
import re
import shutil
import stat
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
from safetensors import SafetensorError, safe_open

from guimem.core.data import DataError

MARKER = ".guimem-kind"
"""File inside every folder :func:`atomic_write_dir` writes; its text is the folder's kind."""

MAX_JSON_DEPTH = 64  # deeper nesting than any guimem file has; refused before it can exhaust the stack
_TMP = ".tmp-"  # infix of temporary names: .<name>.tmp-XXXX


# ============================================================================= files
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


def _fsync_tree(folder: Path) -> None:
    """Flush every file under ``folder`` and every folder's entries (a new file's name lives there).

    In threads: an fsync waits on the disk without holding the GIL, and the file system commits
    concurrent ones together (300 small files: 0.8 s one by one, 0.08 s in 16 threads).
    """
    entries = [p for p in folder.rglob("*") if not p.is_symlink()]
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(_fsync_file, [p for p in entries if p.is_file()]))  # list(): re-raises a failure
        list(pool.map(_fsync_folder, [p for p in entries if p.is_dir()] + [folder]))


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


def _remove_backup(target: Path, backup: Path) -> None:
    """Delete ``backup`` by first renaming it to a temporary sibling of ``target`` (one atomic step):
    a kill during the deletion then leaves a ``.<name>.tmp-*`` leftover the next save removes, never
    a half-deleted ``.<name>.old`` without its marker that would refuse every later save."""
    if not backup.exists() and not backup.is_symlink():
        return
    doomed = Path(tempfile.mkdtemp(prefix=f".{target.name}{_TMP}", dir=target.parent))
    os.replace(backup, doomed)  # onto the empty folder just made: a rename, atomic
    shutil.rmtree(doomed, ignore_errors=True)


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
    """A stage's headline metrics file (DVC reads it): flat, one number (or string, bool, null) per
    key, so that ``dvc metrics show|diff`` and ``dvc exp show`` print one readable column per
    number; the tables behind them go to :func:`write_stage_results`. Indented, keys sorted, and a
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


# ============================================================================= folders
def folder_kind(folder: Path) -> str | None:
    """The kind a guimem folder save stamped on ``folder``, or None."""
    marker = Path(folder) / MARKER
    if not marker.is_file() or marker.is_symlink():
        return None
    try:
        return marker.read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def check_replaceable(target: Path, kind: str) -> None:
    """Refuse (``DataError``) to replace ``target`` unless it is absent, an empty folder, or a
    ``kind`` store (by its marker)."""
    if not target.exists() and not target.is_symlink():
        return
    if target.is_symlink() or not target.is_dir():
        raise DataError("path", f"exists and is not a folder; refusing to replace it with a {kind} store",
                        str(target))
    if not any(target.iterdir()):
        return
    found = folder_kind(target)
    if found == kind:
        return
    what = f"a {found} store" if found else "files guimem did not write"
    raise DataError("path", f"holds {what}; refusing to replace it with a {kind} store "
                            "(choose another folder, or remove it yourself)", str(target))


@dataclass(frozen=True)
class FolderWrite:
    """One folder save: ``write(folder)`` fills a fresh folder that replaces ``target``.

    Args:
        target: the folder to (re)write.
        write: fills the folder it is given; whatever it raises aborts the save, nothing written.
        kind: what the folder holds (``"guimem.episodes"``, ...), stamped in :data:`MARKER`.
        owned: patterns (``fnmatch``, on the names of the folder's own entries) of what this kind
            writes. An entry of the old folder the new write did not produce is dropped when it
            matches one (a file of an earlier version, an episode no longer there) and kept
            otherwise: a user's notes or README beside the files survive every save.
    """

    target: Path
    write: Callable[[Path], Any]
    kind: str
    owned: tuple[str, ...] = ()


def atomic_write_dir(target: str | os.PathLike, write: Callable[[Path], Any], kind: str,
                     owned: Iterable[str] = ()) -> Path:
    """Fill a fresh sibling temp folder with ``write(folder)`` and swap it in for ``target``
    (the arguments: :class:`FolderWrite`).

    The old folder is moved aside to ``.<name>.old`` before the new one is renamed in, and deleted
    after; a crash in between leaves the backup, which :func:`readable_dir` reads. Entries of the
    old folder that are not the kind's (``owned``) are carried into the new one first.
    """
    return atomic_write_dirs([FolderWrite(Path(target), write, kind, tuple(owned))])[0]


def atomic_write_dirs(saves: Sequence[FolderWrite]) -> list[Path]:
    """Save several sibling folders as one: after a crash at any instant every one of them is its
    old version or every one its new version, never a mix (the folders of a split must never
    hold one draw's train and another's test).

    Each new folder is filled and fsynced beside its target; then a journal
    (``.guimem-txn-*.json`` in the folders' common parent, written atomically) names each
    temporary folder and its target: its appearance is the commit point. The swaps follow, then
    the journal is deleted and the backups. A crash before the journal leaves the old set (the
    temporary folders are leftovers the next save removes); a crash after it leaves a journal that
    the next save of any folder in that parent completes first (:func:`finish_transactions`), and
    that :func:`readable_dir` follows meanwhile: the set reads as new from the commit on.
    Every check (each target replaceable, every ``write``) runs before anything is replaced; any
    failure then removes what was made and leaves every target as it was.
    """
    saves = [dataclasses.replace(s, target=Path(s.target), owned=tuple(s.owned)) for s in saves]
    if not saves:
        return []
    parent = saves[0].target.parent
    names = [s.target.name for s in saves]
    if any(s.target.parent != parent for s in saves) or len(set(names)) != len(names):
        raise DataError("path", "the folders of one save must be distinct siblings in one folder",
                        ", ".join(str(s.target) for s in saves)[:200])
    _make_parent(saves[0].target)
    finish_transactions(parent)  # a set an earlier crash committed is completed before anything else
    for s in saves:
        check_replaceable(s.target, s.kind)
        backup = _backup(s.target)
        if backup.exists() or backup.is_symlink():
            check_replaceable(backup, s.kind)  # left by a crash between the renames; replaced below
    for s in saves:
        _clean_leftovers(s.target)
    made: list[Path] = []
    try:
        for s in saves:
            made.append(Path(tempfile.mkdtemp(prefix=f".{s.target.name}{_TMP}", dir=parent)))
            _fill(made[-1], s)
    except BaseException:
        for tmp in made:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    if len(saves) == 1:
        _swap_one(saves[0].target, made[0])
        return [saves[0].target]
    journal = _write_journal(parent, [(s.target.name, tmp.name) for s, tmp in zip(saves, made)])
    _roll_forward(parent, journal)
    return [s.target for s in saves]


def _backup(target: Path) -> Path:
    return target.parent / f".{target.name}.old"


def _fill(tmp: Path, save: FolderWrite) -> None:
    """The new version of ``save.target`` in ``tmp``: written, stamped, foreign entries carried, fsynced."""
    os.chmod(tmp, _usual_mode(folder=True))
    save.write(tmp)
    (tmp / MARKER).write_text(save.kind + "\n", encoding="utf-8")
    old = save.target if save.target.is_dir() and not save.target.is_symlink() else _backup(save.target)
    if old.is_dir() and not old.is_symlink() and folder_kind(old) is not None:
        _carry_foreign(old, tmp, save.owned)
    _fsync_tree(tmp)


def _carry_foreign(old: Path, new: Path, owned: tuple[str, ...]) -> None:
    """Put into ``new`` every entry of ``old`` (a folder guimem saved) that the new write did not
    produce and that is not the kind's (``owned``): a file hard-linked (copied where the file system
    has no links), a link as a link, a folder whole. Nothing of ``old`` changes."""
    for entry in sorted(old.iterdir()):
        name = entry.name
        if name == MARKER or any(fnmatch.fnmatchcase(name, p) for p in owned):
            continue
        if (new / name).exists() or (new / name).is_symlink():
            continue  # written anew: the new version wins
        _keep(entry, new / name)


def _keep(src: Path, dst: Path) -> None:
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
    elif src.is_dir():
        dst.mkdir()
        shutil.copystat(src, dst)
        for entry in sorted(src.iterdir()):
            _keep(entry, dst / entry.name)
    else:
        try:
            os.link(src, dst)  # the same file, no copy; a FIFO or socket stays what it is
        except OSError:
            if not src.is_file():
                raise DataError("path", "cannot be kept by the save (not a regular file, and links are not "
                                        "possible here); move it out of the folder", str(src)) from None
            shutil.copy2(src, dst)


def _swap_one(target: Path, tmp: Path) -> None:
    """Swap the complete ``tmp`` in for ``target`` (moved aside to its backup, deleted after)."""
    backup = _backup(target)
    try:
        if backup.exists() and target.exists():
            _remove_backup(target, backup)  # a stale backup (of this kind, checked above); target is complete
        if target.exists():
            os.replace(target, backup)
        os.replace(tmp, target)
        _fsync_folder(target.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if not target.exists() and backup.exists():
            os.replace(backup, target)
        raise
    try:
        _remove_backup(target, backup)
    except OSError:
        pass  # the new folder is in place; a backup left here is removed by the next save


# ----------------------------------------------------------------------------- transactions
JOURNAL_FORMAT = "guimem.transaction"
_JOURNAL = re.compile(r"^\.guimem-txn-[A-Za-z0-9_]{1,64}\.json$")


def _write_journal(parent: Path, swaps: list[tuple[str, str]]) -> Path:
    fd, name = tempfile.mkstemp(prefix=".guimem-txn-", suffix=".json", dir=parent)  # reserves a unique name
    os.close(fd)
    journal = Path(name)
    try:
        atomic_write_bytes(journal, json_text({"format": JOURNAL_FORMAT, "version": 1, "swaps": swaps}).encode())
    except BaseException:
        journal.unlink(missing_ok=True)
        raise
    return journal


def _journals(parent: Path) -> list[Path]:
    if not parent.is_dir():
        return []
    return sorted(p for p in parent.iterdir() if _JOURNAL.match(p.name))


def _read_journal(journal: Path) -> list[tuple[str, str]]:
    """The (target, temporary folder) names a journal lists; a journal guimem did not write is a DataError."""
    where = str(journal)
    if journal.is_symlink() or not journal.is_file():
        raise DataError("journal", "not a regular file; remove it yourself", where)
    if journal.stat().st_size == 0:
        return []  # a name reserved by a save that crashed before writing it: nothing was committed
    data = read_json(journal)
    if not isinstance(data, dict) or data.get("format") != JOURNAL_FORMAT or type(data.get("version")) is not int \
            or data.get("version") != 1 or not isinstance(data.get("swaps"), list):
        raise DataError("journal", f"not a {JOURNAL_FORMAT} journal of version 1; remove it yourself", where)
    swaps = []
    for i, pair in enumerate(data["swaps"]):
        ok = isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
        target, tmp = pair if ok else ("", "")
        if not ok or not target or "/" in target or target in (".", "..") or "\x00" in target \
                or not re.fullmatch(re.escape(f".{target}{_TMP}") + r"[A-Za-z0-9_]{1,64}", tmp):
            raise DataError(f"swaps[{i}]", f"expected [a folder name, its .<name>{_TMP}* temporary folder], "
                                           f"got {pair!r:.80}; remove the journal yourself", where)
        swaps.append((target, tmp))
    return swaps


def _roll_forward(parent: Path, journal: Path) -> None:
    """Complete the swaps ``journal`` lists (each temporary folder still there goes in for its
    target), then delete the journal and the backups. Safe to repeat after a crash at any point."""
    swaps = _read_journal(journal)
    for target_name, tmp_name in swaps:
        target, tmp = parent / target_name, parent / tmp_name
        if not tmp.is_dir() or tmp.is_symlink():
            continue  # swapped in already
        backup = _backup(target)
        if target.exists() or target.is_symlink():
            if backup.exists() or backup.is_symlink():
                _remove_backup(target, backup)
            os.replace(target, backup)
        os.replace(tmp, target)
    _fsync_folder(parent)
    journal.unlink()
    _fsync_folder(parent)
    for target_name, _ in swaps:
        try:
            _remove_backup(parent / target_name, _backup(parent / target_name))
        except OSError:
            pass  # the new set is in place; a backup left here is removed by the next save


def finish_transactions(parent: str | os.PathLike) -> None:
    """Complete every save of several folders in ``parent`` that a crash interrupted after its
    commit (:func:`atomic_write_dirs`). Every folder save calls it first; a journal guimem did not
    write is a :class:`DataError` naming it."""
    for journal in _journals(Path(parent)):
        _roll_forward(Path(parent), journal)
    if Path(parent).is_dir():  # a journal's own temporary file, left by a crash before the journal was written
        for p in Path(parent).iterdir():
            if p.name.startswith("..guimem-txn-") and _TMP in p.name and not p.is_dir():
                p.unlink(missing_ok=True)


def _committed(target: Path) -> Path | None:
    """The new version of ``target`` that a committed, unfinished save of several folders left in
    its temporary folder, if any."""
    for journal in _journals(target.parent):
        for name, tmp in _read_journal(journal):
            if name == target.name and (target.parent / tmp).is_dir() and not (target.parent / tmp).is_symlink():
                return target.parent / tmp
    return None


def readable_dir(target: str | os.PathLike, what: str = "saved store") -> Path:
    """``target`` as its last committed save left it: the new folder of a save of several folders
    that a crash interrupted after its commit (:func:`atomic_write_dirs`), else ``target``, else
    its backup left by a save that crashed between its two renames."""
    target = Path(target)
    committed = _committed(target)
    if committed is not None:
        return committed
    if target.is_dir():
        return target
    backup = target.parent / f".{target.name}.old"
    if backup.is_dir():
        return backup
    raise DataError("path", f"no {what} here", str(target))


# ============================================================================= reading
# A string, or an unterminated one up to the end: scanning never restarts, so this is linear
# even for an unterminated '"\"\"\"...' (the plain '"(...)*"' rescans it from every quote).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)


def json_depth(text: str) -> int:
    """The deepest bracket nesting of JSON ``text`` (brackets inside strings not counted), in linear time."""
    if text.count("[") + text.count("{") <= 1:
        return text.count("[") + text.count("{")
    codes = np.frombuffer(_JSON_STRING.sub("", text).encode("utf-8", "replace"), dtype=np.uint8)
    opens = (codes == ord("[")) | (codes == ord("{"))
    closes = (codes == ord("]")) | (codes == ord("}"))
    return int(np.cumsum(opens.astype(np.int32) - closes).max(initial=0))


def parse_json(text: str, where: str | None = None, field: str = "json") -> Any:
    """``text`` parsed as JSON; any failure is a :class:`DataError` at ``where`` (``field``)."""
    if json_depth(text) > MAX_JSON_DEPTH:
        raise DataError(field, f"nested deeper than {MAX_JSON_DEPTH} levels", where)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(field, f"malformed JSON at line {err.lineno} column {err.colno}: {err.msg}", where) from None
    except (ValueError, OverflowError, RecursionError) as err:  # e.g. an integer of more than 4300 digits
        raise DataError(field, f"unreadable JSON: {str(err)[:120]}", where) from None


def read_text(path: str | os.PathLike) -> str:
    """The UTF-8 text of the file ``path``; missing, a folder or not UTF-8 is a :class:`DataError`."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):  # a FIFO or device would block or never end
            raise DataError("file", "is not a regular file", str(path))
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError("file", "missing", str(path)) from None
    except IsADirectoryError:
        raise DataError("file", "is a folder, expected a file", str(path)) from None
    except UnicodeDecodeError as err:
        raise DataError("file", f"not UTF-8 text ({err.reason} at byte {err.start})", str(path)) from None
    except OSError as err:
        raise DataError("file", f"unreadable ({err.strerror})", str(path)) from None


def read_json(path: str | os.PathLike) -> Any:
    """The JSON document in ``path``; every way it can be bad is a :class:`DataError` naming it."""
    return parse_json(read_text(path), str(path))


def read_jsonl(path: str | os.PathLike) -> list[tuple[int, Any]]:
    """``(line number, document)`` for every non-blank line of the JSON-lines file ``path``."""
    out = []
    # split("\n"), not splitlines(): U+2028 and other Unicode breaks may sit raw inside a JSON string
    for lineno, line in enumerate(read_text(path).split("\n"), start=1):
        if line.strip():
            out.append((lineno, parse_json(line, f"{path}, line {lineno}", field="line")))
    return out


def check_finite(array: np.ndarray, field: str, path: str | None = None) -> np.ndarray:
    """``array`` if every value is finite; else a :class:`DataError` naming the field and the first bad index."""
    a = np.asarray(array)
    if a.dtype.kind in "fc" and not np.isfinite(a).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
        raise DataError(field, f"holds a non-finite value at index {bad}", path)
    return array


_MAX_FLOAT = 1.7976931348623157e308  # sys.float_info.max


def check_number(value: Any, field: str, lo: float | None = None, hi: float | None = None,
                 integer: bool = False, path: str | None = None) -> float | int:
    """``value`` if it is a finite number (an integer if ``integer``) within ``[lo, hi]``; else a DataError."""
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise DataError(field, f"expected {kind}, got {type(value).__name__} {value!r:.60}", path)
    if isinstance(value, float) and not math.isfinite(value):
        raise DataError(field, f"expected a finite number, got {value!r}", path)
    if (lo is not None and value < lo) or (hi is not None and value > hi):  # exact, for integers of any size
        span = f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
        raise DataError(field, f"must be in {span}, got {value!r:.80}", path)
    if not integer and isinstance(value, int) and abs(value) > _MAX_FLOAT:  # read as a real number, it is infinite
        raise DataError(field, f"expected a finite number, got an integer of {len(str(abs(value)))} digits", path)
    return value


# ============================================================================= paths and arrays
def relative_path(rel: Any, field: str, path: str | None = None) -> str:
    """``rel`` if it is a non-empty relative path with no ``..`` part (a path that stays inside the
    folder it is joined to); else a :class:`DataError` at ``path`` under ``field``."""
    if not isinstance(rel, str) or not rel or "\x00" in rel:
        raise DataError(field, f"expected a non-empty relative path, got {rel!r:.80}", path)
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts:
        raise DataError(field, f"must be a relative path inside its folder (not absolute, no '..'), got {rel!r:.80}",
                        path)
    return rel


def file_inside(root: str | os.PathLike, rel: Any, field: str, path: str | None = None) -> Path:
    """``root / rel`` for a :func:`relative_path` ``rel`` that, every symbolic link followed, stays
    inside ``root``; else a :class:`DataError` at ``path`` (default: ``root``) under ``field``."""
    where = str(root) if path is None else path
    target = Path(root) / relative_path(rel, field, where)
    step = os.fspath(root)
    for part in Path(rel).parts:  # with no '..', only a link below root can lead out (a few lstat calls)
        step = os.path.join(step, part)
        if os.path.islink(step):
            if not target.resolve().is_relative_to(Path(root).resolve()):
                raise DataError(field, f"{rel!r:.80} resolves outside {str(root)!r} (to {str(target.resolve())!r})",
                                where)
            break
    return target


def refuse_overlap(source: str | os.PathLike, target: str | os.PathLike, field: str = "target",
                   path: str | None = None) -> None:
    """Refuse (:class:`DataError` under ``field``) a ``target`` folder that is ``source``, lies inside
    it, or holds it, every symbolic link followed: a write there would corrupt what it reads."""
    src, dst = Path(source).resolve(), Path(target).resolve()
    if src == dst or dst.is_relative_to(src) or src.is_relative_to(dst):
        how = "is" if src == dst else "lies inside" if dst.is_relative_to(src) else "holds"
        raise DataError(field, f"{str(target)!r:.200} {how} the source {str(source)!r:.200}; "
                               "choose a folder apart from it", path if path is not None else str(target))


def _shape_text(shape: tuple[int | None, ...]) -> str:
    return "[" + ", ".join("n" if n is None else str(n) for n in shape) + "]"


def _dtype_text(dtype: np.dtype) -> str:
    return dtype.name if dtype.isnative else f"{dtype.name} ({dtype.str}, not this machine's byte order)"


def read_npy(path: str | os.PathLike, field: str, dtype: Any, shape: tuple[int | None, ...],
             finite: bool = True) -> np.ndarray:
    """The array in the ``.npy`` file ``path``, refused with a :class:`DataError` at ``path`` under
    ``field`` unless its header gives ``dtype`` and ``shape`` (``None``: any length on that axis)
    and the file holds exactly those bytes, both checked before any data is read; with
    ``finite``, every value must be finite too (:func:`check_finite`)."""
    path, want = Path(path), np.dtype(dtype)
    if path.is_dir():
        raise DataError(field, "is a folder, expected a .npy file", str(path))
    if not path.exists():
        raise DataError(field, "missing", str(path))
    if not path.is_file():
        raise DataError(field, "is not a regular file", str(path))
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            if version not in ((1, 0), (2, 0)):
                raise DataError(field, f"unsupported .npy format version {version}", str(path))
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            got_shape, _, got_dtype = read_header(f)
            if (got_dtype != want or len(got_shape) != len(shape)
                    or any(w is not None and g != w for g, w in zip(got_shape, shape))):
                raise DataError(field, f"expected {want.name} {_shape_text(shape)}, "
                                       f"got {_dtype_text(got_dtype)} {list(got_shape)}", str(path))
            size = os.fstat(f.fileno()).st_size - f.tell()
            if size != math.prod(got_shape) * want.itemsize:
                raise DataError(field, f"holds {size} bytes of data, its header promises "
                                       f"{math.prod(got_shape) * want.itemsize}", str(path))
            f.seek(0)
            array = np.lib.format.read_array(f, allow_pickle=False)
    except DataError:
        raise
    except (ValueError, EOFError, OSError) as err:
        raise DataError(field, f"not a readable .npy array: {str(err)[:120]}", str(path)) from None
    return check_finite(array, field, str(path)) if finite else array


# ============================================================================= safetensors
SAFETENSORS_FLOAT32 = frozenset({"F32", "F64"})
"""The dtypes a float32 model's weights may be stored in: its own, or wider (read back exactly)."""


def safetensors_header(path: str | os.PathLike, field: str = "weights") -> dict[str, tuple[str, tuple[int, ...]]]:
    """``name -> (dtype code, shape)`` of every tensor of the safetensors file ``path``, from its header
    alone (parsed and checked against the file's size by the format's reader: a cut-short file is
    refused); anything unreadable is a :class:`DataError` at ``path`` under ``field``, never a
    ``SafetensorError``."""
    path = Path(path)
    if not path.is_file():
        raise DataError(field, "missing or not a regular file", str(path))
    try:
        with safe_open(str(path), framework="numpy") as f:
            return {name: (f.get_slice(name).get_dtype(), tuple(f.get_slice(name).get_shape())) for name in f.keys()}
    except (SafetensorError, OSError, ValueError) as err:
        raise DataError(field, f"not a readable safetensors file: {str(err)[:120]}", str(path)) from None


def check_safetensors(path: str | os.PathLike, shapes: Mapping[str, tuple[int, ...]],
                      dtypes: frozenset[str] = SAFETENSORS_FLOAT32, field: str = "weights") -> None:
    """Refuse (a :class:`DataError` at ``path``) a safetensors file that is unreadable, cut short or
    not exactly the tensors ``shapes`` names, each in its shape and one of ``dtypes`` (the file's
    codes: ``F32``, ``I64``, ...). Only the header is read: nothing is allocated for a wrong file.
    ``field`` names an unreadable file; a wrong tensor is named by its own name."""
    path = Path(path)
    found = safetensors_header(path, field)
    for name in sorted(shapes.keys() | found.keys()):
        if name not in found:
            raise DataError(name, "missing (the config describes it)", str(path))
        if name not in shapes:
            raise DataError(name, "not a weight of the model its config describes", str(path))
        dtype, shape = found[name]
        if shape != tuple(shapes[name]):
            raise DataError(name, f"has shape {list(shape)}, the config makes it {list(shapes[name])}", str(path))
        if dtype not in dtypes:
            raise DataError(name, f"has dtype {dtype!r:.20}, expected one of {sorted(dtypes)}", str(path))
