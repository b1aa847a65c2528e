"""`kernelscope mcp` driven by the MCP client library over stdio, on the shipped fixtures (no GPU)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")
import anyio  # noqa: E402  (a dependency of mcp)
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
GEMM_PAIR = str(FIXTURES / "h200-gemm-vs-cublas-4096.quick.ncu-rep.xz")
TOOLS = {"inspect", "show", "diff", "explain_rule", "profile", "run", "gate"}


def _params() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "kernelscope", "mcp"], cwd=str(ROOT),
                                 env={k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "HOME",
                                                                                  "KERNELSCOPE_CACHE_DIR")})


def _session(body):
    async def main():
        with open(os.devnull, "w") as errlog:
            async with stdio_client(_params(), errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await body(session)
    return anyio.run(main)


def _schema(tool) -> dict:
    # mcp 2 names the field input_schema, mcp 1 inputSchema.
    return getattr(tool, "input_schema", None) or getattr(tool, "inputSchema")


def _error(result) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def _text(result) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def test_tools_are_listed_with_json_schemas():
    async def body(session):
        return (await session.list_tools()).tools

    tools = {t.name: t for t in _session(body)}
    assert set(tools) == TOOLS
    diff = _schema(tools["diff"])
    assert diff["type"] == "object" and diff["required"] == ["a"]
    assert set(diff["properties"]) >= {"a", "b", "format", "tokens", "merge"}
    assert diff["properties"]["format"].get("enum") == ["brief", "json"] or "brief" in json.dumps(diff["properties"]["format"])
    assert _schema(tools["explain_rule"])["required"] == ["rule_id"]
    assert all(t.description for t in tools.values())


def test_diff_brief_json_explain_show_and_errors_over_stdio():
    async def body(session):
        brief = await session.call_tool("diff", {"a": GEMM_PAIR, "tokens": 300})
        full = await session.call_tool("diff", {"a": GEMM_PAIR, "format": "json"})
        rule = json.loads(_text(full))["findings"][0]["rule"]
        explained = await session.call_tool("explain_rule", {"rule_id": rule})
        shown = await session.call_tool("show", {"report": GEMM_PAIR + ":@1", "format": "json"})
        missing = await session.call_tool("show", {"report": str(FIXTURES / "no-such.ncu-rep")})
        no_gpu = await session.call_tool("run", {"target": "rmsnorm"})
        many = str(FIXTURES / "h200-torch-242-launches.metrics6.ncu-rep.xz")
        merged = await session.call_tool("diff", {"a": many + ":distribution", "b": many + ":distribution",
                                                  "merge": True, "format": "json"})
        return brief, full, rule, explained, shown, missing, no_gpu, merged

    brief, full, rule, explained, shown, missing, no_gpu, merged = _session(body)
    assert json.loads(_text(merged))["a"]["launches"] == 2
    assert not _error(brief)
    text = _text(brief)
    assert "A is 1.6% slower than B" in text and f"({rule};" in text and "evidence:" in text
    assert len(text) <= 300 * 4
    doc = json.loads(_text(full))
    assert doc["schema"] == "kernelscope.diff" and doc["findings"]
    # The same document the CLI writes.
    cli = subprocess.run([sys.executable, "-m", "kernelscope", "diff", GEMM_PAIR, "--format", "json"],
                         capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(cli.stdout) == doc
    assert json.loads(_text(explained))["id"] == rule
    assert json.loads(_text(shown))["kernels"][0]["name"].startswith("nvjet")
    assert _error(missing) and "no such file" in _text(missing)
    import torch

    if not torch.cuda.is_available():
        assert _error(no_gpu) and "no CUDA GPU" in _text(no_gpu)


def test_gate_on_a_report_against_its_own_baseline(tmp_path):
    base = tmp_path / "base.json"
    subprocess.run([sys.executable, "-m", "kernelscope", "baseline", "save", "--report", GEMM_PAIR, "-o", str(base)],
                   check=True, capture_output=True, cwd=ROOT)

    async def body(session):
        return await session.call_tool("gate", {"baseline": str(base), "report": GEMM_PAIR})

    result = _session(body)
    assert not _error(result)
    assert _text(result).startswith("Gate PASS (exit 0)")


def test_missing_mcp_package_is_one_line(tmp_path):
    # A module named `mcp` that fails to import stands for an install without the extra.
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text("raise ImportError('not installed')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "kernelscope", "mcp"], capture_output=True, text=True, env=env,
                       cwd=ROOT, stdin=subprocess.DEVNULL)
    assert r.returncode == 3
    assert r.stderr.strip().splitlines() == [
        "kernelscope: error: `kernelscope mcp` needs the mcp package, which is not installed: "
        "pip install 'kernelscope[mcp]'"]
    assert r.stdout == ""
