"""`kernelscope mcp`: a Model Context Protocol server over stdio for coding agents.

Tools: inspect (compile-only, no GPU), show, diff (with findings), explain_rule, profile,
run and gate. Each answers with the compact digest (`format="brief"`, the default, within
`tokens`) or the versioned JSON document (`format="json"`). An error a user can cause
comes back as a tool error holding kernelscope's one-line message. Needs the `mcp`
package: `pip install 'kernelscope[mcp]'`.
"""

import contextlib
import json
import os
import sys
from typing import Annotated, Literal, Optional

from kernelscope.api.results import MissingExtra, Result

INSTRUCTIONS = ("kernelscope profiles and diagnoses CuTe DSL GPU kernels against a reference. Start with `diff` on "
                "two reports (or one report holding two kernels) for a verdict and ranked findings with evidence; "
                "`explain_rule` tells what a finding's rule checks. `inspect` works without a GPU (compile-only); "
                "`run` and `profile` need a GPU (and ncu for profile).")


def _answer(result: Result, fmt: str, tokens: int) -> str:
    return result.brief(tokens) if fmt == "brief" else result.to_json()


def _server_classes():
    """(server class, the exception whose message a tool error shows the client)."""
    try:
        from mcp.server.mcpserver import MCPServer  # mcp 2
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        try:
            from mcp.server.fastmcp import FastMCP as MCPServer  # mcp 1
            from mcp.server.fastmcp.exceptions import ToolError
        except ImportError:
            raise MissingExtra("the mcp package", "mcp", "`kernelscope mcp`") from None
    return MCPServer, ToolError


_TOOL_ERROR = Exception


@contextlib.contextmanager
def _quiet_stdout():
    """Tools run with Python's stdout on stderr (stdout carries the protocol), and an error a
    user can cause reaches the client as kernelscope's one line."""
    from kernelscope.errors import UserError

    with contextlib.redirect_stdout(sys.stderr):
        try:
            yield
        except UserError as e:
            raise _TOOL_ERROR(f"kernelscope: error: {e} (exit code {e.exit_code})") from None


def build_server():
    """The server with its tools registered (not yet running)."""
    global _TOOL_ERROR
    server_class, _TOOL_ERROR = _server_classes()
    from pydantic import Field  # a dependency of mcp

    from kernelscope import api

    # Parameter types: their descriptions become the tools' JSON schemas.
    Format = Annotated[Literal["brief", "json"], Field(description="brief: a compact digest within `tokens`; json: "
                                                                   "the full versioned kernelscope document")]
    Tokens = Annotated[int, Field(description="Token budget of the brief digest (about 4 characters per token)",
                                  ge=40)]
    Spec = Annotated[str, Field(description="A report path (.ncu-rep or kernelscope JSON, .xz allowed), optionally "
                                            "with a kernel selector: FILE:REGEX or FILE:@INDEX")]
    Target = Annotated[str, Field(description="A registered kernel name (e.g. gemm, rmsnorm) or path/to/file.py:NAME")]
    Assignments = Annotated[Optional[str], Field(description="KEY=VALUE pairs separated by commas, e.g. M=4096,N=4096")]
    Reference = Annotated[Optional[str], Field(description="Reference name (default: the target's first); 'none' for none")]

    server = server_class(name="kernelscope", instructions=INSTRUCTIONS)

    @server.tool()
    def show(report: Spec, kernel: Annotated[Optional[str], Field(description="Regex over kernel names, or @INDEX")] = None,
             format: Format = "brief", tokens: Tokens = 400) -> str:
        """The metric views (launch, throughput, memory, instructions, stalls) of each kernel in a report."""
        with _quiet_stdout():
            return _answer(api.load(report, kernel=kernel), format, tokens)

    @server.tool()
    def diff(a: Spec, b: Annotated[Optional[str], Field(description="The reference kernel (same syntax as a); omit "
                                                                   "when a holds exactly two kernels")] = None,
             format: Format = "brief", tokens: Tokens = 400,
             merge: Annotated[bool, Field(description="a and b may each match several launches: merge each "
                                                      "side's into one (as many launches on both sides)")] = False) -> str:
        """Kernel A (yours) against B (its reference): who is faster and by how much, the rule findings ranked by
        impact with the numbers behind them, and the largest metric changes."""
        with _quiet_stdout():
            return _answer(api.diff(a, b, merge=merge), format, tokens)

    @server.tool()
    def explain_rule(rule_id: Annotated[str, Field(description="A rule id as findings name it, e.g. stall-barrier")]) -> str:
        """What one diagnostic rule checks: condition, thresholds, impact estimate, message, hint (JSON)."""
        with _quiet_stdout():
            return json.dumps(api.explain_rule(rule_id), indent=1)

    @server.tool()
    def inspect(target: Target, config: Assignments = None, shape: Assignments = None, dtype: Optional[str] = None,
                arch: Literal["sm_90a", "sm_120a"] = "sm_90a", format: Format = "brief", tokens: Tokens = 400) -> str:
        """Compile the target without a GPU and report registers, spills, shared memory, SASS histogram and whether
        the opcodes it declares are present (compile-only: counts are static, not executed)."""
        with _quiet_stdout():
            return _answer(api.inspect(target, config=config, shape=shape, dtype=dtype, arch=arch), format, tokens)

    @server.tool()
    def run(target: Target, vs: Reference = None,
            shape: Assignments = None, config: Assignments = None, dtype: Optional[str] = None) -> str:
        """Check the target's output against an fp32 reference, then time it and its reference (CUDA events,
        L2 flushed). Needs a GPU. Answers the run JSON."""
        with _quiet_stdout():
            return api.run(target, vs=vs, shape=shape, config=config, dtype=dtype).to_json()

    @server.tool()
    def profile(target: Target, vs: Reference = None,
                shape: Assignments = None, config: Assignments = None, dtype: Optional[str] = None,
                output: Annotated[Optional[str], Field(description="Report path (.ncu-rep)")] = None,
                format: Format = "brief", tokens: Tokens = 400) -> str:
        """Profile one launch of the target and one of its reference under Nsight Compute and diff them with
        findings. Needs a GPU and ncu."""
        with _quiet_stdout():
            return _answer(api.profile(target, vs=vs, shape=shape, config=config, dtype=dtype, output=output),
                           format, tokens)

    @server.tool()
    def gate(baseline: Annotated[str, Field(description="Baseline JSON file (kernelscope.baseline)")],
             suite: Annotated[Optional[str], Field(description="Suite TOML to run now (default: the baseline's)")] = None,
             report: Annotated[Optional[str], Field(description="Judge this ncu report's kernels instead of a suite")] = None,
             static_only: bool = False, accept_inconclusive: bool = False,
             format: Format = "brief", tokens: Tokens = 400) -> str:
        """Judge a fresh run of a suite (or an ncu report) against a baseline: PASS, REGRESSION, IMPROVEMENT or
        INCONCLUSIVE per case and metric."""
        with _quiet_stdout():
            result = api.gate_against(baseline, suite=suite, report=report, static_only=static_only,
                              accept_inconclusive=accept_inconclusive)
            return _answer(result, format, tokens)

    return server


def serve(server=None) -> None:
    """Run the server on stdin/stdout until the client closes it."""
    server = server or build_server()
    # The protocol owns the real stdout; anything else that writes to file descriptor 1
    # (a compiler, a child process) lands on stderr instead of corrupting the stream.
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
    os.dup2(2, 1)
    sys.stdout = protocol
    server.run("stdio")
