"""Every stage's parameters, checked before its notebook starts, by the configs the code itself uses.

A stage notebook (``00_world``, ``00_recorded``, ``01_segmentation`` ... ``10_real_graph``) gets its
parameters from three places: its ``parameters`` cell (the defaults), a ``params.yaml`` section
(``-f params.yaml:world``) and the command line (``-p seed 0``, often a ``${base.seed}`` DVC
interpolated). :class:`Stage` checks the complete mapping in three passes, so that a bad value
stops the stage before any kernel starts, not ten minutes later deep in a cell:

1. names: every parameter is one of the stage's (a typo such as ``n_trian`` is named, with the
   closest real name) and none is missing;
2. each value on its own (:class:`Number`, :class:`Flag`, :class:`Text`, :class:`Items`): a real
   ``bool`` (not ``"no"``), a real integer (not ``3.0``, not YAML's ``1e3``, which is a string),
   a finite number in its range, a name from the code's own list (:data:`SEGMENTERS`,
   :data:`MEMORIES`, :data:`MODALITIES`, ...), a list of the right length;
3. the stage's checks: the code's configs built from the values (``WorldConfig``,
   ``GraphConfig``, the memories and their ``RenderStyle``, ``TrainConfig``, ``ActorConfig``),
   so that a rule lives in one place, and relations between values (``success_min <=
   success_max``).

A failure is a :class:`~guimem.core.data.DataError` that names the value where the user wrote it
(:class:`Source`): ``params.yaml: field 'world.themes'`` for a value from ``-f params.yaml:world``,
``field 'seed': ... (passed with -p)`` for one from the command line.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
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
from guimem.eval.closed_loop import NO_MEMORY
from guimem.eval.metrics import VARIANTS
from guimem.eval.examples import assign_folds
from guimem.models.embedding import IMAGE_EMBEDDERS, TEXT_EMBEDDERS, HashingTextEmbedder, PixelEmbedder
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import unseen_types_covered
from guimem.real.importers import IMPORTERS
from guimem.smg.graph import GraphConfig
from guimem.smg.index import NODE_INDEXES
from guimem.smg.judge import JUDGES
from guimem.smg.llm_segmenter import LLM_MODES
from guimem.smg.memories import MEMORIES, RenderStyle, make_memory
from guimem.smg.segment import SEGMENTERS

T = TypeVar("T")



# ============================================================================ where a value came from
@dataclass(frozen=True)
class Source:
    """Where a parameter's value was set, so that an error names it as the user wrote it."""

    path: str | None = None  # the file holding the value: params.yaml, or the notebook for a default
    section: str = ""  # its section in that file (``world`` for ``-f params.yaml:world``)
    how: str = ""  # how it was given, said after the message: "passed with -p"

    def error(self, name: str, message: str) -> DataError:
        """A DataError for parameter ``name``: ``section.name`` in ``path``, else ``name``."""
        field = f"{self.section}.{name}" if self.section else name
        return DataError(field, f"{message} ({self.how})" if self.how else message, self.path)


COMMAND_LINE = Source(how="passed with -p")
CALLER = Source(how="passed to run_notebook")


class Params:
    """A stage's complete parameter values and their sources; errors name each value where it was set."""

    def __init__(self, values: Mapping[str, Any], sources: Mapping[str, Source], default: Source = CALLER):
        self.values, self.sources, self.default = dict(values), dict(sources), default

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
    """A finite number (an integer if ``integer``: not a bool, not ``3.0``) within ``[lo, hi]``, above ``above``."""

    integer: bool = False
    lo: float | None = None
    hi: float | None = None
    above: float | None = None  # an exclusive lower bound (a learning rate > 0)

    def problem(self, value: Any) -> str | None:
        try:
            check_number(value, "value", self.lo, self.hi, self.integer)
        except DataError as err:
            return err.message
        if self.above is not None and value <= self.above:
            return f"must be > {self.above}, got {value!r}"
        return None


@dataclass(frozen=True)
class Flag:
    """A real boolean: ``true``/``false`` in YAML, ``True``/``False`` in Python (not ``"no"``, not 1)."""

    def problem(self, value: Any) -> str | None:
        return None if isinstance(value, bool) else f"expected true or false, got {type(value).__name__} {value!r:.60}"


@dataclass(frozen=True)
class Text:
    """A non-empty string (or ``""`` where ``empty``); one of ``choices`` or matching ``pattern`` when either is given."""

    choices: tuple[str, ...] = ()
    pattern: str = ""  # a full-match regular expression for names with a variable part (``hf:<folder>``)
    shown: tuple[str, ...] = ()  # the names the message lists (default: ``choices``)
    empty: bool = False  # "" is allowed (it means "none", as the notebook says)

    def problem(self, value: Any) -> str | None:
        if isinstance(value, str) and not value and self.empty:
            return None
        if not isinstance(value, str) or not value:
            return f"expected a non-empty string, got {type(value).__name__} {value!r:.60}"
        if (self.choices or self.pattern) and value not in self.choices and not (
                self.pattern and re.fullmatch(self.pattern, value)):
            return f"expected one of {list(self.shown or self.choices)}, got {value!r:.60}"
        return None


@dataclass(frozen=True)
class Items:
    """A list whose every item is an ``item``; of exactly ``length`` items, non-empty or unique if asked."""

    item: Field
    length: int | None = None
    nonempty: bool = False
    unique: bool = False

    def problem(self, value: Any) -> str | None:
        if not isinstance(value, (list, tuple)):
            return f"expected a list, got {type(value).__name__} {value!r:.60}"
        if self.length is not None and len(value) != self.length:
            return f"expected {self.length} items, got {len(value)}: {list(value)!r:.80}"
        if self.nonempty and not value:
            return "expected at least one item, got an empty list"
        for i, v in enumerate(value):
            if (why := self.item.problem(v)) is not None:
                return f"item {i}: {why}"
        if self.unique and len(set(value)) != len(value):
            return f"expected distinct items, got {list(value)!r:.80}"
        return None


COUNT = Number(integer=True, lo=0)  # 0 allowed: "none" or "all", as each notebook says
POSITIVE = Number(integer=True, lo=1)
INTEGER = Number(integer=True)  # its range is checked by the code's config it goes to
REAL = Number()  # likewise
PROBABILITY = Number(lo=0.0, hi=1.0)
PATH = Text()
OPTIONAL_PATH = Text(empty=True)  # "": none
SEED = COUNT  # numpy's default_rng refuses negative seeds
IMAGE_EMBEDDER = Text(choices=tuple(n for n in IMAGE_EMBEDDERS if "<" not in n),
                      pattern=r"pixels-[1-9]\d*x[1-9]\d*|hf:.+", shown=IMAGE_EMBEDDERS)  # models.embedding's names
EXECUTOR = Text(choices=("local", "ray"), pattern=r"ray:.+", shown=("local", "ray", "ray:<address>"))  # core.executor
TEXT_EMBEDDER = Text(choices=TEXT_EMBEDDERS, pattern=r"hashing-[1-9]\d*", shown=(*TEXT_EMBEDDERS, "hashing-<dim>"))


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
                 default: Source = CALLER) -> None:
        """Raise a DataError for the first bad value of the complete mapping ``values``.

        ``sources`` says where each value was set (``default`` for those it does not name).
        """
        p = Params(values, sources or {}, default)
        for name in values:
            if name not in self.fields:
                close = difflib.get_close_matches(name, self.fields, n=1)
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


# ============================================================================ the stages
STAGES: dict[str, Stage] = {s.notebook: s for s in (
    Stage("00_world", "world", {
        "seed": SEED, **config_fields(WorldConfig), "n_perturbed": POSITIVE, "out_dir": PATH, "figures_dir": PATH,
        "metrics_path": PATH, "results_path": PATH,
    }, (_world,), reporting=("n_perturbed",)),
    Stage("00_recorded", "recorded", {
        "seed": SEED, "source": PATH, "source_format": Text(tuple(IMPORTERS)), "labels": OPTIONAL_PATH,
        "subgoal_labels": OPTIONAL_PATH, "ocr": Flag(), "max_side": COUNT, "split": Items(Number(lo=0.0), length=len(SPLITS)),
        "executor": EXECUTOR, "ocr_workers": POSITIVE, "out_dir": PATH, "figures_dir": PATH, "metrics_path": PATH, "results_path": PATH,
    }, (_recorded,)),
    Stage("01_segmentation", "segmentation", {
        "world_dir": PATH, "out_dir": PATH, "segmenter": Text(SEGMENTERS), "judge": Text(JUDGES),
        "judge_evidence": PROBABILITY, "boundary_tolerance": COUNT, "llm_sample": COUNT, "llm_mode": Text(LLM_MODES),
        "llm_tokens_per_line": POSITIVE, "llm_cache_dir": PATH, "text_embedder": TEXT_EMBEDDER,
        "embed_cache_dir": PATH, "max_episodes": COUNT, "figures_dir": PATH, "metrics_path": PATH, "results_path": PATH,
    }, reporting=("boundary_tolerance", "llm_sample", "llm_mode", "llm_tokens_per_line", "text_embedder")),
    Stage("02_graph_build", "graph_build", {
        "world_dir": PATH, "subgoals_dir": PATH, "out_dir": PATH, "image_embedder": IMAGE_EMBEDDER,
        "text_embedder": TEXT_EMBEDDER, "pca_dim": COUNT, "tau": REAL, "theta": REAL, "k_nodes": INTEGER,
        "flat_k": INTEGER, "task_k": INTEGER, "task_alpha": REAL, "rank_by": Text(), "max_items": INTEGER,
        "max_actions": INTEGER, "memory_image_width": POSITIVE, "memory_image_height": POSITIVE,
        "node_index": Text(NODE_INDEXES), "exact_below": COUNT,
        "tau_sweep": Items(REAL), "theta_sweep": Items(REAL), "max_memory_episodes": COUNT, "batch_size": POSITIVE,
        "embed_workers": POSITIVE, "executor": EXECUTOR, "cache_dir": PATH, "figures_dir": PATH, "plots_dir": PATH,
        "metrics_path": PATH, "results_path": PATH,
    }, (_memories, _graph_sweeps), reporting=("tau_sweep", "theta_sweep", "batch_size", "embed_workers", "executor")),
    Stage("03_retrieval_eval", "retrieval_eval", {
        "world_dir": PATH, "subgoals_dir": PATH, "memories_dir": PATH, "out_dir": PATH,
        "image_embedder": IMAGE_EMBEDDER, "text_embedder": TEXT_EMBEDDER, "ks": Items(POSITIVE, nonempty=True),
        "k_nodes": COUNT, "tau_sweep": Items(REAL), "max_test_episodes": COUNT, "cache_dir": PATH,
        "embed_workers": POSITIVE, "executor": EXECUTOR, "figures_dir": PATH, "plots_dir": PATH,
        "metrics_path": PATH, "results_path": PATH,
    }, (_tau_sweep,), reporting=("ks", "tau_sweep", "embed_workers", "executor")),
    Stage("04_actor", "actor", {
        "world_dir": PATH, "subgoals_dir": PATH, "memories_dir": PATH, "retrieval_dir": PATH, "out_dir": PATH,
        "image_embedder": IMAGE_EMBEDDER, "text_embedder": TEXT_EMBEDDER, "seed": SEED, "k_folds": INTEGER,
        "kinds_per_step": POSITIVE, "max_history": COUNT, "epochs": INTEGER, "batch_size": INTEGER,
        "lr": Number(above=0.0), "weight_decay": Number(lo=0.0), "warmup_steps": COUNT, "goal_dropout": PROBABILITY,
        "modality_weights": Items(Number(lo=0.0), length=len(MODALITIES)), "hidden_size": POSITIVE,
        "num_hidden_layers": INTEGER, "num_attention_heads": POSITIVE, "intermediate_size": POSITIVE,
        "dropout": PROBABILITY, "max_memory_tokens": POSITIVE, "mimetic_init": Number(lo=0.0),
        "word_init_scale": Number(above=0.0), "exact_match": Flag(), "role_channel": Flag(), "act_context": Flag(),
        "wide_type_head": Flag(), "wide_lr_scale": Number(above=0.0), "type_loss_weight": Number(lo=0.0),
        "type_balance": Number(lo=0.0), "dagger_rounds": COUNT, "dagger_tasks": POSITIVE, "dagger_epochs": POSITIVE,
        "dagger_max_steps": POSITIVE, "max_train_episodes": COUNT, "max_eval_steps": COUNT,
        "torch_threads": POSITIVE, "cache_dir": PATH, "figures_dir": PATH, "plots_dir": PATH, "metrics_path": PATH,
        "results_path": PATH,
    }, (_actor,), reporting=("max_eval_steps",)),
    Stage("05_closed_loop", "closed_loop", {
        "seed": SEED, "n_seeds": POSITIVE, "max_tasks": COUNT,
        "memories": Items(Text((NO_MEMORY, *MEMORIES)), nonempty=True, unique=True),
        "modality": Text(tuple(m for m in MODALITIES if m != "none")), "k": COUNT, "history_len": COUNT,
        "max_steps": POSITIVE, "batch_size": COUNT, "actor_batch_size": POSITIVE, "torch_threads": POSITIVE,
        "executor": EXECUTOR, "workers": POSITIVE, "gpus_per_worker": Number(lo=0.0), "chunks_dir": OPTIONAL_PATH,
        "action_score_modalities": Items(Text(MODALITIES), nonempty=True, unique=True),
        "action_score_memory": Text(MEMORIES), "world_dir": PATH, "memories_dir": PATH, "retrieval_dir": PATH,
        "actor_model": Text(), "actor_dir": PATH, "hf_coords": Text(COORD_CONVENTIONS),
        "hf_answer_format": Text(ANSWER_FORMATS), "hf_max_new_tokens": POSITIVE, "image_embedder": IMAGE_EMBEDDER,
        "text_embedder": TEXT_EMBEDDER, "cache_dir": PATH, "out_dir": PATH, "figures_dir": PATH, "metrics_path": PATH,
        "results_path": PATH,
    }, (_executor,), reporting=("executor", "workers", "gpus_per_worker")),
    Stage("06_layer_analysis", "layer_analysis", {
        "world_dir": PATH, "subgoals_dir": PATH, "memories_dir": PATH, "retrieval_dir": PATH, "actor_model": Text(),
        "actor_dir": PATH, "hf_coords": Text(COORD_CONVENTIONS), "hf_answer_format": Text(ANSWER_FORMATS),
        "hf_max_new_tokens": POSITIVE, "history_len": COUNT,
        "out_dir": PATH, "image_embedder": IMAGE_EMBEDDER, "text_embedder": TEXT_EMBEDDER, "seed": SEED,
        "memories": Items(Text(MEMORIES), nonempty=True, unique=True), "k_folds": INTEGER, "n_samples": POSITIVE,
        "temperature": Number(above=0.0), "rule": Text(VARIANTS), "pca_dim": POSITIVE, "probe_c": Number(above=0.0),
        "cv_folds": Number(integer=True, lo=2), "n_boot": POSITIVE, "max_pool_episodes": COUNT,
        "max_eval_steps": COUNT, "batch_size": POSITIVE, "torch_threads": POSITIVE, "executor": EXECUTOR,
        "workers": POSITIVE, "gpus_per_worker": Number(lo=0.0), "chunks_dir": OPTIONAL_PATH, "cache_dir": PATH,
        "figures_dir": PATH, "plots_dir": PATH, "metrics_path": PATH, "results_path": PATH,
    }, (_folds, _executor), reporting=("cv_folds", "n_boot", "executor", "workers", "gpus_per_worker")),
    Stage("07_probe_router", "probe_router", {
        "records_dir": PATH, "out_dir": PATH, "seed": SEED,
        "memories": Items(Text(MEMORIES), nonempty=True, unique=True), "rule": Text(VARIANTS),
        "pca_dim": POSITIVE, "probe_c": Number(above=0.0), "state_layer": INTEGER, "router_hidden": POSITIVE,
        "router_epochs": POSITIVE, "router_lr": Number(above=0.0),
        "sweep_rates": Items(Number(above=0.0, hi=1.0), nonempty=True, unique=True), "torch_threads": POSITIVE,
        "figures_dir": PATH, "plots_dir": PATH, "metrics_path": PATH, "results_path": PATH,
    }, reporting=("sweep_rates",)),
    Stage("08_oracle_headroom", "oracle_headroom", {
        "records_dir": PATH, "routers_dir": PATH, "memories": Items(Text(MEMORIES), nonempty=True, unique=True),
        "rule": Text(VARIANTS), "figures_dir": PATH, "metrics_path": PATH, "results_path": PATH,
    }),
    Stage("09_routing_stats", "routing_stats", {
        "world_dir": PATH, "memories_dir": PATH, "actor_model": Text(), "actor_dir": PATH,
        "hf_coords": Text(COORD_CONVENTIONS), "hf_answer_format": Text(ANSWER_FORMATS), "hf_max_new_tokens": POSITIVE,
        "closed_loop_dir": PATH, "records_dir": PATH,
        "routers_dir": PATH, "out_dir": PATH, "memory": Text(MEMORIES),
        "offline_memories": Items(Text(MEMORIES), nonempty=True, unique=True), "seed": SEED, "n_seeds": POSITIVE,
        "max_tasks": COUNT, "max_steps": POSITIVE, "history_len": COUNT, "k": COUNT, "batch_size": COUNT,
        "actor_batch_size": POSITIVE, "torch_threads": POSITIVE, "executor": EXECUTOR, "workers": POSITIVE,
        "gpus_per_worker": Number(lo=0.0), "chunks_dir": OPTIONAL_PATH, "image_embedder": IMAGE_EMBEDDER,
        "text_embedder": TEXT_EMBEDDER, "cache_dir": PATH, "figures_dir": PATH, "metrics_path": PATH,
        "results_path": PATH,
    }, (_executor,), reporting=("executor", "workers", "gpus_per_worker")),
    Stage("10_real_graph", "real_graph", {
        "recorded_dir": PATH, "image_embedder": IMAGE_EMBEDDER, "text_embedder": TEXT_EMBEDDER, "pca_dim": COUNT,
        "tau": REAL, "theta": REAL, "tau_sweep": Items(REAL, nonempty=True), "out_dir": PATH, "cache_dir": PATH,
        "figures_dir": PATH, "plots_dir": PATH, "metrics_path": PATH, "results_path": PATH,
    }, (_real_graph,), reporting=("tau_sweep",)),
)}
"""Each stage notebook's parameters, by notebook stem."""
