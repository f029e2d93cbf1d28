"""Experiments: orchestration above the invoker and the analyzer (capacity searches, sweeps)."""
