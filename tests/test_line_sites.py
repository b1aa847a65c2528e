"""A line's sites (profiler/line_sites.py): the places in the SASS its instructions sit, on a
synthetic listing, on nvdisasm's labels, on the H100 gemm report made with line information, in
the JSON, in `show --lines` and in a finding's location."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kernelscope.cli.main import _register, cli
from kernelscope.profiler.line_sites import SITE_GAP
from kernelscope.profiler.source_lines import InstructionCounters, LineProfile, SourceFile
from kernelscope.profiler.sources import load_profiles
from kernelscope.toolchain.sass_lines import parse_nvdisasm_lines

_register()
GEMM = "h100-gemm-vs-cublas-4096.lines.ncu-rep"
WAIT = ("k/ring.py", 72)          # a helper inlined twice: before the loop and inside it


def _profile(rows, counters=True):
    """rows: (file, line, offset, opcode, executed, samples, branch target) in one function "k"."""
    insts = [(f, line, InstructionCounters(function="k", offset=off, text=op, opcode=op,
                                           executed=ex if counters else None,
                                           samples={"long_scoreboard": n} if counters and n else {},
                                           target=target))
             for f, line, off, op, ex, n, target in rows]
    files = {r[0]: SourceFile(path=r[0]) for r in rows}
    return LineProfile.build("k", "synthetic", insts, files, has_source_counters=counters)


def _listing():
    rows = [("k/main.py", 10, 0x00, "S2R", 1, 0, None),
            # the wait's first copy, ahead of the loop
            (*WAIT, 0x10, "SYNCS.PHASECHK.TRANS64.TRYWAIT", 1, 0, None),
            (*WAIT, 0x20, "NANOSLEEP.SYNCS", 1, 5, None),
            ("k/main.py", 11, 0x30, "IMAD", 1, 0, None),
            # the loop 0x40-0xb0: the wait's second copy, then the body (more than a wait's retry loop)
            (*WAIT, 0x40, "SYNCS.PHASECHK.TRANS64.TRYWAIT", 64, 0, None),
            (*WAIT, 0x50, "NANOSLEEP.SYNCS", 64, 95, None),
            ("k/main.py", 20, 0x60, "HGMMA.64x128x16.F32.BF16", 64, 0, None),
            ("k/main.py", 20, 0x70, "HGMMA.64x128x16.F32.BF16", 64, 0, None),
            ("k/main.py", 20, 0x80, "HGMMA.64x128x16.F32.BF16", 64, 0, None),
            ("k/main.py", 20, 0x90, "HGMMA.64x128x16.F32.BF16", 64, 0, None),
            ("k/main.py", 21, 0xa0, "ISETP", 64, 0, None),
            ("k/main.py", 21, 0xb0, "BRA", 64, 0, 0x40),
            ("k/main.py", 30, 0xc0, "EXIT", 1, 0, None)]
    return _profile(rows)


def _record(profile, key):
    return next(r for r in profile.records if (r.file, r.line) == key)


def test_a_helper_inlined_twice_has_two_sites_with_their_loop_and_neighbours():
    p = _listing()
    wait = _record(p, WAIT)
    assert [(s.first, s.last, s.instructions) for s in wait.sites] == [(0x10, 0x20, 2), (0x40, 0x50, 2)]
    before, inside = wait.sites
    assert before.loop is None and inside.loop == (0x40, 0xb0)
    assert (before.executed, inside.executed) == (2, 128)
    assert (before.sample_total, inside.sample_total) == (5, 95)
    assert (before.before, before.after) == ("k/main.py:10", "k/main.py:11")
    assert (inside.before, inside.after) == ("k/main.py:11", "k/main.py:20")
    # The sites add up to the line.
    assert sum(s.instructions for s in wait.sites) == wait.count
    assert sum(s.sample_total for s in wait.sites) == wait.sample_total
    # A line in one place is one site; the first line has nothing before it, the last nothing after.
    assert len(_record(p, ("k/main.py", 20)).sites) == 1
    assert _record(p, ("k/main.py", 10)).sites[0].before is None
    assert _record(p, ("k/main.py", 30)).sites[0].after is None


def test_other_lines_in_between_split_a_site_only_beyond_the_gap():
    def spread(between: int):
        rows = [("k/a.py", 1, 0x0, "IMAD", None, 0, None)]
        rows += [("k/b.py", 2, 0x10 * (1 + n), "IADD3", None, 0, None) for n in range(between)]
        rows.append(("k/a.py", 1, 0x10 * (1 + between), "IMAD", None, 0, None))
        return _record(_profile(rows, counters=False), ("k/a.py", 1)).sites

    assert len(spread(SITE_GAP)) == 1
    assert len(spread(SITE_GAP + 1)) == 2
    # Without counters a site has no executed count and no samples.
    assert spread(1)[0].executed is None and spread(1)[0].samples == {}


def test_nvdisasm_labels_become_branch_targets():
    listing = """\
\t.section\t.text.k,"ax",@progbits
\t//## File "/src/k.py", line 3
        /*0000*/                   S2R R0, SR_TID.X ;
.L_x_1:
        /*0010*/                   IADD3 R0, R0, 0x1, RZ ;
        /*0020*/               @P0 BRA `(.L_x_1) ;
        /*0030*/                   BRA `(.L_x_2) ;
.L_x_2:
        /*0040*/                   EXIT ;
"""
    insts = parse_nvdisasm_lines(listing)["k"]
    assert [i.target for i in insts] == [None, None, 0x10, 0x40, None]


def test_the_gemm_report_s_ring_wait_sits_in_the_producer_s_unrolled_loop(fixture_file):
    lp = load_profiles(fixture_file(GEMM), lines=True)[0].source_lines
    # ncu prints absolute branch targets; inside the function they are offsets.
    targets = [i.target for r in lp.records for i in r.instructions if i.target is not None]
    last = max(i.offset for r in lp.records for i in r.instructions)
    assert targets and all(0 <= t <= last and t % 16 == 0 for t in targets)
    wait = next(r for r in lp.records if r.line == 72 and r.file.endswith("sm90_pipeline.py"))
    assert len(wait.sites) >= 4
    assert sum(s.instructions for s in wait.sites) == wait.count
    assert sum(s.sample_total for s in wait.sites) == pytest.approx(wait.sample_total)
    assert sum(s.executed for s in wait.sites) == pytest.approx(wait.executed)
    # The four hottest copies are the producer loop's four unrolled waits, one loop, ~equal shares.
    hot = sorted(wait.sites, key=lambda s: -s.sample_total)[:4]
    assert len({s.loop for s in hot}) == 1 and hot[0].loop is not None
    assert min(s.sample_total for s in hot) > 0.8 * max(s.sample_total for s in hot)


def test_sites_survive_the_json_and_show_lists_them(fixture_file, tmp_path):
    run = CliRunner(env={"COLUMNS": "240"}).invoke
    result = run(cli, ["show", str(fixture_file(GEMM)), "-k", "@0", "--lines", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    line = next(r for r in doc["kernels"][0]["lines"]["lines"] if r["line"] == 72)
    assert len(line["sites"]) >= 4 and {"first", "last", "loop", "before", "after"} <= set(line["sites"][0])
    path = tmp_path / "lines.json"
    path.write_text(result.output)
    back = load_profiles(path)[0].source_lines
    original = load_profiles(fixture_file(GEMM), lines=True)[0].source_lines
    assert [(s.first, s.last, s.loop, s.executed) for r in back.hottest(6) for s in r.sites] == \
        [(s.first, s.last, s.loop, s.executed) for r in original.hottest(6) for s in r.sites]
    table = run(cli, ["show", str(fixture_file(GEMM)), "-k", "@0", "--lines"])
    assert table.exit_code == 0 and "Sites" in table.output
    assert "site /*0c10*/-/*0c70*/, 6 instr." in table.output and "in the loop /*0c10*/" in table.output


def test_a_stall_location_names_the_site_that_holds_most_of_its_samples():
    from kernelscope.rules import line_locations

    loc = line_locations.locate_stall(_listing(), "long_scoreboard")[0]
    assert (loc["file"], loc["line"]) == WAIT and loc["sites"] == 2
    assert (loc["site"]["first"], loc["site"]["loop"], loc["site"]["share_of_line"]) == (0x40, [0x40, 0xb0], 0.95)
    text = line_locations.location_text(loc)
    assert "2 places hold them, most /*0040*/-/*0050*/ (95%, in the loop /*0040*/-/*00b0*/" in text
    # A line in two places whose samples sit in one of them names no site.
    rows = [(*WAIT, 0x0, "NANOSLEEP.SYNCS", 1, 50, None)]
    rows += [("k/main.py", 20, 0x10 * (1 + n), "HGMMA.64x128x16.F32.BF16", 1, 0, None) for n in range(SITE_GAP + 1)]
    rows.append((*WAIT, 0x10 * (SITE_GAP + 2), "NANOSLEEP.SYNCS", 1, 0, None))
    one = _profile(rows)
    assert len(_record(one, WAIT).sites) == 2
    assert "site" not in line_locations.locate_stall(one, "long_scoreboard")[0]


def _wait_profile(in_loop_samples: int):
    """The listing of _listing() with `in_loop_samples` at the in-loop wait and 100 on another line."""
    rows = [("k/main.py", 10, 0x00, "S2R", 1, 0, None),
            (*WAIT, 0x10, "SYNCS.PHASECHK.TRANS64.TRYWAIT", 1, 0, None),
            (*WAIT, 0x20, "NANOSLEEP.SYNCS", 1, 5, None),
            ("k/main.py", 11, 0x30, "IMAD", 1, 0, None),
            (*WAIT, 0x40, "SYNCS.PHASECHK.TRANS64.TRYWAIT", 64, 0, None),
            (*WAIT, 0x50, "NANOSLEEP.SYNCS", 64, in_loop_samples, None),
            *[("k/main.py", 20, 0x60 + 0x10 * n, "HGMMA.64x128x16.F32.BF16", 64, 0, None) for n in range(4)],
            ("k/main.py", 21, 0xa0, "ISETP", 64, 0, None),
            ("k/main.py", 21, 0xb0, "BRA", 64, 0, 0x40),
            ("k/main.py", 30, 0xc0, "EXIT", 1, 100, None)]
    return _profile(rows)


def test_a_line_comparison_pairs_sites_in_address_order_or_names_each_side_s_heaviest():
    from io import StringIO

    from rich.console import Console

    from kernelscope.profiler.line_compare import compare_lines, site_pairs
    from kernelscope.reports.lines import print_line_comparison

    slow, fast = _wait_profile(95), _wait_profile(40)     # 200 and 145 samples in all
    c = compare_lines(slow, fast)
    row = next(r for r in c.lines if (r.file, r.line) == WAIT)
    pairs = site_pairs(row, c.a, c.b, c.unit)
    assert [(p.a.first, p.b.first) for p in pairs] == [(0x10, 0x10), (0x40, 0x40)]
    assert pairs[0].change == pytest.approx(5 / 200 - 5 / 145)
    assert pairs[1].change == pytest.approx(95 / 200 - 40 / 145)
    listed = next(r for r in c.to_dict()["lines"] if r["line"] == WAIT[1])
    assert [p["a"]["first"] for p in listed["site_pairs"]] == [0x10, 0x40]
    out = StringIO()
    print_line_comparison(Console(file=out, width=200), c, "slow", "fast")
    text = out.getvalue()
    assert "Where those lines moved" in text
    assert f"{WAIT[0]}:{WAIT[1]} site 2 of 2: A /*0040*/ 47.5%, B /*0040*/ 27.6% (+19.9 pp)" in text
    # A line in another number of places on the other side is not paired: each side's heaviest site.
    rows = [(*WAIT, 0x0, "NANOSLEEP.SYNCS", 1, 30, None), ("k/main.py", 30, 0x10, "EXIT", 1, 70, None)]
    single = _profile(rows)
    c = compare_lines(slow, single)
    row = next(r for r in c.lines if (r.file, r.line) == WAIT)
    assert site_pairs(row, slow, single, "samples") is None
    out = StringIO()
    print_line_comparison(Console(file=out, width=200), c, "slow", "single")
    assert f"{WAIT[0]}:{WAIT[1]} (" in out.getvalue() and "A 2 sites, most /*0040*/ 47.5%" in out.getvalue()


def test_the_html_source_view_counts_each_line_s_sites_and_names_them(fixture_file):
    import re

    from kernelscope.reports import html
    from kernelscope.reports.page_inputs import build_page

    text = html.render(build_page((str(fixture_file(GEMM)),)))
    section = text.split('<section id="source-lines">', 1)[1].split("</section>", 1)[0]
    assert ">Sites</th>" in section.split("</thead>", 1)[0]
    # sm90_pipeline.py:72, the ring's wait, sits in 7 places; the heaviest is the producer's first copy.
    row = next(r for r in section.split("<tr>") if r.startswith("<td>72</td>"))
    title, count = re.search(r'<td title="([^"]*)">(\d+)</td>', row).groups()
    assert int(count) >= 4 and title.startswith("/*0c10*/-/*0c70*/ ") and "loop /*0c10*/-/*1aa0*/" in title
