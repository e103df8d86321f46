"""An episode store already written (by :mod:`guimem.real.recorder` from a phone, or by hand with
:func:`guimem.core.store.save_episodes`) taken in as any recording is: screenshots optionally
downscaled, OCR text elements for screens without a UI tree, screen labels joined — into a new
store. The source store is read, never changed; each episode's id becomes its ``source_name``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Mapping

from guimem.core.data import Episode
from guimem.core.executor import Executor
from guimem.core.io import readable_dir
from guimem.core.store import load_episodes
from guimem.real.importers.common import ScreenshotFiles, check_max_side, write_import

FORMAT = "store"


def import_store(src: str | os.PathLike, store: str | os.PathLike, max_side: int | None = None, ocr: bool = False,
                 labels: Mapping[str, Any] | None = None,
                 subgoal_labels: Mapping[str, Any] | None = None,
                 executor: Executor | None = None) -> list[Episode]:
    """Copy the episode store ``src`` (every screenshot verified) into the episode store ``store``;
    ``max_side`` downscales screenshots; with ``ocr``, screens recorded without a UI tree get the
    text elements OCR reads on them (:mod:`guimem.real.ocr`); ``labels`` maps an episode's id to
    its screens' types (:func:`~guimem.real.importers.common.with_labels`); ``subgoal_labels``
    maps it to its subgoals (:func:`~guimem.real.importers.common.with_subgoal_labels`);
    ``executor`` runs the OCR (:func:`~guimem.real.importers.common.with_ocr`). Everything is
    checked before anything is written. Returns the episodes as stored."""
    root = readable_dir(src, "episode store")  # a store left as only its backup is read too
    check_max_side(max_side)
    episodes = [dataclasses.replace(e, provenance={"source_name": e.id,
                                                   "final_screen": "recorded" if e.final_recorded else "not recorded",
                                                   **dict(e.provenance)})
                for e in load_episodes(root, verify_images=True)]
    files = {o.screenshot: root / o.screenshot for e in episodes for o in e.observations}
    write_import(episodes, ScreenshotFiles(files, max_side), store, {"format": FORMAT, "path": str(Path(src))},
                 ocr=ocr, labels=labels,
                 subgoal_labels=subgoal_labels, executor=executor)
    return load_episodes(store, verify_images=False)
