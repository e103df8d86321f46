"""Hugging Face checkpoint folders, loaded only when they are what they say.

``transformers`` loads a checkpoint folder leniently: tensors its config describes but its weights
lack are drawn at random (it prints a MISSING report and goes on), tensors its weights hold but its
config does not describe are dropped, a config carrying ``auto_map`` asks at whatever terminal is open
whether to run the folder's own code, and a config (``num_hidden_layers: 1000000``) or a chat template
(a nested loop) that describes unbounded work is simply run. Here a folder is refused instead, with a
:class:`~guimem.core.data.DataError` naming the folder (or its file) and the field, the original error
as its cause; and the work is bounded before it starts:

1. :func:`check_checkpoint_folder`: every JSON file is an object, none carries ``auto_map`` (guimem
   never runs a checkpoint's code; every ``from_pretrained`` here also passes ``trust_remote_code=False``,
   so nothing can prompt), and every safetensors header is readable.
2. :func:`weight_tensors`: the tensors the weights hold, read from the safetensors headers only
   (name, dtype, shape, nothing allocated). Weights are read as safetensors only, never unpickled.
3. A dry run (:func:`load_model`): the model the config describes is built on the meta device under a
   budget proportional to what the weights hold (:data:`TENSORS_PER_WEIGHT` tensors and
   :data:`ELEMENTS_PER_WEIGHT` elements per tensor and element of the weights, plus a margin), so a
   config describing a million layers or a million-wide layer is stopped after a few hundred tensors;
   then ``transformers`` itself loads the header-only tensors into it (its own key renaming, its own
   tied weights) and reports what is missing, unexpected or mis-shaped (:func:`refuse_incomplete`).
4. The real load, whose own report is checked again.

:func:`check_chat_template` renders a chat template on a probe chat in ``transformers``' sandbox, bounded
(:class:`BoundedSandbox`): jinja errors, a ``SecurityError`` included, and work past the budget are a
DataError naming ``chat_template``.
"""

from __future__ import annotations

import functools
import json
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from jinja2 import nodes
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import generate_lorem_ipsum
from jinja2.visitor import NodeTransformer

from guimem.core.data import DataError
from guimem.core.io import read_json, safetensors_header

WEIGHTS = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"
SHOWN = 3  # tensors named in a refusal
TENSORS_PER_WEIGHT, TENSOR_MARGIN = 4, 1024
"""The dry run may create at most 4 tensors per tensor of the weights, plus 1,024: a model creates about
one per weight (69 for the tiny LLaVA's 57), a few more for buffers and tied weights."""
ELEMENTS_PER_WEIGHT, ELEMENT_MARGIN = 16, 1 << 24
"""... and at most 16 elements per element of the weights, plus 16 M: a quantized checkpoint packs up to
8 weights in one stored element, and non-persistent buffers (rotary tables) are not in the weights."""


# ----------------------------------------------------------------------------- the folder's files
def _auto_map(document: Mapping[str, Any]) -> str | None:
    """Where a configuration names code of its own (an ``auto_map`` at its top or in one of its
    sub-configurations, where ``transformers`` looks), or None."""
    if "auto_map" in document:
        return "auto_map"
    return next((f"{key}.auto_map" for key, value in document.items()
                 if isinstance(value, Mapping) and "auto_map" in value), None)


def check_checkpoint_folder(folder: Path) -> None:
    """Refuse a local checkpoint folder whose JSON files (config, processor, tokenizer) are not JSON
    objects, whose configurations (``*config.json``: model, tokenizer, processor, generation) ask to
    run the folder's own code (``auto_map``), or whose safetensors files are
    unreadable or cut short: a :class:`DataError` naming the file, before ``transformers`` reads them
    (and raises its libraries' own errors, or asks at the terminal whether to run the code)."""
    for path in sorted(folder.iterdir()):
        if path.suffix == ".json" and path.is_file():
            document = read_json(path)
            if not isinstance(document, dict):
                raise DataError(path.name, "expected a JSON object", str(path))
            if path.name.endswith("config.json") and (place := _auto_map(document)) is not None:
                raise DataError(place, "names code of the checkpoint's own to run (auto_map); guimem runs no "
                                       "checkpoint's code: use a checkpoint of a model transformers ships", str(path))
        elif path.suffix == ".safetensors" and path.is_file():
            safetensors_header(path)


def local_folder(model_id_or_path: str) -> Path:
    """The folder a model is read from: ``model_id_or_path`` when it is a folder, else the offline
    cache's snapshot of that hub id (its own ``OSError`` when there is none: nothing is downloaded)."""
    if os.path.isdir(model_id_or_path):
        return Path(model_id_or_path)
    from transformers.utils import cached_file

    return Path(cached_file(model_id_or_path, "config.json", local_files_only=True)).parent


def _inside(folder: Path, name: Any, where: Path, field: str) -> Path:
    """``folder / name`` when ``name`` is a plain file name (no folder, no ``..``)."""
    if not isinstance(name, str) or not name or os.path.basename(name) != name or name in (".", ".."):
        raise DataError(field, f"expected a file name inside the checkpoint folder, got {name!r:.80}", str(where))
    return folder / name


def weight_files(folder: Path, config: Mapping[str, Any]) -> list[Path]:
    """The safetensors files ``transformers`` reads for this folder, in its order of preference: the
    config's ``transformers_weights``, ``model.safetensors``, or the shards a ``model.safetensors.index.json``
    lists. A folder holding none is refused (``weights``)."""
    explicit = config.get("transformers_weights")
    if explicit is not None:
        chosen = _inside(folder, explicit, folder / "config.json", "transformers_weights")
        if not chosen.name.endswith((".safetensors", ".safetensors.index.json")):
            raise DataError("transformers_weights", f"expected a safetensors file, got {explicit!r:.80}",
                            str(folder / "config.json"))
    elif (folder / WEIGHTS).is_file():
        chosen = folder / WEIGHTS
    else:
        chosen = folder / WEIGHTS_INDEX
    if chosen.name.endswith(".safetensors"):
        return [chosen]
    if not chosen.is_file():
        raise DataError("weights", f"no {WEIGHTS} nor {WEIGHTS_INDEX} (guimem reads weights as safetensors only)",
                        str(folder))
    index = read_json(chosen)
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise DataError("weight_map", "expected an object of tensor names to shard files", str(chosen))
    return [_inside(folder, name, chosen, "weight_map") for name in dict.fromkeys(weight_map.values())]


def weight_tensors(files: list[Path]) -> dict[str, Any]:
    """Every tensor the safetensors ``files`` hold, as a meta tensor of its dtype and shape: read from
    the headers alone (nothing allocated). A tensor held by two shards is refused."""
    from transformers.modeling_utils import load_state_dict

    tensors: dict[str, Any] = {}
    for path in files:
        safetensors_header(path)  # a missing or unreadable shard: a DataError naming it
        with _load_errors(path, "weights"):
            found = load_state_dict(str(path), map_location="meta")
        if twice := sorted(found.keys() & tensors.keys()):
            raise DataError(twice[0], "is held by two shards of the weights", str(path))
        tensors.update(found)
    return tensors


# ----------------------------------------------------------------------------- loading
@contextmanager
def _load_errors(where: Path | str, field: str) -> Iterator[None]:
    """Whatever a library raises while reading ``where`` becomes a DataError naming it and ``field``
    (the original as its cause); a DataError passes as it is."""
    try:
        yield
    except DataError:
        raise
    except Exception as err:  # noqa: BLE001 - transformers reads a folder with many libraries' errors
        raise DataError(field, f"does not load: {type(err).__name__}: {str(err)[:240]}", str(where)) from err


def _natural(name: str) -> list[Any]:
    """Sort key putting ``layers.2`` before ``layers.10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _first(names: Any) -> str:
    ordered = sorted(names, key=_natural)
    more = f" and {len(ordered) - SHOWN} more" if len(ordered) > SHOWN else ""
    return ", ".join(ordered[:SHOWN]) + more


def refuse_incomplete(info: Mapping[str, Any], where: Path | str, field: str = "weights") -> None:
    """Refuse a load whose ``transformers`` report (``output_loading_info``) is not clean: tensors the
    config describes but the weights lack (they would be drawn at random), tensors the weights hold but
    the model does not (they would be dropped), tensors of another shape, or load errors. Tied
    weights are not missing: ``transformers`` takes them off the report when it ties them."""
    problems = []
    if missing := info.get("missing_keys"):
        problems.append(f"{len(missing)} tensors the config describes are missing from the weights (they would "
                        f"be drawn at random): {_first(missing)}")
    if unexpected := info.get("unexpected_keys"):
        problems.append(f"{len(unexpected)} tensors of the weights are not in the model the config describes "
                        f"(they would be dropped): {_first(unexpected)}")
    if mismatched := info.get("mismatched_keys"):
        shapes = {name: (list(held), list(wanted)) for name, held, wanted in mismatched}
        named = [f"{name} (weights {shapes[name][0]}, config {shapes[name][1]})"
                 for name in sorted(shapes, key=_natural)[:SHOWN]]
        problems.append(f"{len(shapes)} tensors have another shape than the config makes them: {', '.join(named)}")
    if errors := info.get("error_msgs"):
        problems.append(f"load errors: {'; '.join(str(e)[:160] for e in errors[:SHOWN])}")
    if problems:
        raise DataError(field, "; ".join(problems), str(where))


def _largest_number(value: Any, trail: str = "") -> tuple[str, int]:
    """The dotted place and value of the largest integer in a JSON value (``("", 0)`` if none)."""
    best = ("", 0)
    if isinstance(value, Mapping):
        items = [(f"{trail}.{k}" if trail else str(k), v) for k, v in value.items()]
    elif isinstance(value, list):
        items = [(f"{trail}[{i}]", v) for i, v in enumerate(value)]
    else:
        return (trail, value) if isinstance(value, int) and not isinstance(value, bool) else best
    for place, item in items:
        found = _largest_number(item, place)
        best = found if found[1] > best[1] else best
    return best


def _construction_budget(tensors: dict[str, Any], folder: Path, config: Mapping[str, Any]) -> Any:
    """A torch function mode that counts the tensors (and their elements) building a model creates and
    stops the build with a DataError once they pass what the weights justify."""
    import torch
    from torch.overrides import TorchFunctionMode

    held, elements = len(tensors), sum(t.numel() for t in tensors.values())
    max_tensors = TENSORS_PER_WEIGHT * held + TENSOR_MARGIN
    max_elements = ELEMENTS_PER_WEIGHT * elements + ELEMENT_MARGIN
    factories = {torch.empty, torch.zeros, torch.ones, torch.full, torch.rand, torch.randn, torch.randint,
                 torch.arange, torch.empty_strided, torch.tensor, torch.linspace, torch.logspace, torch.eye,
                 torch.empty_like, torch.zeros_like, torch.ones_like, torch.full_like, torch.rand_like,
                 torch.randn_like, torch.Tensor.new_empty, torch.Tensor.new_zeros, torch.Tensor.new_ones,
                 torch.Tensor.new_full, torch.Tensor.new_tensor}

    class Budget(TorchFunctionMode):
        def __init__(self) -> None:
            super().__init__()
            self.tensors, self.elements = 0, 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func in factories and isinstance(out, torch.Tensor):
                self.tensors, self.elements = self.tensors + 1, self.elements + out.numel()
                if self.tensors > max_tensors or self.elements > max_elements:
                    place, value = _largest_number(config)
                    raise DataError(place or "config.json", f"describes a model far larger than its weights: "
                                    f"building it passed {self.tensors} tensors of {self.elements} elements, the "
                                    f"weights hold {held} tensors of {elements} elements (the config's largest "
                                    f"number: {place} = {value})", str(folder))
            return out

    return Budget()


def _dry_run(auto_class: Any, folder: Path, tensors: dict[str, Any]) -> None:
    """Build the model the config describes on the meta device, under :func:`_construction_budget`,
    and let ``transformers`` load the header-only ``tensors`` into it: its report, refused when not
    clean. Nothing is allocated and no weight is read."""
    from transformers import AutoConfig
    from transformers.models.auto.auto_factory import _get_model_class

    config = AutoConfig.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False)
    if type(config) not in auto_class._model_mapping:
        raise DataError("model_type", f"{type(config).__name__} is not a model {auto_class.__name__} loads",
                        str(folder / "config.json"))
    model_class = _get_model_class(config, auto_class._model_mapping)
    text_config = config.sub_configs.get("text_config")
    if text_config is not None and getattr(model_class, "config_class", None) == text_config:
        quantization = getattr(config, "quantization_config", None)  # as the Auto class passes it on
        config = config.get_text_config()
        if quantization is not None:
            config.quantization_config = quantization
    with _construction_budget(tensors, folder, read_json(folder / "config.json")):
        _, info = model_class.from_pretrained(None, config=config, state_dict=tensors, device_map="meta",
                                              output_loading_info=True, ignore_mismatched_sizes=True)
    refuse_incomplete(info, folder)


def load_model(auto_class: Any, folder: Path, field: str, **kwargs: Any) -> Any:
    """``auto_class.from_pretrained(folder, **kwargs)`` for a checkpoint that is what it says: the
    folder checked (:func:`check_checkpoint_folder`), the model its config describes built under a
    budget and matched tensor by tensor against the weights' headers (the dry run), then loaded from
    the folder alone (``local_files_only``, ``trust_remote_code=False``, safetensors only) and its
    own loading report checked again. Anything else is a DataError naming the folder and ``field``
    (or the weights' field)."""
    check_checkpoint_folder(folder)
    with _load_errors(folder, field):
        files = weight_files(folder, read_json(folder / "config.json"))
        _dry_run(auto_class, folder, weight_tensors(files))
        model, info = auto_class.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False,
                                                 use_safetensors=True, output_loading_info=True, **kwargs)
    refuse_incomplete(info, folder)
    return model


def load_part(loader: Any, folder: Path, field: str, **kwargs: Any) -> Any:
    """``loader.from_pretrained(folder)`` for a tokenizer, processor or image processor: the folder
    checked first (:func:`check_checkpoint_folder`), then read alone, no code of the folder run, any
    failure a DataError naming the folder and ``field``."""
    check_checkpoint_folder(folder)
    with _load_errors(folder, field):
        return loader.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False, **kwargs)


# ----------------------------------------------------------------------------- chat templates
MAX_TEMPLATE_CHARS = 200_000
"""A chat template's longest source: ten times the longest known ones (tool-calling templates of ~20 KB)."""
MAX_TEMPLATE_STEPS = 100_000
"""Steps of one bounded render: loop iterations, calls, filters, tests, operators, item and attribute
reads, comparisons. A real template spends tens to hundreds on a chat; the budget ends any render in
well under a second, whatever its loops nest."""
MAX_TEMPLATE_WEIGHT = 1 << 22
"""Characters and items one bounded render may create (its output included), about 4 M: no operation
runs whose result would pass what is left (a string or list repeated, a number raised, a ``replace``,
``join``, ``format`` or width that multiplies its input)."""
MAX_INT_BITS = 4096  # the largest integer a bounded render may compute
_LOOP, _SIZE = "guimem_counted_loop", "guimem_counted_size"


class TemplateBudget(Exception):
    """A bounded render went past its budget (:func:`check_chat_template` turns it into a DataError)."""


class _Work:
    """What is left of one render's budget."""

    def __init__(self) -> None:
        self.steps, self.weight = MAX_TEMPLATE_STEPS, MAX_TEMPLATE_WEIGHT

    def step(self) -> None:
        self.steps -= 1
        if self.steps < 0:
            raise TemplateBudget(f"more than {MAX_TEMPLATE_STEPS} steps (loop iterations, calls, operators)")

    def afford(self, weight: int, what: str) -> None:
        if weight > self.weight:
            raise TemplateBudget(f"{what} would create about {weight} characters or items, past the "
                                 f"{MAX_TEMPLATE_WEIGHT} of a render")

    def charge(self, weight: int, what: str) -> None:
        self.afford(weight, what)
        self.weight -= weight


def _weight(value: Any, limit: int = MAX_TEMPLATE_WEIGHT) -> int:
    """Characters and items ``value`` holds (counted deep, a shared item each time it is reached: what
    rendering it would write), counted only until it passes ``limit``."""
    total, stack = 0, [value]
    while stack and total <= limit:
        item = stack.pop()
        total += 1
        if isinstance(item, (str, bytes)):
            total += len(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            total += item.bit_length() // 3
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
    return total


def _magnitude(value: Any) -> int:
    """How much an argument can make a call produce: an integer's value (a width, a count), else its weight."""
    return abs(value) if isinstance(value, int) and not isinstance(value, bool) else _weight(value)


def _check_format(fmt: str, args: Any, work: _Work) -> None:
    """A ``%`` or ``format`` string: no width or precision of seven digits or more, and its fields times
    its arguments within what is left."""
    if re.search(r"\d{7,}", fmt):
        raise TemplateBudget("a format string with a width or precision of a million or more")
    work.afford((len(fmt) + 1) * (_weight(args) + 1), "formatting")


class _Counted:
    """An iterable whose every item costs a step (a template loop's items)."""

    def __init__(self, items: Any, work: _Work):
        self.items, self.work = items, work

    def __iter__(self) -> Iterator[Any]:
        for item in self.items:
            self.work.step()
            yield item

    def __len__(self) -> int:
        return len(self.items)  # a TypeError when unsized: LoopContext then counts the items as they come


class _Instrument(NodeTransformer):
    """Rewrites a parsed template so that its loops count their iterations and its comparisons their
    operands (both through filters of :class:`BoundedSandbox`); what the template computes is unchanged."""

    @staticmethod
    def _wrap(node: nodes.Expr, name: str) -> nodes.Filter:
        return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)

    def visit_For(self, node: nodes.For) -> nodes.For:
        node = self.generic_visit(node)
        node.iter = self._wrap(node.iter, _LOOP)
        return node

    def visit_Compare(self, node: nodes.Compare) -> nodes.Compare:
        node = self.generic_visit(node)
        node.expr = self._wrap(node.expr, _SIZE)
        for operand in node.ops:
            operand.expr = self._wrap(operand.expr, _SIZE)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Filter:
        return self._wrap(self.generic_visit(node), _SIZE)

    def visit_Getitem(self, node: nodes.Getitem) -> nodes.Expr:
        node = self.generic_visit(node)
        return self._wrap(node, _SIZE) if isinstance(node.arg, nodes.Slice) else node  # slices skip getitem


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """``transformers``' chat-template sandbox with a work budget (:class:`_Work`): every loop iteration,
    call, filter, test, operator, item or attribute read and comparison costs a step, everything created
    (and the output) costs its weight, and an operation whose result would pass the budget does not run.
    Loops are counted by rewriting the template (:class:`_Instrument`), so nesting cannot hide them."""

    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})

    def __init__(self, work: _Work, base: ImmutableSandboxedEnvironment):
        super().__init__(trim_blocks=base.trim_blocks, lstrip_blocks=base.lstrip_blocks,
                         keep_trailing_newline=base.keep_trailing_newline, autoescape=base.autoescape,
                         undefined=base.undefined, finalize=base.finalize,
                         extensions=[type(e) for e in base.extensions.values()])
        self.work = work
        self.policies.update(base.policies)
        self.globals.update(base.globals)
        self.globals["lipsum"] = self._lipsum
        self.filters.update({name: self._bounded(f, name) for name, f in base.filters.items()})
        self.tests.update({name: self._bounded(f, name) for name, f in base.tests.items()})
        self.filters[_LOOP] = lambda items: _Counted(items, work)
        self.filters[_SIZE] = self._sized

    def _sized(self, value: Any) -> Any:
        self.work.step()
        size = len(value) if isinstance(value, (str, bytes, list, tuple)) else 1
        self.work.charge(size, "a value compared, joined or sliced")
        return value

    def _lipsum(self, n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # noqa: A002
        self.work.afford(_magnitude(n) * _magnitude(max) * 12, "lipsum")
        return generate_lorem_ipsum(n, html, min, max)

    def _afford_call(self, value: Any, args: tuple, kwargs: Mapping[str, Any], what: str) -> None:
        """Refuse a call whose result could pass what is left: its input's weight times its arguments'."""
        size = sum(_magnitude(a) for a in args) + sum(_magnitude(v) for v in kwargs.values())
        self.work.afford((_weight(value, self.work.weight) + 1) * (size + 1), what)

    def _bounded(self, func: Any, name: str) -> Any:
        skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0  # context, eval context or env

        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            value, rest = (args[skip], args[skip + 1:]) if len(args) > skip else (None, ())
            self.work.step()
            if name == "tojson" and any(_magnitude(v) > 16 for v in (*rest, *kwargs.values())):
                raise TemplateBudget("tojson with an indent or separator over 16")  # written once per line and level
            if name == "sum" and not isinstance(kwargs.get("start", rest[1] if len(rest) > 1 else 0), (int, float)):
                raise TemplateBudget("sum of sequences (quadratic)")
            if name == "format" and isinstance(value, str):
                _check_format(value, rest, self.work)
            self._afford_call(value, rest, kwargs, f"the {name} filter")
            out = func(*args, **kwargs)
            self.work.charge(_weight(out, self.work.weight), f"the {name} filter")
            return out

        return run

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        work = __self.work
        work.step()
        if isinstance(__obj, LoopContext) and args:  # a recursive loop's next level
            args = (_Counted(args[0], work),) + args[1:]
        method = getattr(__obj, "__wrapped__", __obj)  # str.format comes wrapped by the sandbox
        target = getattr(method, "__self__", None)
        if isinstance(target, str) and getattr(method, "__name__", "") in ("format", "format_map"):
            _check_format(target, (args, kwargs), work)
        __self._afford_call(target if isinstance(target, (str, list, tuple, dict)) else None, args, kwargs,
                            f"calling {getattr(method, '__name__', type(__obj).__name__)}")
        out = super().call(__context, __obj, *args, **kwargs)
        work.charge(_weight(out, work.weight), "a call")
        return out

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        self.work.step()
        ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right))
        if operator == "**" and ints and right > 0 and abs(left) > 1 and right * left.bit_length() > MAX_INT_BITS:
            raise TemplateBudget(f"a power over {MAX_INT_BITS} bits")
        if operator == "*" and ints and left.bit_length() + right.bit_length() > MAX_INT_BITS:
            raise TemplateBudget(f"a product over {MAX_INT_BITS} bits")
        if operator == "*" and not ints:
            count, seq = (right, left) if isinstance(right, int) else (left, right)
            if isinstance(count, int) and isinstance(seq, (str, bytes, list, tuple)):
                self.work.afford(_weight(seq, self.work.weight) * max(count, 0), "a repetition")
        if operator == "%" and isinstance(left, str):
            _check_format(left, right, self.work)
        out = super().call_binop(context, operator, left, right)
        self.work.charge(_weight(out, self.work.weight), f"the {operator} operator")
        return out

    def getattr(self, obj: Any, attribute: str) -> Any:
        self.work.step()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        self.work.step()
        return super().getitem(obj, argument)


def bounded_render(template: str, **variables: Any) -> str:
    """``template`` rendered with ``variables`` in ``transformers``' chat-template environment (its
    filters, globals and extensions), under :class:`BoundedSandbox`'s budget: the same text as
    ``transformers`` renders, or :class:`TemplateBudget` or the template's own jinja error."""
    from transformers.utils.chat_template_utils import _compile_jinja_template

    if len(template) > MAX_TEMPLATE_CHARS:
        raise TemplateBudget(f"{len(template)} characters long, over {MAX_TEMPLATE_CHARS}")
    work = _Work()
    env = BoundedSandbox(work, _compile_jinja_template("").environment)
    compiled = env.from_string(_Instrument().visit(env.parse(template)))
    out = []
    for chunk in compiled.generate(**variables):
        work.charge(len(chunk), "the output")
        out.append(chunk)
    return "".join(out)


def check_chat_template(template: Any, messages: list[dict], where: str | None,
                        variables: Mapping[str, Any] | None = None) -> None:
    """Refuse a chat template that is not a string, does not render the probe chat ``messages`` (with
    ``add_generation_prompt`` and ``variables``, e.g. the tokenizer's special tokens, as ``transformers``
    passes them), or needs more work than :func:`bounded_render` allows: a DataError naming
    ``chat_template`` at ``where``, the jinja error (a ``SecurityError`` included) as its cause.

    Bounding the work by counting it (steps and sizes) rather than by a clock gives every machine the
    same verdict; the budget is a thousand times what real templates spend on a chat."""
    named = template if isinstance(template, Mapping) else {"": template}  # a processor may hold several by name
    for source in named.values():
        if not isinstance(source, str):
            raise DataError("chat_template", f"expected a jinja template string, got {type(source).__name__}", where)
        _check_one(source, messages, where, variables)


def _check_one(template: str, messages: list[dict], where: str | None, variables: Mapping[str, Any] | None) -> None:
    chat = json.loads(json.dumps(messages, default=lambda o: f"<{type(o).__name__}>"))  # plain data, as transformers
    # passes it (an image or other object in a message becomes an inert placeholder)
    try:
        bounded_render(template, messages=chat, tools=None, documents=None, add_generation_prompt=True,
                       **dict(variables or {}))
    except TemplateBudget as err:
        raise DataError("chat_template", f"does more work than a chat template may: {err}", where) from err
    except Exception as err:  # noqa: BLE001 - a template's own error: jinja's, or one its operations raise
        raise DataError("chat_template", f"does not render a chat: {type(err).__name__}: {str(err)[:200]}",
                        where) from err
