"""`kernelscope report`: the page, its plots and the roofline, on the real report fixtures (no browser here)."""

import json
import re

import pytest
from click.testing import CliRunner

pytest.importorskip("matplotlib")

from kernelscope.reports.page_inputs import build_page
from kernelscope.cli.main import _register, cli
from kernelscope.profiler.sources import load_profiles
from kernelscope.reports import html, html_pages
from html_inputs import gate_json, sweep_json

FULL = "h200-cute-add-and-cublas-gemm.full.ncu-rep"
MANY = "h200-torch-242-launches.metrics6.ncu-rep"

_register()


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def pair_page(fixture_file):
    return build_page((str(fixture_file(FULL)),))


def _plot(page, name):
    found = [p for p in page.plots if p.name == name]
    assert found, f"no {name} plot; plots: {[p.name for p in page.plots]}; notes: {page.notes}"
    return found[0].figure


def _point(figure, role):
    """The plotted (x, y) of a kernel on the roofline, read back from the figure's artist."""
    ax = figure.axes[0]
    lines = [ln for ln in ax.get_lines() if ln.get_gid() == f"roofline-point-{role}"]
    assert len(lines) == 1
    (x, y), = lines[0].get_xydata()
    return float(x), float(y)


def test_roofline_places_each_kernel_at_its_measured_flops_and_bytes(fixture_file, pair_page):
    add, gemm = load_profiles(fixture_file(FULL))
    fig = _plot(pair_page, "roofline")

    # A: the CuTe DSL add of two float32 tensors of 16777216 elements (the count is in its
    # name): one FADD per element. Its DRAM bytes and duration are ncu's raw counters.
    elements = int(re.search(r"gmemo(\d+)1_", add.name).group(1))
    assert elements == 16777216
    add_bytes = add.value("dram__bytes_read.sum") + add.value("dram__bytes_write.sum")
    add_seconds = add.value("gpu__time_duration.sum") * 1e-9
    x, y = _point(fig, "A")
    assert x == pytest.approx(elements / add_bytes, rel=1e-9)
    assert y == pytest.approx(elements / add_seconds, rel=1e-9)

    # B: cuBLAS bf16 GEMM 4096^3 = 2 * 4096^3 FLOPs on the tensor pipe; its rate agrees with
    # the per-second value ncu itself reports for the tensor-pipe counter.
    gemm_flops = 2 * 4096**3
    gemm_bytes = gemm.value("dram__bytes_read.sum") + gemm.value("dram__bytes_write.sum")
    x, y = _point(fig, "B")
    assert x == pytest.approx(gemm_flops / gemm_bytes, rel=1e-9)
    assert y == pytest.approx(gemm_flops / (gemm.value("gpu__time_duration.sum") * 1e-9), rel=1e-9)
    assert y == pytest.approx(gemm.value("sm__ops_path_tensor_src_bf16_dst_fp32.sum.per_second"), rel=0.01)


def test_roofline_ceilings_come_from_the_reports_peak_metrics(fixture_file, pair_page):
    add, _ = load_profiles(fixture_file(FULL))
    ax = _plot(pair_page, "roofline").axes[0]
    ceilings = {ln.get_gid(): ln for ln in ax.get_lines() if (ln.get_gid() or "").startswith("roofline-ceiling-")}
    top = max(ceilings["roofline-ceiling-0"].get_ydata())
    max_clock = add.device.max_sm_clock_hz
    assert max_clock == pytest.approx(1.98e9)
    # Dense bf16 HGMMA: FLOPs per cycle over the whole device x the device's maximum SM clock.
    assert top == pytest.approx(add.value("sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained")
                                * max_clock, rel=1e-9)
    fp32_top = max(ceilings["roofline-ceiling-1"].get_ydata())
    assert fp32_top == pytest.approx(2 * add.value("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained")
                                     * max_clock, rel=1e-9)
    # The slope of the memory-bound part is the DRAM bandwidth: bytes per DRAM cycle x DRAM clock.
    line = ceilings["roofline-ceiling-0"]
    x0, y0 = line.get_xydata()[0]
    bandwidth = y0 / x0
    clocks = [p.value("dram__cycles_elapsed.avg.per_second") for p in load_profiles(fixture_file(FULL))]
    assert bandwidth == pytest.approx(add.value("dram__bytes.sum.peak_sustained") * max(clocks), rel=1e-9)
    assert 4.0e12 < bandwidth < 5.5e12      # an H200's HBM3e, as a sanity bound


def test_pair_page_is_self_contained_and_complete(pair_page):
    text = html.render(pair_page)
    assert text.startswith("<!DOCTYPE html>")
    assert "<script" not in text.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text, re.I)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", text, re.I) and "@import" not in text
    assert {m for m in re.findall(r'data-plot="([\w-]+)"', text)} == {"roofline", "instruction-mix", "metric-changes"}
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids)), "element ids repeat across the page's plots"
    assert all(ref in set(ids) for ref in re.findall(r'(?:url\(|href=")#([^)"]+)', text))
    for heading in ("What was compared", "Where the numbers come from", "Metric views, side by side", "Instruction mix"):
        assert f"<h2>{heading}</h2>" in text
    # The views hold both kernels' values side by side, and the roofline sources name the metrics.
    assert "176.800 us" in text and "57.728 us" in text
    assert "dram__bytes.sum.peak_sustained" in text and "1.980 GHz" in text


def test_findings_are_shown_when_the_document_has_them(fixture_file, tmp_path):
    doc = json.loads(run("diff", str(fixture_file(FULL)), "--format", "json").output)
    doc["findings"] = [{
        "rule": "example_rule", "title": "Example finding <b>escaped</b>", "severity": "warning",
        "compares": "reference", "message": "A executes 95% more branch instructions than B.",
        "hint": "Hoist the bounds check.", "section": "InstructionStats", "impact": 0.25,
        "rule_file": "builtin", "values": [{"name": "target.branch_ratio", "value": 4.1, "unit": "%", "text": "4.10 %"}],
        "assumptions": [],
    }]
    doc["rules_not_evaluated"] = {"tail-wave": ["target.waves_per_sm"]}
    path = tmp_path / "diff.json"
    path.write_text(json.dumps(doc))
    text = html.render(build_page((str(path),)))
    section = text.split('<section id="findings">', 1)[1].split("</section>", 1)[0]
    assert "Example finding &lt;b&gt;escaped&lt;/b&gt;" in section
    assert "95% more branch instructions" in section and "Hoist the bounds check." in section
    assert "4.10 %" in section and "headroom ~25% of the kernel's time" in section
    # The headline leads the page: B (the GEMM) is the slower kernel here.
    summary = text.split('<section id="summary">', 1)[1].split("</section>", 1)[0]
    assert "B is 206.3% slower than A" in summary
    assert "Not evaluated (metrics not collected): tail-wave (target.waves_per_sm)" in section
    # A diff JSON has catalog values only: no roofline, and the page says why.
    assert 'data-plot="roofline"' not in text and "No roofline: a diff JSON" in text


def test_report_without_roofline_metrics_says_not_collected(fixture_file):
    page = build_page((f"{fixture_file(MANY)}:@0",))
    assert "roofline" not in [p.name for p in page.plots]
    assert any("SpeedOfLight_RooflineChart" in n for n in page.notes)
    text = html.render(page)
    assert "n/a" in text


def test_report_command_inputs(fixture_file, tmp_path):
    full = str(fixture_file(FULL))
    show = tmp_path / "show.json"
    show.write_text(run("show", full, "--format", "json").output)
    diff = tmp_path / "diff.json"
    diff.write_text(run("diff", full, "--format", "json").output)
    gate = gate_json(run, fixture_file(FULL), tmp_path)
    sweep = sweep_json(tmp_path)
    cases = {
        "pair": ([f"{full}:cutlass", f"{full}:nvjet"], {"roofline", "instruction-mix", "metric-changes"}),
        "one": ([f"{full}:nvjet"], {"roofline", "instruction-mix"}),
        "show": ([str(show)], {"roofline", "instruction-mix", "metric-changes"}),
        "diff": ([str(diff)], {"instruction-mix", "metric-changes"}),
        "gate": ([str(gate)], {"gate-changes"}),
        "sweep": ([str(sweep)], {"sweep"}),
    }
    for name, (args, plots) in cases.items():
        out = tmp_path / f"{name}.html"
        result = run("report", *args, "-o", out)
        assert result.exit_code == 0, (name, result.output)
        assert f"wrote {out}" in result.output
        text = out.read_text()
        assert set(re.findall(r'data-plot="([\w-]+)"', text)) == plots, name
    gate_text = (tmp_path / "gate.html").read_text()
    assert "REGRESSION" in gate_text and "IMPROVEMENT" in gate_text and "dram__bytes_read.sum" in gate_text
    sweep_text = (tmp_path / "sweep.html").read_text()
    assert "invalid" in sweep_text and "tile 128 exceeds N=64" in sweep_text
    assert "111.1%" in sweep_text      # tile=32, stages=3: 0.040 ms reference / 0.036 ms


def test_sweep_plot_shows_each_config_against_the_reference(tmp_path):
    page = build_page((str(sweep_json(tmp_path)),))
    ax = _plot(page, "sweep").axes[0]
    bars = [p for p in ax.patches]
    widths = sorted((round(b.get_width(), 6) for b in bars), reverse=True)
    # Reference 0.040 ms over each planted config time, in percent; the invalid config has no bar.
    assert widths == sorted((round(100 * 0.040 / t, 6) for t in (0.050, 0.046, 0.041, 0.038, 0.044, 0.036)), reverse=True)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "tile=32, stages=3"


def test_png_output(fixture_file, tmp_path):
    from PIL import Image

    out = tmp_path / "r.html"
    result = run("report", str(fixture_file(FULL)), "-o", out, "--png", tmp_path / "png")
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in (tmp_path / "png").iterdir())
    assert names == ["instruction-mix.png", "metric-changes.png", "roofline.png"]
    for name in names:
        image = Image.open(tmp_path / "png" / name).convert("L")
        assert image.width > 500 and image.height > 200
        dark = sum(image.histogram()[:200])
        assert dark / (image.width * image.height) > 0.02, name


@pytest.mark.parametrize("args, message", [
    (["nothing-here.json"], "nothing-here.json: no such file"),
    (["{MANY}"], "holds 242 kernels"),
    (["{MANY}:@0", "{MANY}:@1", "{MANY}:@2"], "one or two inputs"),
    (["{UNKNOWN}"], "not a kernelscope result"),
    (["{FULL}:no_such_kernel"], "no kernel matches"),
])
def test_user_errors_are_one_line(fixture_file, tmp_path, args, message):
    unknown = tmp_path / "other.json"
    unknown.write_text('{"schema": "something.else"}')
    names = {"MANY": str(fixture_file(MANY)), "FULL": str(fixture_file(FULL)), "UNKNOWN": str(unknown)}
    result = run("report", *[a.format(**names) for a in args], "-o", tmp_path / "x.html")
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "x.html").exists()


def test_compile_only_profiles_get_no_roofline_and_say_so():
    from kernelscope.profiler.record import KernelProfile, Session

    static = KernelProfile(source="static:example", index=0, kind="static", name="example_kernel",
                           demangled_name="example_kernel", session=Session(tool="static"),
                           instruction_mix={"FFMA": 40.0, "LDG": 8.0, "STG": 4.0, "BRA": 2.0})
    page = html_pages.profiles_page([static], "static:example")
    assert [p.name for p in page.plots] == ["instruction-mix"]
    assert any("compile-only" in n for n in page.notes)
    assert "in the binary" in page.plots[0].caption
    text = html.render(page)
    assert "compile-only (static)" in text


def test_a_profile_report_is_target_against_reference(fixture_file):
    """A report made by `kernelscope profile` (NVTX ranges ks:target / ks:reference, sidecar beside it)."""
    report = fixture_file("h200-rmsnorm-vs-torch.quick.ncu-rep")
    sidecar = fixture_file("h200-rmsnorm-vs-torch.quick.ncu-rep.kernelscope.json")
    for inputs in ((str(report),), (str(sidecar),)):
        page = build_page(inputs)
        assert page.title == "rmsnorm vs torch.rmsnorm"
        assert "shape M=16384, N=4096" in page.subtitle and "clock control none" in page.subtitle
        assert {p.name for p in page.plots} == {"instruction-mix", "metric-changes"}
        # The quick section set holds no roofline metrics: said once, not drawn.
        assert any(n.startswith("No roofline: the report holds none") for n in page.notes)
        assert any("correct (max abs error 0.0311)" in n for n in page.notes)


def test_a_gap_within_noise_and_the_findings_shared_by_both_are_said_on_the_page(fixture_file):
    """The page opens as the terminal does: a 1.8% gap between two kernels measured once is noise,
    and what both kernels share is named as not a difference."""
    report = fixture_file("h200-gemm-vs-cublas-2048.quick.ncu-rep")
    fixture_file("h200-gemm-vs-cublas-2048.quick.ncu-rep.kernelscope.json")
    page = build_page((str(report),))
    assert "1.8% slower" in page.lead
    assert "within run-to-run noise" in page.lead and "Main reason" not in page.lead
    shared = re.search(r"Shared by both \(not a difference\): (.*?)</p>", page.lead)
    assert shared and "[occupancy-limiter]" in shared.group(1)
