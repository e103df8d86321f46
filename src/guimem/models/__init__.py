"""Pretrained models that run offline on a CPU: image and text embedders, the local LLM, the
miniature actor's word tokenizer."""
