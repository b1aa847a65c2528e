"""The `kernelscope` command. Subcommands live one per module; this file only wires them."""

from __future__ import annotations

import sys

import click

from kernelscope import __version__
from kernelscope.errors import EXIT_ENVIRONMENT, EXIT_INTERRUPTED, EXIT_USAGE, UserError, one_line


def fail(message: str, exit_code: int) -> None:
    """The one line every user error ends with, then the exit."""
    click.echo(f"kernelscope: error: {one_line(message)}", err=True)
    sys.exit(exit_code)


class _Group(click.Group):
    """Every way a command can end on a user's mistake becomes one line on stderr and a
    documented exit code, never a traceback: UserError, click's usage errors, Ctrl-C."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            rv = super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                              standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:
            # `kernelscope` or `kernelscope rules` alone: the user asked what there is.
            click.echo(e.ctx.get_help())
            sys.exit(0)
        except click.UsageError as e:
            where = f"kernelscope {e.ctx.command_path.split(' ', 1)[1]}" if e.ctx and " " in e.ctx.command_path \
                else "kernelscope"
            hint = f" (see `{where} --help`)" if e.ctx else ""
            fail(f"{e.format_message().rstrip('.')}{hint}", EXIT_USAGE)
        except click.ClickException as e:
            fail(e.format_message(), e.exit_code)
        except (click.Abort, KeyboardInterrupt):
            # Abort is click's form of KeyboardInterrupt/EOF at a prompt; either way the user stopped it.
            click.echo("kernelscope: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except UserError as e:
            fail(str(e), e.exit_code)
        except BrokenPipeError:
            sys.exit(0)
        except OSError as e:
            # A file the command could not read or write that no check above it named: still one
            # line. Missing or forbidden files are the user's input; anything else (a full disk,
            # an I/O error) is the machine's.
            input_errors = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)
            where = f"{e.filename}: " if e.filename else ""
            fail(f"{where}{e.strerror or e}", EXIT_USAGE if isinstance(e, input_errors) else EXIT_ENVIRONMENT)
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
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

    if cli.commands:
        return
    for name in _COMMAND_MODULES:
        importlib.import_module(f"kernelscope.cli.{name}").register(cli)


def main(argv=None):
    """The program. argv None: the command line of this process, which then ends without
    interpreter teardown if it used the GPU (kernelscope.process_end says why); a list: a
    call from Python (tests), which exits the usual way."""
    _register()
    try:
        cli.main(args=argv, prog_name="kernelscope")
    except SystemExit as e:
        if argv is None:
            from kernelscope.process_end import end_now

            end_now(e.code)
        raise
