"""Run a notebook as a pipeline stage: papermill, then scrub what changes from run to run.

Every DVC stage calls this module::

    python -m guimem.pipeline.runner notebooks/00_world.py reports/00_world.ipynb \\
        -p seed 0 -p episodes 400

A stage notebook is a jupytext percent script (``notebooks/NN_stage.py``, the one committed
form: JupyterLab opens it as a notebook and saves it back unchanged, see ``jupytext.toml``);
:func:`read_notebook` also reads ``.ipynb`` files. The executed notebook is written as ``.ipynb``.

Values are typed like papermill's ``-p`` (see :func:`parse_value`). A stage's values come from
the YAML file itself, never through a shell: ``-f params.yaml:world`` passes every key of that
section, and ``-y NAME TEMPLATE`` one value named by its dotted key (``-y seed {base.seed}``,
``-y world_dir data/{base.episodes}``, ``-y actor {closed_loop.actor}``; see
:func:`values_from_templates`). DVC commands therefore hold no ``${...}``: a value DVC pastes into
a command is read by the shell first (a folder name with a space splits, a ``;`` runs what follows).
``-p`` overrides both.

Before any kernel starts, a stage notebook's complete parameters (its ``parameters`` cell's
defaults, then ``-f``, then ``-p``, as papermill would see them) are checked by the stage's
spec in :mod:`guimem.pipeline.stages`: a bad value exits with status 2 and a
:class:`~guimem.core.data.DataError` naming it where it was set (``params.yaml: field
'world.phone.themes'``, or ``field 'seed' ... (passed with -p)``), and nothing is written.
``--check`` stops there.

The executed notebook is a stage output, so it must be byte-identical when the stage is
run again with the same parameters: :func:`~guimem.pipeline.scrub.scrub_notebook` removes or
normalises everything that varies between runs (times, progress bars, memory addresses,
absolute paths, random cell ids) before it is written.

While the notebook runs, the kernel's progress bars and notes (:mod:`guimem.core.progress`; the
kernel learns it is a stage from ``GUIMEM_STAGE``) are shown on the runner's stderr by
:class:`~guimem.pipeline.terminal.StageTerminal`, and left out of the report.

The kernel runs with the repository root as its working directory, so the notebook's
relative paths (``data/...``, ``figures/...``) resolve as they do for DVC (in JupyterLab,
where a kernel starts in ``notebooks/``, :func:`enter_repo_root` does the same), and with
``PYTHONHASHSEED=0`` so that set and dict-of-str iteration orders are reproducible.
A failing cell makes :func:`run_notebook` raise :class:`NotebookError` (the CLI prints its
message and exits 1) and nothing is written: the output path is left untouched.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import jupytext
import nbformat
import papermill
import yaml
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from papermill.exceptions import PapermillExecutionError
from papermill.translators import papermill_translators

from guimem.core.data import DataError
from guimem.core.io import atomic_write_text, read_json
from guimem.core.progress import STAGE_ENV
from guimem.pipeline.params import (
    CALLER,
    COMMAND_LINE,
    Source,
    check_base,
    find_stage,
    refuse_unencodable,
    templates_file,
    values_from_templates,
)
from guimem.pipeline.paths import repo_root
from guimem.pipeline.scrub import scrub_notebook
from guimem.pipeline.terminal import StageTerminal

KERNEL_NAME = "python3"
KERNEL_ENV: dict[str, str] = {"PYTHONHASHSEED": "0", "HF_HUB_OFFLINE": "1"}  # set unless already set
# The kernel's own log is not the notebook's output: below CRITICAL it says that its loopback socket
# is unencrypted and, at ERROR, "KeyboardInterrupt caught in kernel" whenever the SIGINT that
# jupyter_client sends before every shutdown finds the kernel still busy (a slow machine, after a
# successful run). A cell's warnings and errors reach the notebook (and papermill) either way; a
# kernel that dies is papermill's DeadKernelError.
KERNEL_ARGS: tuple[str, ...] = ("--IPKernelApp.log_level=CRITICAL",)

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_WORDS: dict[str, Any] = {"True": True, "true": True, "False": False, "false": False,
                          "None": None, "null": None, "~": None}


class NotebookError(RuntimeError):
    """A notebook could not be run: names the notebook, the cell and the error."""


# ----------------------------------------------------------------------------- parameters
def parse_value(text: str) -> Any:
    """Type one ``-p`` value: bool, None, int, float, a YAML ``[list]``/``{map}``, else the string.

    Scalars follow papermill's ``-p`` (``True``/``False``/``None``, ints, floats such as
    ``1e-05``) and also accept YAML's lower-case ``true``/``false``/``null``, which is how
    DVC renders booleans. Words YAML 1.1 would turn into booleans (``yes``, ``no``, ``on``)
    stay strings, so that a label such as ``no`` survives.
    """
    if text in _WORDS:
        return _WORDS[text]
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.lstrip().startswith(("[", "{")):
        try:
            return load_params_text(text)
        except (yaml.YAMLError, RecursionError, DataError) as err:
            raise ValueError(shorten(f"parameter value {shorten(repr(text))} looks like a YAML list or map but does "
                                     f"not parse: {err}", 400)) from err
    return text


def parse_parameters(pairs: Sequence[Sequence[str]]) -> dict[str, Any]:
    """``[(name, value), ...]`` from the command line to a typed dict; a repeated name is an error.

    A name is a Python identifier (``seed``), or a group's and its field's (``actor.actor_model``:
    one field of the group ``actor``, see :func:`read_parameters`)."""
    params: dict[str, Any] = {}
    for name, value in pairs:
        parts = name.split(".")
        if len(parts) > 2 or not all(part.isidentifier() for part in parts):
            raise ValueError(f"parameter name {shorten(repr(name))} is not a Python identifier "
                             "(or a group's and its field's: group.field)")
        if name in params:
            raise ValueError(f"parameter {shorten(repr(name))} given twice")
        params[name] = parse_value(value)
    return params


def yaml_source(spec: str) -> Source:
    """Where the values of ``-f FILE:KEY`` are set: section ``KEY`` of ``FILE``."""
    path, _, key = spec.partition(":")
    return Source(path, key)


MAX_PARAMS_BYTES = 1 << 20  # a parameter file is read whole: params.yaml is ~15 KB
_YAML12_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_YAML12_NULL = {"", "~", "null", "Null", "NULL"}
# YAML 1.2's core schema as ruamel.yaml (DVC's reader) resolves it, underscores and 0b included.
_YAML12_INTS = ((re.compile(r"[-+]?[0-9_]+"), 10), (re.compile(r"[-+]?0o[0-7_]+"), 8),
                (re.compile(r"[-+]?0x[0-9a-fA-F_]+"), 16), (re.compile(r"[-+]?0b[01_]+"), 2))
_YAML12_FLOAT = re.compile(r"[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?")
_YAML12_SPECIAL = re.compile(r"([-+]?)\.(?:(inf|Inf|INF)|nan|NaN|NAN)")
_PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("bool", "int", "float", "null")}
_STR_TAG = "tag:yaml.org,2002:str"


def yaml12_reading(text: str) -> Any:
    """What YAML 1.2 (ruamel.yaml, as DVC reads params.yaml) makes of the plain scalar ``text``, for
    the scalars YAML 1.1 may read otherwise: a bool, None, an int, a float, else the text."""
    if text in _YAML12_BOOL:
        return _YAML12_BOOL[text]
    if text in _YAML12_NULL:
        return None
    digits = text.replace("_", "")
    for pattern, base in _YAML12_INTS:
        if pattern.fullmatch(text) and any(c.isalnum() for c in digits[-1:]):
            sign, body = (-1, digits[1:]) if digits.startswith("-") else (1, digits.lstrip("+"))
            try:
                return sign * int(body[2:] if base != 10 else body, base)
            except ValueError:
                return text
    if (special := _YAML12_SPECIAL.fullmatch(text)) is not None:
        return float(f"{special[1]}{'inf' if special[2] else 'nan'}")
    if _YAML12_FLOAT.fullmatch(text) and any(c.isdigit() for c in text):
        return float(digits)
    return text


def _same(a: Any, b: Any) -> bool:
    """Equal and of one type (NaN equal to NaN)."""
    return type(a) is type(b) and (a == b or (isinstance(a, float) and a != a and b != b))


class ParamsError(DataError):
    """A parameter file that cannot be read as written: names the file, the key and the line."""


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader that reads only what YAML 1.1 and 1.2 (DVC's ruamel.yaml) read alike.

    Refused, naming the key: aliases and anchors (a nested alias is a billion-laughs bomb: it is
    refused before anything is built), merge keys, explicit tags other than ``!!str``, duplicate
    keys (PyYAML keeps the last silently, DVC refuses the file), and plain scalars the two YAML
    versions read differently (``0400``: 256 or 400; ``1:30``: 90 or a string; ``yes``: true or a
    string; ``1e3``: a string or 1000.0).
    """

    def __init__(self, stream: str, path: str | None):
        super().__init__(stream)
        self.where, self.keys = path, [""]  # keys: the dotted key of the node being composed

    def refuse(self, key: str, message: str, mark: Any) -> ParamsError:
        line = f" (line {mark.line + 1})" if mark is not None else ""
        return ParamsError(shorten(key, 120) or "(top level)", shorten(message, 240) + line, self.where)

    def compose_node(self, parent: Any, index: Any) -> Any:
        if parent is None:
            key = ""
        else:
            part = index.value if isinstance(index, yaml.ScalarNode) else ("(a key)" if index is None else str(index))
            key = ".".join(k for k in (self.keys[-1], shorten(str(part), 60)) if k)
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise self.refuse(key, f"an alias (*{shorten(event.anchor, 40)}) is not read: write the value out "
                                   "(aliases expand without bound)", event.start_mark)
        if getattr(event, "anchor", None) is not None:
            raise self.refuse(key, f"an anchor (&{shorten(event.anchor, 40)}) is not read: aliases are refused, "
                                   "write each value out", event.start_mark)
        tag = getattr(event, "tag", None)
        if tag not in (None, "!", _STR_TAG) and not (isinstance(event, yaml.ScalarEvent) and tag == "!!str"):
            raise self.refuse(key, f"the explicit tag {shorten(tag, 40)!r} is not read: write the value plainly "
                                   "(quotes for text)", event.start_mark)
        self.keys.append(key)
        try:
            return super().compose_node(parent, index)
        finally:
            self.keys.pop()

    def compose_scalar_node(self, anchor: Any) -> Any:
        event = self.peek_event()
        node = super().compose_scalar_node(anchor)
        if event.style is None and event.implicit[0] and node.tag in _PLAIN_TAGS | {_STR_TAG}:
            old = self.construct_object(node)
            new = yaml12_reading(node.value)
            if not _same(old, new) and not (node.tag == _STR_TAG and new == node.value):
                raise self.refuse(self.keys[-1], f"{node.value!r:.40} reads as {old!r:.40} in YAML 1.1 (PyYAML) but "
                                                 f"as {new!r:.40} in YAML 1.2 (DVC's ruamel.yaml): write it so both "
                                                 "agree (e.g. 400, 0.001, true, or quote text)", event.start_mark)
        return node

    def compose_mapping_node(self, anchor: Any) -> Any:
        node = super().compose_mapping_node(anchor)
        seen: set[Any] = set()
        for key_node, _ in node.value:
            here = self.keys[-1]
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.refuse(here, "a key must be a plain name, not a list or a mapping", key_node.start_mark)
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise self.refuse(here, "a merge key (<<) is not read: write each key out", key_node.start_mark)
            name = self.construct_object(key_node)
            try:
                hash(name)
            except TypeError:
                raise self.refuse(here, "a key must be a plain name", key_node.start_mark) from None
            if (type(name), name) in seen:
                full = ".".join(k for k in (here, shorten(str(name), 60)) if k)
                raise self.refuse(full, "the key is given twice (YAML would keep only the last)", key_node.start_mark)
            seen.add((type(name), name))
        return node


def shorten(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters (an ellipsis marks a cut)."""
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def load_params_text(text: str, path: str | None = None) -> Any:
    """Parse YAML parameter text with :class:`_StrictLoader`; a refusal is a :class:`ParamsError`."""
    loader = _StrictLoader(text, path)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def read_params_file(path: str) -> Any:
    """The whole YAML parameter file ``path``, read strictly (see :class:`_StrictLoader`), at most 1 MiB."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_PARAMS_BYTES + 1)
        if len(raw) > MAX_PARAMS_BYTES:
            raise ValueError(f"{path}: cannot read parameters: larger than {MAX_PARAMS_BYTES} bytes")
        return load_params_text(raw.decode("utf-8"), path)
    except ParamsError:
        raise
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as err:  # recursion: nested too deep
        raise ValueError(shorten(f"{path}: cannot read parameters: {err}", 600)) from err


def params_from_yaml(spec: str) -> dict[str, Any]:
    """``FILE:KEY`` to the mapping at the dotted ``KEY`` of the YAML ``FILE`` (``FILE`` alone: all of it).

    For stages whose parameters include lists or maps, which DVC cannot interpolate into a
    command: ``--params-from params.yaml:world`` passes every key of the ``world`` section.
    The whole file is read strictly (:func:`read_params_file`), as DVC reads it.
    """
    source = yaml_source(spec)
    path, key = source.path, source.section
    data = read_params_file(path)
    for part in key.split(".") if key else []:
        if not isinstance(data, dict) or part not in data:
            raise ValueError(f"{path}: no key '{shorten(key)}' (missing '{shorten(part)}')")
        data = data[part]
    if not isinstance(data, dict):
        raise ValueError(f"{path}: '{shorten(key) or '(top level)'}' must be a mapping of parameters, got {type(data).__name__}")
    for name in data:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"{path}: '{shorten(key)}': parameter name {shorten(repr(name))} is not a Python identifier")
    return dict(data)


def read_parameters(params_from: Sequence[str], pairs: Sequence[Sequence[str]],
                    templates: Sequence[Sequence[str]] = ()) -> tuple[dict[str, Any], dict[str, Source]]:
    """The values of ``-f FILE:KEY`` options, then of ``-y NAME TEMPLATE`` (:func:`values_from_templates`,
    from the same file), then of ``-p NAME VALUE`` pairs (later ones win), and where each was set.

    ``-p group.field VALUE`` sets one field of the group ``group`` (a mapping, from ``-f`` or new)
    and keeps its other fields (``-p actor.batch_size 8``). Its source is recorded under ``group.field``."""
    params: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for spec in params_from:
        values = params_from_yaml(spec)
        params.update(values)
        sources.update(dict.fromkeys(values, yaml_source(spec)))
    parse_parameters([(name, "") for name, _ in templates])  # the names: identifiers, none twice
    path = templates_file(params_from)
    values, where = values_from_templates(read_params_file(path) if templates else {}, path, templates)
    params.update(values)
    sources.update(where)
    given = parse_parameters(pairs)
    for name, value in given.items():
        group, dot, key = name.partition(".")
        if not dot:
            params[name], sources[name] = value, COMMAND_LINE
            continue
        if group in given:
            raise ValueError(f"parameter {shorten(repr(group))} is given whole and its field {shorten(repr(name))} too")
        fields = params.get(group, {})
        if not isinstance(fields, Mapping):
            raise ValueError(f"parameter {shorten(repr(name))} sets a field of {shorten(repr(group))}, "
                             f"which is not a group but {type(fields).__name__} {shorten(repr(fields))}")
        params[group] = {**fields, key: value}
        sources.setdefault(group, COMMAND_LINE)
        sources[name] = COMMAND_LINE
    return params, sources


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path``: an ``.ipynb`` file, or a text notebook jupytext reads (``.py`` percent scripts)."""
    try:
        if path.suffix == ".ipynb":
            return nbformat.read(path, as_version=4)
        return jupytext.read(path)
    except (OSError, ValueError, UnicodeDecodeError) as err:  # nbformat's NotJSONError and ValidationError are ValueErrors
        raise NotebookError(f"{path}: cannot read the notebook: {err}") from None


def kernel_metadata() -> dict[str, str]:
    """The ``kernelspec`` block JupyterLab writes for the kernel stages run in (its installed display name)."""
    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:
        return {"display_name": "Python 3", "language": "python", "name": KERNEL_NAME}
    return {"display_name": spec.display_name, "language": spec.language, "name": KERNEL_NAME}


def notebook_defaults(path: Path) -> dict[str, str]:
    """The names of the notebook's ``parameters`` cell and their defaults as source text, as papermill reads them."""
    nb = read_notebook(path)
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    translator = papermill_translators.find_translator(KERNEL_NAME, "python")
    return {p.name: p.default for p in translator.inspect(cells[0])} if cells else {}


def check_parameters(path: Path, parameters: Mapping[str, Any], sources: Mapping[str, Source] | None = None) -> None:
    """Refuse parameters the notebook would run badly with, before its kernel starts.

    A stage notebook (one :func:`guimem.pipeline.params.find_stage` finds, by file stem) gets its
    complete parameters checked, its defaults overridden by ``parameters``, and a bad value
    raises a :class:`DataError` naming it where ``sources`` says it was set (a default: in the
    notebook; not in ``sources``: passed by the caller). Any other notebook only has names its
    ``parameters`` cell does not define refused (a typo would be ignored), with a NotebookError.
    """
    refuse_unencodable(parameters, sources or {})
    stage = find_stage(path.stem)
    if stage is None:
        if parameters:
            defined = notebook_defaults(path)
            unknown = sorted(set(parameters) - set(defined))
            if unknown:
                known = ", ".join(sorted(defined)) or "none (no cell is tagged 'parameters')"
                raise NotebookError(f"{path}: unknown parameter(s) {', '.join(unknown)}; the notebook defines: {known}")
        return
    default = Source(str(path), how="the notebook's default")
    values: dict[str, Any] = {}
    for name, text in notebook_defaults(path).items():
        try:
            values[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise default.error(name, f"the default {text!r:.60} is not a Python literal, so it cannot be checked") from None
    values.update(parameters)
    files = {s.path for s in (sources or {}).values() if s.path is not None and s.section == stage.section}
    path = files.pop() if len(files) == 1 else None
    document = read_params_file(path) if path is not None else None  # what the other stages build
    stage.validate(values, {**dict.fromkeys(parameters, CALLER), **(sources or {})}, default, document)
    if document is not None:  # after the stage's own values: a base value DVC passed with -p is named there first
        check_base(document, path)


# ----------------------------------------------------------------------------- running
@contextlib.contextmanager
def _environment(defaults: Mapping[str, str]) -> Iterator[None]:
    """Set each variable not already set (the kernel inherits them); restore on exit."""
    added = [k for k in defaults if k not in os.environ]
    os.environ.update({k: defaults[k] for k in added})
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def _input_cell_ids(path: Path) -> set[str]:
    """The cell ids written in the notebook file itself (nbformat and jupytext invent random ones if absent)."""
    if path.suffix != ".ipynb":
        return set()  # a text notebook stores no cell ids
    try:
        raw = read_json(path)
    except DataError as err:
        raise NotebookError(f"cannot read the notebook: {err}") from err
    cells = raw.get("cells", []) if isinstance(raw, dict) else []
    return {c["id"] for c in cells if isinstance(c, dict) and isinstance(c.get("id"), str)}


def code_cells(nb: nbformat.NotebookNode, parameters: Mapping[str, Any]) -> int:
    """How many cells the kernel will run: code cells with code that are not tagged ``skip-execution``
    (as nbclient skips them), and the cell papermill injects for ``parameters`` where there is none yet."""
    def tags(cell: Any) -> list[str]:
        return cell.get("metadata", {}).get("tags", [])

    runs = sum(c.cell_type == "code" and bool(c.source.strip()) and "skip-execution" not in tags(c) for c in nb.cells)
    injected = any("injected-parameters" in tags(c) for c in nb.cells)
    return runs + bool(parameters and not injected)


def _failure_message(path: Path, err: Exception) -> str:
    """The notebook, the failing cell and its error, with the traceback in plain text."""
    if isinstance(err, PapermillExecutionError):
        trace = _ANSI.sub("", "\n".join(err.traceback))
        return (f"{path}: cell {err.cell_index} (In [{err.exec_count}]) raised {err.ename}: {err.evalue}\n"
                f"{trace}")
    return f"{path}: execution failed: {type(err).__name__}: {err}"


def run_notebook(
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    parameters: Mapping[str, Any] | None = None,
    *,
    sources: Mapping[str, Source] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    progress: bool = False,
    log_output: bool = False,
) -> Path:
    """Execute ``input_path`` with ``parameters``, scrub it, write it atomically to ``output_path``.

    Args:
        input_path: the notebook to run (left unchanged).
        output_path: where the executed, scrubbed notebook goes (folders are created).
        parameters: values for the notebook's ``parameters`` cell, checked by :func:`check_parameters`.
        sources: where each of them was set, for its error message (default: passed by the caller).
        cwd: the kernel's working directory; default: the repository root above ``input_path``.
        progress: draw a moving line on stderr: the stage, the code cell it runs, the time, and the
            progress bar the kernel draws now (see :mod:`guimem.pipeline.terminal`); not with
            ``log_output``. Bars that finish and :func:`~guimem.core.progress.note` lines are written
            to stderr either way.
        log_output: echo cell outputs to the log (stderr) while the notebook runs.

    Returns the output path. Raises :class:`DataError` when a stage notebook's parameter is bad,
    :class:`NotebookError` when the notebook cannot be read, a parameter is unknown or a cell
    fails; nothing is written then.
    """

    src, dst = Path(input_path), Path(output_path)
    if not src.is_file():
        raise NotebookError(f"{src}: no such notebook")
    if dst.resolve() == src.resolve():
        raise NotebookError(f"{dst}: the output would overwrite the input notebook")
    root = Path(cwd).resolve() if cwd is not None else repo_root(src.resolve().parent)
    params = dict(parameters or {})
    input_ids = _input_cell_ids(src)
    check_parameters(src, params, sources)
    nb = read_notebook(src)
    nb.metadata = {"kernelspec": kernel_metadata()}  # as JupyterLab writes it: opening the report changes nothing
    live = progress and not log_output  # logged cell outputs would break into the moving line
    with _environment({**KERNEL_ENV, STAGE_ENV: src.stem}), StageTerminal(src.stem, code_cells(nb, params),
                                                                          live=live) as terminal:
        try:
            nb = papermill.execute_notebook(
                nb, None, parameters=params, kernel_name=KERNEL_NAME, language="python", cwd=str(root),
                progress_bar=False, log_output=log_output, request_save_on_cell_execute=False,
                extra_arguments=list(KERNEL_ARGS), stderr_file=terminal, on_cell_execute=terminal.on_cell_execute,
            )
        except (papermill.PapermillExecutionError, DeadKernelError, CellTimeoutError) as err:
            raise NotebookError(_failure_message(src, err)) from err
    nb.metadata.papermill["input_path"] = str(src)
    nb.metadata.papermill["output_path"] = str(dst)
    scrub_notebook(nb, root, input_ids)
    atomic_write_text(dst, nbformat.writes(nb) + "\n")
    return dst


# ----------------------------------------------------------------------------- command line
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m guimem.pipeline.runner",
        description="Run a notebook with papermill and write a reproducible executed copy.",
    )
    p.add_argument("input", type=Path, help="notebook to run, e.g. notebooks/00_world.py")
    p.add_argument("output", type=Path, help="executed notebook to write, e.g. reports/00_world.ipynb")
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="set a parameter (typed: 3 -> int, 0.5 -> float, true/True -> bool, [1, 2] -> list)")
    p.add_argument("-f", "--params-from", action="append", default=[], metavar="FILE:KEY",
                   help="set every parameter of a YAML mapping, e.g. params.yaml:world (-p overrides)")
    p.add_argument("-y", "--from-yaml", nargs=2, action="append", default=[], metavar=("NAME", "TEMPLATE"),
                   help="set a parameter from that YAML file (params.yaml without -f): {base.seed} is the key's "
                        "value, data/{base.episodes} text with it (-p overrides)")
    p.add_argument("--cwd", type=Path, default=None, help="kernel working directory (default: repository root)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="a moving line on stderr: cell, time, the kernel's progress bar (default: when stderr "
                        "is a terminal)")
    p.add_argument("--log-output", action="store_true", help="echo cell outputs to stderr while running")
    p.add_argument("--check", action="store_true", help="check the parameters and exit without running the notebook")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: returns 0 on success, 1 when the notebook fails, 2 on bad arguments or parameters."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        params, sources = read_parameters(args.params_from, args.parameter, args.from_yaml)
    except DataError as err:  # a params file read but refused: a parameter's error, named like one
        print(f"error: {err}", file=sys.stderr)
        return 2
    except ValueError as err:
        parser.error(str(err))
    if args.log_output:
        logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    try:
        if args.check:
            check_parameters(args.input, params, sources)
        else:
            run_notebook(args.input, args.output, params, sources=sources, cwd=args.cwd, progress=progress,
                         log_output=args.log_output)
    except DataError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (NotebookError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
