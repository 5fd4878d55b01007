"""Write docs/providers.md from the provider table (hermes_tui/agent/models/catalog.py)."""

from pathlib import Path

from hermes_tui.agent.models.catalog import markdown

if __name__ == "__main__":
    target = Path(__file__).resolve().parent.parent / "docs" / "providers.md"
    target.write_text(markdown())
    print(f"wrote {target}")
