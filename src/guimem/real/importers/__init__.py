"""Importers of recorded trajectories into the episode store (:mod:`guimem.core.store`).

Each is a function ``import_<format>(src, store, ...)`` that parses and checks everything before
writing anything (bad input: a :class:`~guimem.core.data.DataError` naming the file and the field),
and a subcommand of the command line::

    python -m guimem.real import agent_run <runs folder> <store> [--goals goals.json] [--app NAME]
    python -m guimem.real import aitw <aitw_data_test.json> <store> [--images FOLDER] [--app NAME]
    python -m guimem.real import learngui <low_level_instructions.json> <store> [--images FOLDER] [--app NAME]
    python -m guimem.real import jsonl <steps.jsonl> <store>
    python -m guimem.real import store <an episode store> <store>      # e.g. recorded from a phone

each also with ``--max-side N`` (downscale screenshots), ``--ocr`` (text elements for screens
recorded without a UI tree) and ``--labels labels.json`` (screen types by source name, for purity)
and ``--subgoal-labels``
(subgoals by source name: the ground truth of segmentation and retrieval scores).

:data:`IMPORTERS` maps a format's name to its function and the options it takes.
"""

from guimem.real.importers.agent_run import import_agent_runs
from guimem.real.importers.aitw import import_aitw
from guimem.real.importers.jsonl import import_jsonl
from guimem.real.importers.learngui import import_learngui
from guimem.real.importers.store import import_store

IMPORTERS = {
    "agent_run": (import_agent_runs, ("goals", "app", "max_side", "ocr", "labels", "subgoal_labels", "executor")),
    "aitw": (import_aitw, ("images", "app", "max_side", "ocr", "labels", "subgoal_labels", "executor")),
    "learngui": (import_learngui, ("images", "app", "max_side", "ocr", "labels", "subgoal_labels", "executor")),
    "jsonl": (import_jsonl, ("max_side", "ocr", "labels", "subgoal_labels", "executor")),
    "store": (import_store, ("max_side", "ocr", "labels", "subgoal_labels", "executor")),
}
"""format name -> (importer ``(src, store, **options) -> episodes``, the options it takes)."""
