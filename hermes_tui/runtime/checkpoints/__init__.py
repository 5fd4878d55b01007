"""Checkpoints: snapshots of a session's workspace in a shadow git repository, before each turn
and each call that can write, so that what the agent changed can be seen and put back
(docs/checkpoints.md)."""
