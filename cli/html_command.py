"""`kernelscope report`: one self-contained HTML page (and optionally PNG plots) from a result."""

from __future__ import annotations

from pathlib import Path

import click

from kernelscope.cli.output_files import check_output_file, check_output_folder, force_option, write_text
from kernelscope.errors import UserError

@click.command("report")
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT [INPUT2]")
@click.option("-o", "--output", default="report.html", show_default=True, type=click.Path(dir_okay=False),
              help="The HTML file to write.")
@click.option("--png", "png_dir", default=None, type=click.Path(file_okay=False),
              help="Also write each plot as a PNG image into this folder.")
@click.option("--title", default=None, help="Page title (default: from the input).")
@click.option("--catalog", "catalog_files", multiple=True, type=click.Path(dir_okay=False),
              help="Extra catalog TOML file(s) adding or overriding metric entries.")
@click.option("--rules", "rule_files", multiple=True, type=click.Path(dir_okay=False),
              help="Extra rule file(s) for the findings of a kernel pair.")
@click.option("--disable", "disabled", multiple=True, metavar="ID", help="Rule id(s) to leave out.")
@force_option
def report_cmd(inputs, output, png_dir, title, catalog_files, rule_files, disabled, force):
    """Write one self-contained HTML page with findings, metric views and plots.

    INPUT is a `diff`, `show` or `gate` JSON, a `sweep --json` result, or a report
    (FILE.ncu-rep[:REGEX] or FILE:@INDEX). Two INPUTs are a kernel (A) and its reference (B);
    one report with exactly two matching kernels is read the same way, and a report made by
    `profile` (or the .kernelscope.json beside it) is its target against its reference.
    The page needs no network: plots are inline SVG. --png DIR writes the same plots as images.
    """
    if len(inputs) > 2:
        raise UserError(f"report takes one or two inputs, got {len(inputs)}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UserError("kernelscope report needs matplotlib (pip install matplotlib)") from None
    from kernelscope.reports import html
    from kernelscope.reports.page_inputs import PageOptions, build_page

    check_output_file(output, force, "page")
    check_output_folder(png_dir, "PNG plots")
    options = PageOptions(title, tuple(catalog_files), tuple(rule_files), tuple(disabled))
    page = build_page(tuple(inputs), options)
    text = html.render(page)
    if png_dir and Path(png_dir).is_dir():
        for plot in page.plots:
            check_output_file(str(Path(png_dir) / f"{plot.name}.png"), force, "PNG plot")
    write_text(output, text, force=force, what="page")
    click.echo(f"wrote {output} ({len(page.plots)} plot{'s' if len(page.plots) != 1 else ''}, {len(text) // 1024} KiB)")
    if png_dir:
        try:
            written = html.write_pngs(page, png_dir)
        except OSError as e:
            raise UserError(f"cannot write PNG files into {png_dir}: {e.strerror or e}") from None
        for path in written:
            click.echo(f"wrote {path}")


def register(group: click.Group) -> None:
    group.add_command(report_cmd)
