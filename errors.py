"""Errors a user can cause. The CLI turns each into one line on stderr and an exit code."""


class UserError(Exception):
    """A mistake in the user's input or environment (bad file, no GPU, no ncu, ...).

    Never shown with a traceback. `exit_code` follows the documented convention:
    2 for usage or input errors; commands may raise with other codes where documented.
    """

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code
