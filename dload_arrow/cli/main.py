"""The ``dload`` command: the group, its commands, and the exit-code contract.

Exit codes: 0 success; 1 a user error (bad argument, unknown dataset, corrupt archive,
unreachable root...), printed as one line ``dload: error: ...`` without a traceback; 2 an
internal error (a bug), printed with its traceback. Ctrl-C exits 130.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import Any, TextIO

import click

from dload_arrow import __version__, errors
from dload_arrow.cli import browse, commit, data, demo, diff, refs, setup, sql, status, verify
from dload_arrow.cli.entry import Terminated, on_term
from dload_arrow.errors import DloadError

__all__ = ["cli", "main"]

# OSErrors about the user's own paths are user errors; any other exception is a bug.
_USER_OS_ERRORS = (
    FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError, FileExistsError,
)
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # a disk that is full (not a bug of ours)


class _StdoutClosed(Exception):
    """stdout's reader went away (``dload sql ... | head``): not an error, the output was
    simply no longer wanted."""


# What a script tests an error for (`jq .error.kind`), by its class: the first that matches.
_KINDS: tuple[tuple[type[BaseException], str], ...] = (
    (errors.EmptyInputError, "empty_input"), (errors.NotFoundError, "not_found"),
    (errors.ConflictError, "conflict"),
    (errors.IntegrityError, "integrity"), (errors.KeysStoredError, "keys_stored"),
    (errors.SchemaError, "schema"),
    (errors.InvalidNameError, "invalid_name"), (errors.ConfigError, "config"),
    (errors.SqlError, "sql"), (errors.PredicateError, "query"),
    (errors.InfeasiblePlanError, "infeasible"), (errors.StorageError, "storage"),
    (click.ClickException, "usage"), (OSError, "os"), (MemoryError, "memory"),
)


class _Run:
    """This run's ``--json`` (a flag before any ``--``): its user errors print as JSON."""

    json = False


def _user_error(e: BaseException, message: str) -> int:
    """Print a user error (``dload: error: ...``, or with ``--json`` one JSON line on stderr:
    ``{"error": {"kind", "type", "message"}}``) and return exit code 1."""
    if not _Run.json:
        click.echo(f"dload: error: {message}", err=True)
        return 1
    import json

    kind = next((k for cls, k in _KINDS if isinstance(e, cls)), "error")
    click.echo(json.dumps({"error": {"kind": kind, "type": type(e).__name__,
                                     "message": message}}, ensure_ascii=False), err=True)
    return 1


# Words tried for ingestion, where click would suggest a look-alike ('ingest' -> 'init').
_INGEST_WORDS = ("ingest", "import", "add", "load", "upload")
# Words for showing a dataset, where click suggests nothing (QA vision62: `dload show`).
_SHOW_WORDS = ("show", "describe", "cat", "view", "inspect")


class _Group(click.Group):
    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] in _INGEST_WORDS and args[0] not in self.commands:
            raise click.UsageError(
                f"No such command {args[0]!r}. To ingest a folder, an archive or a table: "
                "dload commit NAME --from PATH", ctx)
        if args and args[0] in _SHOW_WORDS and args[0] not in self.commands:
            raise click.UsageError(
                f"No such command {args[0]!r}. To see a dataset: dload info NAME (versions, "
                "columns, sizes), dload head NAME (its first rows)", ctx)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        # click turns an EPIPE into a silent exit 1, even outside standalone mode; a reader
        # that stops early (`| head`) is a success, as for any Unix tool.
        try:
            return super().invoke(ctx)
        except BrokenPipeError as e:
            raise _StdoutClosed() from e


def _glob_hint(e: click.UsageError) -> str:
    """For an extra argument that is a file beside ``--from`` (``--from part-*.tar`` unquoted:
    the shell gave every match, click took the first), how to pass them all."""
    found = re.search(r"unexpected extra arguments? \((.*)\)", getattr(e, "message", ""))
    name = found.group(1).split(" ")[0] if found else ""
    takes = e.ctx is not None and any("--from" in getattr(p, "opts", ())
                                      for p in e.ctx.command.params)
    if not name or not takes or not os.path.exists(name):
        return ""
    return (f"; {name!r} is a file: a pattern after --from is expanded by the shell unless "
            "quoted (--from 'shard-*.tar'), or repeat --from for each file")


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that flushing it at exit does not raise EPIPE again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (tests capture it): nothing will be flushed to a pipe


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dload")
def cli() -> None:
    """dload: versioned datasets in Parquet on a local directory or S3, streamed for training.

    \b
    Start with:  dload demo
    Then:        dload commit NAME --from DIR|ARCHIVE|TABLE
                 dload ls ; dload info NAME ; dload head NAME
    """


for module in (setup, status, commit, browse, diff, refs, data, verify, sql, demo):
    for command in module.COMMANDS:
        cli.add_command(command)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _interrupted(e: click.exceptions.Abort) -> bool:
    """Whether an Abort is Ctrl-C: click turns a KeyboardInterrupt anywhere in a command into
    Abort (the cause), and one at a prompt into Abort from None (the context). A "no" to a
    confirmation, or end of input at a prompt, is an abort: exit 1."""
    return isinstance(e.__cause__ or e.__context__, KeyboardInterrupt)


def _wraps_interrupt(e: BaseException) -> bool:
    """Whether a KeyboardInterrupt is the cause of ``e``: Python re-raises one that lands in
    some hooks as another error (a dataclass's ``__set_name__`` during a lazy import:
    RuntimeError "Error calling __set_name__"), which is still Ctrl-C, not a bug."""
    seen = 0
    cause = e.__cause__
    while cause is not None and seen < 20:
        if isinstance(cause, KeyboardInterrupt):
            return True
        cause, seen = cause.__cause__, seen + 1
    return False


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """A Python warning as the CLI prints its own: ``warning: <message>``, one line, without
    the file and source line of the library call that raised it."""
    click.echo(f"warning: {_one_line(str(message))}", err=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns (and, as a console script, exits with) the exit code."""
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    args = list(argv) if argv is not None else sys.argv[1:]
    _Run.json = "--json" in args[:args.index("--")] if "--" in args else "--json" in args
    try:
        cli.main(args=args, prog_name="dload", standalone_mode=False)
        return 0
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.exceptions.Abort as e:
        if _interrupted(e):
            return _stopped(e.__cause__ or e.__context__)
        if _Run.json:  # a prompt answered no: one JSON line of its own (QA json62)
            click.echo("", err=True)
            return _user_error(click.UsageError("aborted: answered no"), "aborted: answered no")
        click.echo("dload: aborted", err=True)
        return 1
    except click.exceptions.NoArgsIsHelpError as e:
        # `dload` or `dload cache` alone: the help a user asked for, not an error.
        click.echo(e.ctx.get_help())
        return 0
    except click.ClickException as e:
        hint = ""
        if isinstance(e, click.UsageError) and e.ctx is not None:
            hint = _glob_hint(e) or f" (see `{e.ctx.command_path} --help`)"
        return _user_error(e, f"{_one_line(e.format_message())}{hint}")
    except KeyboardInterrupt as e:
        return _stopped(e)
    except (DloadError, *_USER_OS_ERRORS) as e:
        return _user_error(e, _one_line(_os_text(e)))
    except (_StdoutClosed, BrokenPipeError):
        _silence_stdout()
        return 0
    except OSError as e:
        if e.errno not in _FULL:
            return _internal(e)
        # a full disk under the output (a CI log), where no root or cache write wraps it
        # (QA shell59: "this is a bug" after a commit that had published)
        fix = ("raise the file size limit (`ulimit -f`)" if e.errno == errno.EFBIG else
               "free space on that disk")  # (a size limit is no full disk: QA review63f)
        return _user_error(e, f"a write failed: {e.strerror or e} (the output, or a file "
                           f"dload writes there): {fix} (a version a commit published before "
                           "its output failed is kept: `dload ls` shows it)")
    except MemoryError as e:  # (pyarrow's ArrowMemoryError too) a machine's limit, no bug
        return _user_error(e, f"out of memory ({_one_line(str(e)) or 'MemoryError'}): the "
                           "process could not get the memory its work needs (a sample or "
                           "a result too large for this machine, or a limit such as `ulimit "
                           "-v`; a commit stopped so publishes nothing). Give it more memory, "
                           "or leave the largest inputs out (--exclude), or ask for less "
                           "(--limit, columns)")
    except Exception as e:
        return _internal(e)


def _os_text(e: BaseException) -> str:
    """An OSError that reached the CLI as Python words it (``[Errno 13] Permission denied:
    'x.tar'``, QA errors61) as a sentence with what to do; any other error as it is."""
    if not isinstance(e, OSError) or isinstance(e, DloadError) or not str(e).startswith(
            "[Errno") or e.filename is None:
        return str(e)
    what = f"{e.filename!r}: {e.strerror}"
    if isinstance(e, PermissionError):
        return f"{what}; this user may not use it: `ls -l` shows its owner and mode (chmod it)"
    if isinstance(e, FileNotFoundError):
        return f"{what}; check the path"
    return what


def _internal(e: Exception) -> int:
    if _wraps_interrupt(e):  # Ctrl-C inside an import or a class body Python wrapped
        return _stopped(None)
    traceback.print_exc()
    click.echo(
        f"dload: internal error ({type(e).__name__}: {_one_line(str(e))}); this is a bug, "
        "please report it with the traceback above",
        err=True,
    )
    return 2


def _stopped(e: BaseException | None) -> int:
    """Say how the command was stopped; its exit code (130 Ctrl-C, 143 SIGTERM)."""
    if isinstance(e, Terminated):
        click.echo("dload: terminated", err=True)
        return 143
    click.echo("dload: interrupted", err=True)
    return 130


def run() -> None:
    """Console-script entry point."""
    signal.signal(signal.SIGTERM, on_term)
    sys.exit(main())


if __name__ == "__main__":
    run()
