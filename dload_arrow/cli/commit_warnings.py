"""What a commit or an append left out or may have done twice, as lines on stderr (with
``--json`` too: a CI job's log keeps them; --json has each as a field as well)."""

from __future__ import annotations

from typing import Any

import click

from dload_arrow.errors import escaped

__all__ = ["skipped_lines", "warn_lines"]


def warn_lines(report: dict[str, Any], repeated: int | None, v: Any) -> None:
    """What the commit left out or may have done twice, on stderr."""
    # (names escaped: a newline or ESC in a file name must not split or drive the output)
    if report.get("unmatched"):
        shown = escaped(", ".join(report["unmatched"][:5]))
        n = len(report["unmatched"])
        click.echo(f"not ingested: {n} file{'s' * (n != 1)} without an extension, hidden or "
                   f"a file manager's own ({shown}{', ...' if n > 5 else ''})", err=True)
    if report.get("ignored"):
        shown = escaped(", ".join(report["ignored"][:5]))
        n = len(report["ignored"])
        click.echo(f"not read: {n} file{'s that are' if n != 1 else ' that is'} not "
                   f"{'tables' if n != 1 else 'a table'} ({shown}{', ...' if n > 5 else ''})",
                   err=True)
    for line in skipped_lines(report):
        click.echo(escaped(line), err=True)
    for line in report.get("unused_globs", []):
        click.echo(f"warning: {line}", err=True)
    if repeated:
        click.echo(f"warning: the {repeated} rows appended equal, value for value, the "
                   f"{repeated} rows before them (keys are row numbers, so nothing clashed); "
                   f"if this append ran twice by mistake, `dload rm {v.name} --version "
                   f"{v.version[:12]} --yes` undoes it", err=True)


def skipped_lines(report: dict[str, Any]) -> list[str]:
    """What the globs left out, then per skip reason how many, a few names and the fix once
    (``skipped 2 encrypted entries (a.txt, b.txt): recreate the zip without a password``)."""
    from dload_arrow.ingest import IngestReport

    left_out = IngestReport(excluded=report.get("excluded", 0), excluded_dirs=report.get(
        "excluded_dirs", [])).excluded_text()
    skipped = report.get("skipped", [])
    by_reason: dict[str, list[tuple[str, str]]] = {}
    for s in skipped:
        by_reason.setdefault(s["reason"], []).append((s["name"], s["reason"]))
    lines = [
        "skipped " + IngestReport(skipped=group).skipped_text().removeprefix(
            f"{len(group)} skipped: ")
        for group in by_reason.values()]
    if any(len(group) > 3 for group in by_reason.values()):  # skipped_text names 3 a reason
        lines.append(f"(the names of all {len(skipped)} skipped: --json)")
    return [f"not read: {left_out}, left out by --include/--exclude"] * bool(left_out) + lines
