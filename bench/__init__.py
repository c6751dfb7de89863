"""Throughput and latency benchmarks; results are printed, not asserted."""
