"""The pages kernelscope writes: findings, metric views side by side, and plots.

Pages are built from what kernelscope already produces: a comparison (the
`kernelscope.diff` document, plus the two profiles when they are at hand for the
roofline), profiles (`kernelscope.show` or a report), a gate result (`kernelscope.gate`)
or a sweep result (`kernelscope sweep --json`).
"""

from __future__ import annotations

from typing import Any, Sequence

from kernelscope.profiler.catalog import Catalog, load_catalog
from kernelscope.profiler.compare import readings
from kernelscope.profiler.record import KernelProfile
from kernelscope.profiler.roofline import SECTIONS_NEEDED, Roofline, roofline
from kernelscope.profiler.units import (NOT_COLLECTED, format_change, format_relative, format_share, format_value,
                                        kernel_label)
from kernelscope.reports import plots
from kernelscope.reports.change_ranking import SAME_WITHIN, largest_changes
from kernelscope.reports.findings import not_slower_note
from kernelscope.reports.html import (Page, Plot, escape, is_number, number, plain, shorten,
                                      signed_percent)
from kernelscope.reports.structured import identity

TOP_OPCODES = 15          # opcodes in the instruction-mix plot


# ============================================================================ comparison

def comparison_page(doc: dict[str, Any], profiles: tuple[KernelProfile, KernelProfile] | None = None,
                    *, title: str | None = None) -> Page:
    """A page for one kernel (A) against its reference (B) from a `kernelscope.diff` document.

    `profiles` are the two full records when at hand (reports, show JSON); the diff document
    holds catalog values only, so without them there is no roofline.
    """
    a, b = doc.get("a") or {}, doc.get("b") or {}
    name_a, name_b = a.get("short_name") or a.get("name") or "A", b.get("short_name") or b.get("name") or "B"
    page = Page(
        title=title or f"{shorten(name_a)} vs {shorten(name_b)}",
        subtitle="A is the kernel, B the reference; the change column is A - B.",
        findings=doc.get("findings"),
        rules_not_evaluated=dict(doc.get("rules_not_evaluated") or {}),
        gap_within_noise=bool((doc.get("verdict") or {}).get("within_noise")),
        findings_note=_sentence(not_slower_note((doc.get("verdict") or {}).get("faster"))),
    )
    page.lead = _verdict_html(doc.get("verdict"), name_a, name_b)
    if doc.get("comparability"):
        page.lead += "<p><b>Compare with care:</b> " + escape("; ".join(doc["comparability"])) + ".</p>"
    if doc.get("shared"):
        page.lead += ("<p class=\"dim\">Shared by both (not a difference): "
                      + escape("; ".join(f"{f.get('title')} [{f.get('rule')}]" for f in doc["shared"])) + "</p>")
    page.blocks.append(("What was compared", _identity_table([a, b], ["A", "B"])))

    static = any((side.get("session") or {}).get("tool") == "static" for side in (a, b))
    if static:
        page.notes.append("No roofline: a compile-only (static) profile has no measured FLOP/s or bytes.")
    elif profiles is not None:
        roof = roofline(list(profiles), [kernel_label(profiles[0]), kernel_label(profiles[1])], ["A", "B"])
        _add_roofline(page, roof)
    else:
        page.notes.append("No roofline: a diff JSON holds catalog values only. Give the two reports "
                          "(A.ncu-rep[:REGEX] B.ncu-rep[:REGEX]) or a `show --format json` file to place the kernels.")

    mix = sorted((plots.MixRow(r["opcode"], [r.get("count_a"), r.get("count_b")]) for r in doc.get("instruction_mix") or []
                  if r.get("count_a") is not None or r.get("count_b") is not None),
                 key=lambda m: (-abs((m.counts[0] or 0) - (m.counts[1] or 0)), m.opcode))[:TOP_OPCODES]
    if mix:
        page.plots.append(Plot("instruction-mix", "Instruction mix",
                               plots.instruction_mix_figure(mix, [f"A: {name_a}", f"B: {name_b}"], executed=not static),
                               _mix_caption(static) + " The opcodes whose counts differ most between A and B."))
    else:
        page.notes.append("No instruction-mix plot: the per-opcode mix (InstructionStats section, "
                          "sass__inst_executed_per_opcode) was not collected for both kernels.")

    changes, one_sided = largest_changes(doc.get("views") or {})
    if changes:
        caption = (f"The {len(changes)} largest changes of A/B, ranked by how far the ratio is from 1 weighted by the "
                   "metric's size in its view (a percentage as itself; counts, bytes and stalls against the largest of "
                   f"their kind), so large changes of tiny counts rank low; changes under {SAME_WITHIN:.1%} left out.")
        if one_sided:
            caption += " Zero on one side (no ratio): " + ", ".join(one_sided[:10]) + ("…" if len(one_sided) > 10 else "") + "."
        page.plots.append(Plot("metric-changes", "Largest metric changes",
                               plots.metric_changes_figure(changes), caption))

    page.blocks.append(("Metric views, side by side", _comparison_views(doc.get("views") or {})))
    if doc.get("instruction_mix"):
        page.blocks.append(("Instruction mix", _mix_table(doc["instruction_mix"])))
    return page


def _mix_caption(static: bool) -> str:
    if static:
        return "SASS instructions in the binary per opcode (compile-only: not executed counts)."
    return "Executed warp instructions per opcode (sass__inst_executed_per_opcode)."


def _comparison_views(views: dict[str, Any]) -> str:
    parts = []
    for view in views.values():
        body = []
        for m in view.get("metrics", []):
            unit = m.get("unit", "")
            better = m.get("better_side")
            cls_a = "better" if better == "a" else "worse" if better == "b" else ""
            cls_b = "better" if better == "b" else "worse" if better == "a" else ""
            change = m.get("change")
            body.append(
                f"<tr><td title=\"{escape(m['id'])}\">{escape(m['label'])}</td>"
                f"<td class=\"num {cls_a}\">{escape(format_value(m.get('a'), unit))}</td>"
                f"<td class=\"num {cls_b}\">{escape(format_value(m.get('b'), unit))}</td>"
                f"<td class=\"num\">{escape(format_change(change, unit))}</td>"
                f"<td class=\"num\">{escape(format_relative(m.get('relative')))}</td></tr>"
            )
        parts.append(
            f"<div class=\"view\"><h3>{escape(view.get('title'))}</h3><table>"
            "<thead><tr><th>metric</th><th>A</th><th>B</th><th>A - B</th><th>relative</th></tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>"
        )
    return f"<div class=\"views\">{''.join(parts)}</div>"


def _mix_table(rows: list[dict[str, Any]]) -> str:
    body = "".join(
        f"<tr><td>{escape(r['opcode'])}</td><td class=\"num\">{escape(format_value(r.get('count_a'), 'inst'))}</td>"
        f"<td class=\"num\">{escape(format_value(r.get('count_b'), 'inst'))}</td>"
        f"<td class=\"num\">{escape(format_share(r.get('share_a')))}</td><td class=\"num\">{escape(format_share(r.get('share_b')))}</td>"
        f"<td class=\"num\">{escape(format_relative(r.get('relative')))}</td></tr>"
        for r in rows
    )
    return ("<table><thead><tr><th>opcode</th><th>A executed</th><th>B executed</th><th>A share</th>"
            f"<th>B share</th><th>relative</th></tr></thead><tbody>{body}</tbody></table>")


# ============================================================================ profiles

def profiles_page(profiles: Sequence[KernelProfile], source: str, *, catalog: Catalog | None = None,
                  title: str | None = None) -> Page:
    """One or more kernels, each in its own column (no reference)."""
    catalog = catalog or load_catalog()
    names = [kernel_label(p) for p in profiles]
    roles = [f"@{p.index}" for p in profiles]
    page = Page(title=title or (f"{shorten(names[0])}" if len(profiles) == 1 else f"{len(profiles)} kernels of {source}"),
                subtitle=f"From {source}.")
    page.blocks.append(("Kernels", _identity_table([identity(p) for p in profiles], roles)))
    static = any(p.session.tool == "static" for p in profiles)
    if static:
        page.notes.append("No roofline: a compile-only (static) profile has no measured FLOP/s or bytes.")
    else:
        _add_roofline(page, roofline(list(profiles), names, roles))
    mix = _mix_rows(profiles)
    if mix:
        page.plots.append(Plot("instruction-mix", "Instruction mix",
                               plots.instruction_mix_figure(mix, [f"{r}: {n}" for r, n in zip(roles, names)],
                                                            executed=not static),
                               _mix_caption(static) + " The largest counts."))
    else:
        page.notes.append("No instruction-mix plot: the per-opcode mix (sass__inst_executed_per_opcode) was not collected.")
    per_kernel = [readings(p, catalog) for p in profiles]
    parts = []
    for view in catalog.view_names():
        if not any(r.collected for rs in per_kernel for r in rs[view]):
            continue
        head = "".join(f"<th>{escape(r)}</th>" for r in roles)
        body = []
        for i, d in enumerate(catalog.views[view].metrics):
            definition = catalog.metrics[d]
            cells = "".join(f"<td class=\"num\">{escape(format_value(rs[view][i].value, definition.unit))}</td>"
                            for rs in per_kernel)
            body.append(f"<tr><td title=\"{escape(definition.definition)}\">{escape(definition.label)}</td>{cells}</tr>")
        parts.append(f"<div class=\"view\"><h3>{escape(catalog.views[view].title)}</h3><table>"
                     f"<thead><tr><th>metric</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")
    page.blocks.append(("Metric views, side by side", f"<div class=\"views\">{''.join(parts)}</div>"))
    return page


def _mix_rows(profiles: Sequence[KernelProfile]) -> list[plots.MixRow]:
    totals = [sum(p.instruction_mix.values()) for p in profiles]
    if not any(totals):
        return []
    mixes = [p.instruction_mix if t else None for p, t in zip(profiles, totals)]
    ops = sorted({op for m in mixes if m for op in m}, key=lambda op: (-max((m or {}).get(op, 0.0) for m in mixes), op))
    return [plots.MixRow(op, [None if m is None else m.get(op, 0.0) for m in mixes]) for op in ops[:TOP_OPCODES]]


# ============================================================================ roofline

def _add_roofline(page: Page, roof: Roofline) -> None:
    if any(p.placed for p in roof.placements) and roof.ceilings:
        page.plots.insert(0, Plot("roofline", "Roofline", plots.roofline_figure(roof),
                                  "Each kernel at its measured FLOP/s and FLOP per DRAM byte, against the device's "
                                  "ceilings from the report's peak metrics (see 'Where the numbers come from')."))
    elif not any(n.startswith("No roofline") for n in roof.notes):
        page.notes.append(f"No roofline: the report lacks the metrics it needs (profile with the sections {SECTIONS_NEEDED}).")
    page.notes.extend(roof.notes)
    page.blocks.append(("Where the numbers come from", _roofline_sources(roof)))


def _roofline_sources(roof: Roofline) -> str:
    rows = []
    for p in roof.placements:
        pipes = ", ".join(f"{k} {_flops(v)}" for k, v in p.flops_by_pipe.items() if v) or (
            "none measured" if p.flops is not None else NOT_COLLECTED)
        frac = roof.fraction_of_roof(p)
        rows.append(
            f"<tr><td>{escape(p.role)}</td><td>{escape(shorten(p.label))}</td><td class=\"num\">{escape(_flops(p.flops))}</td>"
            f"<td>{escape(pipes)}</td><td class=\"num\">{escape(format_value(p.dram_bytes, 'byte'))}</td>"
            f"<td class=\"num\">{escape(format_value(p.duration_s * 1e9 if p.duration_s is not None else None, 'ns'))}</td>"
            f"<td class=\"num\">{escape(_rate(p.flop_rate, 'FLOP/s'))}</td>"
            f"<td class=\"num\">{escape(NOT_COLLECTED if p.intensity is None else f'{p.intensity:.4g}')}</td>"
            f"<td class=\"num\">{escape(format_value(p.sm_clock_hz, 'hz'))}</td>"
            f"<td class=\"num\">{escape(NOT_COLLECTED if frac is None else f'{frac * 100:.1f} %')}</td></tr>"
        )
    kernels = ("<table><thead><tr><th></th><th>kernel</th><th>FLOPs</th><th>by pipe</th><th>DRAM bytes</th>"
               "<th>duration</th><th>FLOP/s</th><th>FLOP/byte</th><th>SM clock (measured)</th><th>% of roof</th>"
               f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    ceilings = "".join(f"<li><b>{escape(c.name)}</b>: {escape(_rate(c.value, 'FLOP/s' if c.kind == 'compute' else 'B/s'))} "
                       f"&mdash; <code>{escape(c.source)}</code></li>" for c in roof.ceilings)
    method = (
        "<p>FLOPs = tensor-pipe operations <code>sm__ops_path_tensor_src_&lt;fp16|bf16_dst_fp32|tf32_dst_fp32|fp8|fp64&gt;.sum</code> "
        "(two per multiply-add) + FP32/FP16/FP64 work from "
        "<code>smsp__sass_thread_inst_executed_op_&lt;op&gt;_pred_on.sum.per_cycle_elapsed</code> &times; "
        "<code>smsp__cycles_elapsed.avg</code> (FFMA and DFMA count 2, HADD2/HMUL2 2, HFMA2 4). "
        "DRAM bytes = <code>dram__bytes_read.sum</code> + <code>dram__bytes_write.sum</code>. "
        "FLOP/s = FLOPs / <code>gpu__time_duration.sum</code>. "
        "% of roof = FLOP/s over min(compute ceiling, DRAM bandwidth &times; intensity), "
        "against the tensor ceiling for kernels that use the tensor pipe and FP32 otherwise.</p>"
    )
    return f"{method}<ul>{ceilings}</ul>{kernels}"


def _flops(v: float | None) -> str:
    if v is None:
        return NOT_COLLECTED
    return f"{v:,.0f}" if v < 1e6 else f"{v:.4g}"


def _rate(v: float | None, unit: str) -> str:
    if v is None:
        return NOT_COLLECTED
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= factor:
            return f"{v / factor:.4g} {prefix}{unit}"
    return f"{v:.4g} {unit}"


# ============================================================================ gate

def gate_page(doc: dict[str, Any], *, title: str | None = None) -> Page:
    verdict = doc.get("verdict", "n/a")
    counts = doc.get("counts") or {}
    page = Page(title=title or f"Gate: {verdict}",
                subtitle=f"Exit code {doc.get('exit_code')}; baseline {doc.get('baseline') or 'n/a'}; "
                         f"source {doc.get('source') or 'n/a'}; mode {doc.get('mode') or 'n/a'}.")
    summary = " · ".join(f"{n} {v.lower()}" for v, n in counts.items() if n)
    env = (doc.get("environment") or {}).get("differences") or []
    env_html = "".join(f"<li><code>{escape(d.get('key'))}</code>: baseline {escape(d.get('baseline'))}, current "
                       f"{escape(d.get('current'))} ({escape(', '.join(d.get('families') or []))} inconclusive)</li>" for d in env)
    page.lead = (f"<p class=\"verdict v-{escape(str(verdict).lower())}\">{escape(verdict)}</p><p>{escape(summary)}</p>"
                 + (f"<p>Environment differs:</p><ul>{env_html}</ul>" if env else ""))
    bars = []
    for case in doc.get("cases") or []:
        for m in case.get("metrics") or []:
            if is_number(m.get("change")) and m["change"] != 0:
                label = f"{m.get('metric')} · {shorten(str(m.get('kernel') or case.get('case')), 24)}"
                bars.append(plots.VerdictRow(label, float(m["change"]), m.get("verdict", "")))
    bars.sort(key=lambda r: (-abs(r.change), r.label))
    if bars:
        page.plots.append(Plot("gate-changes", "Largest changes against the baseline",
                               plots.gate_changes_figure(bars[:20]),
                               "Relative change (current / baseline - 1) of the metrics that moved most, coloured by verdict."))
    else:
        page.notes.append("No gate plot: no metric changed against the baseline.")
    parts = []
    for case in doc.get("cases") or []:
        body = "".join(
            f"<tr><td>{escape(m.get('family'))}:{escape(m.get('metric'))}</td><td>{escape(shorten(m.get('kernel') or '', 40))}</td>"
            f"<td class=\"num\">{escape(plain(m.get('baseline')))}</td><td class=\"num\">{escape(plain(m.get('current')))}</td>"
            f"<td class=\"num\">{escape(signed_percent(m.get('change')))}</td>"
            f"<td class=\"v-{escape(str(m.get('verdict', '')).lower())}\">{escape(m.get('verdict'))}</td><td>{escape(m.get('reason'))}</td></tr>"
            for m in case.get("metrics") or []
        )
        parts.append(f"<div class=\"view wide\"><h3>{escape(case.get('case'))} <span class=\"v-{escape(str(case.get('verdict', '')).lower())}\">"
                     f"{escape(case.get('verdict'))}</span></h3><p class=\"dim\">{escape(case.get('description'))}</p>"
                     "<table><thead><tr><th>metric</th><th>kernel</th><th>baseline</th><th>current</th><th>change</th>"
                     f"<th>verdict</th><th>why</th></tr></thead><tbody>{body}</tbody></table></div>")
    page.blocks.append(("Cases", "".join(parts) or "<p>No cases.</p>"))
    return page


# ============================================================================ sweep

def sweep_page(doc: dict[str, Any], *, title: str | None = None) -> Page:
    from kernelscope.reports.sweep_view import device_index, device_notes, row_labels

    rows = doc.get("rows") or []
    ref = doc.get("reference")
    ref_timing = doc.get("reference_timing") or None
    shapes = list(dict.fromkeys(", ".join(f"{k}={v}" for k, v in (s or {}).items())
                                for s in (doc.get("shapes") or [doc.get("shape")])))
    devices = doc.get("devices") or []
    page = Page(title=title or f"Sweep of {doc.get('target')}",
                subtitle=f"Shape {'; '.join(s for s in shapes if s) or 'n/a'}, {doc.get('dtype') or 'dtype n/a'}; "
                         f"reference {ref or 'none'}" + (f" at median {ref_timing['median_ms']:.4f} ms." if ref_timing else "."))
    labelled = row_labels(rows)           # the shape joins the config when the sweep has several
    keys = _varying_keys(labelled)
    # Each row's percentage is against the reference timed on its own GPU, so rows may share a plot.
    with_pct = any(is_number(r.get("speed_vs_reference_pct")) for r in rows)
    bars = []
    for r, cfg in zip(rows, labelled):
        label = _config_label(cfg, keys) + (f" on {(r.get('device') or {}).get('name')}" if doc.get("mixed_device_models") else "")
        if with_pct and is_number(r.get("speed_vs_reference_pct")):
            bars.append(plots.SweepBar(label, float(r["speed_vs_reference_pct"])))
        elif not with_pct and r.get("timing"):
            bars.append(plots.SweepBar(label, float(r["timing"]["median_ms"])))
    if bars:
        bars.sort(key=lambda b: (-b.value if with_pct else b.value, b.label))
        caption = ("Speed of each valid config as a percentage of the reference's (reference median time / config "
                   "median time, CUDA events, both on the same GPU); 100% is as fast as the reference." if with_pct
                   else "Median time per launch of each valid config (no reference was timed).")
        page.plots.append(Plot("sweep", "Configs against the reference",
                               plots.sweep_figure(bars, percent_of_reference=with_pct, reference=ref), caption))
    else:
        page.notes.append("No sweep plot: no config was timed.")
    page.notes += device_notes(doc)
    metric_keys = sorted({k for r in rows for k in (r.get("metrics") or {}) if k not in ("report", "error")})
    head = "".join(f"<th>{escape(k)}</th>" for k in keys) + "<th>status</th><th>median ms</th><th>IQR ms</th><th>% of reference</th>"
    head += ("<th>device</th>" if len(devices) > 1 else "") + "".join(f"<th>{escape(k)}</th>" for k in metric_keys) + "<th>note</th>"
    body = []
    for r, cfg in zip(rows, labelled):
        t = r.get("timing") or {}
        pct = r.get("speed_vs_reference_pct")
        cells = "".join(f"<td>{escape(plain(cfg.get(k)))}</td>" for k in keys)
        cells += (f"<td class=\"s-{escape(r.get('status'))}\">{escape(r.get('status'))}</td>"
                  f"<td class=\"num\">{escape(number(t.get('median_ms'), '.4f'))}</td><td class=\"num\">{escape(number(t.get('iqr_ms'), '.4f'))}</td>"
                  f"<td class=\"num\">{escape(number(pct, '.1f', '%'))}</td>")
        cells += f"<td>{escape(device_index(r, devices))}</td>" if len(devices) > 1 else ""
        cells += "".join(f"<td class=\"num\">{escape(plain((r.get('metrics') or {}).get(k)))}</td>" for k in metric_keys)
        note = r.get("message") or (r.get("metrics") or {}).get("error") or ""
        if r.get("retries") and r.get("status") != "failed":
            note = (note + "; " if note else "") + f"retried after: {r['retries'][0]}"
        body.append(f"<tr>{cells}<td>{escape(note)}</td></tr>")
    page.blocks.append(("Configs", f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"))
    return page


def _varying_keys(configs: list[dict[str, Any]]) -> list[str]:
    keys = list(dict.fromkeys(k for c in configs for k in c))
    varying = [k for k in keys if len({repr(c.get(k)) for c in configs}) > 1]
    return varying or keys


def _config_label(config: dict[str, Any], keys: list[str]) -> str:
    return ", ".join(f"{k}={plain(config.get(k))}" for k in keys) or "(default)"


def _identity_table(identities: list[dict[str, Any]], roles: list[str]) -> str:
    def launch(d: dict[str, Any]) -> str:
        parts = []
        for key in ("grid", "block", "cluster"):
            if d.get(key):
                parts.append(f"{key} {'x'.join(str(x) for x in d[key])}")
        if (d.get("launches") or 1) > 1:
            parts.append(f"{d['launches']} launches")
        return ", ".join(parts) or NOT_COLLECTED

    def device(d: dict[str, Any]) -> str:
        dev = d.get("device") or {}
        parts = [dev.get("name") or "device n/a"]
        if dev.get("sm_count"):
            parts.append(f"{dev['sm_count']} SMs")
        if dev.get("sm_clock_hz"):
            parts.append(f"SM clock {dev['sm_clock_hz'] / 1e9:.3f} GHz measured")
        return ", ".join(parts)

    def session(d: dict[str, Any]) -> str:
        s = d.get("session") or {}
        if s.get("tool") == "static":
            return "compile-only (static)"
        version = (s.get("tool_version") or "version n/a").split()[0]
        return (f"{s.get('tool') or 'ncu'} {version}; clock control {s.get('clock_control') or 'n/a'}; "
                f"cache control {s.get('cache_control') or 'n/a'}; replay passes {s.get('replay_passes') or 'n/a'}")

    rows = [
        ("kernel", lambda d: d.get("short_name") or d.get("name")),
        ("full name", lambda d: d.get("name")),
        ("demangled", lambda d: d.get("demangled_name")),
        ("source", lambda d: f"{d.get('source')} @{d.get('index')}"),
        ("launch", launch),
        ("device", device),
        ("collected with", session),
        ("command", lambda d: (d.get("session") or {}).get("command_line") or NOT_COLLECTED),
    ]
    head = "".join(f"<th>{escape(r)}</th>" for r in roles)
    body = "".join(
        f"<tr><th>{escape(label)}</th>" + "".join(f"<td class=\"ident\">{escape(fn(d))}</td>" for d in identities) + "</tr>"
        for label, fn in rows
    )
    return f"<table class=\"identity\"><thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table>"


def _sentence(note: str) -> str:
    """A findings note as a sentence of its own ('' stays '')."""
    return f"Findings{note}." if note else ""


def _verdict_html(verdict: dict[str, Any] | None, name_a: str, name_b: str) -> str:
    """The headline: who is faster and by how much, and the main reason when one is named."""
    if not verdict:
        return ""
    a_ns, b_ns, faster = verdict.get("a_ns"), verdict.get("b_ns"), verdict.get("faster")
    if not (is_number(a_ns) and is_number(b_ns)) or faster is None:
        return "<p>Durations: not collected for both kernels; no verdict on which is faster.</p>"
    a_text, b_text = format_value(a_ns, "ns"), format_value(b_ns, "ns")
    if faster == "same":
        text = f"A and B take the same time ({a_text} vs {b_text})."
    else:
        slower, quicker = ("A", "B") if faster == "b" else ("B", "A")
        gap = format_value(abs(float(a_ns) - float(b_ns)), "ns")
        text = (f"{slower} is {float(verdict.get('slower_by') or 0.0) * 100:.1f}% slower than {quicker} "
                f"({a_text} vs {b_text}, a gap of {gap}).")
    out = f"<p class=\"verdict\"><b>{escape(text)}</b></p>"
    reason = verdict.get("main_reason")
    if reason:
        share = f" (explains ~{float(reason['explains']) * 100:.0f}% of the gap)" if is_number(reason.get("explains")) else ""
        out += f"<p><b>Main reason:</b> {escape(reason.get('title'))}{escape(share)}</p>"
    elif verdict.get("unexplained"):
        # Within noise, or no cause explaining enough of the gap: said, as in the terminal.
        note = str(verdict["unexplained"])
        out += f"<p><b>{escape(note[0].upper() + note[1:])}.</b></p>"
    return out
