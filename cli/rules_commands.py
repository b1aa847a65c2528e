"""`kernelscope rules list` and `kernelscope rules explain ID`: the rules the diagnostics apply."""

from __future__ import annotations

import click

from kernelscope.cli.report_commands import list_format_option

_RULES_OPTION_HELP = "Extra rule file(s) (TOML, docs/rules.md) adding rules, replacing rules by id, or overriding thresholds."


@click.group("rules")
def rules_group():
    """The rules that explain a kernel's profile (alone, vs a reference, vs a baseline)."""


@rules_group.command("list")
@click.option("--rules", "rule_files", multiple=True, type=click.Path(dir_okay=False), help=_RULES_OPTION_HELP)
@list_format_option
def list_rules(rule_files, fmt):
    """One line per rule: id, severity, what it compares, title."""
    from kernelscope.reports.structured import dumps
    from kernelscope.reports.terminal import make_console
    from kernelscope.rules.engine import load_rules

    ruleset = load_rules(rule_files)
    ordered = sorted(ruleset.rules.values(), key=lambda r: (r.compares, r.id))
    if fmt == "json":
        click.echo(dumps({"schema": "kernelscope.rules", "schema_version": 1, "files": list(ruleset.files),
                          "rules": [{"id": r.id, "severity": r.severity, "compares": r.compares, "title": r.title,
                                     "section": r.section, "file": r.file} for r in ordered]}), nl=False)
        return
    console = make_console()
    for rule in ordered:
        console.print(f"{rule.id:<36} {rule.severity:<8} {rule.compares:<10} {rule.title}")
    console.print(f"[dim]{len(ruleset.rules)} rules from {len(ruleset.files)} file(s); "
                  "`kernelscope rules explain ID` for one rule[/dim]")


@rules_group.command("explain")
@click.argument("rule_id")
@click.option("--rules", "rule_files", multiple=True, type=click.Path(dir_okay=False), help=_RULES_OPTION_HELP)
def explain_rule(rule_id, rule_files):
    """Everything about one rule: condition, thresholds, named values, message, hint, section, file."""
    from kernelscope.reports.terminal import make_console
    from kernelscope.rules.engine import load_rules

    rule = load_rules(rule_files).rule(rule_id)
    console = make_console()
    console.print(f"[bold]{rule.id}[/bold] — {rule.title}")
    console.print(f"  severity:   {rule.severity}")
    console.print(f"  compares:   {rule.compares}")
    if rule.description:
        console.print(f"  what:       {' '.join(rule.description.split())}")
    console.print(f"  condition:  {rule.texts.get('condition', rule.condition.text)}")
    for name, value in rule.thresholds.items():
        console.print(f"  threshold:  {name} = {value:g}")
    for name, expr in rule.lets.items():
        console.print(f"  let:        {name} = {rule.texts.get('let.' + name, expr.text)}")
    if rule.impact is not None:
        text = rule.texts.get("impact", rule.impact.text)
        console.print(f"  impact:     {text}  (estimated share of the kernel's time at stake, 0..1, for ranking)")
    console.print(f"  message:    {rule.message}")
    console.print(f"  hint:       {rule.hint}")
    console.print(f"  section:    {rule.section}")
    console.print(f"  file:       {rule.file}")


def register(group: click.Group) -> None:
    group.add_command(rules_group)
