"""``StatefulLoader``: a plain torch DataLoader that checkpoints what the trainer consumed.

DataLoader workers prefetch ahead of the training loop, so no worker knows what the trainer
has taken. This wrapper counts items as the loop receives them, in the main process, and keeps
the dataset's cursor there: ``loader.state_dict()`` (or ``ds.state_dict()``) is exact and small,
and resumes with any number of workers or ranks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch.utils.data

from dload_arrow.args import check_count
from dload_arrow.errors import ConfigError
from dload_arrow.pipeline.guarded import Guarded
from dload_arrow.torch.dataset import StreamDataset
from dload_arrow.torch.forking import start_workers
from dload_arrow.torch.moves import wait_for_last

__all__ = ["StatefulLoader"]


class StatefulLoader:
    """Iterate a :class:`StreamDataset` through ``torch.utils.data.DataLoader``, resumably.

    Args:
        dataset: from :func:`dload_arrow.torch.as_iterable_dataset`.
        **loader_kwargs: passed to DataLoader (``num_workers``, ``persistent_workers``,
            ``pin_memory``, ``prefetch_factor``, ...). ``batch_size`` must stay None: batch in
            the pipeline (``pipe.batch(n)``) so batches are the same whatever the workers.

    Each ``iter()`` is the next epoch unless ``set_epoch`` or ``load_state_dict`` said
    otherwise.
    """

    def __init__(self, dataset: StreamDataset, **loader_kwargs: Any) -> None:
        if not isinstance(dataset, StreamDataset):
            raise ConfigError(
                f"StatefulLoader needs a dataset from dload_arrow.torch.as_iterable_dataset, "
                f"got {type(dataset).__name__}"
            )
        if loader_kwargs.get("batch_size") is not None:
            raise ConfigError(
                f"batch_size={loader_kwargs['batch_size']}: batch in the pipeline instead "
                "(pipe.batch(n)), so each batch is the same whatever the number of workers"
            )
        if loader_kwargs.get("in_order", True) is not True:
            raise ConfigError(
                "in_order=False: the checkpoint counts the items the loop received, which "
                "must come in the stream's order; keep in_order=True (the default)"
            )
        check_count("StatefulLoader", "num_workers", loader_kwargs.get("num_workers", 0))
        loader_kwargs["batch_size"] = None
        if not dataset.to_tensors:  # torch's default_convert would make numpy tensors
            loader_kwargs.setdefault("collate_fn", _as_given)
        self.dataset = dataset
        self.loader = torch.utils.data.DataLoader(dataset, **loader_kwargs)

    @property
    def num_workers(self) -> int:
        """The DataLoader's worker processes (0: items are made in this process)."""
        return int(self.loader.num_workers)

    def __repr__(self) -> str:
        return f"StatefulLoader({self.dataset!r}, num_workers={self.num_workers})"

    def __len__(self) -> int:
        return len(self.dataset)

    def __iter__(self) -> Iterator[Any]:
        return Guarded(self._iterate(), "StatefulLoader")

    def _iterate(self) -> Iterator[Any]:
        wait_for_last(self)  # a to_device loop over this loader, left early: its thread first
        if self.num_workers == 0:
            # The dataset iterates in this process and counts what it hands out itself.
            yield from self.loader
            return
        report = self.dataset.check(self.num_workers)  # fail here, not inside a worker
        if report is not None:
            report.raise_if_infeasible()
        cursor = self.dataset._begin_driven(self.num_workers)
        it = start_workers(self.loader)  # the collector frozen while it forks (forking.py)
        try:
            for item in it:
                cursor.check_current()
                cursor.consumed += 1
                yield item
            cursor.done = True
        finally:
            # Stop the workers now when the epoch ended, failed or was left early (persistent
            # workers only when it did not end: DataLoader reuses them). An iterator left to
            # the garbage collector can outlive its epoch (an exception's traceback holds it)
            # and be collected in a worker the next loader forks, where its __del__ fails
            # ("can only test a child process").
            persistent = getattr(self.loader, "persistent_workers", False)
            shutdown = getattr(it, "_shutdown_workers", None)
            if shutdown is not None and not (persistent and cursor.done):
                shutdown()
                if persistent:
                    self.loader._iterator = None  # the next epoch starts new workers
            del it

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` epoch ``epoch`` (its order), from its start, or from the
        position a loaded state holds in that epoch (:meth:`StreamDataset.set_epoch`)."""
        self.dataset.set_epoch(epoch)

    def state_dict(self) -> dict[str, Any]:
        """The dataset's cursor: epoch and global position of what the trainer consumed."""
        return self.dataset.state_dict()

    def load_state_dict(self, state: dict[str, Any], strict: bool = True) -> None:
        """Resume from a state of this loader, the dataset or a StatefulDataLoader
        (``strict=False``: from a pipeline whose function's code was fixed since)."""
        self.dataset.load_state_dict(state, strict)


def _as_given(item: Any) -> Any:
    """The collate_fn of a dataset made with ``to_tensors=False``: items as the pipeline
    made them (a module function: workers started by spawn unpickle it)."""
    return item
