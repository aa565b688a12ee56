"""Idempotency-Key: the first response to a creating POST, kept and replayed for repeats."""
