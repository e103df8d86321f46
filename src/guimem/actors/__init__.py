"""Actors: the miniature multimodal transformer trained here (:mod:`guimem.actors.mini`) and any
Hugging Face VLM (:mod:`guimem.actors.hf`), both :class:`guimem.core.policy.Policy`."""
