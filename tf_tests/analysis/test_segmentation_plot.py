"""Tests for hmkeras.analysis.segmentation_plot (Chung et al. Fig. 3/4 style PNG)."""

import os

import matplotlib.image
import numpy as np
import pytest

from hmkeras.analysis.segmentation_plot import plot_segmentation

TEXT = "the cat sat on the mat and the dog sat on the log"
SIZES = [6, 5, 4]


def _layers(length, sizes=SIZES, seed=0):
    rng = np.random.default_rng(seed)
    hiddens = [rng.normal(size=(length, n)) for n in sizes]
    z = rng.integers(0, 2, size=(length, len(sizes) - 1)).astype(float)
    return hiddens, z


def _read(path):
    assert os.path.getsize(path) > 1000
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    return matplotlib.image.imread(path)


def test_writes_png_and_wraps_rows(tmp_path):
    hiddens, z = _layers(len(TEXT))
    one_row = plot_segmentation(str(tmp_path / "one.png"), TEXT, hiddens, z,
                                chars_per_row=100, dpi=100)
    wrapped = plot_segmentation(str(tmp_path / "wrapped.png"), TEXT, hiddens,
                                z, chars_per_row=20, dpi=100,
                                title="wrapped")
    one, three = _read(one_row), _read(wrapped)
    assert one.ndim == 3 and one.shape[2] in (3, 4)
    # 50 characters on one row: wide and short; 20 per row: 3 rows
    assert one.shape[1] > 2 * one.shape[0]
    assert 100 < one.shape[0] < 400 and 500 < one.shape[1] < 900
    assert three.shape[0] > 2.5 * one.shape[0]
    assert three.shape[1] < one.shape[1]
    # the boundary rows contain pure black and pure white pixels
    rgb = three[..., :3]
    assert (rgb.sum(-1) == 0).any() and (rgb.sum(-1) == 3).any()


def test_boundary_colours_follow_z(tmp_path):
    """z = 1 is drawn white and z = 0 black, like Chung et al. Fig. 3."""
    text = "ab" * 10
    hiddens = [np.ones((20, 2)), np.ones((20, 2))]  # L = 2: one z row
    all_ones = plot_segmentation(str(tmp_path / "w.png"), text, hiddens,
                                 np.ones((20, 1)), dpi=80)
    all_zeros = plot_segmentation(str(tmp_path / "b.png"), text, hiddens,
                                  np.zeros((20, 1)), dpi=80)
    white = (_read(all_ones)[..., :3].sum(-1) == 3).mean()
    black = (_read(all_zeros)[..., :3].sum(-1) == 3).mean()
    assert white > black  # the z row turned from black to white


def test_accepts_cell_outputs(tmp_path):
    hiddens, z = _layers(len(TEXT))
    outputs = np.concatenate(hiddens + [z], axis=-1)  # (T, sum + L - 1)
    path = plot_segmentation(str(tmp_path / "out.png"), TEXT, outputs=outputs,
                             layer_sizes=SIZES, chars_per_row=25)
    direct = plot_segmentation(str(tmp_path / "direct.png"), TEXT, hiddens, z,
                               chars_per_row=25)
    np.testing.assert_array_equal(_read(path), _read(direct))


def test_single_layer_needs_no_boundaries(tmp_path):
    path = plot_segmentation(str(tmp_path / "l1.png"), "hello world",
                             [np.random.rand(11, 3)])
    assert _read(path).shape[0] > 10


def test_mismatched_lengths_raise(tmp_path):
    hiddens, z = _layers(len(TEXT))
    path = str(tmp_path / "x.png")
    with pytest.raises(ValueError, match="hiddens\\[1\\]"):
        plot_segmentation(path, TEXT, [hiddens[0], hiddens[1][:-1],
                                       hiddens[2]], z)
    with pytest.raises(ValueError, match="boundaries"):
        plot_segmentation(path, TEXT, hiddens, z[:-1])
    with pytest.raises(ValueError, match="boundaries"):
        plot_segmentation(path, TEXT, hiddens, z[:, :1])
    with pytest.raises(ValueError, match="len\\(text\\)"):
        plot_segmentation(path, TEXT + "!", hiddens, z)
    with pytest.raises(ValueError, match="layer_sizes"):
        plot_segmentation(path, TEXT, outputs=np.zeros((len(TEXT), 16)),
                          layer_sizes=SIZES)
    with pytest.raises(ValueError, match="chars_per_row"):
        plot_segmentation(path, TEXT, hiddens, z, chars_per_row=0)
    assert not os.path.exists(path)
