"""The ncu command line, its output parsing and the one-line errors (no GPU needed).

A FAKE `ncu` (a small shell script) stands in for Nsight Compute to drive the error paths.
"""

import json
import os
import stat
import sys

import pytest

from kernelscope.errors import UserError
from kernelscope.profiler import ncu
from kernelscope.profiler.ncu import ProfileRequest
from kernelscope.rules import collection


def _req(tmp_path, **kw):
    base = dict(target="rmsnorm", reference="torch.rmsnorm", shape={"M": 64, "N": 4096}, dtype="bfloat16",
                config={"threads": 256, "vec": 8}, report_path=str(tmp_path / "r.ncu-rep"))
    base.update(kw)
    base.setdefault("metrics", collection.metrics_for_set(base.get("section_set", "quick")))
    return ProfileRequest(**base)


def test_quick_command_filters_ranges_and_states_controls(tmp_path):
    cmd = ncu.build_command("/opt/ncu", _req(tmp_path), status_path="/tmp/s.json")
    assert cmd[0] == "/opt/ncu"
    i = cmd.index("--nvtx-include")
    assert "--nvtx" in cmd and cmd[i + 1] == "regex:ks:.*/"
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--cache-control") + 1] == "all"
    # quick: the launch-derived Occupancy section and exactly the metrics the catalog, rules and roofline read,
    # plus the per-instruction SourceCounters with the source imported (line information is on by default)
    assert [cmd[j + 1] for j, a in enumerate(cmd) if a == "--section"] == ["Occupancy", "SourceCounters"]
    assert "--set" not in cmd and cmd[cmd.index("--import-source") + 1] == "yes"
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert "dram__bytes_read.sum" in metrics and "l1tex__m_xbar2l1tex_read_bytes.sum" in metrics
    assert "sass__inst_executed_per_opcode" in metrics
    assert "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio" in metrics
    assert "sm__ops_path_tensor_src_bf16_dst_fp32.sum" in metrics
    assert metrics == collection.quick_metrics()
    sections = ncu.build_command("/opt/ncu", _req(tmp_path, section_set="sections"))
    assert [sections[j + 1] for j, a in enumerate(sections) if a == "--section"] == [*ncu.QUICK_SECTIONS, "SourceCounters"]
    assert cmd[cmd.index("--export") + 1] == str(tmp_path / "r")     # ncu adds .ncu-rep
    w = cmd.index("kernelscope.profiler.worker")
    assert cmd[w - 1] == "-m" and cmd[w - 2] == sys.executable
    assert json.loads(cmd[cmd.index("--shape") + 1]) == {"M": 64, "N": 4096}
    assert cmd[cmd.index("--vs") + 1] == "torch.rmsnorm"
    assert cmd[cmd.index("--status") + 1] == "/tmp/s.json"


def test_full_and_named_sections(tmp_path):
    full = ncu.build_command("ncu", _req(tmp_path, section_set="full"))
    assert full[full.index("--set") + 1] == "full" and "--metrics" not in full
    named = ncu.build_command("ncu", _req(tmp_path, section_set=["SpeedOfLight", "Occupancy"],
                                          clock_control="base", cache_control="none"))
    assert [named[j + 1] for j, a in enumerate(named) if a == "--section"] == ["SpeedOfLight", "Occupancy", "SourceCounters"]
    # full holds SourceCounters already; a list naming it is not given it twice
    assert "SourceCounters" not in full and full[full.index("--import-source") + 1] == "yes"
    listed = ncu.build_command("ncu", _req(tmp_path, section_set=["SourceCounters", "LaunchStats"]))
    assert [listed[j + 1] for j, a in enumerate(listed) if a == "--section"] == ["SourceCounters", "LaunchStats"]
    assert named[named.index("--clock-control") + 1] == "base"
    assert named[named.index("--cache-control") + 1] == "none"
    with pytest.raises(UserError):
        ncu.build_command("ncu", _req(tmp_path, section_set=["Speed;rm"]))


def test_the_driver_collects_what_the_request_names(tmp_path):
    # The choice of metrics is the caller's: a quick request naming none collects none by name.
    bare = ncu.build_command("ncu", _req(tmp_path, metrics=[]))
    assert "--metrics" not in bare and bare[bare.index("--section") + 1] == "Occupancy"
    named = ncu.build_command("ncu", _req(tmp_path, metrics=["dram__bytes_read.sum", "dram__bytes_read.sum"]))
    assert named[named.index("--metrics") + 1] == "dram__bytes_read.sum"
    assert collection.metrics_for_set("sections") == collection.catalog_metrics()
    assert collection.metrics_for_set("full") == [] and collection.metrics_for_set(["SpeedOfLight"]) == []
    with pytest.raises(UserError):
        ncu.build_command("ncu", _req(tmp_path, clock_control="boost"))


def test_line_info_and_source_counters_can_be_turned_off(tmp_path):
    plain = ncu.build_command("ncu", _req(tmp_path, line_info=False, source_counters=False))
    assert "SourceCounters" not in plain and "--import-source" not in plain
    counters_only = ncu.build_command("ncu", _req(tmp_path, line_info=False))
    assert "SourceCounters" in counters_only and "--import-source" not in counters_only


def test_parse_passes():
    out = ('==PROF== Profiling "kernel_cutlass_rms" - 0: 0%....50%....100% - 24 passes\n'
           '==PROF== Profiling "vectorized_elementwise_kernel" - 1: 0%....50%....100% - 1 pass\n')
    assert ncu.parse_passes(out) == [("kernel_cutlass_rms", 24), ("vectorized_elementwise_kernel", 1)]


def test_failure_messages():
    assert "NVreg_RestrictProfilingToAdminUsers" in ncu.failure_message(1, "==ERROR== ERR_NVGPUCTRPERM - x", {}, False)
    assert "rejects this config" in ncu.failure_message(3, "", {"kind": "config_rejected", "error": "N too big"}, False)
    crash = ncu.failure_message(4, "", {"kind": "crash", "stage": "compile", "error": "ValueError: x"}, False)
    assert "crashed during compile" in crash
    assert "nothing was captured" in ncu.failure_message(0, "==WARNING== No kernels were profiled.", {"ok": True}, False)
    assert ncu.failure_message(0, "", {"ok": True}, True) is None
    assert "code 139" in ncu.failure_message(139, "Segmentation fault", {}, False)


def test_find_ncu_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(os.path, "isfile", lambda p: False)
    with pytest.raises(UserError, match="ncu .* is not on PATH"):
        ncu.find_ncu()


def _fake_ncu(tmp_path, body: str) -> str:
    path = tmp_path / "ncu"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_permission_error_is_one_line_and_sidecar_kept(tmp_path):
    fake = _fake_ncu(tmp_path, 'case "$1" in --version) echo "Version 2025.3.1";; '
                               '*) echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"; exit 1;; esac')
    req = _req(tmp_path)
    with pytest.raises(UserError) as e:
        ncu.run_profile(req, ncu=fake)
    assert "ERR_NVGPUCTRPERM" in str(e.value) and "\n" not in str(e.value)
    side = json.load(open(req.report_path + ncu.SIDECAR_SUFFIX))
    assert side["request"]["clock_control"] == "none" and side["request"]["cache_control"] == "all"
    assert "--nvtx-include" in side["command_line"] and side["returncode"] == 1


def test_nothing_captured_and_kept_report(tmp_path):
    fake = _fake_ncu(tmp_path, 'echo "==WARNING== No kernels were profiled."; exit 0')
    with pytest.raises(UserError, match="nothing was captured"):
        ncu.run_profile(_req(tmp_path), ncu=fake)
    # A report that exists is named in the error and left in place.
    rep = tmp_path / "kept.ncu-rep"
    fake2 = _fake_ncu(tmp_path, f'touch "{rep}"; echo "==ERROR== The application returned an error code (4)"; exit 4')
    with pytest.raises(UserError) as e:
        ncu.run_profile(_req(tmp_path, report_path=str(rep)), ncu=fake2)
    assert f"report kept: {rep}" in str(e.value) and rep.exists()


def _cli(*args, env=None):
    """The command in this process (click's runner): a new interpreter per case cost ~15 s each."""
    from types import SimpleNamespace

    from click.testing import CliRunner

    from kernelscope.cli.main import _register, cli

    _register()
    result = CliRunner().invoke(cli, list(args), env=env)
    return SimpleNamespace(returncode=result.exit_code, stdout=result.stdout, stderr=result.stderr)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the no-GPU message")
@pytest.mark.parametrize("command", ["run", "profile", "sweep"])
def test_no_gpu_is_one_line_and_nonzero(command):
    r = _cli(command, "rmsnorm")
    assert r.returncode != 0
    assert r.stderr.strip().startswith("kernelscope: error: no CUDA GPU") and len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr


def test_cli_input_errors_are_one_line():
    for args, fragment in ((["run", "nosuch"], "unknown target"),
                           (["profile", "rmsnorm", "--shape", "M=4,K=8"], "shape keys"),
                           (["sweep", "rmsnorm", "--config", "stages=2,3"], "no config key"),
                           (["run", "rmsnorm", "--vs", "nosuch"], "unknown reference")):
        r = _cli(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert fragment in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_metrics_unknown_to_ncu_are_dropped_not_fatal(tmp_path):
    quick = collection.quick_metrics()
    req = _req(tmp_path, metrics=[*quick, "made_up__metric.sum"])
    wanted = ncu.requested_metrics(req)
    assert wanted[: len(quick)] == quick and wanted[-1] == "made_up__metric.sum"
    known = {m.split(".", 1)[0] for m in quick}
    kept, dropped = ncu.drop_unknown_metrics(wanted, known)
    assert kept == quick and dropped == ["made_up__metric.sum"]
    assert ncu.drop_unknown_metrics(wanted, None) == (wanted, [])      # query failed: keep all
    fake = _fake_ncu(tmp_path, 'echo "dram__bytes_read   # of bytes read from DRAM"\n'
                               'echo "smsp__inst_executed   # of warp instructions"')
    assert ncu.known_metric_bases(fake) == {"dram__bytes_read", "smsp__inst_executed"}
    cmd = ncu.build_command("ncu", req, metrics_override=["dram__bytes_read.sum"])
    assert cmd[cmd.index("--metrics") + 1] == "dram__bytes_read.sum"


def test_the_metric_query_is_asked_once_per_ncu_binary(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    asked = tmp_path / "asked"
    fake = _fake_ncu(tmp_path, f'echo x >> "{asked}"\necho "dram__bytes_read   # of bytes read from DRAM"')
    assert ncu.known_metric_bases(fake) == {"dram__bytes_read"}
    assert ncu.known_metric_bases(fake) == {"dram__bytes_read"}
    assert asked.read_text().count("x") == 1
    # Another binary (here: the same path, rewritten) is asked again.
    fake = _fake_ncu(tmp_path, f'echo x >> "{asked}"\necho "smsp__inst_executed   # of warp instructions"')
    os.utime(fake, ns=(1, 10**18))
    assert ncu.known_metric_bases(fake) == {"smsp__inst_executed"}
    assert asked.read_text().count("x") == 2
