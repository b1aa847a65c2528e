"""Live progress of a sweep across all its workers: done, failed, remaining and ETA.

On a terminal one live line is redrawn in place; elsewhere (CI logs, pipes) each finished
point is one line, so a log shows the same facts without control characters.
"""

from __future__ import annotations

from typing import Any


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "ETA n/a"
    minutes, s = divmod(int(round(seconds)), 60)
    return f"ETA {minutes}m{s:02d}s" if minutes else f"ETA {s}s"


def summary(progress) -> str:
    skipped = f", {progress.skipped} from the journal" if progress.skipped else ""
    retried = f", {progress.retried} retried" if progress.retried else ""
    return (f"{progress.done + progress.skipped}/{progress.total} done ({progress.failed} failed{retried}{skipped}), "
            f"{progress.remaining} remaining, {_eta(progress.eta_s())}")


def _point(record: dict[str, Any]) -> str:
    shape = ",".join(f"{k}={v}" for k, v in (record.get("shape") or {}).items())
    config = ",".join(f"{k}={v}" for k, v in (record.get("config") or {}).items())
    where = (record.get("device") or {}).get("uuid") or ""
    tail = f"  [{where}]" if where else ""
    message = f": {record['message']}" if record.get("message") and record.get("status") != "ok" else ""
    return f"{shape} {config}: {record.get('status')}{message}{tail}"


class SweepProgressView:
    """Call `update(progress, record)` as points finish; `close()` at the end."""

    def __init__(self, console, total: int):
        self.console = console
        self.live = None
        if console.is_terminal:
            from rich.live import Live

            self.live = Live("", console=console, refresh_per_second=4, transient=True)
            self.live.start()

    def update(self, progress, record: dict[str, Any] | None) -> None:
        if record is not None:
            self.console.print(f"  {_point(record)}", style="dim", highlight=False)
        if self.live is not None:
            self.live.update(f"[bold]sweep[/bold] {summary(progress)}")
        elif record is None:
            self.console.print(f"  {summary(progress)}", style="dim")

    def close(self, progress) -> None:
        if self.live is not None:
            self.live.stop()
        self.console.print(f"  {summary(progress)}", style="dim")
