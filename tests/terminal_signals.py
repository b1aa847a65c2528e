"""Ctrl-C in tests that start a command and interrupt it."""

import signal


def sigint_as_at_a_terminal() -> None:
    """Popen's preexec_fn: the command gets SIGINT's default disposition, as at a terminal. A test
    runner started in the background by a non-interactive shell inherits SIGINT ignored, an
    ignored signal stays ignored across exec, and Python then never raises KeyboardInterrupt:
    the test's Ctrl-C would hang the command instead of testing it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
