"""Read ncu's own `--page raw --csv` export, to check kernelscope's numbers against it."""

import csv
import lzma
from pathlib import Path

FIXTURES_DIR = Path(__file__).parent / "fixtures"

# ncu's raw page scales units (Kbyte, Mbyte, us, ...); these bring a value back to the base unit.
_SCALE = {
    "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
    "ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9, "msecond": 1e6, "usecond": 1e3, "nsecond": 1.0,
    "hz": 1.0, "Khz": 1e3, "Mhz": 1e6, "Ghz": 1e9,
}


def read_raw_csv(path: Path) -> list[dict[str, tuple[str, str]]]:
    """One dict per kernel row: metric name -> (value text, unit text)."""
    opener = lzma.open if str(path).endswith(".xz") else open
    with opener(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    header, units, data = rows[0], rows[1], rows[2:]
    return [{name: (row[i], units[i]) for i, name in enumerate(header)} for row in data]


def to_base_unit(value: str, unit: str) -> float:
    number = float(value.replace(",", ""))
    base = unit.split("/")[0]
    return number * _SCALE.get(base, 1.0)
