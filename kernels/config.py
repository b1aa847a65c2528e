"""What every shipped kernel's config shares: a frozen dataclass read from the user's mapping
(`--config` keys, a suite case, a sweep point) and written back as plain data (baselines,
JSON reports).

Plain Python: config validation runs where the DSL is not installed.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Mapping

from kernelscope.kernels.spec import ConfigRejected


def reject_unknown_keys(config: Mapping[str, Any], config_class, kernel: str) -> None:
    """ConfigRejected listing the keys of `config` that are no field of the config dataclass."""
    known = set(config_class.__dataclass_fields__)
    unknown = sorted(set(config) - known)
    if unknown:
        raise ConfigRejected(f"unknown {kernel} config keys {unknown}; known: {sorted(known)}")


def parse_pair(value) -> tuple[int, ...]:
    """A pair such as a cluster shape or a tile given as (2, 1), [2, 1], "2x1" or "2,1", as a
    tuple of ints."""
    if isinstance(value, str):
        value = value.lower().replace("x", ",").split(",")
    return tuple(int(x) for x in value)


class KernelConfig:
    """Mixin for a kernel's frozen config dataclass. A subclass names its kernel (for messages),
    its fields that are pairs of ints, its boolean fields that may arrive as text, and the
    earlier names of renamed keys and values, which stay accepted (saved baselines, suites and
    command lines that use them keep working)."""

    KERNEL = "kernel"
    PAIRS: tuple[str, ...] = ()
    TEXT_FLAGS: tuple[str, ...] = ()
    KEY_ALIASES: Mapping[str, str] = {}                   # earlier key -> key
    VALUE_ALIASES: Mapping[str, Mapping[Any, Any]] = {}   # key -> {earlier value -> value}

    @classmethod
    def from_mapping(cls, cfg: Mapping[str, Any] | None):
        cfg = dict(cfg or {})
        for old, new in cls.KEY_ALIASES.items():
            # An earlier name comes from the user (defaults use the new one), so it wins over a
            # default merged in under the new name (KernelSpec.config_for).
            if old in cfg:
                cfg[new] = cfg.pop(old)
        for key, values in cls.VALUE_ALIASES.items():
            if isinstance(cfg.get(key), str) and cfg[key] in values:
                cfg[key] = values[cfg[key]]
        reject_unknown_keys(cfg, cls, cls.KERNEL)
        for key in cls.PAIRS:
            if cfg.get(key) is not None:
                cfg[key] = parse_pair(cfg[key])
        for flag in cls.TEXT_FLAGS:
            if isinstance(cfg.get(flag), str):
                cfg[flag] = cfg[flag].lower() in ("1", "true", "yes")
        return cls(**cfg)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in self.PAIRS:
            d[key] = list(getattr(self, key))
        return d
