"""A model folder on a local file system: the only place :mod:`ome_selector.modelfiles` reads local files.

Of a safetensors file only the 8-byte length and the JSON header are read; the file's size (from ``stat``, not
from reading) shows whether the tensor data the header describes is all there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from ome_selector.modelfiles.errors import ModelFileError
from ome_selector.modelfiles.safetensors import (
    PREFIX_BYTES,
    Header,
    check_file_size,
    header_length,
    parse_header,
)

__all__ = ["MAX_JSON_BYTES", "LocalModelFolder", "parse_json_object"]

#: config.json, model_index.json and safetensors indexes are a few kilobytes to a few megabytes.
MAX_JSON_BYTES = 100_000_000


def parse_json_object(location: str, data: bytes) -> dict[str, Any]:
    """The JSON object ``data`` holds; ModelFileError naming ``location`` when it is not one."""
    try:
        document = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ModelFileError(location, "invalid JSON: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise ModelFileError(location, f"invalid JSON: {error.msg} at line {error.lineno}") from None
    except RecursionError:
        raise ModelFileError(location, "invalid JSON: nested too deeply") from None
    if not isinstance(document, dict):
        raise ModelFileError(location, "invalid JSON: not an object")
    return document


class LocalModelFolder:
    """A Hugging Face-layout model folder (``config.json``, safetensors files) at ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        #: Bytes read so far, and from how many files.
        self.bytes_read = 0
        self.files_read = 0

    def location(self, name: str) -> str:
        return str(self.root / name)

    def exists(self, name: str) -> bool:
        return (self.root / name).is_file()

    def _open(self, name: str) -> BinaryIO:
        try:
            stream = (self.root / name).open("rb")
        except FileNotFoundError:
            raise ModelFileError(self.location(name), "missing") from None
        except OSError as error:
            raise ModelFileError(self.location(name), f"cannot read: {error.strerror or error}") from None
        self.files_read += 1
        return stream

    def _read(self, stream: BinaryIO, name: str, size: int) -> bytes:
        try:
            data = stream.read(size)
        except OSError as error:
            raise ModelFileError(self.location(name), f"cannot read: {error.strerror or error}") from None
        self.bytes_read += len(data)
        return data

    def read_json(self, name: str) -> dict[str, Any]:
        location = self.location(name)
        with self._open(name) as stream:
            data = self._read(stream, name, MAX_JSON_BYTES + 1)
        if len(data) > MAX_JSON_BYTES:
            raise ModelFileError(location, f"larger than {MAX_JSON_BYTES} bytes: not model metadata")
        return parse_json_object(location, data)

    def read_headers(self, names: Sequence[str]) -> list[Header]:
        return [self._read_header(name) for name in names]

    def _read_header(self, name: str) -> Header:
        location = self.location(name)
        with self._open(name) as stream:
            length = header_length(location, self._read(stream, name, PREFIX_BYTES))
            data = self._read(stream, name, length)
            if len(data) < length:
                raise ModelFileError(
                    location,
                    f"truncated: the safetensors header is {length} bytes, the file has {len(data)} of them",
                )
            file_size = os.fstat(stream.fileno()).st_size
        header = parse_header(location, data)
        check_file_size(location, length, header, file_size)
        return header
