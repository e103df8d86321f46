"""The command line of :mod:`guimem.real`: ``python -m guimem.real import <format> <src> <store>``.

Bad input prints the file and the field that are wrong and exits with status 2; nothing is written.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Sequence

from guimem.core.data import DataError
from guimem.core.io import read_json, refuse_overlap
from guimem.real.importers import IMPORTERS
from guimem.real.importers.common import goals_from_names


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m guimem.real", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    imp = commands.add_parser("import", help="import recorded trajectories into an episode store")
    imp.add_argument("format", choices=sorted(IMPORTERS), help="the recording's format")
    imp.add_argument("src", help="the recording: a folder of runs (agent_run), a JSON or JSON-lines file "
                                 "(aitw, learngui, jsonl) or an episode store (store)")
    imp.add_argument("store", help="the episode store to write (a new folder, or an episode store to replace)")
    imp.add_argument("--goals", help="agent_run: a JSON object mapping each run's folder name to its goal text")
    imp.add_argument("--images", help="aitw, learngui: the folder of the screenshots (default: beside the file)")
    imp.add_argument("--app", help="the app of every episode (agent_run's default: the first app a run opens)")
    imp.add_argument("--max-side", type=int, help="downscale screenshots to this many pixels on their longer side")
    imp.add_argument("--ocr", action="store_true", help="give screens without a UI tree the text elements OCR reads")
    imp.add_argument("--labels", help="a JSON object mapping each episode's source name to its screens' types")
    imp.add_argument("--subgoal-labels", help="a JSON object mapping each episode's source name to its subgoals, "
                                              "[first step, last step, intent(, type)] each")
    args = parser.parse_args(argv)
    importer, takes = IMPORTERS[args.format]
    options = ("goals", "images", "app", "max_side", "labels", "subgoal_labels")
    given = {k: getattr(args, k) for k in options if getattr(args, k) is not None}
    given["ocr"] = args.ocr
    extra = sorted(set(given) - set(takes))
    if extra:
        parser.error(f"{args.format} takes no {', '.join('--' + k.replace('_', '-') for k in extra)}")
    files = {}  # option -> the JSON file it named: an error about its content names that file
    try:
        for key in ("goals", "labels", "subgoal_labels"):
            if key in given:
                path = files[key] = given[key]
                given[key] = read_json(path)
                if not isinstance(given[key], dict):
                    raise DataError("", f"expected a JSON object keyed by run or episode name, got "
                                        f"{type(given[key]).__name__}", path)
        target = Path(args.store).resolve()
        if target == Path.cwd().resolve() or target == Path(target.anchor):
            # replacing the folder one stands in (or the root) is never meant, and fails half-way (EBUSY)
            raise DataError("store", f"{args.store!r:.80} is the current directory or the root; name a new folder",
                            args.store)
        refuse_overlap(args.src, args.store, "store")
        episodes = importer(args.src, args.store, **given)
    except DataError as err:
        option = re.match(r"[a-z_]+", err.field or "")
        if option is not None and option.group() in files:  # about a --goals/--labels file's content
            err = DataError(err.field, err.message, files[option.group()])
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a read-only parent, a busy folder, a full disk: one line naming the file
        where = err.filename if err.filename is not None else args.store
        print(f"error: {where}: {err.strerror or type(err).__name__}", file=sys.stderr)
        return 2
    steps = sum(len(e.steps) for e in episodes)
    print(f"{args.store}: {len(episodes)} episodes, {steps} steps imported from {args.src} ({args.format})")
    warning = goals_from_names(episodes)
    if warning:
        print(warning, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
