"""`--config` and `--shape` as every command reads them: one syntax (README, "Configs and shapes").

    --shape NAME=SIZE[,NAME=SIZE...]      sizes are integers >= 0 (0 only for a 0/1 flag
                                          such as causal=0)
    --config KEY=VALUE[,KEY=VALUE...]     repeatable; later keys win
    VALUE   true / false, none, an integer, a float, AxB (the tuple (A, B), e.g. cluster=2x1),
            a bracketed tuple (2, 1), a quoted string, else the text itself
    sweep   a piece without `=` adds a value to the key before it: threads=128,256,vec=4,8

Commas inside brackets or quotes belong to the value. Formatting writes the same syntax
back, so a printed config can be pasted into the next command.
"""

from __future__ import annotations

import ast
from typing import Any, Iterable, Mapping

from kernelscope.errors import UserError


def split_items(text: str) -> list[str]:
    """'a=1,b=(2,1)' -> ['a=1', 'b=(2,1)']: commas inside brackets or quotes stay."""
    items, depth, quote, current = [], 0, None, []
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0 and quote is None:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    items.append("".join(current))
    return [i.strip() for i in items if i.strip()]


def parse_value(text: str) -> Any:
    """'4' -> 4, '0.5' -> 0.5, 'true' -> True, 'none' -> None, '2x1' -> (2, 1),
    '(2, 1)' -> (2, 1), "'row'" -> 'row', anything else stays the text."""
    t = text.strip()
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(t)
        except ValueError:
            pass
    if "x" in low and all(p.strip().isdigit() for p in low.split("x")):
        return tuple(int(p) for p in low.split("x"))
    if t[:1] in "([{'\"":
        try:
            value = ast.literal_eval(t)
        except (ValueError, SyntaxError):
            return t
        return tuple(value) if isinstance(value, list) else value
    return t


def parse_config(items: Iterable[str], option: str = "--config", *, several: bool = False) -> dict[str, Any]:
    """Repeated `--config` texts -> {key: value}; with several (sweep) -> {key: [values]}."""
    out: dict[str, list[Any]] = {}
    for text in items:
        key = None
        for piece in split_items(text):
            name, sep, raw = piece.partition("=")
            if sep:
                key = name.strip()
                if not key or not raw.strip():
                    raise UserError(f"{option} {piece!r}: expected KEY=VALUE")
                out[key] = [parse_value(raw)]
            elif key is None:
                raise UserError(f"{option} {piece!r}: expected KEY=VALUE")
            else:
                out[key].append(parse_value(piece))
    if several:
        return out
    for key, values in out.items():
        if len(values) > 1:
            raise UserError(f"{option} {key}: one value per key here (`sweep` takes several); "
                            "write a tuple as 2x1 or (2, 1)")
    return {key: values[0] for key, values in out.items()}


# Extents are indexed with 32-bit signed integers on the device.
MAX_EXTENT = 2**31 - 1


def parse_shape(text: str, option: str = "--shape") -> dict[str, int]:
    """'M=4096,N=8192' -> {'M': 4096, 'N': 8192}."""
    shape: dict[str, int] = {}
    for part in split_items(text):
        name, sep, raw = part.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UserError(f"{option} {text!r}: {part!r} is not NAME=SIZE (e.g. M=4096,N=4096)")
        try:
            size = int(raw)
        except ValueError:
            raise UserError(f"{option} {text!r}: size of {name} is not an integer: {raw.strip()!r}") from None
        if size > MAX_EXTENT:
            raise UserError(f"{option} {text!r}: size of {name} is {size}, above the largest extent a "
                            f"kernel can index ({MAX_EXTENT})")
        if size < 0:
            # 0 passes here: a 0/1 flag such as causal=0 is a shape key too; check_shape_sizes
            # refuses a zero size where the kernel's shapes have no such flag.
            raise UserError(f"{option} {text!r}: size of {name} must not be negative")
        shape[name] = size
    if not shape:
        raise UserError(f"{option} {text!r} is empty")
    return shape


def format_value(value: Any) -> str:
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        return "x".join(str(v) for v in value)
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(format_value(v) for v in value) + ")"
    return str(value)


def format_shape(shape: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in shape.items())


def format_config(config: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={format_value(v)}" for k, v in config.items()) or "(default)"


def check_shape_sizes(spec, shape: Mapping[str, int]) -> None:
    """Sizes must be positive, except a 0/1 flag (a key every default shape of the kernel's
    KernelSpec sets to 0 or 1, such as causal)."""
    defaults = spec.default_shapes or []
    flags = {k for k in (defaults[0] if defaults else {}) if all(s.get(k) in (0, 1) for s in defaults)}
    for k, v in shape.items():
        if v > MAX_EXTENT:
            raise UserError(f"shape: size of {k} is {v}, above the largest extent a kernel can index ({MAX_EXTENT})")
        if v == 0 and k not in flags:
            raise UserError(f"shape: size of {k} must be positive")
