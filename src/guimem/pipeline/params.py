"""Every stage's parameters, checked before its notebook starts, by the configs the code itself uses.

A stage notebook (``00_world``, ``00_recorded``, ``01_segmentation`` ... ``10_real_graph``) gets its
parameters from three places: its ``parameters`` cell (the defaults), a ``params.yaml`` section
(``-f params.yaml:world``) and the command line (``-p seed 0``, often a ``${base.seed}`` DVC
interpolated). :class:`Stage` checks the complete mapping in three passes, so that a bad value
stops the stage before any kernel starts, not ten minutes later deep in a cell:

1. names: every parameter is one of the stage's (a typo such as ``n_trian`` is named, with the
   closest real name) and none is missing;
2. each value on its own (:class:`Number`, :class:`Flag`, :class:`Text`, :class:`Items`): a real
   ``bool`` (not ``"no"``), a real integer (not ``3.0``), a finite number in the range that
   gives it a meaning (a temperature that cannot underflow, weights whose sum cannot overflow,
   sizes that fit 32 bits), a name from the code's own list (:data:`SEGMENTERS`,
   :data:`MEMORIES`, :data:`MODALITIES`, ...) or a well-formed executor address, never a blank
   string, a list of the right length;
3. the stage's checks: the code's configs built from the values (``WorldConfig``,
   ``GraphConfig``, the memories and their ``RenderStyle``, ``TrainConfig``, ``ActorConfig``),
   so that a rule lives in one place, and relations between values (``success_min <=
   success_max``), and, when the values came from a params file, against the other stages of
   that file: a memory a stage reads is one its upstream stage builds, the probe's ``pca_dim``
   and the router's ``state_layer`` fit the actor, folds are at most the episodes they split.

The params file itself is read strictly by :func:`guimem.pipeline.runner.read_params_file`
(no aliases, no duplicate keys, no value YAML 1.1 and DVC's YAML 1.2 read differently). Every
message echoes a value bounded (:func:`shown`: at most 80 characters, in bounded time).

A failure is a :class:`~guimem.core.data.DataError` that names the value where the user wrote it
(:class:`Source`): ``params.yaml: field 'world.themes'`` for a value from ``-f params.yaml:world``,
``field 'seed': ... (passed with -p)`` for one from the command line.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import reprlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from guimem.actors.hf.parsing import ANSWER_FORMATS, COORD_CONVENTIONS
from guimem.actors.mini.config import ActorConfig
from guimem.actors.mini.train import TrainConfig
from guimem.core.data import DataError
from guimem.core.executor import ExecutorSpec
from guimem.core.io import check_number
from guimem.core.policy import MODALITIES
from guimem.core.store import SPLITS
from guimem.eval.action_match import VARIANTS
from guimem.eval.closed_loop import NO_MEMORY
from guimem.models.embedding import (
    IMAGE_EMBEDDERS,
    TEXT_EMBEDDERS,
    EfficientNetLite0Embedder,
    HashingTextEmbedder,
    PixelEmbedder,
)
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import unseen_types_covered
from guimem.real.importers import IMPORTERS
from guimem.smg.graph import GraphConfig
from guimem.smg.index import NODE_INDEXES
from guimem.smg.judge import JUDGES
from guimem.smg.llm_segmenter import LLM_MODES
from guimem.smg.memories import MEMORIES, RenderStyle, make_memory
from guimem.smg.segment import SEGMENTERS
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

    def error(self, name: str, message: str) -> DataError:
        """A DataError for parameter ``name``: ``section.name`` in ``path``, else ``name``."""
        field = _cut(f"{self.section}.{name}" if self.section else name, 120)
        message = _cut(message, MAX_MESSAGE)
        return DataError(field, f"{message} ({self.how})" if self.how else message, self.path)


COMMAND_LINE = Source(how="passed with -p")
CALLER = Source(how="passed to run_notebook")


class Params:
    """A stage's complete parameter values and their sources; errors name each value where it was set."""

    def __init__(self, values: Mapping[str, Any], sources: Mapping[str, Source], default: Source = CALLER,
                 document: Mapping[str, Any] | None = None):
        self.values, self.sources, self.default = dict(values), dict(sources), default
        self.document = document if isinstance(document, Mapping) else {}  # the whole params file, when one was read

    def upstream(self, section: str, key: str, field: "Field") -> Any:
        """``section.key`` of the params file when it holds one that ``field`` accepts, else None
        (a bad value there is that stage's own error)."""
        values = self.document.get(section)
        if not isinstance(values, Mapping) or key not in values or field.problem(values[key]) is not None:
            return None
        return values[key]

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def error(self, name: str, message: str) -> DataError:
        """A DataError naming parameter ``name`` where its value was set."""
        return self.sources.get(name, self.default).error(name, message)

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
                shown=("local", "ray", "ray:auto", "ray:<host>:<port>", "ray://<host>[:<port>]"))
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
                close = difflib.get_close_matches(name, self.fields, n=1) if len(name) <= 100 else []
                hint = f"did you mean '{close[0]}'?" if close else f"expected one of {sorted(self.fields)}"
                raise p.error(name, f"not a parameter of {self.notebook}; {hint}")
        for name, field in self.fields.items():
            if name not in values:
                raise DataError(name, f"missing: {self.notebook} needs it", default.path)
            if (why := field.problem(values[name])) is not None:
                raise p.error(name, why)
        for check in self.checks:
            check(p)


# ============================================================================ the checks of each stage
_WORLD_KEYS = tuple(f.name for f in dataclasses.fields(WorldConfig))


def _world(p: Params) -> None:
    """WorldConfig's own checks, the success range, and unseen templates made of seen subgoal types."""
    config = p.build({f"world.{k}": k for k in _WORLD_KEYS}, WorldConfig.from_dict, {k: p[k] for k in _WORLD_KEYS})
    if config.image_width > MAX_SIDE // 2:  # its height is twice its width
        raise p.error("image_width", f"must be at most {MAX_SIDE // 2} (the screenshot is twice as tall), "
                                     f"got {config.image_width}")
    if config.success_min > config.success_max:
        raise p.error("success_min", f"must be at most success_max ({config.success_max}), got {config.success_min}")
    if not unseen_types_covered(config):
        raise p.error("unseen_templates", "a template uses a subgoal type that no training template uses")


_STAND_INS = (PixelEmbedder(1, 1), HashingTextEmbedder(1))  # a memory built only to run its constructor's checks
_MEMORY_ARGS: dict[str, dict[str, str]] = {  # 02_graph_build: each memory's constructor argument -> parameter
    "smg": {"tau": "tau", "theta": "theta", "k": "k_nodes", "rank_by": "rank_by"},
    "flat": {"k": "flat_k"},
    "action_graph": {"tau": "tau", "theta": "theta", "k": "k_nodes", "rank_by": "rank_by"},
    "task_graph": {"tau": "tau", "theta": "theta", "k": "task_k", "alpha": "task_alpha"},
}


def _memories(p: Params) -> None:
    """The four memories, built as 02_graph_build builds them (empty), with its RenderStyle."""
    width, height = p["memory_image_width"], p["memory_image_height"]
    short_side = "memory_image_width" if width <= height - width // 4 else "memory_image_height"  # the one too small
    style = p.build({"max_items": "max_items", "max_actions": "max_actions", "image_size": short_side}, RenderStyle,
                    max_items=p["max_items"], max_actions=p["max_actions"], image_size=(width, height))
    for name, args in _MEMORY_ARGS.items():
        p.build(args, make_memory, name, *_STAND_INS, style=style, **{a: p[n] for a, n in args.items()})


def _graph_config(p: Params, tau: float, theta: float = GraphConfig.theta) -> GraphConfig:
    """The GraphConfig of a graph built with these thresholds and the stage's embedders."""
    return GraphConfig(p["image_embedder"], 1, p["text_embedder"], 1, tau, theta)


def _graph_sweeps(p: Params) -> None:
    """02_graph_build: each swept tau (at theta) and theta (at tau) makes a valid graph."""
    for i, t in enumerate(p["tau_sweep"]):
        p.build({"tau": "tau_sweep"}, _graph_config, p, t, p["theta"], item=i)
    for i, t in enumerate(p["theta_sweep"]):
        p.build({"theta": "theta_sweep"}, _graph_config, p, p["tau"], t, item=i)


def _recorded(p: Params) -> None:
    """00_recorded: some split gets a run."""
    if not any(w > 0 for w in p["split"]):
        raise p.error("split", "every weight is 0: no split gets a run")


def _real_graph(p: Params) -> None:
    """10_real_graph: the graph's thresholds and each swept tau make valid graphs."""
    p.build({"tau": "tau", "theta": "theta"}, _graph_config, p, p["tau"], p["theta"])
    for i, t in enumerate(p["tau_sweep"]):
        p.build({"tau": "tau_sweep"}, _graph_config, p, t, p["theta"], item=i)


def _tau_sweep(p: Params) -> None:
    """03_retrieval_eval: each swept tau makes a valid graph (theta is the saved memory's)."""
    for i, t in enumerate(p["tau_sweep"]):
        p.build({"tau": "tau_sweep"}, _graph_config, p, t, item=i)


_TRAIN_KEYS = ("epochs", "batch_size", "lr", "weight_decay", "warmup_steps", "modality_weights", "goal_dropout",
               "type_balance", "wide_lr_scale")
_MODEL_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "dropout",
               "max_memory_tokens", "max_history", "mimetic_init", "word_init_scale", "exact_match", "role_channel",
               "act_context", "wide_type_head", "type_loss_weight")


def _actor(p: Params) -> None:
    """04_actor: the folds, TrainConfig and ActorConfig, built as the notebook builds them."""
    p.build({"k_folds": "k_folds"}, assign_folds, (), p["k_folds"], p["seed"])  # no episodes: its check only
    model = {k: p[k] for k in _MODEL_KEYS}
    train = {k: tuple(p[k]) if k == "modality_weights" else p[k] for k in _TRAIN_KEYS}
    p.build({k: k for k in _TRAIN_KEYS}, TrainConfig, **train, model=model)
    p.build({k: k for k in _MODEL_KEYS}, ActorConfig.check, ActorConfig(**model))


def _executor(p: Params) -> None:
    """05, 06 and 09: where the actor's work runs (a GPU per worker only on Ray)."""
    p.build({"executor": "executor", "gpus_per_worker": "gpus_per_worker", "workers": "workers"},
            ExecutorSpec.parse, p["executor"], p["workers"], p["gpus_per_worker"])


def _folds(p: Params) -> None:
    """06_layer_analysis: the probe pool's folds, checked as they are drawn."""
    p.build({"k_folds": "k_folds"}, assign_folds, (), p["k_folds"], p["seed"])


def _image_pca(p: Params) -> None:
    """02 and 10: at most the image embedder's own dimensions (known without loading it, except hf:)."""
    name, dim = p["image_embedder"], None
    if name.startswith("efficientnet_lite0"):
        dim = EfficientNetLite0Embedder.dim
    elif name.startswith("pixels"):
        dim = (PixelEmbedder(*map(int, name[7:].split("x"))) if "-" in name else PixelEmbedder()).dim
    if dim is not None and p["pca_dim"] > dim:
        raise p.error("pca_dim", f"must be at most the {name} embedding's {dim} dimensions (0: keep all), "
                                 f"got {p['pca_dim']}")


def _episodes(p: Params, key: str, knob: str) -> int | None:
    """The world's episodes of one split (``world.key`` when base.episodes is the world), capped by the size knob."""
    n = p.upstream("world", key, POSITIVE) if p.upstream("base", "episodes", Text()) in (None, "world") else None
    if p[knob]:
        n = p[knob] if n is None else min(n, p[knob])
    return n


def _folds_within(p: Params, name: str, episodes: int | None, what: str) -> None:
    if episodes is not None and p[name] > episodes:
        raise p.error(name, f"must be at most the {episodes} {what} it splits by episode, got {p[name]}")


def _actor_folds(p: Params) -> None:
    """04_actor: the training memories' folds are at most the training episodes; the wide head's rate at most 1."""
    _folds_within(p, "k_folds", _episodes(p, "n_train", "max_train_episodes"), "training episodes")
    if p["lr"] * p["wide_lr_scale"] > 1.0:
        raise p.error("wide_lr_scale", f"the wide head's learning rate lr x wide_lr_scale must be at most 1, got "
                                       f"{p['lr']} x {p['wide_lr_scale']}")
    if p["lr"] * p["weight_decay"] >= 1.0:
        raise p.error("weight_decay", f"lr x weight_decay must be below 1 (AdamW would flip every weight's sign), "
                                      f"got {p['lr']} x {p['weight_decay']}")


def _pool_folds(p: Params) -> None:
    """06_layer_analysis: the pool's memory folds and the probe's CV folds are at most its episodes."""
    pool = _episodes(p, "n_memory", "max_pool_episodes")
    _folds_within(p, "k_folds", pool, "memory episodes of the probe pool")
    _folds_within(p, "cv_folds", pool, "memory episodes of the probe pool")


def _mini_actor(p: Params) -> bool:
    """Whether the actor 05-09 run is the actor stage's miniature (so its size is actor's)."""
    model = p.values.get("actor_model", p.upstream("closed_loop", "actor_model", Text()))
    return model == "mini"


def _probe_dim(p: Params) -> None:
    """06 and 07: the probe's PCA is at most the actor's hidden size (the shift's dimensions)."""
    width = p.upstream("actor", "hidden_size", POSITIVE) if _mini_actor(p) else None
    if width is not None and p["pca_dim"] > width:
        raise p.error("pca_dim", f"must be at most the actor's hidden size ({width}: actor.hidden_size), "
                                 f"got {p['pca_dim']}")


def _state_layer(p: Params) -> None:
    """07: the router's state layer is one the records hold: 0..n_layers, or -1..-(n_layers + 1) from the end."""
    layers = p.upstream("actor", "num_hidden_layers", POSITIVE) if _mini_actor(p) else None
    if layers is not None and not -layers - 1 <= p["state_layer"] <= layers:
        raise p.error("state_layer", f"the actor has layers 0..{layers} (actor.num_hidden_layers = {layers}; "
                                     f"-1: the last), got {p['state_layer']}")


def _subset(p: Params, name: str, section: str, key: str, what: str) -> None:
    """Each memory ``name`` names is among ``section.key`` of the params file (what that stage builds)."""
    built = p.upstream(section, key, Items(Text(MEMORIES)))
    if built is None:
        return
    wanted = [p[name]] if isinstance(p[name], str) else list(p[name])
    for i, kind in enumerate(wanted):
        if kind not in built:
            where = "" if isinstance(p[name], str) else f"item {i}: "
            raise p.error(name, f"{where}{kind!r} has no {what}: {section}.{key} is {shown(list(built))}")


def _recorded_memories(p: Params) -> None:
    """07: a router per memory whose pool steps 06 recorded."""
    _subset(p, "memories", "layer_analysis", "memories", "probe-pool records (06_layer_analysis)")


def _routed_memories(p: Params) -> None:
    """08: each memory has a router from 07."""
    _subset(p, "memories", "probe_router", "memories", "router (07_probe_router)")


def _routed_memory(p: Params) -> None:
    """09: the routed memory and the offline ones have routers from 07."""
    _subset(p, "memory", "probe_router", "memories", "router (07_probe_router)")
    _subset(p, "offline_memories", "probe_router", "memories", "router (07_probe_router)")


def _reused_traces(p: Params) -> None:
    """09 reuses 05's no-memory and text plays of its memory: 05 must play them."""
    played = p.upstream("closed_loop", "memories", Items(Text((NO_MEMORY, *MEMORIES))))
    if played is not None:
        for kind in (NO_MEMORY, p["memory"]):
            if kind not in played:
                raise p.error("memory", f"09 reuses 05's {kind!r} plays, but closed_loop.memories is {shown(list(played))}")
    if p.upstream("closed_loop", "modality", Text()) not in (None, "text"):
        raise p.error("memory", "09 reuses 05's text plays, but closed_loop.modality is not text")


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


# ============================================================================ the stages
STAGES: dict[str, Stage] = {s.notebook: s for s in (
    Stage("00_world", "world", {
        "seed": SEED, **config_fields(WorldConfig), "n_perturbed": POSITIVE, "out_dir": PATH, "figures_dir": PATH,
        "metrics_path": PATH, "results_path": PATH,
    }, (_world,), reporting=("n_perturbed",)),
    Stage("00_recorded", "recorded", {
        "seed": SEED, "source": PATH, "source_format": Text(tuple(IMPORTERS)), "labels": OPTIONAL_PATH,
        "subgoal_labels": OPTIONAL_PATH, "ocr": Flag(), "max_side": Number(integer=True, lo=0, hi=1 << 16), "split": Items(WEIGHT, length=len(SPLITS)),
        "executor": EXECUTOR, "ocr_workers": WORKERS, "out_dir": PATH, "figures_dir": PATH, "metrics_path": PATH, "results_path": PATH,
    }, (_recorded,)),
    Stage("01_segmentation", "segmentation", {
        "world_dir": PATH, "out_dir": PATH, "segmenter": Text(SEGMENTERS), "judge": Text(JUDGES),
        "judge_evidence": PROBABILITY, "boundary_tolerance": COUNT, "llm_sample": COUNT, "llm_mode": Text(LLM_MODES),
        "llm_tokens_per_line": TOKENS, "llm_cache_dir": PATH, "text_embedder": TEXT_EMBEDDER,
        "embed_cache_dir": PATH, "max_episodes": COUNT, "figures_dir": PATH, "metrics_path": PATH, "results_path": PATH,
    }, reporting=("boundary_tolerance", "llm_sample", "llm_mode", "llm_tokens_per_line", "text_embedder")),
    Stage("02_graph_build", "graph_build", {
        "world_dir": PATH, "subgoals_dir": PATH, "out_dir": PATH, "image_embedder": IMAGE_EMBEDDER,
        "text_embedder": TEXT_EMBEDDER, "pca_dim": COUNT, "tau": REAL, "theta": REAL, "k_nodes": INTEGER,
        "flat_k": INTEGER, "task_k": INTEGER, "task_alpha": REAL, "rank_by": Text(), "max_items": INTEGER,
        "max_actions": INTEGER, "memory_image_width": SIDE, "memory_image_height": SIDE,
        "node_index": Text(NODE_INDEXES), "exact_below": COUNT,
        "tau_sweep": Items(REAL), "theta_sweep": Items(REAL), "max_memory_episodes": COUNT, "batch_size": BATCH,
        "embed_workers": WORKERS, "executor": EXECUTOR, "cache_dir": PATH, "figures_dir": PATH, "plots_dir": PATH,
        "metrics_path": PATH, "results_path": PATH,
    }, (_memories, _graph_sweeps, _image_pca), reporting=("tau_sweep", "theta_sweep", "batch_size", "embed_workers", "executor")),
    Stage("03_retrieval_eval", "retrieval_eval", {
        "world_dir": PATH, "subgoals_dir": PATH, "memories_dir": PATH, "out_dir": PATH,
        "image_embedder": IMAGE_EMBEDDER, "text_embedder": TEXT_EMBEDDER, "ks": Items(POSITIVE, nonempty=True, unique=True),
        "k_nodes": COUNT, "tau_sweep": Items(REAL), "max_test_episodes": COUNT, "cache_dir": PATH,
        "embed_workers": WORKERS, "executor": EXECUTOR, "figures_dir": PATH, "plots_dir": PATH,
        "metrics_path": PATH, "results_path": PATH,
    }, (_tau_sweep,), reporting=("ks", "tau_sweep", "embed_workers", "executor")),
    Stage("04_actor", "actor", {
        "world_dir": PATH, "subgoals_dir": PATH, "memories_dir": PATH, "retrieval_dir": PATH, "out_dir": PATH,
        "image_embedder": IMAGE_EMBEDDER, "text_embedder": TEXT_EMBEDDER, "seed": SEED, "k_folds": FOLDS,
        "kinds_per_step": Number(integer=True, lo=1, hi=len(MEMORIES)), "max_history": COUNT, "epochs": INTEGER, "batch_size": BATCH,
        "lr": LEARNING_RATE, "weight_decay": Number(lo=0.0, hi=1e3), "warmup_steps": COUNT, "goal_dropout": PROBABILITY,
        "modality_weights": Items(WEIGHT, length=len(MODALITIES)), "hidden_size": Number(integer=True, lo=1, hi=8192),
        "num_hidden_layers": Number(integer=True, lo=1, hi=MAX_LAYERS), "num_attention_heads": POSITIVE,
        "intermediate_size": Number(integer=True, lo=1, hi=32768), "dropout": Number(lo=0.0, below=1.0),
        "max_memory_tokens": Number(integer=True, lo=1, hi=1 << 16), "mimetic_init": Number(lo=0.0, hi=100.0),
        "word_init_scale": Number(above=0.0, hi=1e3), "exact_match": Flag(), "role_channel": Flag(), "act_context": Flag(),
        "wide_type_head": Flag(), "wide_lr_scale": Number(above=0.0, hi=MAX_WEIGHT), "type_loss_weight": WEIGHT,
        "type_balance": Number(lo=0.0, hi=2.0), "dagger_rounds": COUNT, "dagger_tasks": POSITIVE, "dagger_epochs": POSITIVE,
        "dagger_max_steps": POSITIVE, "max_train_episodes": COUNT, "max_eval_steps": COUNT,
        "torch_threads": THREADS, "cache_dir": PATH, "figures_dir": PATH, "plots_dir": PATH, "metrics_path": PATH,
        "results_path": PATH,
    }, (_actor, _actor_folds), reporting=("max_eval_steps",)),
    Stage("05_closed_loop", "closed_loop", {
        "seed": SEED, "n_seeds": POSITIVE, "max_tasks": COUNT,
        "memories": Items(Text((NO_MEMORY, *MEMORIES)), nonempty=True, unique=True),
        "modality": Text(tuple(m for m in MODALITIES if m != "none")), "k": COUNT, "history_len": COUNT,
        "max_steps": POSITIVE, "batch_size": COUNT, "actor_batch_size": BATCH, "torch_threads": THREADS,
        "executor": EXECUTOR, "workers": WORKERS, "gpus_per_worker": GPUS, "chunks_dir": OPTIONAL_PATH,
        "action_score_modalities": Items(Text(MODALITIES), nonempty=True, unique=True),
        "action_score_memory": Text(MEMORIES), "world_dir": PATH, "memories_dir": PATH, "retrieval_dir": PATH,
        "actor_model": Text(), "actor_dir": PATH, "hf_coords": Text(COORD_CONVENTIONS),
        "hf_answer_format": Text(ANSWER_FORMATS), "hf_max_new_tokens": TOKENS, "image_embedder": IMAGE_EMBEDDER,
        "text_embedder": TEXT_EMBEDDER, "cache_dir": PATH, "out_dir": PATH, "figures_dir": PATH, "metrics_path": PATH,
        "results_path": PATH,
    }, (_executor,), reporting=("executor", "workers", "gpus_per_worker")),
    Stage("06_layer_analysis", "layer_analysis", {
        "world_dir": PATH, "subgoals_dir": PATH, "memories_dir": PATH, "retrieval_dir": PATH, "actor_model": Text(),
        "actor_dir": PATH, "hf_coords": Text(COORD_CONVENTIONS), "hf_answer_format": Text(ANSWER_FORMATS),
        "hf_max_new_tokens": TOKENS, "history_len": COUNT,
        "out_dir": PATH, "image_embedder": IMAGE_EMBEDDER, "text_embedder": TEXT_EMBEDDER, "seed": SEED,
        "memories": Items(Text(MEMORIES), nonempty=True, unique=True), "k_folds": FOLDS,
        "n_samples": Number(integer=True, lo=1, hi=1024), "temperature": TEMPERATURE, "rule": Text(VARIANTS),
        "pca_dim": POSITIVE, "probe_c": INVERSE_STRENGTH, "cv_folds": FOLDS, "n_boot": Number(integer=True, lo=1, hi=10**6), "max_pool_episodes": COUNT,
        "max_eval_steps": COUNT, "batch_size": BATCH, "torch_threads": THREADS, "executor": EXECUTOR,
        "workers": WORKERS, "gpus_per_worker": GPUS, "chunks_dir": OPTIONAL_PATH, "cache_dir": PATH,
        "figures_dir": PATH, "plots_dir": PATH, "metrics_path": PATH, "results_path": PATH,
    }, (_folds, _executor, _pool_folds, _probe_dim), reporting=("cv_folds", "n_boot", "executor", "workers", "gpus_per_worker")),
    Stage("07_probe_router", "probe_router", {
        "records_dir": PATH, "out_dir": PATH, "seed": SEED,
        "memories": Items(Text(MEMORIES), nonempty=True, unique=True), "rule": Text(VARIANTS),
        "pca_dim": POSITIVE, "probe_c": INVERSE_STRENGTH, "state_layer": Number(integer=True, lo=-MAX_LAYERS - 1, hi=MAX_LAYERS),
        "router_hidden": Number(integer=True, lo=1, hi=1 << 16), "router_epochs": Number(integer=True, lo=1, hi=10**6),
        "router_lr": LEARNING_RATE,
        "sweep_rates": Items(Number(above=0.0, hi=1.0), nonempty=True, unique=True), "torch_threads": THREADS,
        "figures_dir": PATH, "plots_dir": PATH, "metrics_path": PATH, "results_path": PATH,
    }, (_probe_dim, _state_layer, _recorded_memories), reporting=("sweep_rates",)),
    Stage("08_oracle_headroom", "oracle_headroom", {
        "records_dir": PATH, "routers_dir": PATH, "memories": Items(Text(MEMORIES), nonempty=True, unique=True),
        "rule": Text(VARIANTS), "figures_dir": PATH, "metrics_path": PATH, "results_path": PATH,
    }, (_routed_memories,)),
    Stage("09_routing_stats", "routing_stats", {
        "world_dir": PATH, "memories_dir": PATH, "actor_model": Text(), "actor_dir": PATH,
        "hf_coords": Text(COORD_CONVENTIONS), "hf_answer_format": Text(ANSWER_FORMATS), "hf_max_new_tokens": TOKENS,
        "closed_loop_dir": PATH, "records_dir": PATH,
        "routers_dir": PATH, "out_dir": PATH, "memory": Text(MEMORIES),
        "offline_memories": Items(Text(MEMORIES), nonempty=True, unique=True), "seed": SEED, "n_seeds": POSITIVE,
        "max_tasks": COUNT, "max_steps": POSITIVE, "history_len": COUNT, "k": COUNT, "batch_size": COUNT,
        "actor_batch_size": BATCH, "torch_threads": THREADS, "executor": EXECUTOR, "workers": WORKERS,
        "gpus_per_worker": GPUS, "chunks_dir": OPTIONAL_PATH, "image_embedder": IMAGE_EMBEDDER,
        "text_embedder": TEXT_EMBEDDER, "cache_dir": PATH, "figures_dir": PATH, "metrics_path": PATH,
        "results_path": PATH,
    }, (_executor, _routed_memory, _reused_traces), reporting=("executor", "workers", "gpus_per_worker")),
    Stage("10_real_graph", "real_graph", {
        "recorded_dir": PATH, "image_embedder": IMAGE_EMBEDDER, "text_embedder": TEXT_EMBEDDER, "pca_dim": COUNT,
        "tau": REAL, "theta": REAL, "tau_sweep": Items(REAL, nonempty=True), "out_dir": PATH, "cache_dir": PATH,
        "figures_dir": PATH, "plots_dir": PATH, "metrics_path": PATH, "results_path": PATH,
    }, (_real_graph, _image_pca), reporting=("tau_sweep",)),
)}
"""Each stage notebook's parameters, by notebook stem."""
