"""The report page in a real headless browser (Debian's chromium): it loads without console
messages, the plots are in the rendered DOM, and a screenshot shows them painted."""

import os
import re
import shutil
import subprocess

import pytest

pytest.importorskip("matplotlib")

from kernelscope.reports.page_inputs import build_page
from kernelscope.reports import html

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI installs Debian's chromium)")

FULL = "h200-cute-add-and-cublas-gemm.full.ncu-rep"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--hide-scrollbars"]
# Chromium logs every console message of the page (log, warning, error, uncaught exception)
# to stderr as "...:CONSOLE:<line>] ...". The page has no script, so any such line is a failure.
CONSOLE = re.compile(r":CONSOLE(?::\d+|\(\d+\))\]")


def _chromium(tmp_path, *args) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    env = {**os.environ, "HOME": str(tmp_path)}
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=180, env=env)


def _page(tmp_path, inputs, name):
    page = build_page(inputs)
    path = tmp_path / f"{name}.html"
    path.write_text(html.render(page))
    return path, [p.name for p in page.plots]


@pytest.fixture(scope="module")
def pages(tmp_path_factory, fixture_file):
    tmp = tmp_path_factory.mktemp("pages")
    return {
        "pair": _page(tmp, (str(fixture_file(FULL)),), "pair"),
        # a real sweep measured on an H200 (tests/fixtures/README.md gives the command)
        "sweep": _page(tmp, (str(fixture_file("h200-sweep-rmsnorm.json")),), "sweep"),
    }


@pytest.mark.parametrize("name", ["pair", "sweep"])
def test_page_loads_without_console_messages_and_plots_are_in_the_dom(pages, tmp_path, name):
    path, plot_names = pages[name]
    proc = _chromium(tmp_path, "--dump-dom", path.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if CONSOLE.search(line)]
    assert not console, console
    dom = proc.stdout
    assert "</html>" in dom
    rendered = re.findall(r'<svg[^>]*class="plot"[^>]*data-plot="([\w-]+)"', dom)
    assert rendered == plot_names and plot_names
    # Each plot holds drawn paths (axes, lines, bars), not an empty shell.
    for svg in re.findall(r"<svg.*?</svg>", dom, re.S):
        assert svg.count("<path") >= 10


# Window heights that hold each page's plots (the pair page has findings above them).
@pytest.mark.parametrize("name, height", [("pair", 4000), ("sweep", 1200)])
def test_screenshot_shows_the_page_painted(pages, tmp_path, name, height):
    from PIL import Image

    path, _ = pages[name]
    shot = tmp_path / f"{name}.png"
    proc = _chromium(tmp_path, f"--screenshot={shot}", f"--window-size=1400,{height}", path.as_uri())
    assert shot.exists(), proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if CONSOLE.search(line)]
    assert not console, console
    image = Image.open(shot).convert("RGB")
    assert image.size == (1400, height)
    pixels = image.width * image.height
    colours = image.getcolors(maxcolors=pixels)
    background = max(colours)[1]
    painted = sum(n for n, c in colours if max(abs(a - b) for a, b in zip(c, background)) > 40)
    assert painted / pixels > 0.03, f"only {painted / pixels:.2%} of the screenshot differs from the background"
    # The plots' own colours are on screen: on the pair page the kernel's blue (#1f6fd1) and the
    # reference's orange (#e0731c); on the sweep page green bars (every measured config of the
    # recorded sweep beats the reference).
    def near(target, tol=40):
        return sum(n for n, c in colours if max(abs(a - b) for a, b in zip(c, target)) <= tol)

    if name == "pair":
        assert near((0x1F, 0x6F, 0xD1)) > 200 and near((0xE0, 0x73, 0x1C)) > 200
    else:
        assert near((0x2A, 0x9D, 0x4B)) > 2000


def test_console_messages_are_detected(tmp_path):
    """The check above would see a console error: a page that logs one is caught."""
    page = tmp_path / "planted.html"
    page.write_text("<!DOCTYPE html><html><body><p>x</p><script>console.error('planted error'); "
                    "undefinedFunction();</script></body></html>")
    proc = _chromium(tmp_path, "--dump-dom", page.as_uri())
    console = [line for line in proc.stderr.splitlines() if CONSOLE.search(line)]
    assert any("planted error" in line for line in console), proc.stderr[-2000:]
    assert any("undefinedFunction" in line for line in console)
