"""The page's plots as a reader sees them: drawn, every value label lies inside the image
and no two labels overlap; the largest-changes chart ranks by what matters for time."""

import pytest

pytest.importorskip("matplotlib")

from kernelscope.reports.page_inputs import build_page
from kernelscope.reports import plots

PAIRS = {
    # A kernel and a reference at almost the same rate: their roofline labels once overlapped.
    "flash_attn-vs-fa4": "benchmarks/results/flash_attn-vs-fa4-d64-h200.json.xz",
    "add-vs-gemm": "tests/fixtures/h200-cute-add-and-cublas-gemm.full.ncu-rep.xz",
    "gemm-vs-cublas": "tests/fixtures/h200-gemm-vs-cublas-4096.quick.ncu-rep.xz",
}


def _text_boxes(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Annotation

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = []
    for ax in fig.axes:
        for t in ax.texts:
            if isinstance(t, Annotation) and t.get_text().strip():
                boxes.append((t.get_text(), t.get_window_extent(renderer)))
    return boxes, fig.bbox


@pytest.fixture(scope="module")
def pages():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    return {name: build_page((str(root / path),)) for name, path in PAIRS.items()}


@pytest.mark.parametrize("pair", list(PAIRS))
def test_value_labels_do_not_overlap_and_are_not_clipped(pages, pair):
    for plot in pages[pair].plots:
        boxes, figure = _text_boxes(plot.figure)
        for text, box in boxes:
            assert box.x0 >= figure.x0 - 0.5 and box.x1 <= figure.x1 + 0.5, f"{plot.name}: {text!r} is clipped"
            assert box.y0 >= figure.y0 - 0.5 and box.y1 <= figure.y1 + 0.5, f"{plot.name}: {text!r} is clipped"
        for i, (t1, b1) in enumerate(boxes):
            for t2, b2 in boxes[i + 1:]:
                assert not b1.overlaps(b2), f"{plot.name}: {t1!r} overlaps {t2!r}"


def test_tiny_ratios_are_written_as_fractions_not_zero():
    assert plots.ratio_text(0.001) == "1/1e+03"
    assert plots.ratio_text(0.05) == "1/20"
    assert plots.ratio_text(250.0) == "250x"
    assert plots.ratio_text(0.6) == "-40%"
    assert "0.00x" not in {plots.ratio_text(x) for x in (1e-6, 1e-3, 0.004)}


def test_largest_changes_rank_by_size_not_by_ratio_of_tiny_counts():
    from kernelscope.reports.change_ranking import largest_changes

    view = {"metrics": [
        {"id": "big", "label": "Big count", "unit": "inst", "a": 2.0e8, "b": 1.0e8, "better_side": "b"},
        {"id": "tiny", "label": "Tiny count", "unit": "inst", "a": 30.0, "b": 3.0, "better_side": "b"},
        {"id": "pct", "label": "Throughput", "unit": "%", "a": 40.0, "b": 80.0, "better_side": "b"},
    ]}
    rows, _ = largest_changes({"instructions": view})
    labels = [r.label for r in rows]
    # 2x of the largest count and 2x of a 40-80% throughput outrank 10x of 30 instructions
    assert labels.index("Big count") < labels.index("Tiny count")
    assert labels.index("Throughput") < labels.index("Tiny count")


def test_instruction_mix_bars_are_counts_so_equal_counts_are_equal_bars():
    # The same HGMMA count in both kernels, while B executes far more of everything else:
    # shares would draw B's HGMMA bar a third as long; counts draw them equal.
    rows = [plots.MixRow("IMAD", [1.0e6, 4.0e6]), plots.MixRow("HGMMA", [2.0e6, 2.0e6])]
    ax = plots.instruction_mix_figure(rows, ["A: mine", "B: theirs"]).axes[0]
    a_bars, b_bars = ax.containers[0], ax.containers[1]
    assert a_bars[1].get_width() == b_bars[1].get_width() == 2.0e6
    assert b_bars[0].get_width() == 4.0e6
