"""What every converter shares: the writer it fills, what it reports, and writing the result."""

import datetime
import os
import pathlib
import sys
import tempfile
from typing import Dict, List, Optional


class ConversionError(ValueError):
    """A model libmt cannot convert (or would convert wrongly): says what and why."""


class Conversion:
    """One conversion's writer, notes (what was done), warnings and metadata."""

    def __init__(self, source_format: str, source: str) -> None:
        self.source_format = source_format
        self.source = source
        self.notes: List[str] = []
        self.warnings: List[str] = []
        self.metadata: Dict[str, str] = {}
        self._writer = None
        self.config = None

    def note(self, text: str) -> None:
        self.notes.append(text)

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def writer(self, config):
        from . import _libmt

        config.validate()
        self.config = config
        self._writer = _libmt.ModelWriter(config)
        return self._writer

    def finish(self, version: str) -> bytes:
        """The model file's bytes, with the metadata set."""
        if self._writer is None:
            raise ConversionError("the converter wrote no model")
        metadata = {k: v for k, v in self.metadata.items() if v}
        metadata.update({"tool": "libmt.convert", "tool_version": version,
                         "created": datetime.date.today().isoformat(), "converted_with": self.source_format})
        self._writer.set_metadata(metadata)
        return self._writer.serialize()


def write_atomically(path: pathlib.Path, data: bytes) -> None:
    """A temporary file in the same directory, renamed over `path`: never a partial model."""
    path = pathlib.Path(path)
    directory = path.parent if str(path.parent) else pathlib.Path(".")
    fd, temporary = tempfile.mkstemp(prefix="." + path.name + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def report(conversion: Conversion, output: Optional[str], size: int, stream=sys.stderr) -> None:
    print(f"converted {conversion.source} ({conversion.source_format})" + (f" -> {output} ({size:,} bytes)" if output else ""),
          file=stream)
    for line in conversion.notes:
        print(f"  {line}", file=stream)
    for line in conversion.warnings:
        print(f"  warning: {line}", file=stream)
