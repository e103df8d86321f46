"""Atomic folder saves, stamped with their kind, and saves of several folders as one.

* :func:`atomic_write_dir`: a fresh sibling temporary folder filled by ``write(folder)``, every
  file fsynced, then swapped in. The previous folder is first moved aside to ``.<name>.old``
  and deleted once the new one is in place, so at every instant the target or its backup is
  complete; :func:`readable_dir` falls back to the backup. Entries of the old folder that are
  not the kind's own (a user's notes, a README) are carried into the new one.
* :func:`atomic_write_dirs`: several sibling folders as one save (a split's train, test and
  memory): a journal written after every new folder is complete is the commit point, so after a
  crash the set is all old or all new, and the next save (or :func:`readable_dir`) follows it.

Saves and loads may run at the same time, from any number of processes:

* saves into one folder take turns (:func:`guimem.core.io.write.saving`, an ``flock`` held from a
  save's first check to its last rename), so two saves of one store never remove each other's
  temporary folders, and each carries the user's files of the version it replaces;
* :func:`read_whole` reads a folder as one version: a saved folder is never changed in place (a
  save fills a new one and renames it in), so a load that finds the same folder, by device, inode
  and change time, before and after it read is one version whole; a load that overlapped a swap
  is read again, and a :class:`DataError` says a save is under way if saves never pause.

A save **never destroys what it did not write**: a folder save stamps its folder with a marker
file (:data:`MARKER`) naming the *kind* of store (``guimem.episodes``, ``guimem.memory_graph``,
...), and refuses, writing nothing, to replace a target that exists and is not a store of the
same kind (an empty folder is fine: there is nothing to lose). Leftovers of interrupted saves
(``.<name>.tmp-*``) are removed by the next save of the same target.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
import shutil
import stat
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypeVar

from guimem.core.data import DataError
from guimem.core.io.read import read_json
from guimem.core.io.write import (
    _TMP,
    _clean_leftovers,
    _fsync_file,
    _fsync_folder,
    _make_parent,
    _usual_mode,
    atomic_write_bytes,
    json_text,
    UnwritableError,
    saving,
    unwritable,
)

T = TypeVar("T")

MARKER = ".guimem-kind"
"""File inside every folder :func:`atomic_write_dir` writes; its text is the folder's kind."""


def _fsync_tree(folder: Path) -> None:
    """Flush every file under ``folder`` and every folder's entries (a new file's name lives there).

    In threads: an fsync waits on the disk without holding the GIL, and the file system commits
    concurrent ones together.
    """
    entries = [p for p in folder.rglob("*") if not p.is_symlink()]
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(_fsync_file, [p for p in entries if p.is_file()]))  # list(): re-raises a failure
        list(pool.map(_fsync_folder, [p for p in entries if p.is_dir()] + [folder]))


def _remove_backup(target: Path, backup: Path) -> None:
    """Delete ``backup`` by first renaming it to a temporary sibling of ``target`` (one atomic step):
    a kill during the deletion then leaves a ``.<name>.tmp-*`` leftover the next save removes, never
    a half-deleted ``.<name>.old`` without its marker that would refuse every later save."""
    if not backup.exists() and not backup.is_symlink():
        return
    doomed = Path(tempfile.mkdtemp(prefix=f".{target.name}{_TMP}", dir=target.parent))
    os.replace(backup, doomed)  # onto the empty folder just made: a rename, atomic
    shutil.rmtree(doomed, ignore_errors=True)


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
    try:
        with saving(parent):
            return _save_all(parent, saves)
    except OSError as err:  # a full disk, a read-only folder: nothing was replaced
        raise unwritable(err, saves[0].target) from err


def _save_all(parent: Path, saves: list[FolderWrite]) -> list[Path]:
    """:func:`atomic_write_dirs`'s work, under the save lock of ``parent``."""
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
            try:
                _fill(made[-1], s)
            except OSError as err:  # named as the save of the target, not of its temporary folder
                elsewhere = err.filename is not None and not Path(err.filename).is_relative_to(parent)
                if elsewhere:  # a file the writer read (a source screenshot): that file is at fault
                    raise DataError("file", f"unreadable while saving {s.target} ({err.strerror or err})",
                                    str(err.filename)) from err
                raise unwritable(err, s.target).moved(made[-1], s.target) from err
            except UnwritableError as err:  # a file save inside the temporary folder
                raise err.moved(made[-1], s.target) from err
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
    try:
        st = os.stat(journal, follow_symlinks=False)
    except FileNotFoundError:
        return []  # completed and removed by its save since it was listed
    if not stat.S_ISREG(st.st_mode):
        raise DataError("journal", "not a regular file; remove it yourself", where)
    if st.st_size == 0:
        return []  # a name reserved by a save that crashed before writing it: nothing was committed
    try:
        data = read_json(journal)
    except DataError:
        if not journal.exists():
            return []  # removed by its save while it was read
        raise
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


READ_ATTEMPTS = 40
"""How many times :func:`read_whole` reads a folder that saves keep replacing before it gives up."""


def _version(folder: Path) -> tuple[int, int, int] | None:
    """What tells one saved version of a folder from another: its device, inode and change time
    (a rename sets the change time, so a new folder that reuses a deleted one's inode differs)."""
    try:
        st = os.stat(folder)  # a link to a folder: the folder's own version
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_ctime_ns


def read_whole(target: str | os.PathLike, read: Callable[[Path], T], what: str = "saved store") -> T:
    """``read(folder)`` on the folder :func:`readable_dir` finds for ``target``, as one saved version.

    The read is repeated while a save replaces the folder under it (the folder it read from is no
    longer the one there); an error it raised (a file that vanished with the old version) counts
    only if the folder did not change meanwhile. After :data:`READ_ATTEMPTS` reads that all
    overlapped a save, a :class:`DataError` says a save is under way."""
    target = Path(target)
    for attempt in range(READ_ATTEMPTS):
        try:
            folder = readable_dir(target, what)
        except (DataError, OSError):
            if attempt + 1 < READ_ATTEMPTS and _save_under_way(target):
                time.sleep(0.002 * (attempt + 1))
                continue
            raise
        before = _version(folder)
        try:
            result = read(folder)
        except Exception:  # a check that failed on files of two versions is no verdict on either
            if before is not None and _version(folder) == before and _still_found(target, folder):
                raise  # nothing changed while it read: the folder itself is bad
        else:
            if before is not None and _version(folder) == before and _still_found(target, folder):
                return result
        time.sleep(0.002 * (attempt + 1))
    raise DataError("path", f"a save of this {what} was under way during {READ_ATTEMPTS} attempts to read it; "
                            "try again when it has finished", str(target))


def _still_found(target: Path, folder: Path) -> bool:
    """Whether :func:`readable_dir` still finds ``folder`` for ``target`` (not a newer committed save)."""
    try:
        return readable_dir(target) == folder
    except (DataError, OSError):
        return False


def _save_under_way(target: Path) -> bool:
    """Whether a save's traces of ``target`` are there (its temporary folder, backup or journal)."""
    prefix = (f".{target.name}{_TMP}", f".{target.name}.old", ".guimem-txn-")
    try:
        return any(p.name.startswith(prefix) for p in target.parent.iterdir())
    except OSError:
        return False
