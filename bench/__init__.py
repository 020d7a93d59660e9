"""Benchmarks: measured figures, printed (and as JSON), never asserted in tests."""
