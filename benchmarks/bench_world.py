"""Benchmark of the synthetic phone: screens per second and dataset generation time (one core).

Measures, on the distinct screens of a sample of demonstrations:

* rendering only (layout -> RGB image), screens/s;
* rendering + PNG encoding (what a new screen costs the dataset), screens/s;
* the world stepping with its render cache, as the demonstrator drives it (no PNG), steps/s;
* ``generate_dataset`` at the default size (400 train + 120 test episodes), wall and CPU seconds.

Writes ``benchmarks/results/world.json``. Run: ``python benchmarks/bench_world.py`` (about a minute).
CPU seconds are reported beside wall seconds because the machine may be shared.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from pathlib import Path

from guimem.core.io import write_json
from guimem.core.store import png_bytes
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import generate_dataset, plan_tasks, run_episode
from guimem.phone.render import render_layout
from guimem.phone.world import World

N_EPISODES = 60  # demonstrations whose screens are timed
OUT = Path(__file__).parent / "results" / "world.json"


class Recorder(World):
    """A world that remembers every distinct (layout, theme) it shows."""

    def __init__(self, config: WorldConfig):
        super().__init__(config)
        self.screens: dict[tuple, tuple] = {}

    def _observe(self):
        obs = super()._observe()
        layout, theme = self.layout, self.theme()
        self.screens.setdefault((layout.widgets, layout.overlay, theme), (layout, theme))
        return obs


def timed(fn) -> tuple[float, float]:
    """(wall, cpu) seconds of ``fn()``."""
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def main() -> dict:
    cfg = WorldConfig()
    tasks = plan_tasks(cfg, 0)["train"][:N_EPISODES]
    rec = Recorder(cfg)
    for i, t in enumerate(tasks):
        run_episode(rec, t, 1000 + i, f"b{i}", None)
    screens = list(rec.screens.values())
    images = []
    wall_r, cpu_r = timed(lambda: images.extend(render_layout(l, th, cfg.image_width) for l, th in screens))
    wall_p, cpu_p = timed(lambda: [png_bytes(im) for im in images])
    world = World(cfg)
    steps = []
    wall_s, cpu_s = timed(lambda: steps.extend(len(run_episode(world, t, 2000 + i, f"s{i}", None).steps)
                                               for i, t in enumerate(tasks)))
    with tempfile.TemporaryDirectory() as tmp:
        stats = {}
        wall_g, cpu_g = timed(lambda: stats.update(generate_dataset(cfg, tmp, seed=0, progress=False)))
        size = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())
    n = len(screens)
    result = {
        "distinct_screens_timed": n,
        "render_screens_per_s": n / cpu_r,
        "render_png_screens_per_s": n / (cpu_r + cpu_p),
        "png_kb_mean": sum(len(png_bytes(im)) for im in images[:200]) / min(200, n) / 1024,
        "world_steps_per_s_cached_no_png": sum(steps) / cpu_s,
        "generate_default": {"episodes": stats["episodes"], "steps": stats["steps"],
                             "unique_screenshots": stats["train"]["unique_screenshots"] + stats["test"]["unique_screenshots"],
                             "wall_s": round(wall_g, 2), "cpu_s": round(cpu_g, 2), "store_mb": round(size / 2**20, 1),
                             "demonstrator_success_rate": stats["success_rate"]},
        "wall_vs_cpu_render": [round(wall_r, 3), round(cpu_r, 3)],
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, one process",
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    write_json(OUT, result, indent=2, sort_keys=False)
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
