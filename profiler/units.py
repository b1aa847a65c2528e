"""How a value with its unit reads as text: part of the model, so that rule messages and every
renderer (terminal, Markdown, HTML) say the same number the same way. No computation."""

from __future__ import annotations

import contextvars

from kernelscope.profiler.names import short_name

NOT_COLLECTED = "n/a"

_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"))


def format_value(value: float | int | str | None, unit: str) -> str:
    """A value with its unit, readable and precise enough to check against ncu's export."""
    if value is None:
        return NOT_COLLECTED
    if isinstance(value, str):
        return value
    v = float(value)
    if unit == "ns":
        return _duration(v)
    if unit == "byte":
        return _scaled(v, "B")
    if unit == "hz":
        return _scaled(v, "Hz")
    if unit == "%":
        return f"{v:.2f} %"
    if unit == "ratio":
        return f"{v:.3f}"
    if unit in ("inst", "count", "cycle", "block", "thread", "reg", "sector", "warp") or v.is_integer():
        return _integer(v)
    return f"{v:.4g}"


def format_change(change: float | None, unit: str) -> str:
    if change is None:
        return ""
    # A difference of percentages is in percentage points.
    text = f"{abs(change):.2f} pp" if unit == "%" else format_value(abs(change), unit)
    sign = "+" if change > 0 else "-" if change < 0 else "±"
    return sign + text


def format_relative(relative: float | None) -> str:
    if relative is None:
        return ""
    if relative >= 9.0:  # ten times or more reads better as a factor
        return f"{relative + 1:.1f}x"
    return f"{relative * 100.0:+.1f}%"


def format_share(share: float | None) -> str:
    return NOT_COLLECTED if share is None else f"{share * 100:.2f}%"


def _integer(v: float) -> str:
    if v.is_integer():
        return f"{int(v):,}"
    return f"{v:,.2f}"


def _scaled(v: float, suffix: str) -> str:
    for factor, prefix in _SI:
        if abs(v) >= factor:
            return f"{v / factor:.3f} {prefix}{suffix}"
    return f"{v:.0f} {suffix}" if float(v).is_integer() else f"{v:.2f} {suffix}"


def _duration(ns: float) -> str:
    if abs(ns) >= 1e9:
        return f"{ns / 1e9:.4f} s"
    if abs(ns) >= 1e6:
        return f"{ns / 1e6:.4f} ms"
    if abs(ns) >= 1e3:
        return f"{ns / 1e3:.3f} us"
    return f"{ns:.0f} ns"


def launch_shape(dims: tuple[int, int, int] | None) -> str:
    if dims is None:
        return NOT_COLLECTED
    return "x".join(str(d) for d in dims)


# Headers and tables show short kernel names unless the command was given --full-names.
FULL_NAMES: contextvars.ContextVar[bool] = contextvars.ContextVar("full_names", default=False)


def kernel_label(profile) -> str:
    """The name a person reads: short (HopperGemm), or the full one under --full-names."""
    if FULL_NAMES.get() or profile.kind == "nvtx-range":   # a range's name is the user's own
        return profile.name
    return short_name(profile.name, profile.demangled_name)
