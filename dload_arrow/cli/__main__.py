"""``python -m dload_arrow.cli``: the ``dload`` command."""

from dload_arrow.cli.main import run

run()
