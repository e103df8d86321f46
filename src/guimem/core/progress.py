"""Progress bars for long work, and notes for whoever watches a run: where each one shows.

Every long loop in the package reports through :func:`progress_bar`, and a word meant for the person
watching, not for the results (``3 of 3 plays read back from the cache``), through :func:`note`.
Where they show depends on who runs the code:

- in JupyterLab: tqdm's widget, in the cell (``tqdm.auto``);
- in a script or a command on a terminal: tqdm's text bar on stderr;
- in a pipeline stage, where :mod:`guimem.pipeline.runner` runs the notebook and sets
  :data:`STAGE_ENV` in the kernel's environment: a text bar on the kernel's stderr, which the
  runner shows on its own terminal as it moves (the kernel's stderr is a cell output there, not
  a terminal) and :mod:`guimem.pipeline.scrub` removes from the report, as it removes a note's
  line. A stage's report is then the same whoever watched it, and whatever a cache held.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterable

import tqdm.auto
import tqdm.std

STAGE_ENV = "GUIMEM_STAGE"  # set by the runner in a stage's kernel: the stage notebook's name
NOTE_PREFIX = "[guimem] "  # a note's line starts with it, so that the runner and the scrubber know it
STAGE_MININTERVAL = 0.5  # seconds between a stage's redraws: each one is a message to the runner
STAGE_BAR_FORMAT = "{l_bar}{bar:10}{r_bar}"  # a short bar: the runner shows it after the stage's own words


def in_stage() -> bool:
    """Whether this process is a pipeline stage's kernel (see :data:`STAGE_ENV`)."""
    return bool(os.environ.get(STAGE_ENV))


def _in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (a cell shows tqdm's widget)."""
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None and hasattr(shell, "get_ipython") else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def progress_bar(iterable: Iterable[Any] | None = None, *, desc: str, total: int | None = None, unit: str = "it",
                 disable: bool | None = False, leave: bool = True, **kwargs: Any) -> tqdm.std.tqdm:
    """A tqdm bar over ``iterable`` (or one to ``update`` by hand), drawn where its watcher sees it.

    ``disable=None`` shows it only to someone watching: a terminal, a notebook, or a stage's runner.
    """
    if disable is None and (in_stage() or _in_notebook()):
        disable = False  # (tqdm itself would hide a bar whose stderr is no terminal)
    if in_stage():  # text on the kernel's stderr: the runner echoes it, the scrubber drops it
        kwargs.setdefault("mininterval", STAGE_MININTERVAL)
        kwargs.setdefault("bar_format", STAGE_BAR_FORMAT)
        kwargs.setdefault("position", 0)  # a nested bar redraws in place: no cursor moves between rows
        return tqdm.std.tqdm(iterable, desc=desc, total=total, unit=unit, disable=disable, leave=leave,
                             file=sys.stderr, **kwargs)
    return tqdm.auto.tqdm(iterable, desc=desc, total=total, unit=unit, disable=disable, leave=leave, **kwargs)


def note(message: str) -> None:
    """Tell whoever watches this run ``message``, on stderr: a line of its own that a stage's
    runner shows on its terminal and leaves out of the report (a note never holds a result)."""
    for line in message.splitlines() or [""]:
        print(NOTE_PREFIX + line, file=sys.stderr, flush=True)
