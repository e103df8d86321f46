"""Importers of recorded trajectories into the episode store (:mod:`guimem.core.store`).

Each is a function ``import_<format>(src, store, ...)`` that parses and checks everything before
writing anything, and a subcommand of the command line::

    python -m guimem.real import agent_run <src> <store> [--goals goals.json] [--app NAME] [--max-side 1024]

:data:`IMPORTERS` maps a format's name to its function.
"""

from guimem.real.importers.agent_run import import_agent_runs

IMPORTERS = {"agent_run": import_agent_runs}
"""format name -> importer ``(src, store, **options) -> episodes``."""
