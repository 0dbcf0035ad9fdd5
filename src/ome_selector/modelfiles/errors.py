"""The one error the model-file reader raises: what went wrong, and with which file."""

from __future__ import annotations

__all__ = ["ModelFileError"]


class ModelFileError(Exception):
    """A model's files cannot be read or make no sense; ``str()`` is one line naming the file.

    ``location`` is the file as the user knows it: a path, or ``hf://ORG/NAME[@REVISION]/FILE``.
    """

    def __init__(self, location: str, reason: str) -> None:
        # One line, whatever a server or a file put into the reason.
        self.location = location
        self.reason = " ".join(reason.split())
        super().__init__(f"{location}: {self.reason}")
