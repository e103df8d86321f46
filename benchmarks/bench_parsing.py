"""Benchmark of the VLM answer parser on pathological answers: is its time linear in their length?

Each input family is built at ``N``, 2N, 4N and 8N characters and parsed with
:func:`guimem.actors.hf.parsing.parse_answer`; the sizes of one family are timed side by
side (alternating, the fastest of ``REPEATS`` runs kept) so that drift in the machine's load
does not bend the ratios. Linear time shows as a ratio of about 2 between consecutive sizes
(a quadratic parser gives 4), and as an ``exponent`` of about 1 (the slope of log time on log
size over all four sizes, which one noisy timing bends less than a ratio). Each family also
records the outcome (the action read, or the field of the ActionParseError).

Writes ``benchmarks/results/parsing.json``. Run: ``python benchmarks/bench_parsing.py`` (under
a minute). CPU seconds of this process: wall time on a shared machine measures its load.
"""

from __future__ import annotations

import gc
import math
import os
import platform
import time
from itertools import pairwise
from pathlib import Path
from typing import Callable

from guimem.actors.hf.parsing import ActionParseError, parse_answer
from guimem.core.io import write_json

N = 25_000  # characters of the smallest input of each family
SCALES = (1, 2, 4, 8)
REPEATS = 9
MIN_TIMED_S = 0.02  # CPU seconds of one timing of the smallest input (several parses if one is quicker)
FRAME = (1000.0, 1000.0)
OUT = Path(__file__).parent / "results" / "parsing.json"


def repeat(piece: str, n: int, head: str = "", tail: str = "") -> str:
    """``head``, then ``piece`` repeated to about ``n`` characters, then ``tail``."""
    return head + piece * max(1, n // len(piece)) + tail


# family -> what it stresses, and how to build it at about n characters
FAMILIES: dict[str, tuple[str, Callable[[int], str]]] = {
    "open_braces": ("braces never closed, each a candidate object", lambda n: "{" * n),
    "objects_naming_no_action": ("objects that parse but name no action (each parsed once, then skipped)",
                                 lambda n: repeat('{"type": "note"} ', n, tail='{"action": "back"}')),
    "objects_that_do_not_parse": ("objects that hold 'action' but are neither JSON nor a Python dict",
                                  lambda n: repeat("{action: x} ", n)),
    "nested_braces": ("braces nested n/2 deep around one letter (the parser before issue 9: 14 s at 16k chars)",
                      lambda n: "{" * (n // 2) + "x" + "}" * (n // 2)),
    "nested_objects": ("one object nested n/6 deep (refused by parse_json's depth limit)",
                       lambda n: '{"a":' * (n // 6) + "1" + "}" * (n // 6)),
    "unclosed_calls": ("calls of a known action never closed", lambda n: repeat("click(", n)),
    "unknown_calls": ("calls of unknown names (each skipped)", lambda n: repeat("f(", n, tail="press_back()")),
    "thought_with_quoted_json": ("a thought quoting JSON actions, then the Action line",
                                 lambda n: repeat('{"action": "back"} ', n, head="Thought: ",
                                                  tail="\nAction: click(start_box='(100,200)')")),
    "unterminated_quotes": ("a brace, then quotes that never close", lambda n: "{" + "'" * n),
    "long_typed_text": ("a valid call whose text holds commas, brackets and escaped quotes",
                        lambda n: repeat("a, (b) \\' ", n, head="type(content='", tail="')")),
    "long_number": ("a coordinate of n digits (refused: outside the frame)",
                    lambda n: "click(start_box='(" + "9" * n + ",1)')"),
}


def outcome(answer: str) -> str:
    """The action read (shortened), or the field of the parse error."""
    try:
        return parse_answer(answer, FRAME).describe()[:40]
    except ActionParseError as err:
        return f"ActionParseError({err.field})"


def cpu_seconds(answers: list[str]) -> list[float]:
    """CPU seconds per parse of each answer: the fastest of REPEATS rounds, the answers timed
    alternately in each round, each timing ``loops`` parses (enough for 20 ms on the smallest),
    the garbage collector off while timing (as ``timeit`` does)."""
    start = time.process_time()
    outcome(answers[0])  # also the warm-up
    loops = max(1, math.ceil(MIN_TIMED_S / max(time.process_time() - start, 1e-6)))
    best = [math.inf] * len(answers)
    gc.disable()
    try:
        for _ in range(REPEATS):
            for i, answer in enumerate(answers):
                start = time.process_time()
                for _ in range(loops):
                    outcome(answer)
                best[i] = min(best[i], (time.process_time() - start) / loops)
    finally:
        gc.enable()
    return best


def exponent(sizes: list[int], seconds: list[float]) -> float:
    """Least-squares slope of log(time) on log(size): 1 for linear time, 2 for quadratic."""
    xs, ys = [math.log(n) for n in sizes], [math.log(t) for t in seconds]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main() -> dict:
    families = {}
    for name, (what, build) in FAMILIES.items():
        answers = [build(N * s) for s in SCALES]
        seconds = cpu_seconds(answers)
        families[name] = {
            "what": what,
            "chars": [len(a) for a in answers],
            "cpu_s": [round(t, 5) for t in seconds],
            "ratio_to_previous": [round(b / a, 2) for a, b in pairwise(seconds)],
            "exponent": round(exponent([len(a) for a in answers], seconds), 2),
            "outcome": outcome(answers[0]),
        }
    ratios = [r for f in families.values() for r in f["ratio_to_previous"]]
    return {"families": families, "ratio_median": sorted(ratios)[len(ratios) // 2], "ratio_max": max(ratios),
            "exponent_max": max(f["exponent"] for f in families.values()), "repeats": REPEATS,
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                       f"load average {os.getloadavg()[0]:.1f}"}


if __name__ == "__main__":
    result = main()
    write_json(OUT, result, indent=2, sort_keys=False)
    for name, f in result["families"].items():
        print(f"{name:26s} {f['outcome']:28s} cpu_s {f['cpu_s']} ratios {f['ratio_to_previous']} exponent {f['exponent']}")
    print("median ratio", result["ratio_median"], "max", result["ratio_max"], "max exponent", result["exponent_max"])
