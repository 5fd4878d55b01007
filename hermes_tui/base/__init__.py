"""The floor: helpers every layer may use, that know nothing of hermes-tui's features.

Paths under ``$HERMES_HOME`` (:mod:`.paths`), sizes and durations (:mod:`.units`), bounded file
reads and atomic writes (:mod:`.fsutil`), lazy package exports (:mod:`.lazy`), YAML read as plain
data (:mod:`.safe_yaml`) and untrusted text made safe to show (:mod:`.text`).

The layers, lowest first: ``base`` ← ``config`` ← ``runtime`` | ``storage`` ← ``agent`` ←
``tui`` | ``cli``; nothing imports upward. This package imports nothing of the project outside
itself, and nothing heavy at import: the config is read with it before the app's first frame.
"""
