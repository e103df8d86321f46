"""A tiny randomly initialised Qwen2-VL built from a config, and a byte-level tokenizer for it:
the Hugging Face actor's code paths tested and benchmarked without downloading a checkpoint.
"""

from __future__ import annotations

from typing import Any

import torch

_TINY_SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                        "<|image_pad|>", "<|video_pad|>")
TINY_CHAT_TEMPLATE = (  # Qwen-style: <|im_start|>role\n...<|im_end|>, images as vision pads
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


ANSWER_TOKENS = tuple(  # taps on a 5 x 5 grid: nearly every point of the screen within the AITW rule's 14% of one
    [f'{{"action": "tap", "point": [{x}, {y}]}}' for y in (100, 300, 500, 700, 900) for x in (100, 300, 500, 700, 900)]
    + ['{"action": "swipe", "point": [500, 750], "end": [500, 250]}', '{"action": "type", "text": "meeting"}',
       '{"action": "back"}', '{"action": "home"}', '{"action": "enter"}', '{"action": "done"}',
       '{"action": "impossible"}'])
"""Whole JSON actions (the ``json`` answer format, ``relative_1000`` coordinates) that
:func:`save_tiny_random_llava` can add to its vocabulary as single tokens."""


def byte_tokenizer(chat_template: str = TINY_CHAT_TEMPLATE, words: tuple[str, ...] = ()) -> Any:
    """A byte-level BPE tokenizer without merges (one token per byte) with Qwen's special tokens, and
    ``words`` as ordinary added tokens (decoded as themselves)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(list(_TINY_SPECIAL_TOKENS))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   chat_template=chat_template)
    if words:
        fast.add_tokens(list(words))
    return fast


def tiny_random_qwen2_vl(n_layers: int = 2, d_model: int = 32, seed: int = 0,
                         max_image_tokens: int = 16) -> tuple[Any, Any]:
    """A randomly initialised Qwen2-VL and its processor, built offline (tests, benchmarks, smoke runs).

    The text model has ``n_layers`` decoder layers of width ``d_model``; the vision tower one
    block; images are resized to at most ``max_image_tokens`` merged 28 x 28 patches. The
    processor is Qwen2-VL's without its video processor (which needs torchvision).
    """
    from transformers import AutoModelForImageTextToText, Qwen2VLConfig, Qwen2VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    class ImageOnlyQwen2VLProcessor(Qwen2VLProcessor):
        """Qwen2-VL's processor for images only."""

        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
            super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)

    tokenizer = byte_tokenizer()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in _TINY_SPECIAL_TOKENS}
    image_processor = Qwen2VLImageProcessorPil(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * max_image_tokens)
    processor = ImageOnlyQwen2VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                          chat_template=TINY_CHAT_TEMPLATE)
    heads = max(2, d_model // 8)  # head_dim 8
    half_rotary = d_model // heads // 2  # M-RoPE splits each head's rotary half over (t, h, w)
    config = Qwen2VLConfig(
        text_config=dict(vocab_size=len(tokenizer), hidden_size=d_model, intermediate_size=2 * d_model,
                         num_hidden_layers=n_layers, num_attention_heads=heads, num_key_value_heads=heads // 2,
                         bos_token_id=None, eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                          "mrope_section": [half_rotary - 2 * (half_rotary // 4),
                                                            half_rotary // 4, half_rotary // 4]}),
        vision_config=dict(depth=1, embed_dim=32, hidden_size=d_model, num_heads=2, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    torch.manual_seed(seed)
    return AutoModelForImageTextToText.from_config(config).eval(), processor


def save_tiny_random_llava(folder: str, n_layers: int = 3, d_model: int = 32, seed: int = 0,
                           answer_scale: float = 0.0, init_std: float = 0.0) -> str:
    """Write a randomly initialised LLaVA (a one-block CLIP tower, a Llama text model of ``n_layers``
    layers of width ``d_model``) and its processor to ``folder``, as a downloaded checkpoint would be
    laid out: what ``actor_model: <folder>`` loads in a smoke run of the pipeline. Returns ``folder``.

    With ``answer_scale > 0`` the vocabulary also holds :data:`ANSWER_TOKENS` (32 whole
    actions, one token each) and their rows of the output layer are random directions that many times
    as long as the others' on average: the
    random model then mostly answers, greedy or sampled, with an action that parses, which action
    depending on the prompt. A smoke run then exercises what follows a parsed answer (matching,
    preferences that are not all tied, a probe and routers) instead of unparseable bytes only.

    With ``init_std > 0`` the text model's weight matrices are drawn with that standard deviation
    instead of ``transformers``' 0.02, at which a model this small barely reads its prompt (its sampled
    answers under the text and the image rendering of a memory are nearly all the same); at 0.2 about
    a third of them differ."""
    from transformers import AutoModelForImageTextToText, LlavaConfig, LlavaProcessor
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    tokenizer = byte_tokenizer(words=ANSWER_TOKENS if answer_scale > 0 else ())
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    template = TINY_CHAT_TEMPLATE.replace("<|vision_start|><|image_pad|><|vision_end|>", "<image>")
    processor = LlavaProcessor(image_processor=CLIPImageProcessorPil(size={"shortest_edge": 28},
                                                                     crop_size={"height": 28, "width": 28}),
                               tokenizer=tokenizer, chat_template=template, patch_size=14,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1)
    config = LlavaConfig(
        vision_config=dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                           num_attention_heads=2, image_size=28, patch_size=14),
        text_config=dict(model_type="llama", vocab_size=len(tokenizer), hidden_size=d_model,
                         intermediate_size=2 * d_model, num_hidden_layers=n_layers, num_attention_heads=4,
                         num_key_value_heads=2, bos_token_id=None, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id),
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"), vision_feature_select_strategy="default")
    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(config)
    if init_std > 0:
        with torch.no_grad():
            for weight in model.model.language_model.parameters():
                if weight.dim() == 2:
                    weight.normal_(0.0, init_std)
    if answer_scale > 0:  # the answers' rows: random directions of one length, answer_scale x the others' mean
        with torch.no_grad():
            rows = model.lm_head.weight
            ids = tokenizer.convert_tokens_to_ids(list(ANSWER_TOKENS))
            length = answer_scale * rows.norm(dim=1).mean()
            rows[ids] = rows[ids] / rows[ids].norm(dim=1, keepdim=True) * length
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder
