"""``dload demo``: the whole tour in about ten seconds on the configured (else the default) root.

It writes a small image-like dataset as a folder of files and another as a tar.zst archive,
commits both (the archive streamed, never extracted), commits the folder again to show the
same version id with nothing uploaded, asks the catalog a question in SQL, and streams a
shuffled mix of both datasets into a tiny torch model (skipped, saying so, without torch).
"""

from __future__ import annotations

import importlib.util
import tempfile
import time
from collections.abc import Callable
from typing import Any

import click

from dload_arrow.cli.demo_data import CLASSES, write_archive, write_folder
from dload_arrow.cli.output import emit, json_option, open_repo, print_table
from dload_arrow.cli.setup import shown_path
from dload_arrow.sizes import format_bytes, plural

__all__ = ["COMMANDS", "demo"]

_SHARD = 64 * 1024  # small shards so even this tiny data spans several of them


def _say(quiet: bool, text: str) -> None:
    if not quiet:
        click.echo(text)


def _train(pipe: Any, steps: int) -> dict[str, Any]:
    from dload_arrow.torch.demo import train_linear

    return train_linear(pipe, steps=steps, x="npy", y="cls", num_classes=len(CLASSES))


@click.command()
@click.option("--root", default=None,
              help="Root to use (default: as for every command, DLOAD_ROOT, then dload.toml, "
                   "then the user config, else a local directory in your data dir; the first "
                   "line printed names it).")
@click.option("--cache-dir", default=None, help="Local cache directory.")
@click.option("--cache-budget", default=None, help="Cache size limit, e.g. 50GB or auto.")
@click.option("--samples", type=click.IntRange(min=1), default=256, show_default=True,
              help="Samples in the folder dataset.")
@click.option("--steps", type=click.IntRange(min=1), default=20, show_default=True,
              help="Training steps (batches of 32; the mix repeats, new shuffle each pass).")
@json_option
def demo(root: str | None, cache_dir: str | None, cache_budget: str | None, samples: int,
         steps: int, as_json: bool) -> None:
    """Tour dload: ingest a folder and an archive, recommit, SQL, train on a shuffled mix.

    Runs in seconds on the configured root (`dload status` shows which; with nothing
    configured, a local directory). It writes datasets demo-images and demo-extra there.

    \b
    Example:
      dload demo
    """
    import dload_arrow as dl
    from dload_arrow.ingest import open_source
    from dload_arrow.row_values import table_rows

    quiet = as_json
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    out: dict[str, Any] = {}

    def step(name: str, fn: Callable[[], Any]) -> Any:
        t = time.perf_counter()
        result = fn()
        timings[name] = round(time.perf_counter() - t, 3)
        return result

    repo = open_repo(root, cache_dir, cache_budget, must_exist=False)
    shown = shown_path(repo.settings.root)  # absolute, as `dload status` shows it
    out["root"] = {"value": shown, "source": repo.settings.sources.get("root")}
    _say(quiet, f"root: {shown} ({repo.settings.sources.get('root')})")
    with tempfile.TemporaryDirectory(prefix="dload-demo-") as tmp:
        folder, archive = f"{tmp}/images", f"{tmp}/extra.tar.zst"
        raw = step("write files", lambda: write_folder(folder, samples))
        size = step("write archive", lambda: write_archive(archive, max(samples // 2, 8)))
        _say(quiet, f"1. wrote {samples} samples as {3 * samples} files ({format_bytes(raw)}) "
                    f"and a tar.zst archive of {max(samples // 2, 8)} more ({format_bytes(size)})")

        def commit(name: str, location: str) -> Any:
            return repo.commit(name, open_source(location).reader(), shard_size=_SHARD,
                               row_group_size=_SHARD // 4, progress=False, meta={"demo": True})

        v1 = step("commit folder", lambda: commit("demo-images", folder))
        v2 = step("commit archive", lambda: commit("demo-extra", archive))
        for n, v, what in ((2, v1, "the folder"), (3, v2, "the archive, streamed,")):
            _say(quiet, f"{n}. committed {what} as {v.name}@{v.version[:12]}: {v.num_rows} rows, "
                        f"{v.shards_total} shards, {format_bytes(v.bytes_total)} in "
                        f"{v.seconds:.2f}s ({v.shards_uploaded} shards uploaded)")
        again = step("recommit folder", lambda: commit("demo-images", folder))
        same = again.version == v1.version
        _say(quiet, f"4. committed the folder again: {again.version[:12]} "
                    f"({'same id' if same else 'DIFFERENT id'}), {again.shards_uploaded} shards "
                    f"and {format_bytes(again.bytes_uploaded)} uploaded")
        out["versions"] = {v.name: v.version for v in (v1, v2)}
        out["recommit"] = {"same_id": same, "bytes_uploaded": again.bytes_uploaded,
                           "shards_uploaded": again.shards_uploaded}

    query = ("select name, num_versions, num_rows, num_bytes, num_shards from datasets "
             "where name like 'demo-%' order by name")
    table = step("sql", lambda: repo.sql(query))
    rows = table_rows(table)
    out["sql"] = {"query": query, "rows": rows}
    _say(quiet, f"5. SQL over the catalog: {query}")
    if not quiet:
        print_table(rows)

    # the versions just committed: a pin in ./dload.lock must not pick older ones
    images = repo.dataset("demo-images", out["versions"]["demo-images"])
    extra = repo.dataset("demo-extra", out["versions"]["demo-extra"])
    # The mix ends with its first exhausted input; repeat it so --steps is always reached.
    pipe = dl.mix([images.shuffle(seed=0), extra.shuffle(seed=0)], weights=[0.8, 0.2],
                  seed=0).repeat().batch(32)
    broken = _torch_import_error()
    if broken is not None:
        out["train"] = None
        _say(quiet, f"6. skipped training: {broken}")
    else:
        res = step("train", lambda: _train(pipe, steps))
        out["train"] = res
        _say(quiet, f"6. trained a linear model for {plural(res['steps'], 'step')} on a "
                    f"shuffled 80/20 mix, repeated as needed ({res['samples']} samples): loss "
                    f"{res['first_loss']:.3f} -> {res['last_loss']:.3f}")
    total = time.perf_counter() - t_start
    out["timings"] = {**timings, "total": round(total, 3)}
    _say(quiet, "timings: " + ", ".join(f"{k} {v:.2f}s" for k, v in timings.items())
          + f"; total {total:.1f}s")
    _say(quiet, "next: dload ls; dload info demo-images; dload head demo-images -n 3")
    if quiet:
        emit(out, True)


COMMANDS = [demo]


def _torch_import_error() -> str | None:
    """Why torch cannot train here (not installed, or an install that fails to import), or
    None: the demo then skips its training step instead of failing."""
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed (pip install 'dload-arrow[torch]')"
    try:
        import torch  # noqa: F401
    except Exception as e:  # a broken install (a CUDA build without its libraries, ...)
        return (f"torch is installed but does not import ({type(e).__name__}: {e}); "
                "reinstall it (pip install torch==2.13.0) to train")
    return None
