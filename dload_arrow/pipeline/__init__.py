"""Lazy, deterministic, resumable pipelines over record batches.

Build one from a dataset (``ds.pipeline()``, ``ds.shuffle(...)``) or from any iterable
(:func:`from_iterable`), chain operators (``map``, ``filter``, ``batch``, ...), combine several
with :func:`mix`, :func:`concat`, :func:`zip_with`, :func:`select`, :func:`choice`, and iterate.
"""

from __future__ import annotations

from dload_arrow.args import name_as
from dload_arrow.pipeline.base import Pipeline, PipelineIterator
from dload_arrow.pipeline.batching import default_collate
from dload_arrow.pipeline.check import CheckReport
from dload_arrow.pipeline.combine import concat, zip_with
from dload_arrow.pipeline.dataset import DatasetPipe
from dload_arrow.pipeline.padding import pad_collate
from dload_arrow.pipeline.router import choice, mix, select
from dload_arrow.pipeline.sequences import SequenceOps
from dload_arrow.pipeline.sources import from_iterable, random_stream

name_as(Pipeline, SequenceOps)  # errors and pickles name Pipeline.pack, not the mixin

__all__ = [
    "CheckReport",
    "DatasetPipe",
    "Pipeline",
    "PipelineIterator",
    "choice",
    "concat",
    "default_collate",
    "from_iterable",
    "mix",
    "pad_collate",
    "random_stream",
    "select",
    "zip_with",
]
