"""The actor interface over any Hugging Face vision-language model.

:class:`HFVLMActor` implements :class:`guimem.core.policy.Policy` with ``AutoProcessor`` and
``AutoModelForImageTextToText`` (decoder-only VLMs: Qwen2/2.5/3-VL, UI-TARS, ...). For each
:class:`~guimem.core.policy.PolicyInput` it

1. builds a chat with the model's chat template: a system turn describing the action space
   and the answer format, and a user turn with the goal, the earlier actions, the current
   screenshot, then the retrieved memory (as a text block, as an image, or both) and the
   question. Everything before the memory is the step's shared prefix: :meth:`HFVLMActor.open_prefix`
   runs it once and :meth:`HFVLMActor.continue_prefix` answers any rendering on its KV cache
   (:mod:`guimem.actors.hf.prefix`), which is how SwitchMem routes a step at the cost of one prompt;
2. optionally returns the hidden state of every layer at the *final prompt token* (the
   last token of the prompt, after the generation prompt, e.g. the newline after
   ``<|im_start|>assistant``), taken from the prefill pass of generation itself, so it costs
   no extra forward pass;
3. decodes greedily and parses the answer into a :class:`~guimem.core.data.Action`.

Hidden states follow the ``transformers`` convention, checked for Qwen2-VL in the tests:
``hidden_states`` is ``[n_layers + 1, d_model]`` per input; index 0 is the embedding
output (the input of the first decoder layer), index ``i`` the output of decoder layer
``i``, and the last index the last layer's output after the final norm (what the LM head
reads).

Answers are read by :func:`guimem.actors.hf.parsing.parse_answer`: JSON or UI-TARS-style calls,
coordinates in the convention the actor is given (:data:`~guimem.actors.hf.parsing.COORD_CONVENTIONS`).

An answer that cannot be parsed never becomes a plausible action silently: the output
carries :data:`FALLBACK_ACTION` (``impossible``) and ``info["parse_error"]`` says why.
"""

from __future__ import annotations

import copy
from typing import Any, Sequence

import jinja2
import numpy as np
import torch
from PIL import Image

from guimem.actors.hf.parsing import (
    ANSWER_FORMATS,
    COORD_CONVENTIONS,
    DEFAULT_ANSWER_FORMAT,
    DEFAULT_COORDS,
    DEFAULT_MAX_NEW_TOKENS,
    DEFAULT_SWIPE_LENGTH,
    FALLBACK_ACTION,
    AnswerFormat,
    CoordConvention,
    Frame,
    parse_answer,
)
from guimem.actors.hf.prefix import (
    PromptPart,
    SharedPrefix,
    concat_images,
    full_positions,
    left_padded,
    same_screen,
)
from guimem.actors.hf.prompts import build_messages, split_at_prefix_end, system_prompt
from guimem.core.data import Action, DataError
from guimem.core.policy import PolicyInput, PolicyOutput
from guimem.models.hf_checkpoint import check_chat_template, load_model, load_part, local_folder


def _probe() -> PolicyInput:
    """A step with every part a prompt can hold (history, memory text and image): what the chat
    template is checked on when the actor is set up."""
    return PolicyInput(Image.new("RGB", (56, 56)), (), "open the settings", (Action("back"),),
                       "tap Settings, then Display", Image.new("RGB", (56, 56)))


class HFVLMActor:
    """:class:`guimem.core.policy.Policy` over a Hugging Face VLM (greedy decoding, parsed answers)."""

    def __init__(self, model_id_or_path: str, *, coords: CoordConvention = DEFAULT_COORDS,
                 answer_format: AnswerFormat = DEFAULT_ANSWER_FORMAT, max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
                 batch_size: int = 1,
                 swipe_length: float = DEFAULT_SWIPE_LENGTH, system: str | None = None,
                 device: str | None = None, dtype: str | torch.dtype = "auto"):
        """Load ``model_id_or_path`` (a local folder or a cached hub id; never downloads), refusing a
        checkpoint that is not what it says (:mod:`guimem.models.hf_checkpoint`): its processor is read
        and its chat template rendered on a probe step under a work budget, then the model is built
        only once its config and weights agree tensor by tensor. Each refusal is a DataError naming
        the folder (or its file) and the field.

        Args:
            coords: the coordinate convention the model answers in (:data:`COORD_CONVENTIONS`).
            answer_format: the format the system prompt asks for (both are parsed).
            max_new_tokens: the generation budget per answer.
            batch_size: inputs per forward pass (left-padded).
            swipe_length: finger travel of a direction-only scroll, fraction of the screen.
            system: a system prompt replacing :func:`system_prompt`'s.
            device: ``cuda`` if available when None.
            dtype: passed to ``from_pretrained`` (``"auto"``: the checkpoint's).
        """
        from transformers import AutoModelForImageTextToText, AutoProcessor

        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        folder = local_folder(model_id_or_path)  # an id neither on disk nor in the offline cache: its own OSError
        processor = load_part(AutoProcessor, folder, "actor_model")
        self._setup(None, processor, coords, answer_format, max_new_tokens, batch_size, swipe_length, system,
                    name=str(model_id_or_path), where=str(folder))  # settings and template: before the model
        model = load_model(AutoModelForImageTextToText, folder, "actor_model", dtype=dtype)
        self.model = model.to(device).eval()

    @classmethod
    def from_model(cls, model: Any, processor: Any, *, coords: CoordConvention = DEFAULT_COORDS,
                   answer_format: AnswerFormat = DEFAULT_ANSWER_FORMAT, max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
                   batch_size: int = 1,
                   swipe_length: float = DEFAULT_SWIPE_LENGTH, system: str | None = None) -> "HFVLMActor":
        """An actor over an already-built model and processor (on the model's device)."""
        actor = cls.__new__(cls)
        actor._setup(model.eval(), processor, coords, answer_format, max_new_tokens, batch_size,
                     swipe_length, system, name=type(model).__name__)
        return actor

    def _setup(self, model: Any, processor: Any, coords: str, answer_format: str, max_new_tokens: int,
               batch_size: int, swipe_length: float, system: str | None, name: str, where: str | None = None) -> None:
        """Check the settings and the chat template (rendered on :func:`_probe` under a work budget:
        :func:`~guimem.models.hf_checkpoint.check_chat_template`) and keep them; ``where`` is the
        checkpoint folder errors name (None for a model built in memory)."""
        if coords not in COORD_CONVENTIONS:
            raise DataError("coords", f"expected one of {COORD_CONVENTIONS}, got {coords!r}")
        if answer_format not in ANSWER_FORMATS:
            raise DataError("answer_format", f"expected one of {ANSWER_FORMATS}, got {answer_format!r}")
        for field, value in (("max_new_tokens", max_new_tokens), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise DataError(field, f"expected a positive int, got {value!r}")
        if not 0 < swipe_length <= 0.5:
            raise DataError("swipe_length", f"expected a fraction in (0, 0.5], got {swipe_length!r}")
        if getattr(processor, "chat_template", None) is None and getattr(processor.tokenizer, "chat_template", None) is None:
            raise DataError("chat_template", f"the processor of {name} has no chat template", where)
        self.model, self.processor, self.name, self._where = model, processor, name, where
        self.coords, self.answer_format = coords, answer_format
        self.max_new_tokens, self.batch_size, self.swipe_length = max_new_tokens, batch_size, swipe_length
        self.system = system if system is not None else system_prompt(answer_format, coords)
        tokenizer = processor.tokenizer
        if tokenizer.pad_token_id is None:  # batched generation needs a pad token
            tokenizer.pad_token = tokenizer.eos_token
        self._resized: dict[tuple[int, int], Frame] = {}  # original (W, H) -> processor-resized (W, H)
        check_chat_template(self._template(), self._chat(_probe())[0], where, tokenizer.special_tokens_map)
        self.shares_prefix = self._can_share_prefix()

    def _can_share_prefix(self) -> bool:
        """Whether every rendering's prompt continues one shared prefix, token for token: the chat
        template renders the screenshot's image, and no image of the memory, before the memory, and
        the tokenizer cuts the prompt where the memory starts (checked once, on a probe prompt).
        LLaVA-1.5's template, which renders every image first, does not; nor would a tokenizer that
        adds a word-start marker to the memory's first token when it is encoded on its own."""
        token = getattr(self.processor, "image_token", None)
        if not isinstance(token, str) or not token:
            return False
        prefix, suffix, _, _ = self.prompt_parts(_probe())
        if prefix.count(token) != 1 or suffix.count(token) != 1:
            return False
        tokenizer = self.processor.tokenizer
        joined = tokenizer(prefix)["input_ids"] + tokenizer(suffix, add_special_tokens=False)["input_ids"]
        return joined == tokenizer(prefix + suffix)["input_ids"]

    # ------------------------------------------------------------------ shape of the model
    @property
    def n_layers(self) -> int:
        """Decoder layers of the language model (hidden states have ``n_layers + 1`` rows)."""
        return int(self.model.config.get_text_config().num_hidden_layers)

    @property
    def d_model(self) -> int:
        """Width of the language model's hidden states."""
        return int(self.model.config.get_text_config().hidden_size)

    @property
    def device(self) -> torch.device:
        """Where the model's weights are (inputs are sent there)."""
        return next(self.model.parameters()).device

    # ------------------------------------------------------------------ prompt
    def frame(self, screenshot: Image.Image) -> Frame:
        """``(width, height)`` of the frame answers about ``screenshot`` are written in."""
        if self.coords == "relative_1000":
            return (1000.0, 1000.0)
        if self.coords == "normalized":
            return (1.0, 1.0)
        if self.coords == "absolute_original":
            return (float(screenshot.width), float(screenshot.height))
        return self.resized_size(screenshot)

    def resized_size(self, image: Image.Image) -> Frame:
        """``(width, height)`` the processor resizes ``image`` to (cached per input size)."""
        key = image.size
        if key not in self._resized:
            image_processor = self.processor.image_processor
            out = image_processor(images=[image.convert("RGB")], return_tensors="pt")
            if "image_grid_thw" in out:  # Qwen-VL family: a grid of patch_size patches
                _, grid_h, grid_w = (int(v) for v in out["image_grid_thw"][0])
                patch = int(image_processor.patch_size)
                self._resized[key] = (float(grid_w * patch), float(grid_h * patch))
            else:  # fixed-size processors: pixel_values [n, C, H, W]
                height, width = out["pixel_values"].shape[-2:]
                self._resized[key] = (float(width), float(height))
        return self._resized[key]

    def _template(self) -> Any:
        """The chat template prompts are rendered with: the processor's, else its tokenizer's."""
        return self.processor.chat_template or self.processor.tokenizer.chat_template

    def _chat(self, inp: PolicyInput) -> tuple[list[dict], list[Image.Image], Frame]:
        """The chat of one input (with the prefix marker), its images in order and its coordinate frame."""
        frame = self.frame(inp.screenshot)
        messages, images = build_messages(inp, self.system, self.answer_format, frame,
                                          show_frame=self.coords.startswith("absolute"), mark_prefix_end=True)
        return messages, images, frame

    def prompt_parts(self, inp: PolicyInput) -> tuple[str, str, list[Image.Image], Frame]:
        """The chat-templated prompt of one input in its two parts (the shared prefix up to the
        screenshot, the memory suffix after it), its images in order (the screenshot first) and its
        coordinate frame. A template that fails on it is a DataError naming ``chat_template``."""
        messages, images, frame = self._chat(inp)
        try:
            text = self.processor.apply_chat_template(messages, chat_template=self._template(), tokenize=False,
                                                      add_generation_prompt=True)
        except (jinja2.TemplateError, ArithmeticError, LookupError, TypeError, ValueError, RecursionError) as err:
            raise DataError("chat_template", f"does not render this step: {type(err).__name__}: {str(err)[:200]}",
                            self._where) from err
        prefix, suffix = split_at_prefix_end(text)
        return prefix, suffix, images, frame

    def prompt(self, inp: PolicyInput) -> tuple[str, list[Image.Image], Frame]:
        """The chat-templated prompt text of one input (prefix and suffix), its images and its frame."""
        prefix, suffix, images, frame = self.prompt_parts(inp)
        return prefix + suffix, images, frame

    def encode_prefix(self, inp: PolicyInput) -> tuple[str, PromptPart]:
        """One input's shared prefix: its templated text and its encoding by the processor (with the
        screenshot: the expensive part, done once per prefix)."""
        prefix, _, images, _ = self.prompt_parts(inp)
        return prefix, self._head(prefix, images)

    def encode_suffix(self, inp: PolicyInput) -> tuple[str, PromptPart, Frame]:
        """One input's prefix text (not encoded), its memory suffix encoded on its own (without the
        tokenizer's special tokens: it continues the prefix) and its frame."""
        prefix, suffix, images, frame = self.prompt_parts(inp)
        return prefix, self._tail(suffix, images), frame

    def _head(self, prefix: str, images: list[Image.Image]) -> PromptPart:
        return PromptPart.of(self.processor(text=[prefix], images=images[:1], return_tensors="pt"))

    def _tail(self, suffix: str, images: list[Image.Image]) -> PromptPart:
        return PromptPart.of(self.processor(text=[suffix], images=images[1:] or None, add_special_tokens=False,
                                            return_tensors="pt"))

    def encode(self, inputs: Sequence[PolicyInput]) -> tuple[Any, list[Frame]]:
        """The whole prompts of a batch (each its prefix's tokens then its suffix's, the tokens the
        processor gives the whole prompt), left-padded: the last column is every final prompt token.
        Images are cast to the model's dtype. Without :attr:`shares_prefix` the processor encodes each
        whole prompt at once."""
        if not self.shares_prefix:
            texts, images, frames = zip(*(self.prompt(i) for i in inputs))
            enc = self.processor(text=list(texts), images=list(images), padding=True, padding_side="left",
                                 return_tensors="pt")
            return self._to_device(dict(enc.items())), list(frames)
        rows, frames = [], []
        for inp in inputs:
            prefix, suffix, images, frame = self.prompt_parts(inp)  # templated once, encoded in its two parts
            rows.append(self._head(prefix, images).then(self._tail(suffix, images)))
            frames.append(frame)
        enc = {**left_padded(rows, self.processor.tokenizer.pad_token_id), **concat_images(rows)}
        return self._to_device(enc), frames

    def _to_device(self, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """On the model's device; floating tensors (pixels) in the model's dtype."""
        return {k: v.to(self.device, dtype=self.model.dtype) if v.is_floating_point() else v.to(self.device)
                for k, v in tensors.items()}

    # ------------------------------------------------------------------ acting
    def act(self, inputs: Sequence[PolicyInput], output_hidden_states: bool = False) -> list[PolicyOutput]:
        """Answer a batch; with ``output_hidden_states`` fill ``[n_layers + 1, d_model]`` per input."""
        outputs: list[PolicyOutput] = []
        for start in range(0, len(inputs), self.batch_size):
            outputs.extend(self._act_batch(inputs[start:start + self.batch_size], output_hidden_states))
        return outputs

    def _generation_config(self, output_hidden_states: bool) -> Any:
        """The model's generation config, made greedy, returning a dict (and hidden states if asked)."""
        config = copy.deepcopy(self.model.generation_config)
        config.do_sample, config.num_beams, config.max_new_tokens = False, 1, self.max_new_tokens
        config.temperature = config.top_p = config.top_k = None  # greedy: no sampling knobs
        config.pad_token_id = self.processor.tokenizer.pad_token_id
        config.return_dict_in_generate, config.output_hidden_states = True, output_hidden_states
        return config

    @torch.inference_mode()
    def _act_batch(self, inputs: Sequence[PolicyInput], output_hidden_states: bool) -> list[PolicyOutput]:
        enc, frames = self.encode(inputs)
        gen = self.model.generate(**enc, generation_config=self._generation_config(output_hidden_states))
        return self._outputs(gen, enc["input_ids"].shape[1], enc["attention_mask"], frames, output_hidden_states)

    def _outputs(self, gen: Any, prompt_len: int, attention_mask: torch.Tensor, frames: Sequence[Frame],
                 output_hidden_states: bool) -> list[PolicyOutput]:
        """``generate``'s answers (the tokens after column ``prompt_len``) as PolicyOutputs, with the
        hidden state of every layer at the final prompt token when asked."""
        answers = self.processor.tokenizer.batch_decode(gen.sequences[:, prompt_len:], skip_special_tokens=True)
        hidden = None
        if output_hidden_states:
            # gen.hidden_states[0]: the prefill pass (of the uncached tokens), n_layers + 1 tensors [batch, tokens, d]
            hidden = torch.stack(gen.hidden_states[0], dim=1)[:, :, -1].float().cpu().numpy()  # [batch, n_layers+1, d]
        n_prompt = attention_mask.sum(dim=1).tolist()
        return [self.to_output(a, f, None if hidden is None else hidden[i], int(n))
                for i, (a, f, n) in enumerate(zip(answers, frames, n_prompt))]

    # ------------------------------------------------------------------ one prefix, several memory suffixes
    @torch.inference_mode()
    def open_prefix(self, inputs: Sequence[PolicyInput]) -> SharedPrefix:
        """Run the shared prefixes of a batch once (system turn, goal, actions so far, screenshot) and
        keep their KV cache, for :meth:`continue_prefix` to answer any rendering of the memory on.
        The memory each input carries does not matter here."""
        from transformers import DynamicCache

        self._require_sharing()
        texts, parts = [], []
        for inp in inputs:
            prefix, head = self.encode_prefix(inp)
            texts.append(prefix)
            parts.append(head)
        block = self._to_device(left_padded(parts, self.processor.tokenizer.pad_token_id))
        images = self._to_device(concat_images(parts))
        cache = DynamicCache(config=self.model.config)
        self.model(**block, **images, position_ids=full_positions(self.model, block, images), cache=cache,
                   use_cache=True, logits_to_keep=1)
        return SharedPrefix(texts, [inp.screenshot for inp in inputs], parts, block, cache)

    def _require_sharing(self) -> None:
        if not self.shares_prefix:
            raise DataError("chat_template", f"{self.name}: its chat template or tokenizer does not let every "
                                             "rendering continue one prefix (see shares_prefix); act() answers "
                                             "whole prompts")

    @torch.inference_mode()
    def continue_prefix(self, shared: SharedPrefix, inputs: Sequence[PolicyInput], output_hidden_states: bool = False,
                        max_new_tokens: int | None = None) -> list[PolicyOutput]:
        """Answer ``inputs`` (row for row the inputs ``shared`` was opened on, each with the memory it
        should be shown) by running only their memory suffixes on the prefix's cache, then decoding
        greedily as :meth:`act` does; the cache is rewound to the prefix afterwards.

        The answers and the final-token hidden states are those of a full pass on the whole prompts,
        up to float rounding (``tests/test_hf_actor.py`` checks both for two families).
        :meth:`continued_states` reads the final-token states alone, without decoding."""
        tokens, kwargs, frames = self._continuation(shared, inputs)
        config = self._generation_config(output_hidden_states)
        if max_new_tokens is not None:
            config.max_new_tokens = max_new_tokens
        try:
            gen = self.model.generate(**tokens, **kwargs, cache=shared.cache, generation_config=config)
        finally:
            shared.rewind()
        return self._outputs(gen, tokens["input_ids"].shape[1], tokens["attention_mask"], frames, output_hidden_states)

    @torch.inference_mode()
    def continued_states(self, shared: SharedPrefix, inputs: Sequence[PolicyInput]) -> np.ndarray:
        """``[n, n_layers + 1, d_model]`` float32: the hidden state of every layer at the final prompt
        token of each input's whole prompt, from one forward pass of the memory suffixes on the
        prefix's cache (no decoding). The router's state, read from the memory-free suffix: the
        question's few tokens."""
        tokens, kwargs, _ = self._continuation(shared, inputs)
        width = shared.length
        try:
            out = self.model(input_ids=tokens["input_ids"][:, width:], attention_mask=tokens["attention_mask"],
                             **{k: v[:, width:] for k, v in tokens.items() if k not in ("input_ids", "attention_mask")},
                             mm_encoder_outputs=kwargs.get("mm_encoder_outputs"),
                             position_ids=kwargs["position_ids"][..., width:], cache=shared.cache, use_cache=True,
                             output_hidden_states=True, logits_to_keep=1)
        finally:
            shared.rewind()
        return torch.stack(out.hidden_states, dim=1)[:, :, -1].float().cpu().numpy()

    def _continuation(self, shared: SharedPrefix, inputs: Sequence[PolicyInput]) -> tuple[dict, dict, list[Frame]]:
        """The whole prompts' tokens (the prefix block, then the suffixes left-padded), what the model
        needs beside them on the cache (position ids, the suffixes' encoded images) and the frames."""
        if len(inputs) != len(shared):
            raise DataError("inputs", f"{len(inputs)} inputs continue a prefix of {len(shared)} rows")
        tails, frames = [], []
        for row, inp in enumerate(inputs):
            prefix, tail, frame = self.encode_suffix(inp)
            if prefix != shared.texts[row] or not same_screen(inp.screenshot, shared.screens[row]):
                raise DataError("inputs", f"row {row} does not continue the prefix it was opened on "
                                "(another goal, history or screenshot)")
            tails.append(tail)
            frames.append(frame)
        suffix = self._to_device(left_padded(tails, self.processor.tokenizer.pad_token_id))
        tokens = {k: torch.cat([shared.block[k], suffix[k]], dim=1) for k in shared.block}
        # every image's layout in the whole prompts, row by row, for the positions; the suffixes' images encoded
        images = self._to_device(concat_images([part for pair in zip(shared.parts, tails) for part in pair], False))
        kwargs: dict[str, Any] = {"position_ids": full_positions(self.model, tokens, images)}
        suffix_images = self._to_device(concat_images(tails))
        if suffix_images:
            kwargs["mm_encoder_outputs"] = {"image": self.model.get_image_features(**suffix_images, return_dict=True)}
        return tokens, kwargs, frames

    def act_conditions(self, inputs: Sequence[PolicyInput], conditions: Sequence[str],
                       hidden_conditions: Sequence[str] = ()) -> dict[str, list[PolicyOutput]]:
        """Every input answered under each memory condition (none, text, image, both), one prefix pass
        per batch of ``batch_size`` shared by all conditions; hidden states for ``hidden_conditions``.
        Without :attr:`shares_prefix`, each condition's whole prompts."""
        if not self.shares_prefix:
            return {c: self.act([x.with_modality(c) for x in inputs], c in hidden_conditions) for c in conditions}
        out: dict[str, list[PolicyOutput]] = {c: [] for c in conditions}
        for start in range(0, len(inputs), self.batch_size):
            chunk = inputs[start:start + self.batch_size]
            shared = self.open_prefix(chunk)
            for c in conditions:
                out[c] += self.continue_prefix(shared, [x.with_modality(c) for x in chunk], c in hidden_conditions)
        return out

    @torch.inference_mode()
    def sample(self, inputs: Sequence[PolicyInput], n_samples: int, seeds: Sequence[int],
               temperature: float = 1.0) -> list[list[Any]]:
        """``n_samples`` actions per input, sampled at ``temperature`` (``num_return_sequences``), each
        input's draws seeded by its own seed (so they do not depend on the batch); an answer that does
        not parse samples :data:`FALLBACK_ACTION`. SwitchMem's sampled action preferences."""
        if n_samples < 1 or not temperature > 0:
            raise DataError("n_samples", f"expected n_samples >= 1 and temperature > 0, got {n_samples}, {temperature}")
        if len(seeds) != len(inputs):
            raise DataError("seeds", f"one per input: {len(inputs)} inputs, {len(seeds)} seeds")
        config = self._generation_config(False)
        config.do_sample, config.temperature, config.top_p, config.top_k = True, float(temperature), 1.0, 0
        config.num_return_sequences = n_samples
        out = []
        for inp, seed in zip(inputs, seeds):
            enc, (frame,) = self.encode([inp])
            with torch.random.fork_rng(devices=[self.device] if self.device.type == "cuda" else []):
                torch.manual_seed(int(seed))  # this input's draws, without moving the caller's RNG
                gen = self.model.generate(**enc, generation_config=config)
            answers = self.processor.tokenizer.batch_decode(gen.sequences[:, enc["input_ids"].shape[1]:],
                                                            skip_special_tokens=True)
            out.append([self.to_output(a, frame).action for a in answers])
        return out

    @torch.inference_mode()
    def memory_embeddings(self, inputs: Sequence[PolicyInput], modality: str) -> np.ndarray:
        """``[n, d_model]`` float32: the model's own reading of each input's memory before any decoder
        layer — the mean input embedding of the memory text's tokens (``text``), or the mean of the
        vision tower's outputs for the memory image, in the language model's width (``image``). What a
        router may read without running either memory prompt."""
        if modality not in ("text", "image"):
            raise DataError("modality", f"a memory candidate is text or image, got {modality!r}")
        rows = []
        for inp in inputs:
            if modality == "text":
                if inp.memory_text is None:
                    raise DataError("memory_text", "the input carries no memory text")
                ids = self.processor.tokenizer(inp.memory_text, return_tensors="pt")["input_ids"].to(self.device)
                rows.append(self.model.get_input_embeddings()(ids)[0].float().mean(0))
            else:
                if inp.memory_image is None:
                    raise DataError("memory_image", "the input carries no memory image")
                enc = self.processor.image_processor(images=[inp.memory_image.convert("RGB")], return_tensors="pt")
                # what the family's vision tower needs beside the pixels (Qwen2-VL: image_grid_thw)
                extra = {k: v.to(self.device) for k, v in enc.items() if k != "pixel_values"}
                feats = self.model.get_image_features(
                    pixel_values=enc["pixel_values"].to(self.device, dtype=self.model.dtype), **extra)
                pooled = feats.pooler_output if hasattr(feats, "pooler_output") else feats
                tokens = pooled[0] if isinstance(pooled, (list, tuple)) else pooled
                rows.append(tokens.float().reshape(-1, tokens.shape[-1]).mean(0))
        return torch.stack(rows).cpu().numpy().astype(np.float32)

    def to_output(self, answer: str, frame: Frame, hidden_states: np.ndarray | None = None,
                  prompt_tokens: int | None = None) -> PolicyOutput:
        """A decoded answer as a PolicyOutput; unparseable: FALLBACK_ACTION and ``info["parse_error"]``."""
        info: dict[str, Any] = {"frame": list(frame), "coords": self.coords}
        if prompt_tokens is not None:
            info["prompt_tokens"] = prompt_tokens
        try:
            action = parse_answer(answer, frame, self.swipe_length)
        except DataError as err:  # ActionParseError, or an Action refusing what was parsed
            action, info["parse_error"] = FALLBACK_ACTION, str(err)
        return PolicyOutput(action=action, hidden_states=hidden_states, raw=answer, info=info)
