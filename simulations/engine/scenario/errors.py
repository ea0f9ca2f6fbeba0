"""The engine's input error: ``ScenarioError(field, message, hint=...)`` names the offending value's dotted path.

At the bottom of the engine's import layers (it imports nothing), so configuration (config.py), energy and the
policies can all raise it; ``config.ScenarioError`` is the same class.
"""

from __future__ import annotations


class ScenarioError(ValueError):
    """A scenario that cannot run: ``field`` is the dotted path of the offending value, ``hint`` how to fix it."""

    def __init__(self, field_path: str, message: str, *, hint: str = "") -> None:
        super().__init__(f"{field_path}: {message}")
        self.field = field_path
        self.message = message
        self.hint = hint
