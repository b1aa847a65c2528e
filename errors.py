"""Errors a user can cause. The CLI turns each into one line on stderr and an exit code."""

# The documented exit codes (README "Exit codes").
EXIT_USAGE = 2          # a usage or input error
EXIT_ENVIRONMENT = 3    # no GPU, no ncu, counters not permitted, a crash under ncu
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as shells report it


class UserError(Exception):
    """A mistake in the user's input or environment (bad file, no GPU, no ncu, ...).

    Never shown with a traceback. `exit_code` follows the documented convention:
    2 for usage or input errors, 3 for the environment; commands may raise with other
    codes where documented.
    """

    def __init__(self, message: str, exit_code: int = EXIT_USAGE):
        super().__init__(message)
        self.exit_code = exit_code


def one_line(message: str) -> str:
    """A message folded onto one line (tool output quoted in it may hold newlines)."""
    return " ".join(str(message).split())


def reraise_interrupt(error: BaseException) -> None:
    """Raise KeyboardInterrupt if `error` was caused by one. A compiler that calls back into
    Python may wrap Ctrl-C in its own exception; that is the user stopping, not a failed compile."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        seen.add(id(error))
        error = error.__cause__ or error.__context__
