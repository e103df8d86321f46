"""The notebook runner: typed parameters, scrubbing of run-to-run noise, failures, and real runs."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from guimem.core.data import DataError
from guimem.pipeline.paths import enter_repo_root, repo_root
from guimem.pipeline.runner import (
    NotebookError,
    code_cells,
    main,
    params_from_yaml,
    parse_parameters,
    parse_value,
    run_notebook,
)
from guimem.pipeline.scrub import scrub_notebook, scrub_progress, scrub_text
from nbsmoke import notebook_parameters

BAR_0 = "\r  0%|          | 0/3 [00:00<?, ?it/s]"
BAR_1 = "\rtrain:  33%|███▎      | 1/3 [00:00<00:00,  9.87it/s, loss=0.31]"
BAR_3 = "\r100%|██████████| 3/3 [00:00<00:00, 29.61it/s]"
BAR_NO_TOTAL = "\r12it [01:02, 11.12s/it]"


# ----------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("text, expected", [
    ("3", 3), ("-7", -7), ("0.5", 0.5), ("1e-05", 1e-05), ("True", True), ("true", True),
    ("False", False), ("false", False), ("None", None), ("null", None),
    ("[1, 2.5, a]", [1, 2.5, "a"]), ("{k: 1}", {"k": 1}),
    ("no", "no"), ("yes", "yes"), ("off", "off"), ("data/world/train", "data/world/train"), ("", ""),
])
def test_parse_value_types_like_papermill(text, expected):
    value = parse_value(text)
    assert value == expected and type(value) is type(expected)


def test_parse_value_refuses_a_broken_yaml_list():
    with pytest.raises(ValueError, match="YAML list or map"):
        parse_value("[1, 2")
    with pytest.raises(ValueError, match="YAML list or map but does not parse: maximum recursion depth"):
        parse_value("[" * 5000 + "]" * 5000)


def test_parse_parameters_refuses_repeats_and_bad_names():
    assert parse_parameters([("n", "3"), ("tau", "0.9")]) == {"n": 3, "tau": 0.9}
    with pytest.raises(ValueError, match="given twice"):
        parse_parameters([("n", "3"), ("n", "4")])
    assert parse_parameters([("graph.tau", "0.9")]) == {"graph.tau": 0.9}  # one field of the group graph
    for name in ("graph.tau.x", "graph.", ".tau", "1n", "a b"):
        with pytest.raises(ValueError, match="not a Python identifier"):
            parse_parameters([(name, "0.9")])


def test_params_from_yaml_reads_a_section_with_its_types(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("base:\n  seed: 0\nworld:\n  n: 3\n  unseen: [a.b, c]\n  flag: true\n  deep:\n    x: 1\n")
    assert params_from_yaml(f"{path}:world") == {"n": 3, "unseen": ["a.b", "c"], "flag": True, "deep": {"x": 1}}
    assert params_from_yaml(f"{path}:world.deep") == {"x": 1}
    with pytest.raises(ValueError, match="no key 'world.nope'"):
        params_from_yaml(f"{path}:world.nope")
    with pytest.raises(ValueError, match="'world.n' must be a mapping"):
        params_from_yaml(f"{path}:world.n")
    with pytest.raises(ValueError, match="cannot read parameters"):
        params_from_yaml(f"{tmp_path / 'missing.yaml'}:world")


def test_repo_root_is_the_nearest_folder_with_dvc_yaml(tmp_path):
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    (tmp_path / "notebooks" / "deep").mkdir(parents=True)
    assert repo_root(tmp_path / "notebooks" / "deep") == tmp_path.resolve()
    with pytest.raises(FileNotFoundError, match="no dvc.yaml"):
        repo_root(Path("/"))


def test_enter_repo_root_moves_only_from_the_notebooks_folder(tmp_path, monkeypatch):
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    assert enter_repo_root() == tmp_path.resolve() == Path.cwd().resolve()
    assert enter_repo_root() == tmp_path.resolve()  # at the root already: stays
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert enter_repo_root() == (tmp_path / "elsewhere").resolve()


# ----------------------------------------------------------------------------- scrubbing
def test_scrub_progress_drops_bars_and_keeps_warnings():
    warning = "model.py:3: UserWarning: careful\n  warnings.warn('careful')\n"
    text = BAR_0 + BAR_1 + "\n" + warning + BAR_1 + BAR_3 + "\n" + "done\n"
    assert scrub_progress(text) == warning + "done\n"
    assert scrub_progress(BAR_NO_TOTAL + "\n") == ""


def test_scrub_progress_keeps_text_printed_on_the_bar_line():
    assert scrub_progress(BAR_1 + "model.py:3: UserWarning: x\n") == "model.py:3: UserWarning: x\n"


def test_scrub_progress_leaves_plain_text_alone_and_overwrites_like_a_terminal():
    plain = "epoch 1 [loss 0.3]\n\nvalues at [1, 2]\n"
    assert scrub_progress(plain) == plain
    assert scrub_progress("step 1\rstep 2\rstep 3\n") == "step 3\n"
    assert scrub_progress("a\r\nb\r\n") == "a\nb\n"


def test_scrub_text_normalises_addresses_cell_files_and_root(tmp_path):
    text = (f"<guimem.phone.world.World object at 0x7f3a2b1c9d50> and {tmp_path}/src/x.py:3 in {tmp_path}\n"
            "/tmp/ipykernel_81234/1491801196.py:5: UserWarning: careful")
    assert scrub_text(text, tmp_path) == (
        "<guimem.phone.world.World object at 0x...> and src/x.py:3 in .\nipykernel/1491801196.py:5: UserWarning: careful")
    assert scrub_text("0x1f is hex", tmp_path) == "0x1f is hex"


def _executed_notebook() -> nbformat.NotebookNode:
    """A notebook as papermill + nbclient leave it: times, random ids, widget and stream noise."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["papermill"] = {"start_time": "2026-01-01T00:00:00", "end_time": "2026-01-01T00:01:00",
                                "duration": 60.0, "input_path": "in.ipynb", "output_path": None,
                                "parameters": {"n": 3}, "version": "2.7.0"}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    cell_times = {"start_time": "t0", "end_time": "t1", "duration": 1.5, "status": "completed", "exception": False}
    injected = nbformat.v4.new_code_cell("n = 3", id="a1b2c3d4")
    injected.metadata = {"tags": ["injected-parameters"], "papermill": dict(cell_times)}
    code = nbformat.v4.new_code_cell("for i in tqdm(range(3)): print(Foo())", id="keepme", execution_count=2)
    code.metadata = {"papermill": dict(cell_times), "execution": {"iopub.status.busy": "2026-01-01T00:00:01"}}
    code.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text=BAR_0 + BAR_1),
        nbformat.v4.new_output("stream", name="stdout", text="<Foo object at 0x7f00deadbeef>\n"),
        nbformat.v4.new_output("stream", name="stderr", text=BAR_3 + "\n"),
        nbformat.v4.new_output("display_data", data={
            "application/vnd.jupyter.widget-view+json": {"model_id": "5f1e", "version_major": 2},
            "text/plain": "  0%|          | 0/3 [00:00<?, ?it/s]"}),
        nbformat.v4.new_output("execute_result", data={"text/plain": "42"}, execution_count=2),
    ]
    nb.cells = [injected, code]
    return nb


def test_scrub_notebook_removes_run_to_run_noise_and_keeps_the_rest():
    nb = scrub_notebook(_executed_notebook(), None, input_ids={"keepme"})
    pm = nb.metadata["papermill"]
    assert not {"start_time", "end_time", "duration"} & set(pm) and pm["parameters"] == {"n": 3}
    assert "widgets" not in nb.metadata
    injected, code = nb.cells
    assert injected.id == "injected-parameters" and code.id == "keepme"
    for cell in nb.cells:
        assert cell.metadata["papermill"] == {"status": "completed", "exception": False}
        assert "execution" not in cell.metadata
    assert code.execution_count == 2
    assert [o["output_type"] for o in code.outputs] == ["stream", "execute_result"]
    assert code.outputs[0]["name"] == "stdout" and code.outputs[0]["text"] == "<Foo object at 0x...>\n"
    assert code.outputs[1]["data"] == {"text/plain": "42"}
    nbformat.validate(nb)


def test_scrub_notebook_gives_the_same_bytes_for_two_noisy_runs():
    first = _executed_notebook()
    second = _executed_notebook()
    second.metadata["papermill"]["duration"] = 61.2
    second.cells[0]["id"] = "ffff0000"
    second.cells[1].outputs[0]["text"] = BAR_0 + "\r 67%|██████▋   | 2/3 [00:01<00:00,  1.90it/s]"
    second.cells[1].outputs[1]["text"] = "<Foo object at 0x7f11cafe0000>\n"
    assert nbformat.writes(scrub_notebook(first, None, {"keepme"})) == \
        nbformat.writes(scrub_notebook(second, None, {"keepme"}))


# ----------------------------------------------------------------------------- real runs
@pytest.fixture
def project(tmp_path) -> Path:
    """A tiny repository: dvc.yaml at the root and a parameterised notebook in notebooks/."""
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    (tmp_path / "notebooks").mkdir()
    params = nbformat.v4.new_code_cell(
        "n = 2  # how many steps\nlabel = 'x'  # a word\nrate = 0.5  # a float\nflag = False  # a bool\n"
        "sizes = [1]  # a list\nmetrics_path = 'metrics/tiny.json'  # where the metrics go")
    params.metadata["tags"] = ["parameters"]
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A tiny stage"),
        params,
        nbformat.v4.new_code_cell(
            "import json, os, time, warnings\nfrom pathlib import Path\nfrom tqdm import tqdm\n"
            "for i in tqdm(range(n)):\n    time.sleep(0.02)\n"
            "warnings.warn('careful')\nclass Foo: pass\nprint(Foo())"),
        nbformat.v4.new_code_cell(
            "from guimem.core.progress import note, progress_bar\n"
            "for i in progress_bar(range(n), desc='steps', unit='step'):\n    time.sleep(0.7)\n"
            "note(f'{n} of {n} chunks read back from the cache')"),
        nbformat.v4.new_code_cell(
            "types = {k: type(v).__name__ for k, v in dict(n=n, label=label, rate=rate, flag=flag, sizes=sizes).items()}\n"
            "Path(metrics_path).parent.mkdir(parents=True, exist_ok=True)\n"
            "Path(metrics_path).write_text(json.dumps({'types': types, 'cwd': os.getcwd(), 'label': label, "
            "'hashseed': os.environ.get('PYTHONHASHSEED')}))"),
    ]
    nbformat.write(nb, tmp_path / "notebooks" / "tiny.ipynb")
    failing = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                              nbformat.v4.new_code_cell("raise ValueError('no episodes in data/world')")])
    nbformat.write(failing, tmp_path / "notebooks" / "failing.ipynb")
    return tmp_path


@pytest.mark.notebook
def test_a_run_is_typed_runs_at_the_root_and_is_byte_identical_when_repeated(project, capsys):
    src, out = project / "notebooks" / "tiny.ipynb", project / "reports" / "tiny.ipynb"
    params = parse_parameters([("n", "3"), ("label", "no"), ("rate", "1e-05"), ("flag", "true"),
                               ("sizes", "[1, 2]")])
    run_notebook(src, out, params)
    first = out.read_bytes()
    said = capsys.readouterr().err.splitlines()  # the kernel's bar (2 s or longer) and its note, on the runner's stderr
    assert [line.split("|")[0] for line in said] == ["steps: 100%", "[guimem] 3 of 3 chunks read back from the cache"]
    assert "3/3 [" in said[0]
    metrics = json.loads((project / "metrics" / "tiny.json").read_text())
    assert metrics == {"types": {"n": "int", "label": "str", "rate": "float", "flag": "bool", "sizes": "list"},
                       "cwd": str(project.resolve()), "label": "no", "hashseed": "0"}
    (project / "params.yaml").write_text("tiny:\n  n: 3\n  label: 'no'\n  rate: 1.0e-05\n  flag: true\n  sizes: [9]\n")
    assert main([str(src), str(out), "--params-from", f"{project / 'params.yaml'}:tiny", "-p", "sizes", "[1, 2]"]) == 0
    assert out.read_bytes() == first
    text = first.decode()
    assert "it/s" not in text and "0x..." in text and "UserWarning: careful" in text
    outputs = json.dumps([c.get("outputs", []) for c in json.loads(text)["cells"]])
    assert "steps" not in outputs and "read back" not in outputs  # the watcher's, not the report's
    assert str(project) not in text
    assert [p.name for p in out.parent.iterdir()] == ["tiny.ipynb"]  # no temporary file left


def test_code_cells_counts_what_the_kernel_runs():
    cells = [nbformat.v4.new_markdown_cell("# title"), nbformat.v4.new_code_cell("x = 1"),
             nbformat.v4.new_code_cell("  \n"), nbformat.v4.new_code_cell("y = 2")]
    cells[3].metadata["tags"] = ["skip-execution"]
    nb = nbformat.v4.new_notebook(cells=cells)
    assert (code_cells(nb, {}), code_cells(nb, {"n": 1})) == (1, 2)  # papermill injects a cell for parameters
    injected = nbformat.v4.new_code_cell("n = 1")
    injected.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(1, injected)
    assert code_cells(nb, {"n": 1}) == 2  # already there: replaced, not added


@pytest.mark.notebook
def test_on_a_terminal_the_moving_line_counts_every_cell_the_kernel_ran(project, capsys):
    run_notebook(project / "notebooks" / "tiny.ipynb", project / "reports" / "tiny.ipynb", {"n": 3}, progress=True)
    err = capsys.readouterr().err  # the parameters cell, the injected one and three more
    assert "tiny: cell 5/5 [" in err.split("\r")[-1] and "[guimem] 3 of 3 chunks read back" in err


@pytest.mark.notebook
def test_a_failing_cell_exits_non_zero_names_the_error_and_writes_nothing(project, capsys):
    out = project / "reports" / "failing.ipynb"
    code = main([str(project / "notebooks" / "failing.ipynb"), str(out)])
    err = capsys.readouterr().err
    assert code == 1
    assert "failing.ipynb: cell 1" in err and "ValueError: no episodes in data/world" in err
    assert not out.exists() and not out.parent.exists()


def test_unknown_parameters_and_missing_notebooks_are_refused_before_running(project, capsys):
    src, out = project / "notebooks" / "tiny.ipynb", project / "reports" / "tiny.ipynb"
    with pytest.raises(NotebookError, match="unknown parameter.*episodes.*defines: flag, label"):
        run_notebook(src, out, {"episodes": 3})
    assert main([str(project / "notebooks" / "nope.ipynb"), str(out)]) == 1
    assert "nope.ipynb: no such notebook" in capsys.readouterr().err
    with pytest.raises(NotebookError, match="overwrite the input"):
        run_notebook(src, src)
    assert not out.exists()


def test_a_stage_notebooks_bad_parameter_is_refused_before_running_and_nothing_is_written(project, repo_root, capsys):
    src = project / "notebooks" / "00_world.py"
    src.write_bytes((repo_root / "notebooks" / "00_world.py").read_bytes())
    out = project / "reports" / "00_world.ipynb"
    with pytest.raises(DataError) as err:
        run_notebook(src, out, {"phone": {"n_train": 10, "themes": "no"}})
    assert (err.value.field, err.value.path) == ("phone.themes", None)
    assert err.value.message == "expected true or false, got str 'no' (passed to run_notebook)"
    assert main([str(src), str(out), "-p", "n_perturbed", "3.0"]) == 2
    assert capsys.readouterr().err == "error: field 'n_perturbed': expected an integer, got float 3.0 (passed with -p)\n"
    assert main([str(src), str(out), "-p", "n_perturbed", "3", "--check"]) == 0
    assert not (project / "reports").exists() and not (project / "data").exists() and not (project / "scratch").exists()


def test_check_only_checks_the_names_of_a_notebook_without_a_stage_spec(project, capsys):
    src, out = project / "notebooks" / "tiny.ipynb", project / "reports" / "tiny.ipynb"
    assert main([str(src), str(out), "-p", "n", "3.5", "--check"]) == 0  # no spec: any value of a known name
    assert main([str(src), str(out), "-p", "episodes", "3", "--check"]) == 1
    assert "unknown parameter(s) episodes" in capsys.readouterr().err
    assert not out.parent.exists()


def test_nbsmoke_reads_a_notebooks_parameters(project):
    assert notebook_parameters(project / "notebooks" / "tiny.ipynb")["n"] == "2"


def test_scrub_progress_drops_the_cursor_moves_of_nested_bars():
    # a nested tqdm bar (leave=False) sometimes leaves only its cursor-up behind, depending on timing
    assert scrub_progress("\x1b[A\n") == ""
    assert scrub_progress("note: kept\n\x1b[A\n") == "note: kept\n"
    assert scrub_progress("\x1b[A" + BAR_1 + "\n") == ""
