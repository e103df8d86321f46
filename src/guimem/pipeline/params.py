"""Every stage's parameters, checked before its notebook starts, by the configs the code itself uses.

A stage notebook (``00_world``, ``00_recorded``, ``01_segmentation`` ... ``10_real_graph``) gets its
parameters from three places: its ``parameters`` cell (the defaults), a ``params.yaml`` section
(``-f params.yaml:world``, or one key of it: ``-y seed {base.seed}``) and the command line
(``-p seed 0``; ``-p group.field value`` sets one field of a group). A parameter is one value, or a
:class:`Group`: the fields of one code config (``graph_build.graph`` for ``GraphConfig``,
``pretrain.training`` for ``TrainConfig``, ``closed_loop.actor`` for ``ActorSpec``), which arrives in the
notebook as a dict and builds that config; a field the group leaves out keeps the config's default,
so every default is written once, in its config. :class:`Stage` checks the complete mapping in three
passes, so that a bad value stops the stage before any kernel starts, not ten minutes later deep in a cell:

1. names: every parameter is one of the stage's, every group field one of its group's (a typo
   such as ``n_trian`` is named, with the closest real name) and no parameter is missing;
2. each value on its own (:class:`Number`, :class:`Flag`, :class:`Text`, :class:`Items`): a real
   ``bool`` (not ``"no"``), a real integer (not ``3.0``), a finite number in the range that
   gives it a meaning (a temperature that cannot underflow, weights whose sum cannot overflow,
   sizes that fit 32 bits), a name from the code's own list (``SEGMENTERS``, ``MEMORIES``,
   ``MODALITIES``, ...) or a well-formed executor address, never a blank string, a list of the
   right length;
3. the stage's checks: the code's configs built from the values (``WorldConfig``,
   ``GraphConfig``, the memories and their ``RenderStyle``, ``TrainConfig``, ``ActorConfig``),
   so that a rule lives in one place, and relations between values (``success_min <=
   success_max``), and, when the values came from a params file, against the other stages of
   that file: a memory a stage reads is one its upstream stage builds, the probe's ``pca_dim``
   and the router's ``state_layer`` fit the actor, folds are at most the episodes they split.

This module holds the checking code and the checks several stages share; each stage's own
schema (its :class:`Stage`, as ``STAGE``) sits beside it in :mod:`guimem.pipeline.stages`, one
module per params.yaml section, so that DVC reruns a stage when its own schema changes and no
other's. :func:`find_stage` loads the one a notebook needs.

The params file itself is read strictly by :func:`guimem.pipeline.runner.read_params_file`
(no aliases, no duplicate keys, no value YAML 1.1 and DVC's YAML 1.2 read differently). Every
message echoes a value bounded (:func:`shown`: at most 80 characters, in bounded time).

A failure is a :class:`~guimem.core.data.DataError` that names the value where the user wrote it
(:class:`Source`): ``params.yaml: field 'world.n_perturbed'`` for a value from ``-f params.yaml:world``
(``'graph_build.graph.tau'`` inside a group), ``field 'seed': ... (passed with -p)`` for one from
the command line.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import re
import reprlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Protocol, Sequence, TypeVar

from guimem.core.data import DataError
from guimem.core.executor import EXECUTORS, ExecutorSpec
from guimem.core.io import check_number
from guimem.models.embedding import (
    IMAGE_EMBEDDERS,
    TEXT_EMBEDDERS,
    EfficientNetLite0Embedder,
    PixelEmbedder,
)
from guimem.routing.probe import ProbeConfig
from guimem.smg.graph import GraphConfig
from guimem.smg.memories import MEMORIES
from guimem.train.folds import assign_folds

T = TypeVar("T")

_REPR = reprlib.Repr()  # a value's repr costs the same however big the value: a few items, a few levels
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict, _REPR.maxset = 3, 6, 6, 6, 6
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 60, 60, 40
MAX_SHOWN = 80  # characters of a value an error message echoes
MAX_MESSAGE = 300  # characters of any parameter error's message


def shown(value: Any, limit: int = MAX_SHOWN) -> str:
    """``repr(value)`` bounded in time and length: at most ``limit`` characters."""
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"



# ============================================================================ where a value came from
@dataclass(frozen=True)
class Source:
    """Where a parameter's value was set, so that an error names it as the user wrote it."""

    path: str | None = None  # the file holding the value: params.yaml, or the notebook for a default
    section: str = ""  # its section in that file (``world`` for ``-f params.yaml:world``)
    how: str = ""  # how it was given, said after the message: "passed with -p"
    key: str = ""  # the value's own dotted key in that file, when read under another name (``-y seed {base.seed}``)

    def error(self, name: str, message: str) -> DataError:
        """A DataError for parameter ``name``: its ``key`` in ``path`` (a group's field after it),
        else ``section.name``, else ``name``."""
        if self.key:
            field = _cut(self.key + (f".{name.partition('.')[2]}" if "." in name else ""), 120)
        else:
            field = _cut(f"{self.section}.{name}" if self.section else name, 120)
        message = _cut(message, MAX_MESSAGE)
        return DataError(field, f"{message} ({self.how})" if self.how else message, self.path)


COMMAND_LINE = Source(how="passed with -p")
CALLER = Source(how="passed to run_notebook")


# ----------------------------------------------------------------------------- values read by name
_TEMPLATE_KEY = re.compile(r"\{([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\}")


def values_from_templates(document: Any, path: str, templates: Sequence[Sequence[str]],
                          ) -> tuple[dict[str, Any], dict[str, Source]]:
    """``-y NAME TEMPLATE`` pairs to values read from ``document`` (the YAML file ``path``), and
    where each was set.

    A template that is one ``{dotted.key}`` gives that key's value as it is (a number, a list, a
    group's mapping); any other template is text in which each ``{dotted.key}`` is replaced by its
    scalar value, as DVC writes one (``data/{base.episodes}`` -> ``data/world``). A key the file
    lacks, or a list or map inside text, is a ValueError naming the file, the key and the option."""
    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for name, template in templates:
        option = f"-y {name} {template}"

        def lookup(key: str) -> Any:
            found: Any = document
            for part in key.split("."):
                if not isinstance(found, dict) or part not in found:
                    raise ValueError(f"{path}: no key '{_cut(key, 80)}' (missing '{_cut(part, 80)}'), which "
                                     f"{_cut(option, 80)} reads")
                found = found[part]
            return found

        def text(match: re.Match) -> str:
            value = lookup(match[1])
            if isinstance(value, (dict, list)) or value is None:
                raise ValueError(f"{path}: '{match[1]}' is {type(value).__name__}, not a value text can hold "
                                 f"({_cut(option, 80)})")
            return ("true" if value else "false") if isinstance(value, bool) else str(value)

        whole = _TEMPLATE_KEY.fullmatch(template)
        if whole is None and not _TEMPLATE_KEY.search(template):
            raise ValueError(f"{_cut(option, 80)}: the template names no {{key}} of {path}; pass a literal with -p")
        values[name] = lookup(whole[1]) if whole else _TEMPLATE_KEY.sub(text, template)
        sources[name] = Source(path, how=f"read by {option}", key=whole[1] if whole else "")
    return values, sources


def templates_file(params_from: Sequence[str]) -> str:
    """The YAML file ``-y`` reads: the one every ``-f FILE:KEY`` names, else ``params.yaml``."""
    files = {spec.partition(':')[0] for spec in params_from}
    if len(files) > 1:
        raise ValueError(f"-y reads one parameter file, but -f names {len(files)}: {', '.join(sorted(files))}")
    return files.pop() if files else "params.yaml"


def refuse_unencodable(parameters: Mapping[str, Any], sources: Mapping[str, Source]) -> None:
    """Refuse a text value holding a byte that is not UTF-8 (a command-line argument reaches Python
    with such a byte as a lone surrogate): no file name or notebook can hold it, and the notebook
    would fail only once it writes."""
    def texts(value: Any) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, Mapping):
            for k, v in value.items():
                yield from texts(k)
                yield from texts(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                yield from texts(v)
    for name, value in parameters.items():
        for text in texts(value):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as err:
                source = sources.get(name, CALLER)
                raise source.error(name, f"holds a byte that is not UTF-8 (at character {err.start} of "
                                         f"{text!r:.80}); every text value must be UTF-8") from None


class Params:
    """A stage's complete parameter values and their sources; errors name each value where it was set."""

    def __init__(self, values: Mapping[str, Any], sources: Mapping[str, Source], default: Source = CALLER,
                 document: Mapping[str, Any] | None = None):
        self.values, self.sources, self.default = dict(values), dict(sources), default
        self.document = document if isinstance(document, Mapping) else {}  # the whole params file, when one was read

    def upstream(self, section: str, key: str, field: "Field") -> Any:
        """``section.key`` of the params file (``section`` dotted for a group: ``graph_build.graph``) when it
        holds one that ``field`` accepts, else None (a bad value there is that stage's own error)."""
        values: Any = self.document
        for part in section.split("."):
            values = values.get(part) if isinstance(values, Mapping) else None
        if not isinstance(values, Mapping) or key not in values or field.problem(values[key]) is not None:
            return None
        return values[key]

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def error(self, name: str, message: str) -> DataError:
        """A DataError naming parameter ``name`` (``group.field`` inside a group) where its value was set."""
        source = self.sources.get(name) or self.sources.get(name.partition(".")[0], self.default)
        return source.error(name, message)

    def build(self, names: Mapping[str, str], make: Callable[..., T], *args: Any, item: int | None = None,
              **kwargs: Any) -> T:
        """``make(*args, **kwargs)`` (a code config built from these values); its DataError renamed to ours.

        ``names`` maps the config's field names to parameter names; a field it lacks is reported
        against its first parameter. ``item``: the value came from that index of a list parameter.
        """
        try:
            return make(*args, **kwargs)
        except DataError as err:
            name = names.get(err.field) or names.get(err.field.rsplit(".", 1)[-1])
            message = err.message if name else f"{err.field}: {err.message}"
            where = "" if item is None else f"item {item}: "
            raise self.error(name or next(iter(names.values())), where + message) from None


# ============================================================================ one value
class Field(Protocol):
    """What one parameter may hold."""

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is refused, or None when it is fine."""
        ...


@dataclass(frozen=True)
class Number:
    """A finite number (an integer if ``integer``: not a bool, not ``3.0``) within ``[lo, hi]``, above
    ``above`` and below ``below``."""

    integer: bool = False
    lo: float | None = None
    hi: float | None = None
    above: float | None = None  # an exclusive lower bound (a learning rate > 0)
    below: float | None = None  # an exclusive upper bound (a dropout < 1)

    def problem(self, value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (self.integer and not isinstance(value, int)):
            return f"expected {'an integer' if self.integer else 'a number'}, got {type(value).__name__} {shown(value)}"
        try:
            check_number(value, "value", self.lo, self.hi, self.integer)
        except DataError as err:
            return err.message
        if self.above is not None and value <= self.above:
            return f"must be > {self.above}, got {shown(value)}"
        if self.below is not None and value >= self.below:
            return f"must be < {self.below}, got {shown(value)}"
        return None


@dataclass(frozen=True)
class Flag:
    """A real boolean: ``true``/``false`` in YAML, ``True``/``False`` in Python (not ``"no"``, not 1)."""

    def problem(self, value: Any) -> str | None:
        return None if isinstance(value, bool) else f"expected true or false, got {type(value).__name__} {shown(value)}"


@dataclass(frozen=True)
class Text:
    """A non-empty string (or ``""`` where ``empty``); one of ``choices`` or matching ``pattern`` when either is given.

    Never blank, never with spaces around it or control characters in it (a name or path
    written so is a mistake: ``"ray:   "``, ``" smg"``), at most ``MAX_TEXT`` characters.
    """

    choices: tuple[str, ...] = ()
    pattern: str = ""  # a full-match regular expression for names with a variable part (``hf:<folder>``)
    shown: tuple[str, ...] = ()  # the names the message lists (default: ``choices``)
    empty: bool = False  # "" is allowed (it means "none", as the notebook says)

    def problem(self, value: Any) -> str | None:
        if isinstance(value, str) and not value and self.empty:
            return None
        if not isinstance(value, str) or not value:
            return f"expected a non-empty string, got {type(value).__name__} {shown(value)}"
        if len(value) > MAX_TEXT:
            return f"expected at most {MAX_TEXT} characters, got {len(value)}: {shown(value)}"
        if value != value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value):
            return f"expected no blank, surrounding spaces or control characters, got {shown(value)}"
        if (self.choices or self.pattern) and value not in self.choices and not (
                self.pattern and re.fullmatch(self.pattern, value)):
            return f"expected one of {list(self.shown or self.choices)}, got {shown(value)}"
        return None


@dataclass(frozen=True)
class Items:
    """A list whose every item is an ``item``; of exactly ``length`` items, non-empty or unique if asked."""

    item: Field
    length: int | None = None
    nonempty: bool = False
    unique: bool = False
    most: int | None = 10_000  # a sweep or list of names longer than this is a mistake

    def problem(self, value: Any) -> str | None:
        if not isinstance(value, (list, tuple)):
            return f"expected a list, got {type(value).__name__} {shown(value)}"
        if self.length is not None and len(value) != self.length:
            return f"expected {self.length} items, got {len(value)}: {shown(list(value))}"
        if self.most is not None and len(value) > self.most:
            return f"expected at most {self.most} items, got {len(value)}"
        if self.nonempty and not value:
            return "expected at least one item, got an empty list"
        for i, v in enumerate(value):
            if (why := self.item.problem(v)) is not None:
                return f"item {i}: {why}"
        if self.unique and len(set(value)) != len(value):
            return f"expected distinct items, got {shown(list(value))}"
        return None


@dataclass(frozen=True)
class Group:
    """A mapping of some fields of the code config ``config`` (a params.yaml group such as
    ``graph_build.graph``), each checked by its ``fields`` entry; one left out keeps the config's default."""

    config: type
    fields: Mapping[str, Field]

    def problem(self, value: Any) -> str | None:
        if not isinstance(value, Mapping):
            return f"expected a mapping of {self.config.__name__} fields, got {type(value).__name__} {shown(value)}"
        return None


MAX_TEXT = 4096  # characters of a name or path (PATH_MAX)
MAX_COUNT = 2**31 - 1  # every count, size and index fits 32 bits wherever it goes next (core.data.MAX_INDEX)
COUNT = Number(integer=True, lo=0, hi=MAX_COUNT)  # 0 allowed: "none" or "all", as each notebook says
POSITIVE = Number(integer=True, lo=1, hi=MAX_COUNT)
INTEGER = Number(integer=True, lo=-MAX_COUNT, hi=MAX_COUNT)  # its range is checked by the code's config it goes to
REAL = Number()  # likewise
PROBABILITY = Number(lo=0.0, hi=1.0)
PATH = Text()
OPTIONAL_PATH = Text(empty=True)  # "": none
SEED = Number(integer=True, lo=0, hi=2**32 - 1)  # numpy's default_rng refuses negative seeds; seed + 1 stays in 64 bits
MAX_WEIGHT = 1e6  # a relative weight: finite, and a sum of many of them cannot overflow
WEIGHT = Number(lo=0.0, hi=MAX_WEIGHT)
WORKERS = Number(integer=True, lo=1, hi=1024)  # processes or Ray actors, each loading its model once
THREADS = Number(integer=True, lo=1, hi=1024)  # torch threads
BATCH = Number(integer=True, lo=1, hi=1 << 16)  # inputs per forward pass or micro-batch
GPUS = Number(lo=0.0, hi=16.0)  # a Ray worker's GPU reservation: more than one node holds waits for ever
LEARNING_RATE = Number(above=0.0, hi=1.0)  # AdamW: above 1 the first step overshoots any scale
INVERSE_STRENGTH = Number(lo=1e-6, hi=1e6)  # a logistic regression's C: outside, the fit is all-zero or unregularised
TEMPERATURE = Number(lo=1e-3, hi=1e3)  # logits / T: below 1e-3 large logits overflow, above 1e3 the draw is uniform
MAX_FOLDS = 1000  # cross-validation or memory folds: each one a refit or a memory rebuild
MAX_SIDE = 4096  # pixels on a side of an image the stages draw or embed
SIDE = Number(integer=True, lo=1, hi=MAX_SIDE)
FOLDS = Number(integer=True, lo=2, hi=MAX_FOLDS)
TOKENS = Number(integer=True, lo=1, hi=8192)  # tokens a language model writes at once (its context at most)
MAX_LAYERS = 1024  # transformer blocks of any actor
IMAGE_EMBEDDER = Text(choices=tuple(n for n in IMAGE_EMBEDDERS if "<" not in n),
                      pattern=r"pixels-[1-9]\d{0,3}x[1-9]\d{0,3}|hf:\S(?:.*\S)?", shown=IMAGE_EMBEDDERS)  # models.embedding's names
# core.executor: local, a local Ray, a cluster's address (ray:auto, ray:host:port) or a Ray client (ray://host:port)
_HOST = r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])"
_PORT = r"(?:[1-9]\d{0,3}|[1-5]\d{4}|6[0-4]\d{3}|65[0-4]\d{2}|655[0-2]\d|6553[0-5])"
EXECUTOR = Text(choices=("local", "ray"), pattern=rf"ray:(?:auto|{_HOST}:{_PORT}|//{_HOST}(?::{_PORT})?)",
                shown=("local", "ray", "ray:auto", "ray:<host>:<port>", "ray://<host>[:<port>]"))  # 00, 02, 03's
RAY_ADDRESS = Text(choices=("auto",), pattern=rf"{_HOST}:{_PORT}|ray://{_HOST}(?::{_PORT})?", empty=True,
                   shown=("", "auto", "<host>:<port>", "ray://<host>[:<port>]"))
TEXT_EMBEDDER = Text(choices=TEXT_EMBEDDERS, pattern=r"hashing-[1-9]\d{0,4}", shown=(*TEXT_EMBEDDERS, "hashing-<dim>"))


def config_fields(config: type) -> dict[str, Field]:
    """A field per dataclass field of ``config``, typed by its default; the ranges stay the config's own."""
    by_type: dict[type, Field] = {bool: Flag(), int: INTEGER, float: REAL, str: Text(), tuple: Items(Text())}

    def field(default: Any) -> Field:
        if isinstance(default, tuple) and default and all(type(v) is int for v in default):
            return Items(INTEGER)  # a list of integers (variant indices)
        return by_type[type(default)]
    return {f.name: field(f.default) for f in dataclasses.fields(config)}


# ============================================================================ a stage
Check = Callable[[Params], None]


@dataclass(frozen=True)
class Stage:
    """A stage notebook's parameters: each one's field, then the checks that build the code's configs."""

    notebook: str  # the notebook's stem, e.g. "00_world"
    section: str  # its params.yaml section
    fields: Mapping[str, Field]
    checks: tuple[Check, ...] = ()
    # Parameters that change only this stage's own report (metrics, results, figures, plots, the
    # executed notebook), never an output a later stage reads: changing one reruns this stage alone.
    # tests/test_stage_outputs.py runs the stage with each changed and checks those outputs' bytes.
    reporting: tuple[str, ...] = ()

    def validate(self, values: Mapping[str, Any], sources: Mapping[str, Source] | None = None,
                 default: Source = CALLER, document: Mapping[str, Any] | None = None) -> None:
        """Raise a DataError for the first bad value of the complete mapping ``values``.

        ``sources`` says where each value was set (``default`` for those it does not name);
        ``document``: the whole params file the stage's section came from, for the checks
        against what other stages build (the memories they record, the actor's size).
        """
        p = Params(values, sources or {}, default, document)
        for name in values:
            if name not in self.fields:
                raise p.error(name, f"not a parameter of {self.notebook}; {_hint(name, self.fields)}")
        for name, field in self.fields.items():
            if name not in values:
                raise DataError(name, f"missing: {self.notebook} needs it", default.path)
            if (why := field.problem(values[name])) is not None:
                raise p.error(name, why)
            if isinstance(field, Group):
                for key, value in values[name].items():
                    if key not in field.fields:
                        raise p.error(f"{name}.{key}", f"not a {field.config.__name__} field of {self.notebook}'s "
                                                       f"{name}; {_hint(key, field.fields)}")
                    if (why := field.fields[key].problem(value)) is not None:
                        raise p.error(f"{name}.{key}", why)
        for check in self.checks:
            check(p)


def _hint(name: Any, names: Mapping[str, Any]) -> str:
    """The closest of ``names`` to the unknown ``name``, or all of them."""
    close = difflib.get_close_matches(name, names, n=1) if isinstance(name, str) and len(name) <= 100 else []
    return f"did you mean '{close[0]}'?" if close else f"expected one of {sorted(names)}"


def find_stage(notebook: str) -> Stage | None:
    """The stage of notebook stem ``notebook`` (``NN_<section>``, its schema in
    :mod:`guimem.pipeline.stages`.<section>), or None for any other notebook."""
    section = notebook.partition("_")[2]
    if not re.fullmatch(r"\d\d_[a-z][a-z_]*", notebook) or section not in _stage_modules():
        return None
    stage: Stage = importlib.import_module(f"guimem.pipeline.stages.{section}").STAGE
    return stage if stage.notebook == notebook else None


def all_stages() -> dict[str, Stage]:
    """Every stage, by notebook stem."""
    stages = (importlib.import_module(f"guimem.pipeline.stages.{s}").STAGE for s in sorted(_stage_modules()))
    return {s.notebook: s for s in stages}


def _stage_modules() -> set[str]:
    return {p.stem for p in Path(__file__).with_name("stages").glob("*.py") if p.stem != "__init__"}


# ============================================================================ checks several stages share
GRAPH = Group(GraphConfig, {"tau": REAL, "theta": REAL})  # 02's and 10's ``graph`` group; GraphConfig checks them


def thresholds(p: Params) -> tuple[float, float]:
    """The graph's tau and theta: the ``graph`` group's, else GraphConfig's defaults."""
    return p["graph"].get("tau", GraphConfig.tau), p["graph"].get("theta", GraphConfig.theta)


def graph_config(p: Params, tau: float, theta: float) -> GraphConfig:
    """The GraphConfig of a graph built with these thresholds and the stage's embedders."""
    return GraphConfig(p["image_embedder"], 1, p["text_embedder"], 1, tau, theta)


def check_tau_sweep(p: Params, theta: float) -> None:
    """Each swept tau (``tau_sweep``) makes a valid graph at ``theta``."""
    for i, t in enumerate(p["tau_sweep"]):
        p.build({"tau": "tau_sweep"}, graph_config, p, t, theta, item=i)


def check_image_pca(p: Params) -> None:
    """02 and 10: at most the image embedder's own dimensions (known without loading it, except hf:)."""
    name, dim = p["image_embedder"], None
    if name.startswith("efficientnet_lite0"):
        dim = EfficientNetLite0Embedder.dim
    elif name.startswith("pixels"):
        dim = (PixelEmbedder(*map(int, name[7:].split("x"))) if "-" in name else PixelEmbedder()).dim
    if dim is not None and p["pca_dim"] > dim:
        raise p.error("pca_dim", f"must be at most the {name} embedding's {dim} dimensions (0: keep all), "
                                 f"got {p['pca_dim']}")


# 05, 06 and 09: where the actor's work runs (the actor itself: guimem.pipeline.actor_params)
EXECUTOR_GROUP = Group(ExecutorSpec, {"kind": Text(EXECUTORS), "address": RAY_ADDRESS, "workers": WORKERS,
                                      "gpus_per_worker": GPUS})
PROBE = Group(ProbeConfig, {"pca_dim": POSITIVE, "c": INVERSE_STRENGTH})  # 06's and 07's ``probe``


def check_executor(p: Params) -> None:
    """05, 06 and 09: the ``executor`` group makes an ExecutorSpec (a GPU per worker only on Ray)."""
    p.build({f: f"executor.{f}" for f in EXECUTOR_GROUP.fields}, ExecutorSpec, **p["executor"])


def check_folds(p: Params) -> None:
    """04 and 06: the memory folds, checked as they are drawn."""
    p.build({"k_folds": "k_folds"}, assign_folds, (), p["k_folds"], p["seed"])  # no episodes: its check only


def episodes(p: Params, key: str, knob: str) -> int | None:
    """The world's episodes of one split (``world.phone.key`` when base.episodes is the world), capped by ``knob``."""
    n = p.upstream("world.phone", key, POSITIVE) if p.upstream("base", "episodes", Text()) in (None, "world") else None
    if p[knob]:
        n = p[knob] if n is None else min(n, p[knob])
    return n


def check_folds_within(p: Params, name: str, episodes: int | None, what: str) -> None:
    """Parameter ``name`` splits ``episodes`` by episode: at most that many folds."""
    if episodes is not None and p[name] > episodes:
        raise p.error(name, f"must be at most the {episodes} {what} it splits by episode, got {p[name]}")


def check_subset(p: Params, name: str, section: str, key: str, what: str) -> None:
    """Each memory ``name`` names is among ``section.key`` of the params file (what that stage builds)."""
    built = p.upstream(section, key, Items(Text(MEMORIES)))
    if built is None:
        return
    wanted = [p[name]] if isinstance(p[name], str) else list(p[name])
    for i, kind in enumerate(wanted):
        if kind not in built:
            where = "" if isinstance(p[name], str) else f"item {i}: "
            raise p.error(name, f"{where}{kind!r} has no {what}: {section}.{key} is {shown(list(built))}")


BASE: dict[str, Field] = {"seed": SEED, "episodes": Text(("world", "recorded"))}
"""The params file's ``base`` section (DVC interpolates it into the stage commands)."""


def check_base(document: Mapping[str, Any], path: str | None) -> None:
    """The ``base`` section of a params file, when it has one: every stage's seed and episode stores."""
    base = document.get("base") if isinstance(document, Mapping) else None
    if not isinstance(base, Mapping):
        return
    source = Source(path, "base")
    for name, field in BASE.items():
        if name in base and (why := field.problem(base[name])) is not None:
            raise source.error(name, why)
