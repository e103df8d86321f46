"""The page `dvc plots show` and `dvc plots diff` fill in, with Vega inlined so that it opens offline.

DVC's default page loads Vega, Vega-Lite and Vega-Embed from a CDN: without network its
data-backed plots (``plots/*.csv``) stay blank. ``.dvc/config`` therefore points
``plots.html_template`` at the page this module writes, :data:`TEMPLATE` (under ``build/``,
ignored by git). DVC fills in the page's plot placeholder; the page has no placeholder for
DVC's ``<script src=...>`` tags, so those are left out and the inlined libraries are used.
DVC's plot divs are classic scripts (``var spec = ...; vegaEmbed('#id', spec);``) that run
as the page is read, so the libraries are a classic script too, run before them in the head.

The libraries come from ``vl-convert-python`` (the Vega project's converter, BSD-3-Clause),
whose ``javascript_bundle`` returns Vega, Vega-Lite and Vega-Embed as one script with no
external dependency that sets ``window.vegaEmbed``, the function DVC's plot divs call. In a
plain classic script the bundle's top-level names (``const``, ``function``) would become page
globals, free to clash with DVC's ``var spec``; a ``<script type="module">`` would keep them to
itself but runs only after the whole page has been read, too late for DVC's divs. So the bundle
is wrapped in a strict-mode function: scoped like a module, run at once like a classic script.
The page is about 0.9 MB and is written from the installed package, never committed::

    python -m guimem.pipeline.plots_html [PATH]    # what `make plots` runs before `dvc plots show`

Without the page, ``dvc plots show`` stops with "HTML template has to contain '{plot_divs}'"
(DVC takes the missing path for the template's text): run ``make plots`` once.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import vl_convert
from dvc_render.html import HTML

from guimem.core.io import atomic_write_text
from guimem.pipeline.paths import repo_root

# Where the page is written, relative to the repository root; .dvc/config names it relative
# to .dvc/ (as DVC reads it): html_template = ../build/dvc_plots_template.html
TEMPLATE = Path("build") / "dvc_plots_template.html"

# DVC's plot templates are Vega-Lite v5 specs (their $schema), so the newest v5 compiler is bundled.
VEGALITE_MAJOR = "5"

# The placeholders DVC replaces in the page (dvc_render.html.HTML.embed).
PLOTS_PLACEHOLDER = "{" + HTML.PLOTS_PLACEHOLDER + "}"
SCRIPTS_PLACEHOLDER = "{" + HTML.SCRIPTS_PLACEHOLDER + "}"
REFRESH_PLACEHOLDER = "{" + HTML.REFRESH_PLACEHOLDER + "}"

# DVC's own page (dvc_render.html.PAGE_HTML) with a charset, the inlined bundle in place of the
# scripts placeholder, and a comment naming the bundled versions. @@NAMES@@ are filled by page_html.
_PAGE = """<!DOCTYPE html>
<html>
<head>
    <meta charset="utf-8">
    @@REFRESH@@
    <title>DVC Plot</title>
    <!-- @@ABOUT@@ -->
    <script type="text/javascript">
(function () {
"use strict";
@@BUNDLE@@
})();
    </script>
    <style>
        table {
            border-spacing: 15px;
        }
    </style>
</head>
<body>
    @@PLOTS@@
</body>
</html>
"""


def vegalite_version(available: list[str] | None = None) -> str:
    """The newest Vega-Lite ``5.x`` that vl-convert bundles (from ``available``, default: the installed package's)."""
    versions = vl_convert.get_vegalite_versions() if available is None else available
    v5 = [v for v in versions if v.split(".")[0] == VEGALITE_MAJOR]
    if not v5:
        raise RuntimeError(f"vl-convert-python bundles no Vega-Lite {VEGALITE_MAJOR}.x (it has {versions}); "
                           f"DVC's plot templates are Vega-Lite v{VEGALITE_MAJOR} specs")
    return max(v5, key=lambda v: tuple(int(part) for part in v.split(".")))


def page_html(bundle: str, about: str = "") -> str:
    """The page: ``bundle`` (JavaScript, no import or export) inlined in one ``<script>`` as the body of
    a strict-mode function, and DVC's plot and refresh placeholders.

    Refuses a bundle holding one of DVC's placeholders (DVC would replace text inside the
    script) or an HTML comment opener; a closing ``</script`` inside it is escaped as
    ``<\\/script``, which means the same in JavaScript strings and regular expressions.
    """
    for token in (PLOTS_PLACEHOLDER, SCRIPTS_PLACEHOLDER, REFRESH_PLACEHOLDER, "<!--"):
        if token in bundle:
            raise ValueError(f"the JavaScript bundle contains {token!r}; it cannot be inlined in DVC's page")
    if "--" in about:
        raise ValueError(f"{about!r}: an HTML comment cannot contain '--'")
    bundle = bundle.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")
    page = _PAGE
    for marker, value in (("@@ABOUT@@", about), ("@@REFRESH@@", REFRESH_PLACEHOLDER),
                          ("@@PLOTS@@", PLOTS_PLACEHOLDER), ("@@BUNDLE@@", bundle)):  # the bundle last
        page = page.replace(marker, value)
    return page


def build_page() -> str:
    """The page with the installed vl-convert-python's Vega, Vega-Lite (newest 5.x) and Vega-Embed."""
    version = vegalite_version()
    about = (f"Vega {vl_convert.get_vega_version()}, Vega-Lite {version}, Vega-Embed "
             f"{vl_convert.get_vega_embed_version()}: inlined from vl-convert-python by "
             f"guimem.pipeline.plots_html, so that this page needs no network")
    return page_html(vl_convert.javascript_bundle(vl_version=version), about=about)


def write_template(path: str | os.PathLike[str] | None = None) -> Path:
    """Write the page to ``path`` (default: :data:`TEMPLATE` under the repository root), atomically."""
    target = Path(path) if path is not None else repo_root() / TEMPLATE
    return atomic_write_text(target, build_page())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m guimem.pipeline.plots_html",
        description="Write the offline HTML page that `dvc plots show/diff` fill in (plots.html_template "
                    "in .dvc/config): Vega, Vega-Lite and Vega-Embed inlined from vl-convert-python.")
    parser.add_argument("path", nargs="?", help=f"where to write it (default: <repository>/{TEMPLATE.as_posix()})")
    args = parser.parse_args(argv)
    print(f"wrote {write_template(args.path)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
