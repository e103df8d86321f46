"""guimem: memory for mobile GUI agents — the Subgoal-aware Memory Graph and SwitchMem."""

import os

# Nothing is ever fetched from a model hub at run time: weights come from installed packages.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

__version__ = "0.1.0"
