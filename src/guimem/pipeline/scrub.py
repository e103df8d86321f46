"""An executed notebook with what changes from run to run removed, so that a stage's report is reproducible.

The executed notebook is a stage output, so it must be byte-identical when the stage is run
again with the same parameters. :func:`scrub_notebook` therefore removes or normalises
everything that varies between runs while keeping what a reader needs:

- papermill's start/end times and durations (notebook and cell metadata) and the kernel's
  per-cell execution timestamps (execution counts are kept: they are deterministic);
- tqdm progress bars in stream outputs (their rates and times vary), and the lines of
  :func:`~guimem.core.progress.note` on stderr (they tell whoever watches the run, e.g. what a
  cache held; the runner shows both on its terminal); other text, such as warnings, is kept;
- object memory addresses (``<Foo object at 0x7f3a...>`` becomes ``at 0x...``);
- absolute paths under the repository root (written relative to it), so that two clones
  in different folders give the same bytes;
- randomly generated cell ids (the injected parameters cell, notebooks without ids) and
  interactive-widget state.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat

from guimem.core.progress import NOTE_PREFIX

_RUN_TIMES = ("start_time", "end_time", "duration")
_WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
# A tqdm bar from the start of its segment up to its time block, e.g.
# "epoch:  40%|####      | 4/10 [00:01<00:02,  3.10it/s, loss=0.3]" or "12it [00:00, 99.0it/s]".
TQDM_BAR = re.compile(r"^.*?\[(?:\d+:)?\d+:\d\d(?:<(?:(?:\d+:)?\d+:\d\d|\?))?, [^\]]*\]")
_ADDRESS = re.compile(r"(\bat )0x[0-9a-fA-F]+\b")
# Where ipykernel compiles each cell: "/tmp/ipykernel_8123/1491801196.py" (the kernel's pid varies).
_CELL_FILE = re.compile(r"[^\s\"'(]*ipykernel_\d+([/\\]\d+\.py)")
_CURSOR = re.compile(r"\x1b\[\d*[A-D]")  # cursor moves: tqdm's nested bars step up and down with them
_CELL_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _relative(path: str, root: Path) -> str:
    """``path`` relative to ``root`` when it lies under it, else unchanged."""
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except ValueError:
        return path


def scrub_progress(text: str) -> str:
    """Remove tqdm progress bars from stream text; keep everything else, warnings included.

    A line holding carriage returns is what a terminal overwrites: its bar segments are
    dropped and any other text on it kept; without a bar only its last segment is shown.
    Cursor moves (how nested bars redraw) are dropped, and a line holding nothing else with them.
    """
    out: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        moved = _CURSOR.sub("", line)
        if moved != line and not moved.strip():
            continue
        line = moved
        segments = line.split("\r")
        if len(segments) == 1 and not TQDM_BAR.search(line):
            out.append(line)
            continue
        cleaned = [TQDM_BAR.sub("", s) for s in segments]
        kept = [c for c in cleaned if c.strip()]
        if cleaned == segments:  # carriage returns but no bar: the terminal shows the last text
            kept = kept[-1:]
        out.extend(kept)
    return "\n".join(out)


def scrub_notes(text: str) -> str:
    """Remove the notes of :func:`~guimem.core.progress.note`: from its prefix to the end of its line
    (text written before it on that line without a newline is kept), and the line if nothing is left."""
    out = []
    for line in text.split("\n"):
        at = line.find(NOTE_PREFIX)
        if at < 0:
            out.append(line)
        elif line[:at].strip():
            out.append(line[:at])
    return "\n".join(out)


def scrub_text(text: str, root: Path | None = None) -> str:
    """Normalise memory addresses and kernel cell files; write paths under ``root`` relative to it."""
    text = _CELL_FILE.sub(r"ipykernel\1", _ADDRESS.sub(r"\g<1>0x...", text))
    if root is not None and len(root.parts) > 1:
        for prefix in {str(root), str(root.resolve())}:
            text = text.replace(prefix + os.sep, "").replace(prefix, ".")
    return text


def _merge_streams(outputs: list[dict]) -> list[dict]:
    """Each run of consecutive stream outputs as one stdout then one stderr output.

    The kernel flushes stdout and stderr on separate timers, so how their chunks interleave
    varies from run to run; a fixed order keeps the notebook reproducible (and a progress
    bar that spans several messages is scrubbed whole).
    """
    merged: list[dict] = []
    run: dict[str, str] = {}
    for out in [*outputs, None]:
        if out is not None and out.get("output_type") == "stream":
            run[out["name"]] = run.get(out["name"], "") + out["text"]
            continue
        for name in sorted(run, key=lambda n: (n != "stdout", n != "stderr", n)):
            merged.append(nbformat.v4.new_output("stream", name=name, text=run[name]))
        run = {}
        if out is not None:
            merged.append(out)
    return merged


def _scrub_output(out: dict, root: Path | None) -> dict | None:
    """One cell output scrubbed, or None when nothing worth keeping is left."""
    kind = out.get("output_type")
    if kind == "stream":
        text = scrub_progress(out["text"])
        out["text"] = scrub_text(scrub_notes(text) if out.get("name") == "stderr" else text, root)
        return out if out["text"].strip() else None
    if kind == "error":
        out["evalue"] = scrub_text(out.get("evalue", ""), root)
        out["traceback"] = [scrub_text(line, root) for line in out.get("traceback", [])]
        return out
    if kind in ("display_data", "execute_result"):
        data = out.get("data", {})
        if data.pop(_WIDGET_MIME, None) is not None:  # a live widget (e.g. tqdm.notebook): its text is a bar
            data["text/plain"] = scrub_progress(data.get("text/plain", ""))
            if not any(str(v).strip() for v in data.values()):
                return None
        for mime, value in data.items():
            if mime.startswith("text/") and isinstance(value, str):
                data[mime] = scrub_text(value, root)
        out.get("metadata", {}).pop(_WIDGET_MIME, None)
        return out
    return out


def _stable_cell_ids(nb: dict, input_ids: set[str]) -> None:
    """Replace cell ids the input notebook did not have (papermill's, nbformat's) by stable ones."""
    used = {c.get("id") for c in nb["cells"] if c.get("id") in input_ids}
    for index, cell in enumerate(nb["cells"]):
        if "id" not in cell or cell["id"] in input_ids:
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        base = "injected-parameters" if "injected-parameters" in tags else f"cell-{index}"
        new, n = base, 1
        while new in used or not _CELL_ID.match(new):
            new, n = f"{base}-{n}", n + 1
        cell["id"] = new
        used.add(new)


def scrub_notebook(nb: dict, root: Path | None = None, input_ids: set[str] | None = None) -> dict:
    """Remove run-to-run noise from an executed notebook, in place; returns it."""
    meta = nb.setdefault("metadata", {})
    meta.pop("widgets", None)
    pm = meta.get("papermill", {})
    for key in _RUN_TIMES:
        pm.pop(key, None)
    if root is not None:
        for key in ("input_path", "output_path"):
            if isinstance(pm.get(key), str):
                pm[key] = _relative(pm[key], root)
    for cell in nb["cells"]:
        cell_meta = cell.setdefault("metadata", {})
        cell_meta.pop("execution", None)
        for key in _RUN_TIMES:
            cell_meta.get("papermill", {}).pop(key, None)
        if cell.get("cell_type") == "code":
            outputs = [_scrub_output(o, root) for o in _merge_streams(cell.get("outputs", []))]
            cell["outputs"] = [o for o in outputs if o is not None]
    _stable_cell_ids(nb, input_ids or set())
    return nb
