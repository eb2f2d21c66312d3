"""Progress of translate_file on a terminal: tqdm when it is installed,
otherwise one line of libmt's own, rewritten in place on stderr."""

import sys
import time
from typing import Optional, TextIO


class Progress:
    def __init__(self, total: int, stream: Optional[TextIO] = None) -> None:
        self._stream = stream or sys.stderr
        self._total = total
        self._done = 0
        self._start = time.monotonic()
        self._last = 0.0
        self._bar = None
        try:
            import tqdm  # optional: used when installed
            self._bar = tqdm.tqdm(total=total, unit="line", file=self._stream)
        except ImportError:
            pass

    def update(self, lines: int) -> None:
        self._done += lines
        if self._bar is not None:
            self._bar.update(lines)
            return
        now = time.monotonic()
        if now - self._last >= 0.2 or self._done == self._total:
            self._last = now
            rate = self._done / max(now - self._start, 1e-9)
            self._stream.write("\r%d/%d lines, %.0f lines/s" % (self._done, self._total, rate))
            self._stream.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        else:
            self._stream.write("\n")
            self._stream.flush()
