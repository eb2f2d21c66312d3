"""Corpus translation on Ray: libmt translators in a Ray Data actor pool.

    import ray
    import libmt.ray
    ray.init()               # a local one; ray.init(address="auto") joins a cluster
    libmt.ray.translate_file("corpus.en", "corpus.de", "en-de.mtm")
    translated = libmt.ray.translate_dataset(ray.data.read_parquet("docs/"), "en-de.mtm", column="text")

Each actor loads the model once (libmt.Model maps the file: the actors of one
node share its pages), sorts the sentences of each block it is given by
length before batching them, and adds a column of translations; the output
keeps the input's order. An actor that dies (killed, out of memory, its node
lost) is restarted by Ray and its block translated again: every line comes
out exactly once. The model path must name the same file on every node (a
shared file system, or the file copied to the same path), as must libmt's
package be installed on each. Needs Ray Data: pip install 'libmt[ray]'.
"""

import inspect
import os
import sys
import time
import warnings
from typing import Any, Dict, Iterator, List, Optional, Union

import pyarrow
import ray
import ray.data

from ._libmt import Model
from ._progress import Progress
from ._results import FileStats
from ._translator import Translator, _open_target, _read_lines

PathLike = Union[str, "os.PathLike[str]"]

# Options a corpus cannot take: results are one line of text per line, and
# callbacks, tokens and caches do not travel to other processes.
_NOT_FOR_CORPORA = ("return_scores", "num_hypotheses", "alternatives", "on_token", "cancel", "cache", "prefixes")
_TRANSLATE_OPTIONS = [name for name in inspect.signature(Translator.translate).parameters
                      if name not in ("self", "sources") + _NOT_FOR_CORPORA]
_TRANSLATOR_OPTIONS = [name for name in inspect.signature(Translator.__init__).parameters
                       if name not in ("self", "model", "num_threads")]


class Translate:
    """The map_batches callable (a Ray actor): one libmt.Translator, a
    block of rows in, the same rows out with output_column added. Use it in
    pipelines of your own as

        ds.map_batches(libmt.ray.Translate, batch_format="pyarrow", num_cpus=1, concurrency=4,
                       fn_constructor_kwargs={"model": "en-de.mtm", "column": "text"})

    column holds str (or UTF-8 bytes: invalid bytes read as U+FFFD, as
    mt_translate reads them). translator_options go to libmt.Translator,
    options to Translator.translate.
    """

    def __init__(self, model: str, column: str = "text", output_column: str = "translation",
                 num_threads: int = 1, translator_options: Optional[Dict[str, Any]] = None,
                 options: Optional[Dict[str, Any]] = None) -> None:
        self._translator = Translator(Model(model), num_threads=num_threads, **(translator_options or {}))
        self._column = column
        self._output_column = output_column
        self._options = dict(options or {})

    def __call__(self, block: "pyarrow.Table") -> "pyarrow.Table":
        if self._column not in block.column_names:
            raise KeyError("libmt.ray: no column %r in the dataset (its columns: %s)"
                           % (self._column, ", ".join(block.column_names)))
        sources = block.column(self._column).to_pylist()
        # Sorted by length over the whole block, then batched: each batch
        # holds sentences of similar length; results come back in block order.
        per_batch = self._translator.max_batch_size
        read_batches = max(1, -(-len(sources) // per_batch))
        translations = list(self._translator.translate_iterable(
            ["" if s is None else s for s in sources], read_batches=read_batches, **self._options))
        return block.append_column(self._output_column, pyarrow.array(translations, pyarrow.string()))


def translate_dataset(dataset: "ray.data.Dataset", model: PathLike, *, column: str = "text",
                      output_column: str = "translation", concurrency: Optional[int] = None,
                      num_threads: int = 1, block_size: int = 1024, retries: int = 3,
                      translator_options: Optional[Dict[str, Any]] = None, **options: Any) -> "ray.data.Dataset":
    """The dataset with output_column added: each row's column translated.
    Lazy, as Ray datasets are; its order is the input's (preserve_order is
    set in the DataContext, which the input dataset shares).

    concurrency: actors (each one model load, num_threads threads and as
      many CPUs); default: the cluster's CPUs / num_threads.
    block_size: rows given to an actor at a time (sorted by length inside).
    retries: how many times a block whose actor died is given to a restarted
      actor; a block that kills its actor more often (a sentence that crashes
      the process) fails the job with Ray's error instead of looping.
    translator_options: libmt.Translator's (max_batch_size, max_beam_size,
      shortlist, ...); options: Translator.translate's (beam_size,
      length_penalty, truncate, source_language, ...).
    The options are checked here, with the model, before anything runs.
    """
    model = os.fspath(model)
    concurrency = _check(model, column, output_column, concurrency, num_threads, block_size, retries,
                         translator_options, options)
    return _map(dataset, model, column, output_column, concurrency, num_threads, block_size, retries,
                translator_options, options)


def _map(dataset, model: str, column: str, output_column: str, concurrency: int, num_threads: int,
         block_size: int, retries: int, translator_options: Optional[Dict[str, Any]],
         options: Dict[str, Any]) -> "ray.data.Dataset":
    """translate_dataset's work, its arguments already checked."""
    with warnings.catch_warnings():
        # Ray 2.60 marks remote arguments given to map_batches deprecated (to
        # be removed in 2.64) and offers no other way to set max_task_retries:
        # pyproject.toml's ray extra stops before 2.64.
        warnings.simplefilter("ignore", DeprecationWarning)
        translated = dataset.map_batches(
            Translate, batch_format="pyarrow", batch_size=block_size, zero_copy_batch=True,
            compute=ray.data.ActorPoolStrategy(size=concurrency), num_cpus=num_threads,
            # Actors restart without end (Ray Data's default), but a block is given
            # again at most `retries` times: Ray Data's default, without end, hangs
            # the job on a block that kills every actor it reaches.
            max_task_retries=retries,
            fn_constructor_kwargs={"model": os.path.abspath(model), "column": column,
                                   "output_column": output_column, "num_threads": num_threads,
                                   "translator_options": dict(translator_options or {}), "options": options})
    translated.context.execution_options.preserve_order = True
    return translated


def translate_file(source: Union[PathLike, Any], target: Union[PathLike, Any], model: PathLike, *,
                   concurrency: Optional[int] = None, num_threads: int = 1, block_size: int = 1024,
                   retries: int = 3, window: int = 1_000_000, progress: Optional[bool] = None,
                   translator_options: Optional[Dict[str, Any]] = None, **options: Any) -> FileStats:
    """Translates a text file line by line on Ray: one output line per input
    line, in order, as mt_translate and Translator.translate_file write it
    (a line ends at LF, a CR before it is dropped). Paths or open files.

    The driver reads the file and writes the output as blocks come back, in
    order; window lines at a time are in flight (memory stays bounded on any
    corpus; an interrupted run leaves the lines translated so far on disk).
    progress: lines done on stderr; None: when stderr is a terminal.
    Other arguments as translate_dataset().
    """
    model = os.fspath(model)
    concurrency = _check(model, "text", "translation", concurrency, num_threads, block_size, retries,
                         translator_options, options)
    if window < block_size:
        raise ValueError("window = %d: must be at least block_size (%d)" % (window, block_size))
    start = time.monotonic()
    if hasattr(source, "read"):
        source = _read_lines(source)
    else:
        open(os.fspath(source), "rb").close()  # a missing input fails before the output is created
    if progress is None:
        progress = sys.stderr is not None and sys.stderr.isatty()
    lines_done = 0
    source_bytes = 0
    bar = None
    with _open_target(target) as out:
        try:
            if progress:
                bar = Progress(_count_lines(source))
            for lines in _windows(source, window):
                source_bytes += sum(len(line) for line in lines)
                blocks = [pyarrow.table({"text": pyarrow.array(lines[i:i + block_size], pyarrow.binary())})
                          for i in range(0, len(lines), block_size)]
                translated = _map(ray.data.from_arrow(blocks), model, "text", "translation", concurrency,
                                  num_threads, block_size, retries, translator_options, options)
                for block in translated.select_columns(["translation"]).iter_batches(
                        batch_size=None, batch_format="pyarrow"):
                    column = block.column("translation").to_pylist()
                    out.write(b"".join(t.encode("utf-8") + b"\n" for t in column))
                    lines_done += len(column)
                    if bar is not None:
                        bar.update(len(column))
        finally:
            if bar is not None:
                bar.close()
    return FileStats(lines_done, source_bytes, time.monotonic() - start)


def _windows(source, window: int) -> Iterator[List[bytes]]:
    """The lines of a path (read lazily) or of a list of lines, window at a time."""
    if isinstance(source, list):
        for i in range(0, len(source), window):
            yield source[i:i + window]
        return
    chunk: List[bytes] = []
    with open(os.fspath(source), "rb") as f:
        for line in f:  # binary: split at LF only
            if line.endswith(b"\n"):
                line = line[:-1]
            chunk.append(line[:-1] if line.endswith(b"\r") else line)
            if len(chunk) == window:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


def _count_lines(source) -> int:
    """How many lines _windows will give (a path is read once more for it)."""
    if isinstance(source, list):
        return len(source)
    count, last = 0, b"\n"
    with open(os.fspath(source), "rb") as f:
        for piece in iter(lambda: f.read(1 << 20), b""):
            count += piece.count(b"\n")
            last = piece[-1:]
    return count + (last != b"\n")


def _check(model: str, column: str, output_column: str, concurrency: Optional[int], num_threads: int,
           block_size: int, retries: int, translator_options: Optional[Dict[str, Any]],
           options: Dict[str, Any]) -> int:
    """Bad options and a bad model fail here, at once, not in every actor.
    Returns the number of actors (concurrency, or the default)."""
    for name in options:
        if name in _NOT_FOR_CORPORA:
            raise TypeError("libmt.ray does not take %s: one line of text per line, nothing that "
                            "stays in this process" % name)
        if name not in _TRANSLATE_OPTIONS:
            raise TypeError("libmt.ray: unknown option %r (Translator.translate's: %s)"
                            % (name, ", ".join(_TRANSLATE_OPTIONS)))
    for name in translator_options or {}:
        if name not in _TRANSLATOR_OPTIONS:
            raise TypeError("libmt.ray: unknown translator option %r (libmt.Translator's: %s)"
                            % (name, ", ".join(_TRANSLATOR_OPTIONS)))
    if column == output_column:
        raise ValueError("output_column %r: must differ from column" % output_column)
    if num_threads < 1:
        raise ValueError("num_threads = %d: must be at least 1" % num_threads)
    if block_size < 1:
        raise ValueError("block_size = %d: must be at least 1" % block_size)
    if retries < 0:
        raise ValueError("retries = %d: must be at least 0" % retries)
    if concurrency is not None and int(concurrency) < 1:
        raise ValueError("concurrency = %d: must be at least 1" % concurrency)
    # Loads the model (mapped: cheap) and translates one empty sentence with
    # the options: a wrong file or option raises here as it would in an actor.
    translator = Translator(Model(model), num_threads=1, **(translator_options or {}))
    translator.translate([""], **options)
    return _default_concurrency(num_threads) if concurrency is None else int(concurrency)


def _default_concurrency(num_threads: int) -> int:
    if not ray.is_initialized():
        ray.init()
    cpus = int(ray.cluster_resources().get("CPU", 1))
    return max(1, cpus // num_threads)
