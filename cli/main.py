"""The `kernelscope` command. Subcommands live one per module; this file only wires them."""

from __future__ import annotations

import sys

import click

from kernelscope import __version__
from kernelscope.errors import UserError


class _Group(click.Group):
    """Turns UserError into one line on stderr and its exit code, never a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UserError as e:
            click.echo(f"kernelscope: error: {e}", err=True)
            sys.exit(e.exit_code)
        except BrokenPipeError:
            sys.exit(0)
        except KeyboardInterrupt:
            # Commands that write as they go (sweep's journal) say what they kept themselves.
            click.echo("kernelscope: interrupted", err=True)
            sys.exit(130)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="kernelscope")
def cli():
    """Profile and diagnose CuTe DSL kernels on Hopper against their references."""


# Each module below defines `register(group)`; one line per command family.
_COMMAND_MODULES = (
    "report_commands",   # show, diff
    "run_commands",      # run, profile, sweep
    "inspect_command",   # inspect (compile-only)
    "rules_commands",    # rules list, rules explain
    "demo_command",      # demo (recorded reports + compile-only, no GPU)
    "gate_commands",     # baseline save, gate
    "html_command",      # report (self-contained HTML, PNG plots)
    "mcp_command",       # mcp (Model Context Protocol server for agents)
)


def _register():
    import importlib

    for name in _COMMAND_MODULES:
        importlib.import_module(f"kernelscope.cli.{name}").register(cli)


def main(argv=None):
    _register()
    cli.main(args=argv, prog_name="kernelscope")
