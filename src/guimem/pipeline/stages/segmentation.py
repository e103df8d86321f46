"""01_segmentation's parameters (params.yaml ``segmentation``): the segmenter, the judge and the LLM beside them."""

from __future__ import annotations

from guimem.pipeline.params import COUNT, PATH, PROBABILITY, TEXT_EMBEDDER, TOKENS, Stage, Text
from guimem.smg.judge import JUDGES
from guimem.smg.llm_segmenter import LLM_MODES
from guimem.smg.segment import SEGMENTERS

STAGE = Stage("01_segmentation", "segmentation", {
    "world_dir": PATH, "out_dir": PATH, "segmenter": Text(SEGMENTERS), "judge": Text(JUDGES),
    "judge_evidence": PROBABILITY, "boundary_tolerance": COUNT, "llm_sample": COUNT, "llm_mode": Text(LLM_MODES),
    "llm_tokens_per_line": TOKENS, "llm_cache_dir": PATH, "text_embedder": TEXT_EMBEDDER,
    "embed_cache_dir": PATH, "max_episodes": COUNT, "figures_dir": PATH, "metrics_path": PATH, "results_path": PATH,
}, reporting=("boundary_tolerance", "llm_sample", "llm_mode", "llm_tokens_per_line", "text_embedder"))
