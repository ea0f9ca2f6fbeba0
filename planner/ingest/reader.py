"""Opening a trace file: plain or gzip, with a guard against huge lines and broken streams.

``open_binary`` returns a file object whose ``read`` checks, in bounded memory, that no line is
longer than ``max_line_bytes`` and converts gzip and decoding failures into ``TraceFormatError``.
"""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path

import numpy as np

from planner.ingest import limits
from planner.ingest.errors import TraceFormatError

GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_MAX_LINE_BYTES = 1024 * 1024  # 1 MiB: a Mooncake line with 2,000 prefix blocks is ~14 kB
SNIFF_BYTES = 64 * 1024


def is_gzip(path: str | Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


class GuardedStream(io.RawIOBase):
    """Wraps a binary stream: counts bytes and lines, rejects over-long lines, names gzip damage."""

    def __init__(
        self,
        raw,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        compressed: bool = False,
        size_hint: int | None = None,
    ) -> None:
        super().__init__()
        self._raw = raw
        self._max = max_line_bytes
        self._compressed = compressed
        self._run = 0  # bytes since the last newline
        self.lines = 0  # complete lines seen so far
        self.bytes_read = 0
        self.size_hint = size_hint

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        return n

    def read(self, size: int = -1) -> bytes:
        try:
            data = self._raw.read(size if size is not None and size >= 0 else 8 * 1024 * 1024)
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise TraceFormatError(
                f"the gzip stream is truncated or corrupt after {self.bytes_read:,} decompressed bytes ({exc})",
                line=self.lines + 1,
                hint="upload the complete file again, or decompress it and check it with `gzip -t`",
            ) from None
        if not data:
            return b""
        self._check_lines(data)
        self.bytes_read += len(data)
        if self._compressed:
            self._check_inflation()
        return data

    def _check_inflation(self) -> None:
        """Refuse a gzip bomb while it inflates: an absolute cap and a compression-ratio cap."""
        lim = limits.current()
        if self.bytes_read > lim.max_decompressed_bytes:
            raise TraceFormatError(
                f"the gzip file decompresses to more than {lim.max_decompressed_bytes:,} bytes",
                line=self.lines + 1,
                hint="split the trace, or ask the operator to raise TRACE_MAX_DECOMPRESSED_BYTES",
            )
        if self.bytes_read > lim.ratio_after_bytes:
            fileobj = getattr(self._raw, "fileobj", None)
            try:
                packed = fileobj.tell() if fileobj is not None else 0
            except (OSError, ValueError):
                packed = 0
            if packed and self.bytes_read / packed > lim.max_compression_ratio:
                raise TraceFormatError(
                    f"the gzip file inflates more than {lim.max_compression_ratio:g} times ({packed:,} compressed "
                    f"bytes gave {self.bytes_read:,} so far): refused as a possible decompression bomb",
                    line=self.lines + 1,
                    hint="upload the trace uncompressed or less repetitive, or ask the operator to raise "
                    "TRACE_MAX_COMPRESSION_RATIO",
                )

    def _check_lines(self, data: bytes) -> None:
        newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
        before = self.lines
        if newlines.size == 0:
            self._run += len(data)
            if self._run > self._max:
                self._too_long(before + 1, self._run)
            return
        first = self._run + int(newlines[0])
        if first > self._max:
            self._too_long(before + 1, first)
        if newlines.size > 1:
            inner = np.diff(newlines) - 1
            worst = int(np.argmax(inner))
            if inner[worst] > self._max:
                self._too_long(before + 2 + worst, int(inner[worst]))
        self.lines += int(newlines.size)
        self._run = len(data) - int(newlines[-1]) - 1
        if self._run > self._max:
            self._too_long(self.lines + 1, self._run)

    def _too_long(self, line: int, length: int) -> None:
        raise TraceFormatError(
            f"a line is longer than {self._max:,} bytes (at least {length:,}); this is not a "
            "line-oriented trace or it lacks line breaks",
            line=line,
            hint="one request per line; check the file is CSV or JSON lines and not binary or minified JSON",
        )

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


def open_binary(path: str | Path, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> GuardedStream:
    path = Path(path)
    size = path.stat().st_size
    if is_gzip(path):
        return GuardedStream(gzip.open(path, "rb"), max_line_bytes=max_line_bytes, compressed=True, size_hint=size)
    return GuardedStream(open(path, "rb"), max_line_bytes=max_line_bytes, size_hint=size)


def sniff(path: str | Path, n: int = SNIFF_BYTES) -> bytes:
    """The first ``n`` decompressed bytes (gzip damage in them is reported as such)."""
    stream = open_binary(path, max_line_bytes=1 << 62)
    try:
        out = b""
        while len(out) < n:
            block = stream.read(n - len(out))
            if not block:
                break
            out += block
        return out
    finally:
        stream.close()


def check_text(head: bytes) -> str:
    """Decode the sniffed head as UTF-8 text or raise a clear error for binary content."""
    if not head.strip():
        raise TraceFormatError(
            "the file is empty", line=1, hint="upload a CSV with a header row and one request per line, or JSON lines"
        )
    if b"\x00" in head:
        raise TraceFormatError(
            "the file is binary (it contains NUL bytes), not a CSV or JSON-lines trace",
            line=head[: head.index(b"\x00")].count(b"\n") + 1,
            hint="upload the trace as text (CSV or JSON lines), optionally gzip-compressed",
        )
    try:
        # A multi-byte character may be cut at the end of the sniffed block (only when more follows).
        return head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(head) - 4 and len(head) >= SNIFF_BYTES and exc.start > 0:
            return head[: exc.start].decode("utf-8")
        raise TraceFormatError(
            f"the file is not UTF-8 text (byte 0x{head[exc.start]:02x} at offset {exc.start})",
            line=head[: exc.start].count(b"\n") + 1,
            hint="save the trace as UTF-8 CSV or JSON lines",
        ) from None
