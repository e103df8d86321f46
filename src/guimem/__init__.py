"""guimem: memory for mobile GUI agents — the Subgoal-aware Memory Graph and SwitchMem.

Importing it has no side effects: no environment variable is set and no matplotlib backend is
chosen. Every model is loaded from local files only (``local_files_only``); the pipeline's
stages also run with ``HF_HUB_OFFLINE=1``.
"""

__version__ = "0.1.0"
