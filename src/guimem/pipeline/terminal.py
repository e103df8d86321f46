"""What the person who runs a stage sees on the runner's terminal while the stage's notebook runs.

Inside a stage the kernel's stderr is a cell output, not a terminal (ipykernel captures it), so
a progress bar the package draws there (:func:`guimem.core.progress.progress_bar`) reaches nobody
while it moves, and the scrubber removes it from the report afterwards. :class:`StageTerminal`
receives the kernel's stderr as it arrives (papermill's ``stderr_file``) and the start of every
code cell (nbclient's ``on_cell_execute`` hook), and shows on a terminal one line that moves,
with the time running even through a cell that draws nothing::

    04_actor: cell 9/23 [07:02], dagger rollouts:  40%|████      | 58/144 [00:40<01:00,  1.43ep/s]

and above it every bar that finished after running :data:`SAY_AFTER` seconds or more, as tqdm leaves
it, and every :func:`~guimem.core.progress.note`. A terminal that fails a write (a closed pipe) is
written to no more; the stage goes on.
Where stderr is not a terminal (a log file, CI) there is no moving line: only the finished bars
and the notes, a line each. Other stderr text (a warning) belongs to the report and is not echoed.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sys
import threading
from typing import Any, Iterator, TextIO

import tqdm.std

from guimem.core.progress import NOTE_PREFIX
from guimem.pipeline.scrub import TQDM_BAR

_CURSOR_OR_COLOUR = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CURSOR_UP = re.compile(r"\x1b\[\d*A")
_ELAPSED = re.compile(r"\[(?:(\d+):)?(\d+):(\d\d)(?=[<,\]])")  # a bar's time block: [01:02<..., [1:01:02, ...
TICK = 1.0  # seconds between redraws of the moving line when nothing else moves it
SAY_AFTER = 2.0  # a bar that finished sooner is not said again (a loop of many short bars would flood a log)


def elapsed(bar: str) -> float:
    """The seconds a tqdm bar's time block says it has run (0 when it has none)."""
    found = _ELAPSED.search(bar)
    if found is None:
        return 0.0
    hours, minutes, seconds = (int(v) if v else 0 for v in found.groups())
    return 3600.0 * hours + 60.0 * minutes + seconds


def shown(text: str) -> str:
    """What a terminal shows of one line of text: its last carriage-return segment, no escape codes."""
    return _CURSOR_OR_COLOUR.sub("", text).split("\r")[-1].rstrip()


class StageTerminal:
    """The runner's terminal during one stage: a moving line on a terminal, finished bars and notes.

    Args:
        name: the stage's notebook, e.g. ``04_actor``.
        cells: how many code cells will run (the moving line counts them).
        stream: where to write (default: the runner's stderr).
        live: draw the moving line (default: when ``stream`` is a terminal).
    """

    def __init__(self, name: str, cells: int, stream: TextIO | None = None, live: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)()) if live is None else live
        self._tail = ""  # the kernel's stderr after its last newline: what its bar shows now
        self._gone = False  # the terminal failed a write: nothing more is written to it
        self._stop = threading.Event()
        line = dict(total=cells, desc=name, bar_format="{desc}: cell {n_fmt}/{total_fmt} [{elapsed}]{postfix}",
                    mininterval=0, leave=True)
        try:
            self._line = tqdm.std.tqdm(file=self.stream, disable=not self.live, **line)
        except (OSError, ValueError):  # the terminal is gone before the first cell (see _guarded)
            self._line, self._gone = tqdm.std.tqdm(disable=True, **line), True
        self._ticker = threading.Thread(target=self._tick, name=f"{name} terminal", daemon=True)
        if self.live and not self._gone:
            self._ticker.start()

    # -- nbclient's hook and papermill's stderr_file (neither may stop the stage: see _guarded)
    def on_cell_execute(self, cell: Any = None, cell_index: int | None = None) -> None:
        """A code cell starts: count it, and forget what the last cell left unfinished on its line."""
        self._tail = ""
        if self._gone:
            return
        with self._guarded():
            if self._line.total is not None and self._line.n >= self._line.total:
                self._line.total = self._line.n + 1  # a cell more than counted: never "cell 3/?"
            self._line.set_postfix_str("", refresh=False)
            self._line.update(1)

    def write(self, text: str) -> int:
        """Take a piece of the kernel's stderr: say each finished bar and note, show the moving bar."""
        *lines, tail = (self._tail + text).replace("\r\n", "\n").split("\n")
        self._tail = tail.split("\r")[-1] if "\r" in tail else tail
        if self._gone:
            return len(text)
        with self._guarded():
            for line in lines:
                self._say_finished(line)
            now = shown(self._tail)
            if self.live and (TQDM_BAR.match(now) or not now):
                self._line.set_postfix_str(self._fit(now), refresh=True)
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            with self._guarded():
                self.stream.flush()

    def close(self) -> None:
        """Stop the moving line, leaving its last state on the terminal."""
        self._stop.set()
        if self._ticker.is_alive():
            self._ticker.join()
        with self._guarded():
            self._line.close()

    def __enter__(self) -> StageTerminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- inside
    @contextlib.contextmanager
    def _guarded(self) -> Iterator[None]:
        """Run a write to the terminal; if the terminal is gone (a closed pipe), stop writing to it
        rather than stop the stage: what the stage computes never depends on who watches it."""
        try:
            yield
        except (OSError, ValueError):  # BrokenPipeError; a closed file
            self._gone = True
            self._stop.set()
            self._line.disable = True  # tqdm draws nothing more, not even when it closes

    def _say_finished(self, raw: str) -> None:
        """Say a line the kernel ended: the bar it holds, as tqdm left it, if it ran long enough to be
        worth a line, and the note it holds. A nested bar's redraw (it moves the cursor up to its row
        and back) ends lines of its own without having finished: it is not said."""
        line = shown(raw)
        bar = TQDM_BAR.match(line)
        redraw = _CURSOR_UP.search(raw) is not None
        said = [line[:bar.end()]] if bar and not redraw and elapsed(bar.group()) >= SAY_AFTER else []
        at = line.find(NOTE_PREFIX)
        for text in said + ([line[at:]] if at >= 0 else []):
            if self.live:
                self._line.write(text, file=self.stream)
            else:
                print(text, file=self.stream, flush=True)

    def _fit(self, text: str) -> str:
        """``text`` cut to what fits beside the line's own part on this terminal."""
        room = shutil.get_terminal_size((120, 24)).columns - len(self._line.desc) - 32
        return text if len(text) <= room else text[:max(room - 1, 0)] + "\u2026"

    def _tick(self) -> None:
        while not self._stop.wait(TICK):
            with self._guarded():
                self._line.refresh()
