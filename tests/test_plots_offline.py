"""`dvc plots show` writes a page that opens with no network: Vega inlined, no CDN, no warning.

The page DVC fills in is written by :mod:`guimem.pipeline.plots_html` (``make plots``) where
``.dvc/config`` points ``plots.html_template``. The fast tests check that wiring and the page's
assembly on a stand-in bundle; the slow ones build the real page from vl-convert-python and
run ``dvc plots show`` on a small repository with one CSV plot and one PNG.
"""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from guimem.pipeline import plots_html

ROOT = Path(__file__).resolve().parent.parent


class _Links(HTMLParser):
    """Every ``<script>``, ``<link>``, ``<img>``, ``<iframe>`` and their ``src``/``href``."""

    TAGS = frozenset({"script", "link", "img", "iframe"})

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.TAGS:
            found = dict(attrs)
            self.links.append((tag, found.get("src", found.get("href"))))


def links(html: str) -> list[tuple[str, str | None]]:
    parser = _Links()
    parser.feed(html)
    parser.close()
    return parser.links


def remote(html: str) -> list[tuple[str, str | None]]:
    """The scripts, stylesheets, images and frames the page would fetch from a network."""
    return [(tag, url) for tag, url in links(html)
            if url is not None and url.strip().lower().startswith(("http:", "https:", "//"))]


def dvc_config(path: Path) -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(path)
    return config


# ---- fast: the wiring and the page's assembly ----

def test_dvc_config_points_at_the_page_make_plots_writes():
    # DVC reads a relative plots.html_template from .dvc/ (dvc.commands.plots)
    value = dvc_config(ROOT / ".dvc" / "config")["plots"]["html_template"]
    assert (ROOT / ".dvc" / value).resolve() == (ROOT / plots_html.TEMPLATE).resolve()
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert f"PLOTS_TEMPLATE := {plots_html.TEMPLATE.as_posix()}\n" in makefile


def test_the_page_inlines_the_bundle_in_place_of_dvc_script_tags():
    page = plots_html.page_html('window.vegaEmbed = function () {}; var end = "</script>";', about="Vega 0")
    assert page.count("{plot_divs}") == 1 and page.count("{refresh_tag}") == 1
    assert "{scripts}" not in page  # so DVC's CDN <script src=...> tags are left out
    assert links(page) == [("script", None)]  # one inline script, nothing fetched
    assert '"<\\/script>"' in page and page.count("</script>") == 1
    assert '<meta charset="utf-8">' in page and "<!-- Vega 0 -->" in page


@pytest.mark.parametrize("bundle", ["x = '{plot_divs}'", "x = '{scripts}'", "x = '{refresh_tag}'", "x = '<!--'"])
def test_a_bundle_dvc_would_alter_is_refused(bundle):
    with pytest.raises(ValueError, match="cannot be inlined"):
        plots_html.page_html(bundle)


def test_the_newest_vega_lite_5_is_bundled():
    assert plots_html.vegalite_version(["5.8", "5.21", "5.9", "6.4"]) == "5.21"
    with pytest.raises(RuntimeError, match="no Vega-Lite 5.x"):
        plots_html.vegalite_version(["6.1", "6.4"])


# ---- slow: the real page, and dvc plots show with it ----

@pytest.fixture(scope="module")
def page() -> str:
    return plots_html.build_page()  # a few seconds: vl-convert bundles Vega, Vega-Lite and Vega-Embed


@pytest.mark.slow
def test_the_real_page_loads_nothing_from_a_network(page):
    assert remote(page) == []
    assert [tag for tag, url in links(page) if url is not None] == []  # no file is fetched either
    assert "window.vegaEmbed=" in page and "cdn." not in page
    assert page.count("{plot_divs}") == 1 and "{scripts}" not in page


@pytest.mark.slow
def test_dvc_plots_show_writes_an_offline_page_without_warnings(tmp_path, page):
    repo = tmp_path / "repo"
    (repo / "plots").mkdir(parents=True)
    (repo / "figures").mkdir()
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}

    # a DVC repository without git, as `dvc init --no-scm` makes it (without a second dvc start-up),
    # with this repository's own [plots] setting, so that the relative path resolves as it does here
    template = dvc_config(ROOT / ".dvc" / "config")["plots"]["html_template"]
    (repo / ".dvc").mkdir()
    (repo / ".dvc" / "config").write_text(
        "[core]\n    no_scm = true\n    analytics = false\n    check_update = false\n"
        f"[plots]\n    html_template = {template}\n", encoding="utf-8")
    (repo / plots_html.TEMPLATE).parent.mkdir(parents=True)
    (repo / plots_html.TEMPLATE).write_text(page, encoding="utf-8")
    (repo / "plots" / "loss.csv").write_text("epoch,loss\n1,0.9\n2,0.5\n3,0.3\n", encoding="utf-8")
    Image.new("RGB", (8, 8), (200, 30, 30)).save(repo / "figures" / "figure.png")
    (repo / "figures" / ".gitignore").write_text("/figure.png\n", encoding="utf-8")  # as DVC writes beside outputs
    (repo / "dvc.yaml").write_text(textwrap.dedent("""\
        plots:
          - figures/figure.png
          - plots/loss.csv:
              x: epoch
              y: loss
        """), encoding="utf-8")

    shown = subprocess.run([sys.executable, "-m", "dvc", "plots", "show"], cwd=repo, env=env,
                           capture_output=True, text=True, timeout=120, check=False)
    index = repo / "dvc_plots" / "index.html"
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr == "" and shown.stdout.strip() == index.as_uri()  # the page's address, no warning
    html = index.read_text(encoding="utf-8")
    assert "window.vegaEmbed=" in html and "vegaEmbed('#plots_loss_csv', spec);" in html
    assert ("img", "static/workspace_figures_figure.png") in links(html)
    shown_png = repo / "dvc_plots" / "static" / "workspace_figures_figure.png"
    assert shown_png.read_bytes() == (repo / "figures" / "figure.png").read_bytes()  # the figure itself, copied
    assert remote(html) == [] and "cdn." not in html
