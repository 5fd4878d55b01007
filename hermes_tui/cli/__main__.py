"""Allow ``python -m hermes_tui.cli`` (the same as ``python -m hermes_tui``)."""

from hermes_tui.cli import main

raise SystemExit(main())
