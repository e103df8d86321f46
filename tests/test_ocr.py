"""OCR for screens recorded without a UI tree, on real screenshots of the bundled sample: the text
an agent would act on is read with its place, the status bar is dropped, results are cached, and
an import with OCR gives the screens elements the rest of the package reads (a screen's title)."""

from __future__ import annotations

import shutil
from importlib.util import find_spec
from pathlib import Path

import pytest
from PIL import Image

from guimem.real.ocr import OcrLine, OcrReader

pytestmark = pytest.mark.skipif(find_spec("rapidocr_onnxruntime") is None,
                                reason="rapidocr-onnxruntime is part of make setup")

RUN = (Path(__file__).resolve().parents[1] / "samples" / "android_world_simple_calendar"
       / "What_is_my_next_upcoming_event_in_Simple_Calendar_")


@pytest.fixture(scope="module")
def launcher():
    return Image.open(RUN / "screenshot_1.png")  # the app drawer: a grid of labelled app icons


def test_reads_the_labels_on_a_real_screen_and_drops_the_status_bar(launcher, tmp_path):
    reader = OcrReader(cache_dir=tmp_path)
    elements = reader.elements(launcher)
    labels = [e.text for e in elements]
    for app in ("Settings", "Calendar", "Camera", "Chrome", "Contacts"):
        assert app in labels
    assert all(e.role == "text" and not e.clickable and 0 <= e.bounds[0] <= e.bounds[2] <= 1
               and 0 <= e.bounds[1] <= e.bounds[3] <= 1 for e in elements)
    settings = next(e for e in elements if e.text == "Settings")
    assert 0.25 < settings.center[0] < 0.5 and 0.2 < settings.center[1] < 0.26  # second icon of the first row
    everything = OcrReader(cache_dir=tmp_path, status_bar=0.0).lines(launcher)
    clock = [x for x in everything if (x.bounds[1] + x.bounds[3]) / 2 < 0.04]
    assert clock and not any(x.text == clock[0].text and x.bounds == clock[0].bounds for x in reader.lines(launcher))


def test_the_largest_top_bar_text_is_the_title(tmp_path):
    day = OcrReader(cache_dir=tmp_path).elements(Image.open(RUN / "screenshot_4.png"))  # a day's agenda
    (title,) = [e for e in day if e.id == "title"]
    assert "15" in title.text and "Search" not in title.text  # the date in large type, not the search hint


def test_results_are_cached_by_content_and_a_bad_entry_is_recomputed(launcher, tmp_path, monkeypatch):
    reader = OcrReader(cache_dir=tmp_path)
    first = reader.lines(launcher)
    (entry,) = list(tmp_path.rglob("*.entry"))
    monkeypatch.setattr(OcrReader, "_run", lambda self, image: pytest.fail("ran the engine on a cached screen"))
    assert OcrReader(cache_dir=tmp_path).lines(launcher) == first
    entry.write_text("{not json")
    monkeypatch.setattr(OcrReader, "_run", lambda self, image: [OcrLine("Again", (0.1, 0.5, 0.2, 0.6), 0.9)])
    assert [x.text for x in OcrReader(cache_dir=tmp_path).lines(launcher)] == ["Again"]
    monkeypatch.setattr(OcrReader, "_run", lambda self, image: pytest.fail("the rewritten entry was not read"))
    assert [x.text for x in OcrReader(cache_dir=tmp_path).lines(launcher)] == ["Again"]  # written over, read back


def test_the_score_and_status_bar_filters(monkeypatch):
    lines = [OcrLine("12:30", (0.0, 0.0, 0.1, 0.03), 0.99), OcrLine("blur", (0.1, 0.5, 0.2, 0.6), 0.3),
             OcrLine("  ", (0.1, 0.6, 0.2, 0.7), 0.9), OcrLine("Save", (0.7, 0.05, 0.9, 0.1), 0.95)]
    monkeypatch.setattr(OcrReader, "_run", lambda self, image: lines)
    reader = OcrReader(cache_dir=None)
    assert [e.text for e in reader.elements(Image.new("RGB", (10, 20)))] == ["Save"]
    assert [x.text for x in OcrReader(cache_dir=None, min_score=0.0, status_bar=0.0).lines(Image.new("RGB", (1, 1)))] \
        == ["12:30", "blur", "Save"]
    with pytest.raises(Exception, match="min_score"):
        OcrReader(min_score=2)


def test_an_import_with_ocr_gives_real_screens_elements_and_titles(tmp_path, monkeypatch):
    from guimem.real.importers.agent_run import import_agent_runs
    from guimem.smg.screens import screen_contexts

    monkeypatch.chdir(tmp_path)  # the OCR cache goes under the working directory
    run = tmp_path / "runs" / RUN.name
    run.mkdir(parents=True)
    lines = (RUN / "action.jsonl").read_text().splitlines()
    (run / "action.jsonl").write_text("\n".join(lines[2:4]) + "\n")  # two steps inside the calendar app
    for i, j in ((0, 2), (1, 3)):
        shutil.copy(RUN / f"screenshot_{j}.png", run / f"screenshot_{i}.png")
    (ep,) = import_agent_runs(tmp_path / "runs", tmp_path / "store", ocr=True)
    assert all(s.elements for s in ep.steps)
    assert all(e.id.startswith("ocr") or e.id == "title" for e in ep.steps[0].elements)
    names = [c.name for c in screen_contexts(ep.observations)]
    assert all(n != "an untitled screen" for n in names), names  # named from the top bar's text
    plain = import_agent_runs(tmp_path / "runs", tmp_path / "store2")[0]
    assert all(not s.elements for s in plain.steps)


@pytest.mark.slow
def test_ocr_in_two_worker_processes_reads_what_this_process_reads(monkeypatch):
    from guimem.core.data import Action, Episode, Observation, Step
    from guimem.core.executor import LocalExecutor
    from guimem.real.importers import common
    from guimem.real.importers.common import ScreenshotFiles, with_ocr

    monkeypatch.setattr(common, "OCR_CHUNK", 2)  # small chunks: the same path on fewer screens
    shots = sorted(RUN.parent.glob("*/screenshot_*.png"))[: common.OCR_CHUNK + 1]  # two chunks, one per worker
    episode = Episode("e", "calendar", "g", tuple(Step(Observation(str(p)), Action("back")) for p in shots), None)
    images = ScreenshotFiles({str(p): p for p in shots})
    here = with_ocr([episode], images, OcrReader(cache_dir=None))
    there = with_ocr([episode], images, OcrReader(cache_dir=None), LocalExecutor(2))
    assert there == here and sum(len(o.elements) for o in here[0].recorded_observations) > 20
