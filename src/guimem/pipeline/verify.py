"""Does this run reproduce the reference run? Each headline number against the measured seed spread,
and each finding the README states, checked.

The reference run is committed in ``reference/`` (written by ``make reference`` from a workspace
whose outputs are ``dvc.lock``'s): its headline metrics (``reference/metrics/<stage>.json``), its
figures (``reference/figures/``, readable on a fresh clone before anything runs), where and at
which commit it ran (``reference/run.json``), and the findings the README states
(``reference/findings.yaml``, curated by hand: each a claim and the conditions on headline
numbers under which it holds).

How far a number may move is measured, not guessed: ``benchmarks/seed_spread.py`` runs every
stage from the world on with several master seeds (``base.seed``), the committed actor playing
(``benchmarks/results/seed_spread_world.json``). The actor is frozen, so what varies from run to
run is the world drawn (its phone, demonstrations, memories, the sample of closed-loop tasks, the
routers' folds); another machine's last bits move the actor's forward passes and the screen
projection far less than another seed does. So a number is read as one more draw from the seeds'
distribution, against its *prediction interval* (:meth:`Spread.half_width`): the seeds' mean ±
Student's t quantile (n - 1 degrees of freedom) × their sample standard deviation × sqrt(1 + 1/n).
A number no seed moves (a count the design fixes) must be the same.

Each metric gets a verdict: ``same`` (equal to the reference), ``within`` (another value, inside
its :data:`NUMBER_LEVEL` interval), ``outside`` (beyond it: one number in a hundred lands there by
chance), ``far-outside`` (beyond the interval that holds all m numbers at once, Bonferroni),
``differs`` (another value where no spread was measured), ``missing`` (the reference has it, this
run not) or ``new`` (this run only; not a failure). m counts the distinct random numbers: those
with a spread that moves, a number whose seeds' values repeat another's counted once. The exit
status is 1 when a finding does not hold; a metric is ``far-outside``, ``differs`` or ``missing``;
or more numbers are ``outside`` (or further) than chance allows among m (:func:`outside_allowance`).
The two chance rules each fail a run that varies as the seeds do with probability at most
(1 - :data:`FAMILY_LEVEL`) / 2. With three seeds a mean ± 3 population standard deviations
looked tight, and a fresh clone on a 2-core Intel Xeon fell outside it on 7 of 58 numbers while
every finding held: a handful of seeds says little about how far one more run may land. Every
failure is named. Run::

    python -m guimem.pipeline.verify             # or: make verify
    python -m guimem.pipeline.verify reference   # or: make reference (maintainers, after dvc repro)

Nothing read here can run code: the findings are YAML data (ruamel.yaml's safe loader, which
also refuses a key given twice), each condition a comparison of a headline metric with a number
or another metric.
"""

from __future__ import annotations

import argparse
import datetime
import math
import operator
import os
import platform
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError as RuamelYAMLError
from scipy.stats import binom
from scipy.stats import t as student_t

from guimem.core.data import DataError
from guimem.core.io import atomic_write_dir, read_json, read_text, write_json
from guimem.pipeline.paths import repo_root
from guimem.pipeline.report import fmt, read_headlines, render, stage_order

NUMBER_LEVEL = 0.99
"""Each trained number's own prediction interval: ``within`` inside it, ``outside`` beyond it."""
FAMILY_LEVEL = 0.95
"""The chance that a run varying as the seeds do passes both chance rules (each takes half the rest)."""

REFERENCE = Path("reference")
SPREAD = Path("benchmarks/results/seed_spread_world.json")
REFERENCE_KIND = "guimem.reference"
REFERENCE_OWNED = ("metrics", "figures", "run.json")  # what `reference` writes; findings.yaml is the curators'
FINDINGS = "findings.yaml"
ROUNDING = 5e-5 + 1e-12  # a spread file's mean and std are rounded to 4 places (benchmarks/seed_spread.py)

OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
FAILING = ("far-outside", "differs", "missing")  # each fails the run alone; many "outside" fail it too


@dataclass(frozen=True)
class Spread:
    """One metric's values over the seeds of a spread (world seeds: benchmarks/seed_spread.py)."""

    per_seed: tuple[float, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.per_seed)

    @property
    def moves(self) -> bool:
        """Whether the seeds gave it more than one value (else it is exact across seeds)."""
        return len(set(self.per_seed)) > 1

    def half_width(self, level: float) -> float:
        """Half the prediction interval of one more draw at ``level``: Student's t (n - 1 degrees of
        freedom) × the sample standard deviation × sqrt(1 + 1/n); 0 for fewer than two seeds."""
        n = len(self.per_seed)
        if n < 2:
            return 0.0
        return float(student_t.ppf((1 + level) / 2, n - 1)) * statistics.stdev(self.per_seed) * math.sqrt(1 + 1 / n)

    def contains(self, value: float, level: float) -> bool:
        return abs(value - self.mean) <= self.half_width(level) + 1e-9


def distinct_random(names: Iterable[str], spread: Mapping[str, Spread]) -> int:
    """m: how many of ``names`` are distinct random numbers — with a spread that moves, a number
    whose values at the seeds repeat another's (one quantity reported by two stages) counted once."""
    return len({spread[n].per_seed for n in names if n in spread and spread[n].moves})


def far_level(m: int, family: float = FAMILY_LEVEL) -> float:
    """The level of each interval when all ``m`` must hold at once with chance ``1 - (1 - family) / 2``."""
    return 1 - (1 - family) / 2 / max(1, m)


def outside_allowance(m: int, family: float = FAMILY_LEVEL, level: float = NUMBER_LEVEL) -> int:
    """The most numbers of ``m`` that may land ``outside`` by chance: the least c with
    P(Binomial(m, 1 - level) > c) <= (1 - family) / 2."""
    return int(next(c for c in range(m + 1) if binom.sf(c, m, 1 - level) <= (1 - family) / 2))


@dataclass(frozen=True)
class Check:
    """One headline metric of this run against the reference."""

    metric: str  # stage.name
    reference: Any
    value: Any
    spread: Spread | None
    verdict: str


@dataclass(frozen=True)
class Condition:
    """``left op right``: ``left`` a metric (stage.name), ``right`` a number or a metric."""

    left: str
    op: str
    right: float | str

    def holds(self, values: Mapping[str, Any]) -> bool | None:
        """Whether it holds on ``values`` (None: a metric it names is absent or not a number)."""
        left = values.get(self.left)
        right = values.get(self.right) if isinstance(self.right, str) else self.right
        if not _is_number(left) or not _is_number(right):
            return None
        return OPERATORS[self.op](left, right)

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


@dataclass(frozen=True)
class Finding:
    """A claim the README states, and the conditions under which it holds (all of them)."""

    id: str
    claim: str
    conditions: tuple[Condition, ...]

    def holds(self, values: Mapping[str, Any]) -> bool | None:
        results = [c.holds(values) for c in self.conditions]
        return None if None in results else all(results)

    @property
    def metrics(self) -> set[str]:
        return {c.left for c in self.conditions} | {c.right for c in self.conditions if isinstance(c.right, str)}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ----------------------------------------------------------------------------- reading
def flat_metrics(headlines: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``{stage: {name: value}}`` to ``{"stage.name": value}``."""
    return {f"{stage}.{name}": value for stage, metrics in headlines.items() for name, value in metrics.items()}


def load_spread(path: Path) -> dict[str, Spread]:
    """Each metric's seed spread from a ``benchmarks/seed_spread.py`` result file."""
    data = read_json(path)
    metrics = data.get("metrics") if isinstance(data, dict) else None
    if not isinstance(metrics, dict):
        raise DataError("metrics", "expected an object of metrics (a benchmarks/seed_spread.py result)", str(path))
    return {name: load_spread_entry(name, entry, path) for name, entry in metrics.items()}


def load_spread_entry(name: str, entry: Any, path: Path) -> Spread:
    """One metric's entry of a spread file, checked (a bad field is named with the file)."""
    field = f"metrics.{name}"
    if not isinstance(entry, dict):
        raise DataError(field, f"expected an object, got {type(entry).__name__}", str(path))
    seeds = entry.get("per_seed")
    if not isinstance(seeds, list) or not seeds or not all(_is_number(v) for v in seeds):
        raise DataError(f"{field}.per_seed", "expected a non-empty list of finite numbers", str(path))
    values = tuple(float(v) for v in seeds)
    for key, want in (("mean", statistics.fmean(values)), ("std", statistics.pstdev(values))):
        if not _is_number(entry.get(key)) or abs(entry[key] - want) > ROUNDING:
            raise DataError(f"{field}.{key}", f"expected the {key} of per_seed ({want:.6g}, as written rounded to "
                                              f"4 places), got {entry.get(key)!r:.60}", str(path))
    return Spread(values)


def spread_seeds(path: Path) -> list[int]:
    """The seeds a spread file measured (read after :func:`load_spread` checked it)."""
    seeds = read_json(path).get("seeds")
    return [int(s) for s in seeds] if isinstance(seeds, list) and all(isinstance(s, int) for s in seeds) else []


def load_findings(path: Path) -> list[Finding]:
    """The findings of ``path``: a YAML list under ``findings``, each with an ``id``, the ``claim`` as the
    README states it, and ``holds_when``: a list of ``[metric, op, number or metric]`` (op: > >= < <=)."""
    try:  # ruamel.yaml, as DVC reads YAML: plain data only, and a key given twice is refused
        data = YAML(typ="safe", pure=True).load(read_text(path))
    except RuamelYAMLError as e:
        raise DataError("", f"not valid YAML: {str(e)[:400]}", str(path)) from None
    items = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise DataError("findings", "expected a list of findings", str(path))
    out: list[Finding] = []
    for i, item in enumerate(items):
        field = f"findings[{i}]"
        if not isinstance(item, dict):
            raise DataError(field, f"expected an object, got {type(item).__name__}", str(path))
        for key in ("id", "claim"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise DataError(f"{field}.{key}", "expected a non-empty string", str(path))
        when = item.get("holds_when")
        if not isinstance(when, list) or not when:
            raise DataError(f"{field}.holds_when", "expected a non-empty list of [metric, op, value]", str(path))
        conditions = []
        for j, cond in enumerate(when):
            where = f"{field}.holds_when[{j}]"
            if not isinstance(cond, list) or len(cond) != 3:
                raise DataError(where, f"expected [metric, op, number or metric], got {cond!r:.80}", str(path))
            left, op, right = cond
            if not isinstance(left, str) or "." not in left:
                raise DataError(where, f"expected a metric as stage.name first, got {left!r:.60}", str(path))
            if op not in OPERATORS:
                raise DataError(where, f"unknown comparison {op!r:.20} (expected one of {', '.join(OPERATORS)})",
                                str(path))
            if not (isinstance(right, str) and "." in right) and not _is_number(right):
                raise DataError(where, f"expected a number or a metric as stage.name last, got {right!r:.60}",
                                str(path))
            conditions.append(Condition(left, op, float(right) if _is_number(right) else right))
        if item["id"] in {f.id for f in out}:
            raise DataError(f"{field}.id", f"{item['id']!r} is used twice", str(path))
        out.append(Finding(item["id"], " ".join(item["claim"].split()), tuple(conditions)))
    return out


# ----------------------------------------------------------------------------- comparing
def compare(reference: Mapping[str, Any], run: Mapping[str, Any], spread: Mapping[str, Spread],
            far: float, level: float = NUMBER_LEVEL) -> list[Check]:
    """A :class:`Check` per metric of either side, in the reference's order (this run's new ones last);
    a number with a spread is read against its prediction intervals at ``level`` and ``far``."""
    checks = []
    for name in [*reference, *(n for n in run if n not in reference)]:
        ref, value, s = reference.get(name), run.get(name), spread.get(name)
        if name not in run:
            verdict = "missing"
        elif name not in reference:
            verdict = "new"
        elif _same(ref, value):
            verdict = "same"
        elif s is not None and _is_number(value):
            verdict = "within" if s.contains(value, level) else "outside" if s.contains(value, far) else "far-outside"
        else:
            verdict = "differs"
        checks.append(Check(name, ref, value, s, verdict))
    return checks


def _same(a: Any, b: Any) -> bool:
    if _is_number(a) and _is_number(b):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def checks_table(checks: Sequence[Check], level: float = NUMBER_LEVEL) -> str:
    """One row per metric: reference, this run, the seeds' mean ± its interval's half width, the verdict."""
    rows = [(c.metric, fmt(c.reference) if c.verdict != "new" else "-", fmt(c.value) if c.verdict != "missing" else "-",
             f"{c.spread.mean:.4g} ± {c.spread.half_width(level):.2g}" if c.spread else "exact", c.verdict)
            for c in checks]
    return render(("metric", "reference", "this run", f"seeds: mean ± {level:.0%} interval", "verdict"), rows)


def findings_table(findings: Sequence[Finding], run: Mapping[str, Any], reference: Mapping[str, Any],
                   spread: Mapping[str, Spread], seeds: Sequence[int]) -> str:
    """One row per finding: whether it holds in this run, in the reference, and at each spread seed."""
    def word(ok: bool | None) -> str:
        return {True: "holds", False: "FAILS", None: "n/a"}[ok]

    rows = []
    for f in findings:
        at_seeds = [word(f.holds(values)) for values in seed_values(spread, len(seeds))]
        rows.append((f.id, word(f.holds(run)), word(f.holds(reference)), " ".join(at_seeds) or "-"))
    return render(("finding", "this run", "reference", "seeds " + " ".join(map(str, seeds))), rows, right_from=9)


def seed_values(spread: Mapping[str, Spread], n_seeds: int) -> list[dict[str, float]]:
    """Every metric's value at each seed of the spread, one mapping per seed."""
    return [{name: s.per_seed[i] for name, s in spread.items() if len(s.per_seed) == n_seeds} for i in range(n_seeds)]


# ----------------------------------------------------------------------------- the reference
def machine() -> str:
    """The processor and core count (float32 arithmetic can differ in its last bits between kinds)."""
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                      if line.startswith("model name")), "")
    return f"{model or platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def lock_current(root: Path) -> bool:
    """Whether ``dvc status`` finds every stage's outputs to be ``dvc.lock``'s."""
    return subprocess.run(["dvc", "status", "--quiet"], cwd=root, capture_output=True, text=True).returncode == 0


def write_reference(root: Path, reference: Path) -> Path:
    """Copy the workspace's headline metrics and figures into ``reference`` (one atomic folder save;
    ``findings.yaml`` and anything else not written here is kept), with where and when they ran.

    Refuses unless ``dvc status`` finds every stage up to date: the reference is the lock's run."""
    if not lock_current(root):
        raise DataError("dvc.lock", "the workspace's outputs are not the lock's (dvc status lists changes): run "
                                    "dvc repro first", str(root / "dvc.lock"))
    stages = stage_order(root)
    headlines = read_headlines(root / "metrics", stages)
    figures = sorted((root / "figures").glob("*.png"))
    dirty = bool(_git(root, "status", "--porcelain", "--untracked-files=no"))
    run = {"commit": _git(root, "rev-parse", "HEAD"), "uncommitted_changes": dirty, "machine": machine(),
           "date": datetime.date.today().isoformat(), "stages": list(headlines), "figures": len(figures)}

    def fill(folder: Path) -> None:
        for sub, files in (("metrics", [root / "metrics" / f"{stage}.json" for stage in headlines]),
                           ("figures", figures)):
            (folder / sub).mkdir()
            for f in files:
                shutil.copyfile(f, folder / sub / f.name)
        write_json(folder / "run.json", run)

    return atomic_write_dir(reference, fill, REFERENCE_KIND, owned=REFERENCE_OWNED)


# ----------------------------------------------------------------------------- the command
def verify(root: Path, metrics: Path, reference: Path, spread_path: Path, family: float = FAMILY_LEVEL,
           out: Callable[[str], Any] = print) -> int:
    """Print the checks and the findings; 0 when everything reproduces, 1 (naming each failure) when not."""
    stages = stage_order(root)
    ref = flat_metrics(read_headlines(reference / "metrics", stages))
    if not ref:
        raise DataError("metrics", "no reference metrics (run make reference on the reference run)",
                        str(reference / "metrics"))
    run = flat_metrics(read_headlines(metrics, stages))
    spread = load_spread(spread_path)
    seeds = spread_seeds(spread_path)
    findings = load_findings(reference / FINDINGS)
    m = distinct_random((n for n in ref if n in run and _is_number(run[n])), spread)
    far, allowed = far_level(m, family), outside_allowance(m, family)
    checks = compare(ref, run, spread, far)
    about = read_json(reference / "run.json") if (reference / "run.json").is_file() else {}
    shown = lambda path: path.relative_to(root) if path.is_relative_to(root) else path  # noqa: E731
    out(f"reference: {shown(reference)}/ (commit {str(about.get('commit', '?'))[:10]}, {about.get('machine', '?')})")
    out(f"this run:  {shown(metrics)}/")
    out(f"spread:    {shown(spread_path)}, seeds {', '.join(map(str, seeds))}")
    out(f"           a trained number is within its {NUMBER_LEVEL:.0%} prediction interval (Student's t over the "
        f"seeds) or outside it;\n           the run fails if more than {allowed} of its {m} random numbers are "
        f"outside, or one is far-outside\n           (beyond the interval that holds all {m} at once), "
        f"each rule by chance at most {(1 - family) / 2:.1%} of the time\n")
    out(checks_table(checks))
    out("")
    out(findings_table(findings, run, ref, spread, seeds))
    failures = [f"{c.metric}: {c.verdict} (reference {fmt(c.reference)}, this run {fmt(c.value)}"
                + (f", seeds {c.spread.mean:.4g} ± {c.spread.half_width(far):.2g})" if c.spread else ")")
                for c in checks if c.verdict in FAILING]
    outside = [c.metric for c in checks if c.verdict in ("outside", "far-outside")]
    if len(outside) > allowed:
        failures.append(f"{len(outside)} numbers outside their {NUMBER_LEVEL:.0%} intervals, more than the {allowed} "
                        f"chance allows among {m}: {', '.join(outside)}")
    failures += [f"finding {f.id}: {'does not hold' if f.holds(run) is False else 'cannot be checked'} "
                 f"({'; '.join(str(c) for c in f.conditions)})" for f in findings if not f.holds(run)]
    counts = {v: sum(c.verdict == v for c in checks) for v in ("same", "within", "outside", *FAILING, "new")}
    out("\n" + ", ".join(f"{n} {v}" for v, n in counts.items() if n) + f"; findings holding: "
        f"{sum(bool(f.holds(run)) for f in findings)} of {len(findings)}")
    if failures:
        out("NOT REPRODUCED:\n  " + "\n  ".join(failures))
        return 1
    out("reproduced: every number within the seed spread as chance allows (or exact), every stated finding holds")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m guimem.pipeline.verify", description=__doc__.split("\n\n")[0])
    p.add_argument("command", nargs="?", choices=("check", "reference"), default="check",
                   help="check (default): this run against the reference; reference: write the reference "
                        "from the workspace (dvc status must be clean)")
    p.add_argument("--metrics", type=Path, help="this run's metrics folder (default: the repository's metrics/)")
    p.add_argument("--reference", type=Path, help=f"the reference folder (default: {REFERENCE}/)")
    p.add_argument("--spread", type=Path, help=f"the seed spread (default: {SPREAD})")
    p.add_argument("--family-level", type=float, default=FAMILY_LEVEL,
                   help="the chance that a run varying as the seeds do passes every number at once "
                        f"(default {FAMILY_LEVEL})")
    args = p.parse_args(argv)
    if not (math.isfinite(args.family_level) and 0 < args.family_level < 1):
        p.error(f"--family-level must lie strictly between 0 and 1, got {args.family_level}")
    root = repo_root()
    reference = args.reference or root / REFERENCE
    try:
        if args.command == "reference":
            print(f"wrote {write_reference(root, reference)}")
            return 0
        return verify(root, args.metrics or root / "metrics", reference, args.spread or root / SPREAD,
                      args.family_level)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
