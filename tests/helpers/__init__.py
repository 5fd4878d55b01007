"""Helpers the test modules share (tests/ is on sys.path: ``from helpers.pilot import submit``).

Test modules import from here, never from each other."""
