"""Per-line records: the nvdisasm -g parser, line information leaving the SASS unchanged, and the
line view of the H100 reports made with line information and SourceCounters (tests/fixtures/README.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelscope.cli.main import _register, cli
from kernelscope.profiler import ncu
from kernelscope.profiler.line_compare import compare_lines
from kernelscope.profiler.report_lines import locate_source
from kernelscope.toolchain.sass_lines import opcode_class, parse_nvdisasm_lines
from kernelscope.profiler.source_lines import LineProfile, sha256_text
from kernelscope.profiler.sources import load_profiles
from kernelscope.toolchain.tools import find_cuda_tool

_register()
FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent
GEMM = "h100-gemm-vs-cublas-4096.lines.ncu-rep"
FLASH = "h100-flash_attn-vs-fa4.lines.ncu-rep"

LISTING = """\
\t.section\t.text.my_kernel,"ax",@progbits
my_kernel:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
\t//## File "/src/k.py", line 12
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/              @!P0 HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ;
\t//## File "/src/k.py", line 14
        /*0030*/                   EXIT ;
\t.section\t.text.other,"ax",@progbits
        /*0000*/                   BRA 0x0 ;
"""


def run(*args, **kw):
    # A wide console: these tests read the content of tables, not how an 80-column terminal wraps them.
    return CliRunner(env={"COLUMNS": "240"}).invoke(cli, [str(a) for a in args], **kw)


def test_nvdisasm_listing_is_parsed_per_function_with_lines():
    fns = parse_nvdisasm_lines(LISTING)
    assert list(fns) == ["my_kernel", "other"]
    k = fns["my_kernel"]
    assert [(i.offset, i.base_opcode, i.file, i.line) for i in k] == [
        (0x0, "LDC", None, None), (0x10, "S2R", "/src/k.py", 12), (0x20, "HGMMA", "/src/k.py", 12),
        (0x30, "EXIT", "/src/k.py", 14)]
    assert k[2].opcode == "HGMMA.64x128x16.F32.BF16" and k[2].text.startswith("@!P0 HGMMA")
    # A line applies within its function only.
    assert fns["other"][0].line is None


def test_opcode_classes():
    assert [opcode_class(op) for op in ("HGMMA", "LDSM", "SYNCS", "BAR", "IMAD", "UIADD3", "R2UR", "UTMALDG", "MUFU")] == [
        "tensor", "shared", "sync", "sync", "integer", "uniform", "uniform", "tma", "sfu"]


# ----------------------------------------------------------------------------- line information and SASS

def _compile_cubin(name: str, lines: bool, tmp_path: Path) -> bytes:
    """The cubin of a fresh compile (fresh process: the DSL reads CUTE_DSL_LINEINFO once)."""
    out = tmp_path / ("lines" if lines else "plain")
    env = dict(os.environ, KERNELSCOPE_CACHE_DIR=str(tmp_path / "cache"))
    for var in ("CUTE_DSL_ARCH", "CUTE_DSL_DUMP_DIR", "CUTE_DSL_LINEINFO"):
        env.pop(var, None)
    code = ("import sys; from kernelscope.profiler.static import inspect_target; "
            f"i = inspect_target({name!r}, line_info={lines}, analyse_binary=False); "
            "open(sys.argv[1], 'wb').write(i.cubin)")
    subprocess.run([sys.executable, "-c", code, str(out)], check=True, env=env, cwd=tmp_path, capture_output=True)
    return out.read_bytes()


def _tool(name: str, cubin: bytes, tmp_path: Path, *args: str) -> str:
    path = tmp_path / "x.cubin"
    path.write_bytes(cubin)
    return subprocess.run([find_cuda_tool(name), *args, str(path)], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("name", ["gemm", "gemm_mma", "gemm_rmsnorm", "flash_attn", "rmsnorm"])
def test_line_information_changes_no_sass_instruction(name, tmp_path):
    plain = _compile_cubin(name, False, tmp_path)
    lined = _compile_cubin(name, True, tmp_path)
    sass_plain = _tool("cuobjdump", plain, tmp_path, "--dump-sass")
    sass_lined = _tool("cuobjdump", lined, tmp_path, "--dump-sass")
    assert re.search(r"/\*0000\*/", sass_plain)
    assert sass_plain == sass_lined          # every instruction, address and encoding alike
    assert plain != lined                    # ... while the binaries differ: the debug sections
    assert "//## File" not in _tool("nvdisasm", plain, tmp_path, "-g", "-c")
    # Each shipped kernel's class lives in kernels/<name>/kernel.py.
    assert f"kernels/{name}/kernel.py\", line" in _tool("nvdisasm", lined, tmp_path, "-g", "-c")


def test_profile_compiles_with_line_information_by_default(tmp_path):
    seen = tmp_path / "env.txt"
    fake = tmp_path / "ncu"
    # Only the profiling call (not --version, --query-metrics) records what the worker would see.
    fake.write_text(f'#!/bin/sh\ncase "$*" in *--export*) echo "LINEINFO=$CUTE_DSL_LINEINFO" > "{seen}";; esac\nexit 0\n')
    fake.chmod(0o755)
    req = ncu.ProfileRequest(target="rmsnorm", reference="", shape={"M": 64, "N": 4096}, dtype="bfloat16",
                             config={}, report_path=str(tmp_path / "r.ncu-rep"))
    with pytest.raises(Exception):
        ncu.run_profile(req, ncu=str(fake))   # nothing is captured by the fake
    assert seen.read_text().strip() == "LINEINFO=1"
    req.line_info = False
    with pytest.raises(Exception):
        ncu.run_profile(req, ncu=str(fake))
    assert seen.read_text().strip() == "LINEINFO="


# ----------------------------------------------------------------------------- reports with line information

def _lines(fixture_file, name):
    return load_profiles(fixture_file(name), group_nvtx_prefix="ks:", lines=True)


def test_every_sample_of_the_cute_kernels_maps_to_a_line(fixture_file):
    target, reference = _lines(fixture_file, GEMM)
    t = target.source_lines
    assert t.has_source_counters and t.has_line_info and t.mapped_sample_share() == 1.0
    # The per-line samples add up to the per-instruction total, none lost or counted twice.
    assert t.total_samples() == sum(sum(i.sample_total for i in r.instructions) for r in t.records) > 10_000
    hottest = t.hottest(1)[0]
    assert hottest.file.endswith("kernels/gemm.py") and hottest.opcodes() == {"WARPGROUP": 1}
    assert "warpgroup.wait_group" in t.files[hottest.file].line_text(hottest.line)
    # cuBLAS carries no line information: nothing is attributed to a line.
    r = reference.source_lines
    assert r.has_source_counters and not r.has_line_info and r.mapped_sample_share() == 0.0
    assert any("without line information" in n for n in r.notes)


def test_show_lines_lists_hot_lines_and_their_sass(fixture_file):
    result = run("show", fixture_file(GEMM), "--lines", "--group-nvtx", "ks:", "--top", "5")
    assert result.exit_code == 0, result.output
    out = result.output
    assert re.search(r"kernels/gemm\.py:\d+\s+│\s+4\d\.\d%\s+│\s+barrier 100%", out)
    assert "SASS under the hottest lines" in out and "WARPGROUP.DEPBAR" in out
    assert "SASS hot spots (no line information" in out     # the cuBLAS side, labelled


def test_recorded_sources_are_matched_by_content(fixture_file, tmp_path):
    (target, _) = _lines(fixture_file, GEMM)
    recorded = next(p for p in target.source_lines.files if p.endswith("kernels/gemm.py"))
    text = target.source_lines.files[recorded].text
    # The fixture was profiled when gemm was one module; it has since become kernels/gemm/kernel.py.
    local_path = REPO / "kernels" / "gemm.py"
    if not local_path.exists():
        expected = "missing"
    else:
        expected = "moved" if sha256_text(local_path.read_text()) == sha256_text(text) else "changed"
    assert target.source_lines.files[recorded].status == expected
    # Another tree holding the same text: found there; one line edited: that line is stale.
    root = tmp_path / "tree"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "gemm.py").write_text(text)
    same = locate_source(recorded, text, roots=[root])
    assert same.status == "moved" and same.local_path.endswith("kernels/gemm.py") and same.stale_lines == []
    edited = text.splitlines()
    edited[319] = edited[319] + "  # edited"
    (root / "kernels" / "gemm.py").write_text("\n".join(edited) + "\n")
    changed = locate_source(recorded, text, roots=[root])
    assert changed.status == "changed" and changed.stale_lines == [320]
    assert locate_source(recorded, text, roots=[tmp_path / "empty"]).status == "missing"
    assert locate_source("/nowhere/k.py", None, roots=[tmp_path]).status == "missing"


def test_diff_lines_of_different_sources_compares_files_and_classes(fixture_file):
    result = run("diff", f"{fixture_file(FLASH)}:@0", f"{fixture_file(FLASH)}:@1", "--lines", "--top", "5")
    assert result.exit_code == 0, result.output
    assert "A and B come from different source files: compared per source file and opcode class" in result.output
    assert "cute/softmax.py" in result.output and "kernels/flash_attn.py" in result.output
    gemm = run("diff", fixture_file(GEMM), "--lines")
    assert "B has no line information: compared per source file and opcode class, not per line" in gemm.output


def test_diff_lines_joins_one_source_per_line(fixture_file):
    (a, _) = _lines(fixture_file, GEMM)
    (b, _) = _lines(fixture_file, GEMM)
    c = compare_lines(a.source_lines, b.source_lines)
    assert c.mode == "per-line" and c.unit == "samples"
    assert all(row.change == 0 for row in c.lines) and abs(sum(r.a_share for r in c.lines) - 1.0) < 1e-9


def test_findings_name_the_lines_where_their_samples_sit(fixture_file, tmp_path):
    sarif = tmp_path / "f.sarif"
    result = run("diff", fixture_file(GEMM), "--format", "json", "--sarif", sarif)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    # Both GEMMs wait at barriers about as much: the barrier finding is shared by both, not a
    # difference, and still says where A's barrier samples sit.
    assert "stall-barrier" not in {f["rule"] for f in doc["findings"]}
    shared = {f["rule"]: f for f in doc["shared"]}
    (loc,) = shared["stall-barrier"]["locations"]
    assert loc["file"].endswith("kernels/gemm.py") and loc["reason"] == "barrier samples"
    # The share is recomputed here from the per-instruction samples.
    (target, _) = _lines(fixture_file, GEMM)
    records = target.source_lines.records
    total = sum(r.samples.get("barrier", 0) for r in records)
    at = sum(r.samples.get("barrier", 0) for r in records if r.line == loc["line"] and r.file == loc["recorded_file"])
    assert loc["share"] == pytest.approx(at / total) and loc["share"] > 0.9
    # Those samples sit on wgmma.wait_group, which ncu files under "barrier": the location says
    # what they wait for (the warp's own WGMMAs), recomputed here from the instructions.
    at_line = [i for r in records if r.line == loc["line"] and r.file == loc["recorded_file"] for i in r.instructions]
    on_depbar = sum(i.samples.get("barrier", 0) for i in at_line if i.opcode.startswith("WARPGROUP.DEPBAR"))
    assert on_depbar / at > 0.5
    assert loc["opcode"] == "WARPGROUP.DEPBAR" and "own WGMMA groups" in loc["waits_for"]
    from kernelscope.rules.line_locations import location_text
    assert "% of barrier samples, at WARPGROUP.DEPBAR (wgmma.wait_group: " in location_text(loc)
    # Annotations are for differences only: a shared finding is no warning on a pull request.
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    assert all(r["ruleId"] != "stall-barrier" for r in results)
    gh = run("diff", fixture_file(GEMM), "--github")
    assert gh.exit_code == 0 and "title=Warps mostly wait at barriers" not in gh.output


def test_lines_json_round_trips_and_is_versioned(fixture_file, tmp_path):
    result = run("show", fixture_file(FLASH), "--lines", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    lines = doc["kernels"][0]["lines"]
    assert lines["schema"] == "kernelscope.lines" and lines["schema_version"] == 1
    assert lines["mapped_sample_share"] == 1.0 and lines["lines"][0]["sample_total"] > 0
    path = tmp_path / "lines.json"
    path.write_text(result.output)
    back = load_profiles(path)[0].source_lines
    original = load_profiles(fixture_file(FLASH), lines=True)[0].source_lines
    assert back.total_samples() == pytest.approx(original.total_samples())
    assert back.total_instructions() == original.total_instructions()
    assert [r.key for r in back.hottest(5)] == [r.key for r in original.hottest(5)]
    again = run("show", path, "--lines", "--format", "json")
    assert json.loads(again.output)["kernels"][0]["lines"]["lines"][:3] == lines["lines"][:3]
    with pytest.raises(ValueError, match="version"):
        LineProfile.from_dict({**lines, "schema_version": 99})


@pytest.mark.parametrize("args, message", [
    (["show", "@quick", "--lines"], "no per-instruction stall samples (profile with the SourceCounters section"),
    (["show", "@showjson", "--lines"], "no per-line records for"),
])
def test_bad_inputs_are_one_line(args, message, fixture_file, tmp_path):
    quick = fixture_file("h200-gemm-vs-cublas-4096.quick.ncu-rep")
    showjson = tmp_path / "plain.json"
    showjson.write_text(run("show", quick, "--format", "json").output)
    args = [{"@quick": quick, "@showjson": showjson}.get(a, a) for a in args]
    result = subprocess.run([sys.executable, "-m", "kernelscope", *map(str, args)], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_kernel_without_line_information_is_a_note_not_an_attribution(fixture_file):
    result = run("show", fixture_file("h200-gemm-mma-ldsm.ncu-rep"), "--lines", "-k", "@0")
    assert result.exit_code == 0, result.output
    assert "compiled without line information" in result.output
    assert "SASS hot spots (no line information: instructions, not source lines)" in result.output
    assert "Hottest source lines" not in result.output


def test_html_page_has_a_source_view_with_heat_per_reason(fixture_file):
    from kernelscope.reports.page_inputs import build_page
    from kernelscope.reports import html

    text = html.render(build_page((str(fixture_file(GEMM)),)))
    section = text.split('<section id="source-lines">', 1)[1].split("</section>", 1)[0]
    head = section.split("</thead>", 1)[0]
    assert "<th>All</th>" in head and "barrier" in head and "long_scoreboard" in head
    row = next(r for r in section.split("<tr>") if "warpgroup.wait_group" in r and r.startswith("<td>320</td>"))
    cells = re.findall(r'<td class="heat"[^>]*>([\d.]*)</td>', row)
    reasons = re.findall(r"<th title=\"share of this reason's samples\">(\w+)</th>", head)
    assert float(cells[1 + reasons.index("barrier")]) > 90          # the line holds most barrier samples
    assert "100.0% on instructions without line information" in section and "compiled without line information" in section
    # No located finding here: the barrier finding is shared by both GEMMs (see the test above).
    assert "kernels/gemm.py:320" not in text.split('<section id="source-lines">', 1)[0]


def test_memory_findings_are_located_by_instruction_kind_or_not_at_all(fixture_file):
    from kernelscope.toolchain.sass_lines import opcode_class
    from kernelscope.rules import line_locations
    from kernelscope.rules.findings import Finding

    (target, _) = _lines(fixture_file, GEMM)
    lp = target.source_lines

    def samples_on(kind, record=None):
        recs = [record] if record else lp.records
        return sum(i.sample_total for r in recs for i in r.instructions if opcode_class(i.base_opcode) == kind)

    located = line_locations.locate_memory(lp, ("sync",))
    assert 1 <= len(located) <= 3
    for loc in located:
        rec = next(r for r in lp.records if r.file == loc["recorded_file"] and r.line == loc["line"])
        assert loc["share"] == pytest.approx(samples_on("sync", rec) / samples_on("sync"))
    # Too few samples on TMA instructions to say where they sit: no location rather than a guess.
    assert samples_on("tma") < line_locations.MIN_SAMPLES
    finding = Finding(rule_id="tma-share-above-reference", title="t", severity="info", compares="reference",
                      message="m", hint="h", section="s", impact=None, rule_file="builtin")
    assert line_locations.attach_locations([finding], lp)[0].locations == []


def test_every_located_memory_finding_is_a_builtin_rule_with_a_known_instruction_kind():
    from kernelscope.rules import line_locations
    from kernelscope.rules.loader import load_rules

    rules = load_rules().rules
    for rule_id, classes in line_locations.MEMORY_CLASSES.items():
        assert rule_id in rules, rule_id
        assert set(classes) <= set(line_locations._CLASS_WORDS), (rule_id, classes)
    # Atomics are located on their own kind: shared ones on shared-memory instructions, global on global.
    assert line_locations.MEMORY_CLASSES["shared-atomic-contention"] == ("shared",)
    assert line_locations.MEMORY_CLASSES["atomic-contention"] == ("global",)


def test_sarif_file_that_exists_is_kept_without_force(fixture_file, tmp_path):
    sarif = tmp_path / "f.sarif"
    sarif.write_text("keep me")
    refused = subprocess.run([sys.executable, "-m", "kernelscope", "diff", str(fixture_file(GEMM)), "--sarif", str(sarif)],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and refused.stderr.strip().count("\n") == 0
    assert "exists: pass -f/--force" in refused.stderr and sarif.read_text() == "keep me"
    assert run("diff", fixture_file(GEMM), "--sarif", sarif, "-f").exit_code == 0
    assert json.loads(sarif.read_text())["version"] == "2.1.0"


def _synthetic_lines(rows):
    """A LineProfile of (file, line, offset, opcode, barrier samples, other samples) rows, one function."""
    from kernelscope.profiler.source_lines import InstructionCounters, LineProfile, SourceFile

    insts = [(f, line, InstructionCounters(function="k", offset=off, text=op, opcode=op,
                                           samples={"barrier": bar, "selected": other}))
             for f, line, off, op, bar, other in rows]
    files = {f: SourceFile(path=f) for f, *_ in rows}
    return LineProfile.build("k", "synthetic", insts, files, has_source_counters=True)


def test_barrier_samples_after_a_bar_sync_are_the_bar_s_and_growth_names_where_they_grew():
    from kernelscope.rules import line_locations
    from kernelscope.rules.findings import Finding, QuotedValue

    # bar.sync in the epilogue (line 61), its wait sampled at the next instruction (a BRA of line 71);
    # a wgmma wait (line 405) that holds more barrier samples on both sides but did not grow.
    slow = _synthetic_lines([("k/epilogue.py", 61, 0x100, "BAR.SYNC.DEFER_BLOCKING", 0, 5),
                             ("k/kernel.py", 71, 0x110, "BRA", 300, 5),
                             ("k/kernel.py", 405, 0x200, "WARPGROUP.DEPBAR.LE", 600, 5),
                             ("k/kernel.py", 500, 0x300, "HGMMA.64x128x16.F32.BF16", 0, 3090)])
    fast = _synthetic_lines([("k/epilogue.py", 61, 0x100, "BAR.SYNC.DEFER_BLOCKING", 0, 5),
                             ("k/kernel.py", 71, 0x110, "BRA", 50, 5),
                             ("k/kernel.py", 405, 0x200, "WARPGROUP.DEPBAR.LE", 600, 5),
                             ("k/kernel.py", 500, 0x300, "HGMMA.64x128x16.F32.BF16", 0, 3335)])
    # Within one kernel: the BRA's samples are the BAR's, at its line and opcode.
    wgmma, bar = line_locations.locate_stall(slow, "barrier")
    assert (wgmma["line"], wgmma["opcode"]) == (405, "WARPGROUP.DEPBAR")
    assert (bar["file"], bar["line"], bar["opcode"], bar["share"]) == ("k/epilogue.py", 61, "BAR.SYNC", pytest.approx(1 / 3))
    # Against the reference: the growth, all of it at the bar.sync.
    (grew,) = line_locations.locate_stall_growth(slow, fast, "barrier")
    assert (grew["line"], grew["opcode"], grew["share"]) == (61, "BAR.SYNC", pytest.approx(1.0))
    assert "bar.sync" in grew["waits_for"]
    finding = Finding(rule_id="barrier-waits-vs-reference", title="t", severity="warning", compares="reference",
                      message="m", hint="h", section="s", impact=None, rule_file="builtin",
                      quoted=[QuotedValue("target.stall_barrier", 1.0, "x", "1")])
    assert line_locations.attach_locations([finding], slow, fast)[0].locations[0]["line"] == 61
    # Without the reference's lines, or against another kernel's source: the target's own lines.
    assert line_locations.attach_locations([finding], slow)[0].locations[0]["line"] == 405
    other = _synthetic_lines([("fa4/flash_fwd.py", 10, 0x100, "WARPGROUP.DEPBAR.LE", 900, 3000)])
    assert line_locations.locate_stall_growth(slow, other, "barrier") == []


def test_wasted_traffic_is_located_where_the_excess_is_not_where_the_samples_are():
    # Set 1's bank_conflicts_slow (benchmarks/diagnosis/reports/planted.ncu-rep.xz, SourceCounters):
    # the tile is written by rows (no conflict) and read by columns (32-way). Located by samples on
    # shared-memory instructions, the finding named the conflict-free write first (52 %); by the
    # excess wavefronts each instruction moved, only the read.
    from kernelscope.rules import line_locations
    from kernelscope.rules.diagnosis import diagnose

    report = Path(__file__).resolve().parent.parent / "benchmarks" / "diagnosis" / "reports" / "planted.ncu-rep.xz"
    profiles = {p.name: p for p in load_profiles(report, lines=True)}
    slow, fast = profiles["bank_conflicts_slow"], profiles["bank_conflicts_fast"]
    finding = next(f for f in diagnose(slow, fast).findings if f.rule_id == "shared-bank-conflicts")
    line_locations.attach_locations([finding], slow.source_lines, fast.source_lines)
    located = finding.locations
    assert len(located) == 1 and located[0]["share"] == pytest.approx(1.0) and located[0]["opcode"] == "LDS"
    excess = {r.line: r.excess.get("shared_wavefronts", 0.0) for r in slow.source_lines.records if r.line}
    assert excess[located[0]["line"]] > 0 and sum(1 for v in excess.values() if v > 0) == 1
    # Negative control: by samples alone the write's line comes first.
    by_samples = line_locations.locate_memory(slow.source_lines, ("shared",))
    assert by_samples[0]["line"] != located[0]["line"]
    # The excess survives a JSON round trip of the per-line records.
    back = LineProfile.from_dict(json.loads(json.dumps(slow.source_lines.to_dict())))
    assert {r.line: r.excess for r in back.records if r.excess} == {r.line: r.excess for r in slow.source_lines.records if r.excess}


def test_an_mbarrier_waits_sleep_says_what_it_waits_for():
    # The DSL's mbarrier_wait polls with a try-wait and sleeps between polls: ncu samples the
    # waiting warp at NANOSLEEP.SYNCS (long scoreboard), which is no global load.
    from kernelscope.rules.line_locations import _dominant_opcode
    loc = _dominant_opcode({"NANOSLEEP.SYNCS": 90.0, "BRA": 10.0}, 100.0)
    assert loc["opcode"] == "NANOSLEEP.SYNCS" and "mbarrier wait" in loc["waits_for"]
    assert "waits_for" not in _dominant_opcode({"NANOSLEEP": 90.0}, 100.0)
