"""The notebooks are jupytext scripts in the form jupytext saves them, so JupyterLab cannot change them,
and end with one report().

The stage notebooks are committed as percent scripts (``notebooks/NN_stage.py``) and nothing
else. JupyterLab opens them through jupytext's contents manager and, on every autosave, writes
the notebook back through it with the repository's ``jupytext.toml``. These tests pin that this
write is the identity: once offline (jupytext's own writer) and once through a real Jupyter
server's contents API, exactly as the lab's autosave does, after which ``git status`` and
``dvc status`` must both be clean.
"""

from __future__ import annotations

import ast
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import jupytext
import pytest
from jupytext.config import load_jupytext_configuration_file

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))
CONFIG = load_jupytext_configuration_file(str(ROOT / "jupytext.toml"))


def test_every_stage_notebook_is_a_script_and_none_is_an_ipynb():
    assert [p.stem for p in NOTEBOOKS] == ["00_recorded", "00_world", "01_segmentation", "02_graph_build", "03_retrieval_eval",
                                           "04_actor", "05_closed_loop", "06_layer_analysis", "07_probe_router",
                                           "08_oracle_headroom", "09_routing_stats", "10_real_graph"]
    tracked = subprocess.run(["git", "ls-files", "notebooks"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert not [f for f in tracked.stdout.split() if f.endswith(".ipynb")], "commit notebooks as .py scripts only"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_in_the_form_jupytext_saves(path: Path):
    text = path.read_text(encoding="utf-8")
    saved = jupytext.writes(jupytext.reads(text, fmt="py:percent"), fmt="py:percent", config=CONFIG)
    assert saved == text, f"{path.name}: not in jupytext's saved form; run `jupytext --to py:percent {path.name}` " \
                          "from the repository root (jupytext.toml applies)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_has_one_parameters_cell_and_starts_by_saying_what_it_does(path: Path):
    nb = jupytext.read(path)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path}: expected one cell tagged 'parameters', found {len(tagged)}"
    assert tagged[0].cell_type == "code"
    assert nb.cells[0].cell_type == "markdown", f"{path}: the first cell must say what the stage does"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_reports_in_its_last_cell_and_only_there(path: Path):
    """A stage's metrics and results are written by ``guimem.pipeline.report.report``, called once, by the
    last code cell (the writers it calls are the package's business, not the notebook's)."""
    cells = [c for c in jupytext.read(path).cells if c.cell_type == "code"]
    calls = [i for i, c in enumerate(cells) for node in ast.walk(ast.parse(c.source))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "report"]
    assert calls == [len(cells) - 1], f"{path.name}: end with one report(results_path, results, metrics_path, metrics)"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert not names & {"write_metrics", "write_stage_results"}, f"{path.name}: report() writes the stage's files"


# ----------------------------------------------------------------------------- a real server
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A Jupyter server over a folder, with jupytext's contents manager, spoken to over HTTP."""

    def __init__(self, root: Path, home: Path, args: tuple[str, ...] = (), env: dict[str, str] | None = None):
        self.port, self.token = _free_port(), secrets.token_hex(16)
        env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTER_CONFIG_DIR": str(home / "config"),
               **(env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root", f"--port={self.port}",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
             *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=root)
        deadline = time.monotonic() + 240  # a loaded machine's first import of jupyter_server is slow
        while True:
            try:
                self.call("GET", "api/status")
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError(f"jupyter server did not start: {self.proc.stderr.read().decode()[-2000:]}")
                time.sleep(0.3)

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read() or b"{}")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _language_info() -> dict:
    """What a started kernel reports of itself, which JupyterLab writes into the notebook."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3", startup_timeout=240)  # (its default: 60 s)
    try:
        return client.kernel_info(reply=True, timeout=60)["content"]["language_info"]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _status(root: Path) -> tuple[str, str]:
    git = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True)
    dvc = subprocess.run([sys.executable, "-m", "dvc", "status"], cwd=root, capture_output=True, text=True)
    return git.stdout, f"exit {dvc.returncode}: {dvc.stdout}{dvc.stderr}"  # a clone without outputs lists them all


@pytest.mark.slow
def test_autosave_from_jupyterlab_leaves_git_and_dvc_clean(tmp_path):
    """Each notebook opened, run (the kernel's metadata set as the lab does, outputs added) and saved."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    for folder in ("notebooks", "src"):  # the working tree under test, committed or not
        shutil.rmtree(clone / folder)
        shutil.copytree(ROOT / folder, clone / folder, ignore=shutil.ignore_patterns("__pycache__", "*.ipynb"))
    for name in ("jupytext.toml", "dvc.yaml", ".gitignore", ".dvcignore"):
        shutil.copy2(ROOT / name, clone / name)
    subprocess.run(["git", "add", "-A"], cwd=clone, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "--allow-empty", "-m", "wip"],
                   cwd=clone, check=True)
    git_before, dvc_before = _status(clone)
    language_info = _language_info()
    server = Server(clone, tmp_path / "jupyter")
    try:
        for path in NOTEBOOKS:
            url = f"api/contents/notebooks/{path.name}"
            model = server.call("GET", f"{url}?type=notebook&content=1")
            nb = model["content"]
            nb["metadata"]["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
            nb["metadata"]["language_info"] = language_info
            for cell in nb["cells"]:
                if cell["cell_type"] == "code":  # as if run: outputs and counts, which a script does not keep
                    cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "ran\n"}]
                    cell["execution_count"] = 1
                    cell["metadata"]["scrolled"] = True
            server.call("PUT", url, {"type": "notebook", "format": "json", "content": nb})
    finally:
        server.close()
    assert _status(clone) == (git_before, dvc_before), "saving a notebook from JupyterLab changed the repository"
    assert not list((clone / "notebooks").glob("*.ipynb")), "a save created an .ipynb twin"


@pytest.mark.slow
def test_autosave_of_an_executed_report_leaves_its_bytes(tmp_path):
    """A stage's executed notebook (reports/*.ipynb, a DVC output) opened in the lab and autosaved,
    once its kernel has started, is written back byte for byte: dvc status stays clean."""
    import nbformat

    from guimem.pipeline.runner import run_notebook

    script = tmp_path / "notebooks" / "tiny.py"
    script.parent.mkdir()
    script.write_text('# %% [markdown]\n# A report.\n\n# %% tags=["parameters"]\nn = 2\n\n'
                      '# %%\nprint(list(range(n)))\n{"n": n}\n', encoding="utf-8")
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    report = run_notebook(script, tmp_path / "reports" / "tiny.ipynb", {"n": 3}, cwd=tmp_path)
    before = report.read_bytes()
    assert nbformat.reads(before, as_version=4).cells[-1].outputs, "the report has outputs"
    language_info = _language_info()
    server = Server(tmp_path, tmp_path / "jupyter")
    try:
        nb = server.call("GET", "api/contents/reports/tiny.ipynb?type=notebook&content=1")["content"]
        nb["metadata"]["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
        nb["metadata"]["language_info"] = language_info
        server.call("PUT", "api/contents/reports/tiny.ipynb", {"type": "notebook", "format": "json", "content": nb})
    finally:
        server.close()
    assert report.read_bytes() == before


@pytest.mark.slow
def test_the_lab_serves_a_script_with_the_metadata_its_kernel_will_write(tmp_path):
    """JupyterLab marks a notebook unsaved when the starting kernel's language_info differs from its
    metadata's (it writes nothing when they are deep-equal). Through ``make lab``'s contents manager a
    script comes with its kernel (the one whose interpreter runs the lab, as ``make lab`` writes the
    kernel spec) and that kernel's own language_info, so it opens clean; saved, the script is unchanged."""
    share = tmp_path / "share"
    (share / "kernels" / "python3").mkdir(parents=True)
    (share / "kernels" / "python3" / "kernel.json").write_text(json.dumps(
        {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
         "display_name": "Python 3 (ipykernel)", "language": "python"}))
    (tmp_path / "notebooks").mkdir()
    shutil.copy2(ROOT / "jupytext.toml", tmp_path / "jupytext.toml")
    script = tmp_path / "notebooks" / NOTEBOOKS[0].name
    shutil.copy2(NOTEBOOKS[0], script)
    before = script.read_bytes()
    server = Server(tmp_path, tmp_path / "jupyter", ("--ServerApp.contents_manager_class=guimem.pipeline.lab.LabContentsManager",),
                    {"JUPYTER_PATH": str(share)})
    try:
        url = f"api/contents/notebooks/{script.name}"
        nb = server.call("GET", f"{url}?type=notebook&content=1")["content"]
        assert nb["metadata"]["kernelspec"]["name"] == "python3"
        assert nb["metadata"]["language_info"] == _language_info()  # what the kernel reports when it starts
        server.call("PUT", url, {"type": "notebook", "format": "json", "content": nb})
    finally:
        server.close()
    assert script.read_bytes() == before
