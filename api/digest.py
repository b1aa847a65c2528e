"""`--format brief`: a compact digest of any kernelscope document for people in a hurry and
for coding agents: the headline first, then the top findings with their evidence, then
the largest changes, cut to a token budget.

Tokens are estimated as characters / 4 (English prose and numbers average close to four
characters per token in common tokenizers); the digest never exceeds the estimate.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from kernelscope.profiler.units import format_relative, format_value

CHARS_PER_TOKEN = 4
MIN_TOKENS = 40
EVIDENCE_VALUES = 4        # quoted numbers shown per finding
TOP_CHANGES = 5

# The per-kernel numbers of a show digest: catalog id -> short label.
SHOW_METRICS = {"duration": "time", "sm_throughput_pct": "SM", "memory_throughput_pct": "mem",
                "registers_per_thread": "regs", "occupancy_achieved": "occ", "local_spill_bytes": "spill"}


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def digest(doc: dict[str, Any], *, tokens: int = 400) -> str:
    """The digest of a show, diff, gate or sweep document within about `tokens` tokens."""
    tokens = max(int(tokens), MIN_TOKENS)
    schema = doc.get("schema")
    build: Callable[[dict[str, Any]], tuple[str, list[str], str]] = {
        "kernelscope.diff": _diff, "kernelscope.show": _show, "kernelscope.gate": _gate,
        "kernelscope.sweep": _sweep,
    }.get(schema, _unknown)
    headline, blocks, more = build(doc)
    return _fit(headline, blocks, more, tokens * CHARS_PER_TOKEN)


def _fit(headline: str, blocks: list[str], more: str, budget: int) -> str:
    """Headline, then whole blocks while they fit, keeping room to say how many were left out."""
    budget -= 1  # the final newline
    out = headline if len(headline) <= budget else headline[: budget - 1] + "…"
    note = (lambda left: f"\n… {left} more; {more}") if more else (lambda left: "")
    shown = 0
    for i, block in enumerate(blocks):
        reserve = len(note(len(blocks))) if i < len(blocks) - 1 else 0
        if len(out) + 1 + len(block) + reserve > budget:
            break
        out += "\n" + block
        shown += 1
    if shown < len(blocks) and len(out) + len(note(len(blocks) - shown)) <= budget:
        out += note(len(blocks) - shown)
    return out + "\n"


def _unknown(doc: dict[str, Any]) -> tuple[str, list[str], str]:
    return f"kernelscope document {doc.get('schema')!r}: no digest for it.", [], ""


# ----------------------------------------------------------------------------- diff

def _metric(doc: dict[str, Any], metric_id: str) -> dict[str, Any] | None:
    for view in (doc.get("views") or {}).values():
        for m in view.get("metrics") or []:
            if m.get("id") == metric_id:
                return m
    return None


def diff_headline(doc: dict[str, Any]) -> str:
    """Who is faster and by how much, and the main reason: the document's verdict in the words
    the terminal and Markdown headlines use."""
    from kernelscope.profiler.compare import Verdict
    from kernelscope.reports.findings import headline

    a, b = (doc.get("a") or {}).get("name") or "A", (doc.get("b") or {}).get("name") or "B"
    names = f"A {_short(a)} vs B {_short(b)}"
    v = doc.get("verdict")
    if v is None:  # a document from before the verdict: the durations of the views decide
        d = _metric(doc, "duration") or {}
        v = {"a_ns": d.get("a"), "b_ns": d.get("b")}
    static = any(((doc.get(s) or {}).get("session") or {}).get("tool") == "static" for s in ("a", "b"))
    verdict = Verdict(_number(v.get("a_ns")), _number(v.get("b_ns")))
    if static and not verdict.known:
        return f"{names}: compile-only profiles have no time; no verdict on which is faster."
    text = f"{names}: {headline(verdict)}"
    reason = v.get("main_reason")
    if reason:
        share = f" (explains ~{reason['explains'] * 100:.0f}% of the gap)" if _number(reason.get("explains")) is not None else ""
        text += f" Main reason: {reason.get('title')}{share}."
    elif isinstance(v.get("unexplained"), str):
        # No cause is named: a gap within noise, or none that explains enough of it.
        note = v["unexplained"]
        text += f" {note[:1].upper()}{note[1:]}."
    return text


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _finding_block(n: int, f: dict[str, Any]) -> str:
    weight = []
    if _number(f.get("explains")) is not None:
        weight.append(f"explains ~{f['explains'] * 100:.0f}% of the gap")
    if _number(f.get("impact")) is not None:
        weight.append(f"headroom ~{f['impact'] * 100:.0f}%")
    lines = [f"{n}. [{f.get('severity')}] {f.get('title')} ({f.get('rule')}; {'; '.join(weight) or 'impact n/a'})"]
    if f.get("cause"):
        lines.append(f"   cause: {f['cause']}")
    values = [v for v in f.get("values") or [] if v.get("text") not in (None, "", "n/a")][:EVIDENCE_VALUES]
    if values:
        lines.append("   evidence: " + "; ".join(f"{v.get('name')}={v.get('text')}" for v in values))
    elif f.get("message"):
        lines.append(f"   evidence: {f['message']}")
    # One name per rule: ncu reports some rules once per unit (SMs, L1 slices, SMSPs).
    agree = list(dict.fromkeys(e.get("rule") for e in f.get("evidence") or [] if e.get("rule")))
    if agree:
        lines.append(f"   ncu agrees: {', '.join(agree)}")
    if f.get("hint"):
        lines.append(f"   fix: {_first_sentence(f['hint'])}")
    return "\n".join(lines)


def _changes_block(doc: dict[str, Any]) -> str | None:
    rows = []
    for view in (doc.get("views") or {}).values():
        for m in view.get("metrics") or []:
            rel = m.get("relative")
            if isinstance(rel, (int, float)) and abs(rel) >= 0.05 and m.get("better") != "none":
                rows.append((abs(rel), m))
    if not rows:
        return None
    rows.sort(key=lambda r: -r[0])
    parts = [f"{m['label']} {format_value(m['a'], m['unit'])} vs {format_value(m['b'], m['unit'])} "
             f"({format_relative(m['relative'])}{', A better' if m.get('better_side') == 'a' else ''})"
             for _, m in rows[:TOP_CHANGES]]
    return "Largest changes (A vs B): " + "; ".join(parts)


def _diff(doc: dict[str, Any]) -> tuple[str, list[str], str]:
    findings = doc.get("findings")
    blocks: list[str] = []
    if findings is None:
        head_note = ""
    elif not findings:
        head_note = " No rule fired."
    else:
        head_note = f" {len(findings)} finding(s), causes first, the largest share of the gap first:"
    blocks += [_finding_block(n, f) for n, f in enumerate(findings or [], 1)]
    changes = _changes_block(doc)
    if changes:
        blocks.append(changes)
    shared = doc.get("shared") or []
    if shared:
        blocks.append("Shared by both (not a difference): " + "; ".join(f"{f.get('title')} [{f.get('rule')}]"
                                                                        for f in shared))
    skipped = doc.get("rules_not_evaluated") or {}
    if skipped:
        blocks.append(f"Not evaluated ({len(skipped)} rules): metrics not collected.")
    caveats = doc.get("comparability") or []
    caveat = f" Compare with care: {'; '.join(caveats)}." if caveats else ""
    return diff_headline(doc) + caveat + head_note, blocks, "the JSON document holds everything"


# ----------------------------------------------------------------------------- show, gate, sweep

def _show(doc: dict[str, Any]) -> tuple[str, list[str], str]:
    kernels = doc.get("kernels") or []
    blocks = []
    for k in kernels:
        values = {m["id"]: m for v in (k.get("views") or {}).values() for m in v.get("metrics") or []}
        parts = [f"{label} {format_value(values[mid]['value'], values[mid]['unit'])}"
                 for mid, label in SHOW_METRICS.items() if mid in values and values[mid].get("value") is not None]
        blocks.append(f"@{k.get('index')} {_short(k.get('name') or '?')}: " + (", ".join(parts) or "no metric collected"))
    inspect = doc.get("inspect")
    head = f"{len(kernels)} kernel(s) from {doc.get('source')}"
    if inspect:
        missing = inspect.get("expected_sass_missing") or []
        head = (f"{inspect.get('kernel')} compiled for {inspect.get('arch')} ({inspect.get('dtype')}), compile-only: "
                f"{len(kernels)} kernel(s); " + (f"expected opcodes MISSING: {' '.join(missing)}" if missing
                                                 else "expected opcodes present"))
    return head + ".", blocks, "narrow with a kernel regex or @INDEX"


def _gate(doc: dict[str, Any]) -> tuple[str, list[str], str]:
    counts = ", ".join(f"{n} {v.lower()}" for v, n in (doc.get("counts") or {}).items() if n)
    head = f"Gate {doc.get('verdict')} (exit {doc.get('exit_code')}): {counts or 'nothing judged'}."
    order = {"REGRESSION": 0, "INCONCLUSIVE": 1, "IMPROVEMENT": 2}
    rows = [(order[m.get("verdict")], c.get("case"), m) for c in doc.get("cases") or []
            for m in c.get("metrics") or [] if m.get("verdict") in order]
    rows.sort(key=lambda r: r[0])
    blocks = [f"{m.get('verdict')} {case} {m.get('family')}:{m.get('metric')}: {m.get('reason')}" for _, case, m in rows]
    return head, blocks, "the JSON document lists every metric"


def _sweep(doc: dict[str, Any]) -> tuple[str, list[str], str]:
    rows = doc.get("rows") or []
    ok = [r for r in rows if r.get("status") == "ok"]
    shape = ",".join(f"{k}={v}" for k, v in (doc.get("shape") or {}).items())
    head = (f"Sweep of {doc.get('target')} at {shape} {doc.get('dtype')} vs {doc.get('reference') or 'no reference'}: "
            f"{len(rows)} configs, {len(ok)} ok, fastest first:")
    blocks = []
    for r in rows:
        t = r.get("timing") or {}
        cfg = ",".join(f"{k}={v}" for k, v in (r.get("config") or {}).items())
        pct = r.get("speed_vs_reference_pct")
        if r.get("status") == "ok":
            blocks.append(f"{cfg}: {t.get('median_ms'):.4f} ms" + (f", {pct:.1f}% of the reference's speed"
                                                                   if isinstance(pct, (int, float)) else ""))
        else:
            blocks.append(f"{cfg}: {r.get('status')} ({(r.get('message') or '')[:80]})")
    return head, blocks, "the JSON document lists every config"


def _first_sentence(text: str, width: int = 200) -> str:
    head = text.split(". ")[0].rstrip(".") + "."
    return head if len(head) <= width else head[: width - 1] + "…"


def _short(name: str, width: int = 48) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"
