"""docs/examples/kernelscope.ipynb runs end to end on the shipped fixtures (nbclient, no GPU)."""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "docs" / "examples" / "kernelscope.ipynb"


def _outputs(cell, kind: str) -> str:
    texts = []
    for out in cell.get("outputs", []):
        if kind == "stream" and out.get("output_type") == "stream":
            texts.append(out.get("text", ""))
        elif kind in (out.get("data") or {}):
            texts.append(out["data"][kind])
    return "".join(texts)


@pytest.mark.slow
def test_the_example_notebook_runs_and_shows_results(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # Executed from a scratch folder: the notebook finds the fixtures from the repository root.
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT / "docs" / "examples")}})
    client.execute()  # raises CellExecutionError, with the cell's traceback, on any error
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not any(o.get("output_type") == "error" for o in c.get("outputs", [])) for c in code)
    by_source = {c.source.splitlines()[-1]: c for c in code}
    diff_html = _outputs(by_source["pair"], "text/html")
    assert diff_html.startswith('<div class="kernelscope">') and "Findings" in diff_html and "<svg" in diff_html
    assert "A is 1.6% slower than B" in _outputs(by_source["print(pair.brief(tokens=300))"], "stream")
    assert "stall-barrier" in _outputs(by_source["pair.findings"], "text/html")
    assert "<table" in _outputs(by_source['table[table.view == "throughput"][["label", "a", "b", "relative", "better_side"]]'], "text/html")
    assert "Configs" in _outputs(by_source["sweep"], "text/html")
    assert "PASS 0" in _outputs(by_source["verdicts"], "stream")
