"""00_recorded's parameters (params.yaml ``recorded``): which recordings, their importer, OCR and the split."""

from __future__ import annotations

from guimem.core.store import SPLITS
from guimem.pipeline.params import (
    EXECUTOR,
    OPTIONAL_PATH,
    PATH,
    SEED,
    WEIGHT,
    WORKERS,
    Flag,
    Items,
    Number,
    Params,
    Stage,
    Text,
)
from guimem.real.importers import IMPORTERS


def _recorded(p: Params) -> None:
    """Some split gets a run."""
    if not any(w > 0 for w in p["split"]):
        raise p.error("split", "every weight is 0: no split gets a run")


STAGE = Stage("00_recorded", "recorded", {
    "seed": SEED, "source": PATH, "source_format": Text(tuple(IMPORTERS)), "labels": OPTIONAL_PATH,
    "subgoal_labels": OPTIONAL_PATH, "ocr": Flag(), "max_side": Number(integer=True, lo=0, hi=1 << 16),
    "split": Items(WEIGHT, length=len(SPLITS)), "executor": EXECUTOR, "ocr_workers": WORKERS, "out_dir": PATH,
    "figures_dir": PATH, "metrics_path": PATH, "results_path": PATH,
}, (_recorded,))
