"""A small, safe expression language for catalog formulas and rule conditions.

Data files (the metric catalog, rule files) hold formulas such as

    {smsp__inst_executed_op_branch.sum} / {smsp__inst_executed.sum} * 100
    mix("HGMMA") / mix_total() * 100
    registers_per_thread >= 0.9 * max_registers and not (occupancy > 50)

Names in braces are taken verbatim (ncu metric names contain dots); bare names are
resolved by the caller (catalog ids, rule variables). Expressions are parsed with
`ast` and only a whitelist of node types is evaluated: never Python `eval`.

Missing data propagates: any operand that is None makes an arithmetic result None,
and a comparison with None is None (unknown), so "not collected" never turns into 0.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

_BRACED = re.compile(r"\{([^{}]+)\}")


class ExpressionError(ValueError):
    """The expression text is not valid in this language (message names the problem)."""


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}


@dataclass(frozen=True)
class Expression:
    """A parsed expression. `names` are the bare names, `braced` the {verbatim} names it uses."""

    text: str
    tree: ast.Expression
    names: frozenset[str]
    braced: frozenset[str]
    functions: frozenset[str]

    def evaluate(
        self,
        resolve: Callable[[str], Any],
        functions: Mapping[str, Callable[..., Any]] | None = None,
        resolve_braced: Callable[[str], Any] | None = None,
    ) -> Any:
        """Evaluate. `resolve(name)` gives a bare name's value, `resolve_braced(name)` a
        {braced} name's (defaults to `resolve`); either returns None when unknown."""
        return _Evaluator(resolve, resolve_braced or resolve, functions or {}).visit(self.tree.body)


def parse(text: str, allowed_functions: frozenset[str] | set[str] = frozenset()) -> Expression:
    braced: list[str] = []

    def _sub(m: re.Match) -> str:
        braced.append(m.group(1).strip())
        return f"__braced_{len(braced) - 1}"

    source = _BRACED.sub(_sub, text.strip())
    if "{" in source or "}" in source:
        raise ExpressionError(f"unbalanced braces in {text!r}")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as e:
        raise ExpressionError(f"cannot parse {text!r}: {e.msg}") from None

    names: set[str] = set()
    funcs: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.keywords:
                raise ExpressionError(f"only plain function calls are allowed in {text!r}")
            if node.func.id not in allowed_functions:
                raise ExpressionError(
                    f"unknown function {node.func.id!r} in {text!r}"
                    f" (allowed: {', '.join(sorted(allowed_functions)) or 'none'})"
                )
            funcs.add(node.func.id)
        elif isinstance(node, ast.Name):
            if node.id.startswith("__braced_"):
                continue
            if node.id not in funcs and not _is_call_target(tree, node):
                names.add(node.id)
        elif not isinstance(node, _ALLOWED_NODES):
            raise ExpressionError(f"{type(node).__name__} is not allowed in {text!r}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str, bool)):
            raise ExpressionError(f"constant {node.value!r} is not allowed in {text!r}")
    # Rewrite the placeholders back into braced-name lookups.
    mapping = {f"__braced_{i}": name for i, name in enumerate(braced)}
    tree = _Unbrace(mapping).visit(tree)
    return Expression(text, tree, frozenset(names), frozenset(braced), frozenset(funcs))


def _is_call_target(tree: ast.AST, name: ast.Name) -> bool:
    return any(isinstance(n, ast.Call) and n.func is name for n in ast.walk(tree))


_ALLOWED_NODES = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.Call,
    ast.Name,
    ast.Constant,
    ast.Load,
    ast.IfExp,
    ast.And,
    ast.Or,
    ast.Not,
    ast.USub,
    ast.UAdd,
    *_BINOPS,
    *_CMPOPS,
)


class _BracedName(ast.Name):
    """A {verbatim} name after parsing; carries the original text."""


class _Unbrace(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.mapping:
            new = _BracedName(id=self.mapping[node.id], ctx=node.ctx)
            return ast.copy_location(new, node)
        return node


class _Evaluator:
    def __init__(self, resolve, resolve_braced, functions: Mapping[str, Callable[..., Any]]):
        self.resolve = resolve
        self.resolve_braced = resolve_braced
        self.functions = functions

    def visit(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, _BracedName):
            return self.resolve_braced(node.id)
        if isinstance(node, ast.Name):
            return self.resolve(node.id)
        if isinstance(node, ast.UnaryOp):
            v = self.visit(node.operand)
            if isinstance(node.op, ast.Not):
                return None if v is None else not v
            if v is None:
                return None
            return -v if isinstance(node.op, ast.USub) else +v
        if isinstance(node, ast.BinOp):
            a, b = self.visit(node.left), self.visit(node.right)
            if a is None or b is None:
                return None
            try:
                return _BINOPS[type(node.op)](a, b)
            except ZeroDivisionError:
                return None
        if isinstance(node, ast.Compare):
            left = self.visit(node.left)
            for op, comp in zip(node.ops, node.comparators):
                right = self.visit(comp)
                if left is None or right is None:
                    return None
                if not _CMPOPS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.BoolOp):
            # Three-valued logic: a known False decides `and`, a known True decides `or`.
            values = [self.visit(v) for v in node.values]
            if isinstance(node.op, ast.And):
                if any(v is not None and not v for v in values):
                    return False
                return None if any(v is None for v in values) else True
            if any(v is not None and v for v in values):
                return True
            return None if any(v is None for v in values) else False
        if isinstance(node, ast.IfExp):
            cond = self.visit(node.test)
            if cond is None:
                return None
            return self.visit(node.body) if cond else self.visit(node.orelse)
        if isinstance(node, ast.Call):
            fn = self.functions.get(node.func.id)
            if fn is None:
                raise ExpressionError(f"function {node.func.id!r} is not available here")
            args = [self.visit(a) for a in node.args]
            return fn(*args)
        raise ExpressionError(f"{type(node).__name__} is not allowed")


# ---------------------------------------------------------------------------------
# The null-aware function table: the one set of functions catalog formulas and rule
# expressions call (the catalog adds the instruction-mix functions of one profile).
# Any unknown (None) argument makes the result unknown, except where a function is
# about unknowns (known, coalesce, max_known, sum_known).


def _floor(x):
    return None if x is None else math.floor(x)


def _ceil(x):
    return None if x is None else math.ceil(x)


def _min(*xs):
    return None if any(x is None for x in xs) else min(xs)


def _max(*xs):
    return None if any(x is None for x in xs) else max(xs)


def _abs(x):
    return None if x is None else abs(x)


def _clamp(x, lo, hi):
    return None if x is None or lo is None or hi is None else min(max(x, lo), hi)


def _known(x):
    return x is not None


def _max_known(*xs):
    """The largest of the known values; None only when none is known."""
    known = [x for x in xs if x is not None]
    return max(known) if known else None


def _sum_known(*xs):
    known = [x for x in xs if x is not None]
    return sum(known) if known else None


def _coalesce(*xs):
    return next((x for x in xs if x is not None), None)


def _when(condition, value):
    """`value` where `condition` holds; unknown (None) where it does not or is unknown: for a
    value that means nothing in some cases (bytes per sector of loads never executed)."""
    return value if condition else None


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": _min, "max": _max, "abs": _abs, "floor": _floor, "ceil": _ceil,
    "clamp": _clamp, "known": _known, "coalesce": _coalesce, "max_known": _max_known, "sum_known": _sum_known,
    "when": _when,
}
