"""The Model tab's every-head mosaic colours its image itself, once per set of maps: handed pyqtgraph a float tile
with NaN gaps, its render (the NaN path, then its colour table) took 180-250 ms for a 4,096-token trace's 336 maps of
128 x 128 blocks, the longest stall when the trace arrived. The colours must stay pyqtgraph's own: here they are
compared pixel by pixel with pyqtgraph rendering the float tile, and pyqtgraph is checked never to colour the
mosaic (no timing: the property that bounds it)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from pyqtgraph import functions_qimage
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage

from app.widgets.grid.mosaic import MosaicGrid, colour_table, gap_cells, mosaic_colours
from app.widgets.heatmap.style import colormap

HUGE_PAGE_BYTES = 1 << 22
"""The size from which numpy asks the kernel for 2 MB pages (its ``madvise`` hint)."""


def weights(layers: int = 2, heads: int = 3, n: int = 10, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.random((layers, heads, n, n)).astype(np.float32)
    edges = np.array([0.0, 1 / 256, 2 / 256 - 1e-7, 0.5, 255 / 256, 1 - 1e-7, 1.0, 1e-30], dtype=np.float32)
    w[0, 0, 0, :edges.size] = edges  # the colour steps' edges, both ends and a subnormal-ish one
    w[:, :, ~np.tril(np.ones((n, n), bool))] = 0.0  # the causal mask's zeros
    return w


def pyqtgraph_pixels(w: np.ndarray) -> np.ndarray:
    """What the mosaic drew before: a float tile, NaN between the maps, coloured by pyqtgraph at levels (0, 1)."""
    layers, heads, n, _ = w.shape
    g = gap_cells(n)
    tile = np.full((layers * (n + g) - g, heads * (n + g) - g), np.nan, dtype=np.float32)
    for li in range(layers):
        for h in range(heads):
            tile[li * (n + g):li * (n + g) + n, h * (n + g):h * (n + g) + n] = w[li, h]
    item = pg.ImageItem(axisOrder="row-major")
    item.setColorMap(colormap("weights"))
    item.setImage(tile, autoLevels=False, levels=(0.0, 1.0))
    item.render()
    image = item.qimage.convertToFormat(QImage.Format.Format_RGBA8888)
    return np.array(image.constBits(), dtype=np.uint8).reshape(image.height(), image.bytesPerLine())[
        :, :image.width() * 4].reshape(image.height(), image.width(), 4)


@pytest.mark.parametrize("n", [10, 33])
def test_the_mosaic_colours_are_pyqtgraphs_own_and_its_gaps_transparent(qapp, n):
    w = weights(n=n, seed=n)
    want, got = pyqtgraph_pixels(w), mosaic_colours(w, colour_table())
    assert got.shape == want.shape and got.dtype == np.uint8 and got.flags.c_contiguous
    gaps = want[..., 3] == 0
    assert gaps.any() and not gaps.all()
    np.testing.assert_array_equal(got[..., 3] == 0, gaps)  # transparent exactly between the maps
    np.testing.assert_array_equal(got[~gaps], want[~gaps])  # every cell the colour pyqtgraph gave it


def test_a_nan_weight_stays_transparent_as_pyqtgraph_drew_it(qapp):
    w = weights()
    w[1, 2, 3, 1] = np.nan
    got = mosaic_colours(w, colour_table())
    g, n = gap_cells(10), 10
    assert got[1 * (n + g) + 3, 2 * (n + g) + 1, 3] == 0
    assert pyqtgraph_pixels(w)[1 * (n + g) + 3, 2 * (n + g) + 1, 3] == 0


def test_pyqtgraph_never_colours_the_mosaic_and_its_readers_stay_exact(qtbot, monkeypatch):
    colourings: list[tuple[int, ...]] = []
    real = functions_qimage._rescale_and_lookup_float

    def counted(xp, image, *args, **kwargs):
        colourings.append(image.shape)
        return real(xp, image, *args, **kwargs)

    monkeypatch.setattr(functions_qimage, "_rescale_and_lookup_float", counted)
    grid = MosaicGrid(dark=False)
    qtbot.addWidget(grid)
    grid.resize(700, 500)
    w = weights(layers=3, heads=4, n=16, seed=5)
    grid.set_maps(w, [f"t{i}" for i in range(16)], causal=True)
    grid.grab()
    assert colourings == []  # the image reached pyqtgraph as colours (before: its whole float tile, once per set)
    image = grid.image.image
    assert image.dtype == np.uint8 and image.shape[2] == 4 and grid.image.levels is None
    np.testing.assert_array_equal(image, mosaic_colours(w, colour_table()))
    assert grid.image.mapRectToParent(grid.image.boundingRect()) == QRectF(0, 0, image.shape[1], image.shape[0])
    np.testing.assert_array_equal(grid.values(2, 3), w[2, 3])  # hover and values read the weights, not colours
    assert not grid.weights.flags.writeable  # kept, not copied, and never written through the grid


def test_the_mosaic_asks_for_no_huge_pages_on_the_gui_thread(qtbot):
    """numpy asks for 2 MB pages for an array of 4 MiB or more; faulting them in was 180-210 ms of system time on the
    GUI thread when a 4,096-token trace arrived (the float tile, its colours, a copy of the weights: 130 MB). Now the
    work goes a layer at a time in small buffers and the image is plain memory: besides the image, what
    ``set_maps`` allocates at its peak (tracemalloc sees numpy's buffers) stays under that size."""
    import tracemalloc

    grid = MosaicGrid(dark=False)
    qtbot.addWidget(grid)
    w = weights(layers=24, heads=14, n=96, seed=7)  # the maps 12.4 MB, the image 16.9 MB, a layer 0.5 MB
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        grid.set_maps(w, [f"t{i}" for i in range(96)], causal=True)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    image = grid.image.image
    assert image.nbytes > 4 * HUGE_PAGE_BYTES and w.nbytes > 2 * HUGE_PAGE_BYTES
    root = image
    while isinstance(root, np.ndarray) and root.base is not None:
        root = root.base
    assert not isinstance(root, np.ndarray)  # the image's memory is not numpy's own (no huge pages asked for)
    assert peak - image.nbytes < HUGE_PAGE_BYTES  # before: the float tile, the copy and the colours, 50+ MB
    np.testing.assert_array_equal(image, mosaic_colours(w, colour_table()))


def test_a_long_traces_mosaic_is_coloured_a_band_of_layers_per_event_loop_turn(qtbot):
    """The image is written into new memory, and touching 30 MB of it at once (a 4,096-token trace's 24 x 14 maps of
    128 x 128 blocks) took up to 170 ms of system time on the GUI thread. A progressive ``set_maps`` colours
    BAND_LAYERS layers at once and one band per turn after; the old maps are gone at once and the read-outs are
    whole at once; a new set of maps started midway replaces the old."""
    from app.widgets.grid.mosaic import BAND_LAYERS, gap_cells

    grid = MosaicGrid(dark=False)
    qtbot.addWidget(grid)
    layers, heads, n = 24, 14, 128
    w = weights(layers=layers, heads=heads, n=n, seed=9)
    old = weights(layers=layers, heads=heads, n=n, seed=10)
    grid.set_maps(old, [f"t{i}" for i in range(n)], causal=True, progressive=True)
    grid.set_maps(w, [f"t{i}" for i in range(n)], causal=True, progressive=True)  # before the old one finished
    want = mosaic_colours(w, colour_table())
    band_rows = BAND_LAYERS * (n + gap_cells(n))
    image = grid.image.image
    assert grid.colouring
    np.testing.assert_array_equal(image[:band_rows], want[:band_rows])  # the first band now
    assert not image[band_rows:].any()  # the rest transparent (not the old maps) until its turn
    np.testing.assert_array_equal(grid.values(23, 13), w[23, 13])  # the read-outs are whole at once
    turns = 0
    while grid.colouring:
        qtbot.wait(1)  # one turn of the event loop, counted (a waitUntil that counts its turns)
        turns += 1
    assert 0 < turns <= layers // BAND_LAYERS
    np.testing.assert_array_equal(grid.image.image, want)  # the image pyqtgraph shows, all of it
    assert grid.image.image is image  # filled in place: the QImage wrapping it shows each band as it comes
    whole = MosaicGrid(dark=False)  # the same maps coloured at once: the same picture on screen
    qtbot.addWidget(whole)
    for g in (grid, whole):
        g.resize(800, 600)
    whole.set_maps(w, [f"t{i}" for i in range(n)], causal=True)
    assert grid.grab().toImage() == whole.grab().toImage()
