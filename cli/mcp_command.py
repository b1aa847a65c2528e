"""`kernelscope mcp`: serve kernelscope's tools to coding agents over the Model Context Protocol."""

from __future__ import annotations

import click


@click.command("mcp")
def mcp_cmd():
    """Start a Model Context Protocol server on stdin/stdout exposing inspect, show, diff (with
    findings), explain_rule, profile, run and gate as tools (docs/api.md, "Agents").

    Needs the mcp package: pip install 'kernelscope[mcp]'.
    """
    from kernelscope.api.mcp_server import build_server, serve

    # Built first: a missing `mcp` package is one line on stderr before anything is served.
    serve(build_server())


def register(group: click.Group) -> None:
    group.add_command(mcp_cmd)
