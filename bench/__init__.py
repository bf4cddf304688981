"""Benchmarks: dload_arrow beside its peers (see bench/README.md). Not part of the package."""
