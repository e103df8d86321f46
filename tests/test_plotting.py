"""The shared figure style: colours for every kind, and PNGs that are byte-identical run to run."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from guimem.core.policy import MODALITIES
from guimem.viz import plotting
from guimem.viz.plotting import MEMORY_COLORS, MEMORY_ORDER, MEMORY_LABELS, MODALITY_COLORS, figure_path, save_figure

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _figure():
    """A figure with bars, a line, text and an image: most of what the stages draw."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(6, 3))
    ax1.bar([MEMORY_LABELS[k] for k in MEMORY_ORDER], [34.2, 30.8, 38.5, 36.8, 45.3],
            color=[MEMORY_COLORS[k] for k in MEMORY_ORDER])
    ax1.set_title("success rate (%)")
    ax1.tick_params(axis="x", rotation=30)
    ax2.imshow(np.random.default_rng(0).random((8, 5)))
    ax2.plot([0, 4], [0, 7], color=MODALITY_COLORS["image"])
    return fig


def test_the_same_figure_saved_twice_gives_identical_bytes(tmp_path):
    fig = _figure()
    a, b, other = tmp_path / "a.png", tmp_path / "b.png", tmp_path / "c.png"
    assert save_figure(fig, a) is None
    save_figure(fig, b)
    save_figure(_figure(), other)
    plt.close("all")
    assert a.read_bytes() == b.read_bytes() == other.read_bytes()
    assert a.read_bytes().startswith(PNG_SIGNATURE)


def test_saved_png_carries_no_software_metadata_and_the_fixed_dpi(tmp_path):
    from PIL import Image

    path = tmp_path / "fig.png"
    save_figure(_figure(), path)
    plt.close("all")
    data = path.read_bytes()
    assert b"Software" not in data and b"matplotlib version" not in data
    with Image.open(path) as im:
        assert abs(im.info["dpi"][0] - plotting.DPI) < 0.5


def test_save_figure_creates_folders_writes_atomically_and_wants_png(tmp_path):
    fig = _figure()
    path = tmp_path / "figures" / "deep" / "world_gallery.png"
    save_figure(fig, path)
    assert sorted(p.name for p in path.parent.iterdir()) == ["world_gallery.png"]  # no temporary left
    with pytest.raises(ValueError, match="must end in .png"):
        save_figure(fig, tmp_path / "fig.pdf")
    plt.close("all")


def test_every_memory_kind_and_modality_has_its_own_colour():
    assert set(MEMORY_COLORS) == set(MEMORY_ORDER) == set(MEMORY_LABELS)
    assert len(set(MEMORY_COLORS.values())) == len(MEMORY_ORDER)
    assert set(MODALITY_COLORS) == set(MODALITIES)
    assert len(set(MODALITY_COLORS.values())) == len(MODALITIES)


def test_style_is_applied_with_the_bundled_font():
    from matplotlib import font_manager, rcParams

    assert rcParams["font.sans-serif"][0] == plotting.FONT
    assert "DejaVuSans" in font_manager.findfont(plotting.FONT)


def test_figure_path_follows_the_stage_naming_and_refuses_odd_names(tmp_path):
    assert figure_path(tmp_path, "world", "gallery") == tmp_path / "world_gallery.png"
    with pytest.raises(ValueError, match="field 'what'"):
        figure_path(tmp_path, "world", "../escape")


def test_plot_data_is_a_csv_named_like_its_figure(tmp_path):
    from guimem.viz.plotting import write_plot_data

    write_plot_data(tmp_path, "graph_build", "tau_sweep", [{"tau": 0.8, "nodes": 50}, {"tau": 0.9, "nodes": 98}])
    path = tmp_path / "graph_build_tau_sweep.csv"
    assert path.read_text() == "tau,nodes\n0.8,50\n0.9,98\n"
    with pytest.raises(ValueError, match="row 1"):
        write_plot_data(tmp_path, "graph_build", "tau_sweep", [{"tau": 0.8}, {"theta": 0.9}])
