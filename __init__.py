"""kernelscope: profiling and diagnostics for CuTe DSL kernels on Hopper.

`import kernelscope as ks` gives the Python API (docs/api.md): `ks.load`, `ks.diff`,
`ks.evaluate`, `ks.inspect`, `ks.run`, `ks.profile`, `ks.sweep`, `ks.gate_against`, ... The names
are resolved on first use, so importing the package loads neither torch nor the CuTe DSL.
"""

__version__ = "0.1.0"

_API = frozenset({
    "load", "load_sweep", "diff", "evaluate", "list_rules", "explain_rule", "inspect", "run", "profile", "sweep",
    "baseline", "load_baseline", "gate_against", "brief",
    "Result", "Profiles", "Diff", "Findings", "Inspection", "Run", "ProfileResult", "Sweep", "Baseline", "Gate",
    "UserError", "MissingExtra",
})


def __getattr__(name):
    if name in _API:
        from kernelscope import api

        return getattr(api, name)
    raise AttributeError(f"module 'kernelscope' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _API)
