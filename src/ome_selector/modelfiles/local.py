"""A model folder on a local file system: the only place :mod:`ome_selector.modelfiles` reads local files.

Of a safetensors file only the 8-byte length and the JSON header are read; the file's size (from ``fstat``,
not from reading) shows whether the header and the tensor data it describes are all there, before anything
more is read. Every file is opened once, with ``O_NONBLOCK`` (a FIFO never blocks), and checked on the open
descriptor to be a regular file, so nothing can be swapped in between a check and the read (SPEC §10.2).
Symlinks are followed: a Hugging Face cache's snapshot files are symlinks into its blobs.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ome_selector.modelfiles.errors import ModelFileError
from ome_selector.modelfiles.limits import ReadBudget, json_object, oversized_reason
from ome_selector.modelfiles.safetensors import (
    PREFIX_BYTES,
    Header,
    QuantAwareCounting,
    check_file_size,
    check_header_fits,
    header_length,
    parse_header,
)

__all__ = ["LocalModelFolder"]

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class LocalModelFolder:
    """A Hugging Face-layout model folder (``config.json``, safetensors files) at ``root``; ``source`` is
    the folder as given, which budget errors name (SPEC §10.1: bytes read, and the deadline checked between
    reads)."""

    def __init__(self, root: Path, source: str | None = None, budget: ReadBudget | None = None) -> None:
        self.root = root
        self.budget = budget or ReadBudget(source if source is not None else str(root))
        #: Files opened so far.
        self.files_read = 0

    @property
    def bytes_read(self) -> int:
        return self.budget.bytes_read

    def location(self, name: str) -> str:
        return str(self.root / name)

    def exists(self, name: str) -> bool:
        """Whether the directory entry exists (``lstat``): a FIFO, a directory or a symlink loop is there,
        and reading it is an error; only a dangling symlink is missing."""
        path = self.root / name
        try:
            entry = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError:
            return True  # there, but unreadable: reading it says why
        if stat.S_ISLNK(entry.st_mode):
            try:
                os.stat(path)
            except (FileNotFoundError, NotADirectoryError):
                return False  # dangling
            except OSError:
                return True  # a loop, or no permission: reading it says why
        return True

    @contextmanager
    def _open(self, name: str) -> Iterator[tuple[int, int]]:
        """The open descriptor of a regular file and its size."""
        location = self.location(name)
        self.budget.remaining()
        try:
            descriptor = os.open(self.root / name, _OPEN_FLAGS)
        except FileNotFoundError:
            raise ModelFileError(location, "missing") from None
        except OSError as error:
            raise ModelFileError(location, f"cannot read: {error.strerror or error}") from None
        try:
            status = os.fstat(descriptor)
            if not stat.S_ISREG(status.st_mode):
                raise ModelFileError(location, "not a regular file")
            self.files_read += 1
            yield descriptor, status.st_size
        finally:
            os.close(descriptor)

    def _read(self, descriptor: int, name: str, size: int, available: int) -> bytes:
        """Up to ``size`` bytes from ``descriptor`` (``available`` of them expected, for the budget)."""
        self.budget.allow(min(size, max(available, 0)))
        chunks: list[bytes] = []
        left = size
        try:
            while left > 0:
                chunk = os.read(descriptor, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
                self.budget.received(len(chunk))
        except OSError as error:
            raise ModelFileError(self.location(name), f"cannot read: {error.strerror or error}") from None
        return b"".join(chunks)

    def read_json(self, name: str, limit: int) -> dict[str, Any]:
        location = self.location(name)
        with self._open(name) as (descriptor, size):
            if size > limit:  # refused unread
                raise ModelFileError(location, oversized_reason(limit))
            data = self._read(descriptor, name, limit + 1, size)
        if len(data) > limit:  # it grew meanwhile
            raise ModelFileError(location, oversized_reason(limit))
        return json_object(location, data)

    def read_headers(self, names: Sequence[str], counting: QuantAwareCounting | None = None) -> list[Header]:
        return [self._read_header(name, counting) for name in names]

    def _read_header(self, name: str, counting: QuantAwareCounting | None) -> Header:
        location = self.location(name)
        with self._open(name) as (descriptor, size):
            length = header_length(location, self._read(descriptor, name, PREFIX_BYTES, size))
            check_header_fits(location, length, size)
            data = self._read(descriptor, name, length, size - PREFIX_BYTES)
            if len(data) < length:  # it shrank meanwhile
                check_header_fits(location, length, PREFIX_BYTES + len(data))
        header = parse_header(location, data, counting)
        check_file_size(location, length, header, size)
        return header
