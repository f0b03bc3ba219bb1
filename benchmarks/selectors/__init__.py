"""Reads of the benchmark runner: who may see and operate what (``access``),
pools and hosts, campaigns and runs, metric exports."""
