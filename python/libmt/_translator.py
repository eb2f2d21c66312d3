"""libmt.Translator: the native session (libmt._libmt._Translator) with the
Python conveniences: typed options, iterables, files."""

import io
import os
import queue
import sys
import threading
import time
from typing import IO, Any, Callable, Iterable, Iterator, List, Optional, Sequence, Union

from . import _libmt
from ._progress import Progress
from ._results import FileStats, ParagraphTranslation, TokenEvent, TranslatedSentence, TranslationResult

Text = Union[str, bytes]
PathLike = Union[str, "os.PathLike[str]"]


class Translator(_libmt._Translator):
    """Translates with one model; not for use by two threads at once (calls
    are serialised), but any number of translators, one per thread, run in
    parallel on one shared Model: the GIL is released while translating.

    model: a libmt.Model (shared) or a model file's path (loaded for this translator).
    device: "cpu" or "cuda" (needs libmt built with CUDA, see docs/cuda.md);
      device_index: which GPU.
    num_threads: threads of this translator (its own pool; 1: the calling thread only).
    thread_split: with num_threads > 1, "sentences" (each thread its own
      sentences), "layers" (every layer divided: a single sentence uses all
      threads) or "automatic" (sentences; layers for small batches of models of 24 MB or more).
    max_batch_size: most sentences translated together; longer lists are split.
    max_source_length: longest source in tokens, EOS not counted
      (default: 256, or what the model's positions allow).
    max_target_length: most tokens generated, EOS included (default: 256, or the model's limit).
    max_beam_size: the largest beam_size translate() will be given.
    max_text_bytes: longest source text in UTF-8 bytes (default 4096); a
      longer one is an error unless translate(truncate=True).
    quality_scores: text results also give each hypothesis' words with
      quality scores (TranslationResult.words, .quality); memory for them is
      planned only then.
    alignments: results also give each hypothesis' word alignment (TranslationResult.alignments)
      and, for text, where each source token is (.source_ranges); memory planned only then.
      alignment_layer: the decoder layer whose attention aligns (-1: the model's own, measured
      and stored in it, else its last).
    shortlist: with a model that has a vocabulary shortlist (mt_shortlist build), translate
      each sentence over its own candidate target ids (faster; the same sentence gives the
      same translation in any batch); False: the whole vocabulary. Scores always use the whole
      vocabulary. CPU only.

    All working memory is allocated here, once: memory_size says how much.
    """

    def __init__(self, model: Union["_libmt.Model", PathLike], *, device: str = "cpu", device_index: int = 0,
                 num_threads: int = 1, thread_split: str = "automatic", max_batch_size: int = 16,
                 max_source_length: Optional[int] = None, max_target_length: Optional[int] = None,
                 max_beam_size: int = 4, max_text_bytes: int = 4096, quality_scores: bool = False,
                 alignments: bool = False, alignment_layer: int = -1, shortlist: bool = True) -> None:
        super().__init__(model, device=device, device_index=device_index, num_threads=num_threads,
                         thread_split=thread_split, max_batch_size=max_batch_size,
                         max_source_length=max_source_length, max_target_length=max_target_length,
                         max_beam_size=max_beam_size, max_text_bytes=max_text_bytes, quality_scores=quality_scores,
                         alignments=alignments, alignment_layer=alignment_layer, shortlist=shortlist)

    def translate(self, sources: Sequence[Text], *, beam_size: int = 1, num_hypotheses: int = 1,
                  length_penalty: float = 1.0, max_decoding_length: int = 0, max_length_ratio: float = 0.0,
                  max_length_offset: int = 0, min_decoding_length: int = 0, return_scores: bool = False,
                  truncate: bool = False, source_language: Optional[str] = None,
                  target_language: Optional[str] = None, source_prefix: Sequence[int] = (),
                  target_prefix: Sequence[int] = (), on_token: Optional[Callable[..., Any]] = None,
                  cancel: Optional["_libmt.CancelToken"] = None,
                  cache: Optional["_libmt.TranslationCache"] = None, prefixes: Optional[Sequence[Optional[Text]]] = None,
                  alternatives: int = 0, no_repeat_ngram_size: int = 0,
                  repetition_penalty: float = 1.0) -> Union[List[str], List[TranslationResult]]:
        """Translates a list of sentences (str, or UTF-8 bytes; invalid UTF-8
        bytes read as U+FFFD). Returns the best translation of each, as a
        list of str; with return_scores=True or num_hypotheses > 1, a
        TranslationResult per sentence instead.

        beam_size: 1 is greedy search; at most max_beam_size.
        num_hypotheses: translations kept per sentence (n-best), at most beam_size.
        length_penalty: score = log P(y|x) / |y| ** length_penalty, in [0, 10].
        max_decoding_length: most tokens generated, EOS included; 0: max_target_length.
        max_length_ratio, max_length_offset: when the ratio is > 0, also at most
          ratio * source tokens + offset.
        min_decoding_length: EOS is not allowed before this many tokens.
        truncate: cut a source longer than max_source_length tokens or
          max_text_bytes bytes to fit (the result says it was) instead of raising ValueError.
        source_language, target_language: for multilingual models, the language codes the model's
          own tokens stand for (libmt.language_tokens(model) lists them): Marian's ">>fra<<" starts the
          source, M2M-100's and NLLB's source token starts it and their target token is forced first.
        source_prefix, target_prefix: token ids put before every source, and forced first in every
          output (scored 0, as Hugging Face's forced_bos_token_id).
        on_token: called as on_token(sentence, step, token, text, log_prob) with each token as soon
          as it is final (greedy: at once; beam search: once every hypothesis that can still win
          shares it), EOS last; the texts joined are the translation. A true return stops that
          sentence (its result: the tokens given so far, result.stopped). An exception it raises
          stops the call and is raised here (a cancel token given stays as it was). It must not
          call this translator (RuntimeError: the call holds it); another translator may be used.
          CPU translators only. See translate_stream().
        cancel: a libmt.CancelToken; its cancel() from another thread ends the call within one
          decoder step, each unfinished sentence with its best so far (result.stopped).
        cache: a libmt.TranslationCache: sentences found there are not decoded, the others are
          stored (not used with on_token or cancel).
        prefixes: the start of each sentence's translation (str or None; at most one per source,
          ValueError for more),
          e.g. what a user typed: every hypothesis starts with it; its tokens are scored as the
          model scores them, so a prefix the search would choose anyway changes nothing.
        alternatives: > 0: that many hypotheses, whose tokens right after the prefix are the most
          probable ones, each completed greedily (results as with return_scores; beam_size and
          num_hypotheses unused; at most max_beam_size).
        no_repeat_ngram_size: > 0: no n-gram of this many tokens occurs twice in a hypothesis.
        repetition_penalty: > 1: tokens already in a hypothesis are made less likely (CTRL's
          penalty on their logits); small models that loop ("salad salad salad") need one of these.

        Each translation is one line: line breaks in the output are spaces. With return_scores,
        each result also has each token's log-probability (then EOS's) and, for a translator made
        with quality_scores=True, each hypothesis' words with their scores and its quality.
        """
        _check_list(sources, "translate")
        detail = bool(return_scores) or num_hypotheses > 1 or alternatives > 0
        source_ids, target_ids = _languages(self.model, source_language, target_language)
        extra = _extra_options(prefixes, alternatives, no_repeat_ngram_size, repetition_penalty)
        raw = self._translate_text(sources, detail, beam_size, num_hypotheses, length_penalty, max_decoding_length,
                                   max_length_ratio, max_length_offset, min_decoding_length, truncate,
                                   source_ids + list(source_prefix), target_ids + list(target_prefix), on_token,
                                   cancel, cache, extra)
        return [TranslationResult(*r) for r in raw] if detail else raw

    def score(self, sources: Sequence[Text], targets: Sequence[Text], *, length_penalty: float = 1.0,
              min_decoding_length: int = 0, truncate: bool = False, source_language: Optional[str] = None,
              target_language: Optional[str] = None, source_prefix: Sequence[int] = (),
              target_prefix: Sequence[int] = ()) -> List[TranslationResult]:
        """Scores given translations (forced decoding): targets[i] as a translation of
        sources[i]. Each result has one hypothesis: the target as the model's vocabulary
        encodes and decodes it, its ids, score, log_prob and token_log_probs (each token's,
        then EOS's), and words and quality with quality_scores=True. Scoring a translation
        gives back its own token_log_probs. Options as translate(); a target must fit
        max_target_length with EOS."""
        _check_list(sources, "score")
        _check_list(targets, "score")
        source_ids, target_ids = _languages(self.model, source_language, target_language)
        raw = self._score_text(sources, targets, length_penalty, min_decoding_length, truncate,
                               source_ids + list(source_prefix), target_ids + list(target_prefix))
        return [TranslationResult(*r) for r in raw]

    def score_batch(self, source_ids: Sequence[Sequence[int]], target_ids: Sequence[Sequence[int]], *,
                    length_penalty: float = 1.0, min_decoding_length: int = 0, truncate: bool = False,
                    source_prefix: Sequence[int] = (), target_prefix: Sequence[int] = ()) -> List[TranslationResult]:
        """score() for token ids (sources and targets without BOS or EOS)."""
        _check_list(source_ids, "score_batch")
        _check_list(target_ids, "score_batch")
        raw = self._score_ids(source_ids, target_ids, length_penalty, min_decoding_length, truncate,
                              list(source_prefix), list(target_prefix))
        return [TranslationResult(*r) for r in raw]

    def translate_stream(self, sources: Sequence[Text], **options: Any) -> Iterator[TokenEvent]:
        """Translates as translate(sources, **options) does, yielding a
        TokenEvent(sentence, step, token, text, log_prob) for each token as
        soon as it is final. Closing the generator early cancels the rest.

            for event in translator.translate_stream(["A dog runs."], beam_size=4):
                print(event.text, end="", flush=True)
        """
        _check_list(sources, "translate_stream")
        for name in ("on_token", "cancel"):
            if name in options:
                raise TypeError("translate_stream() sets %s itself" % name)
        events: "queue.Queue[Any]" = queue.Queue()
        token = _libmt.CancelToken()
        end = object()
        failure: List[BaseException] = []

        def on_token(sentence, step, token_id, text, log_prob):
            events.put(TokenEvent(sentence, step, token_id, text, log_prob))
            return False

        def run():
            try:
                self.translate(sources, on_token=on_token, cancel=token, **options)
            except BaseException as error:  # raised in the caller's thread below
                failure.append(error)
            finally:
                events.put(end)

        thread = threading.Thread(target=run, name="libmt.translate_stream", daemon=True)
        thread.start()
        try:
            while True:
                event = events.get()
                if event is end:
                    break
                yield event
        finally:
            token.cancel()
            thread.join()
        if failure:
            raise failure[0]

    def translate_paragraphs(self, text: Text, *, mode: str = "lines", prefixes: Optional[str] = None,
                             prefix_language: Optional[str] = None, beam_size: int = 1, length_penalty: float = 1.0,
                             max_decoding_length: int = 0, max_length_ratio: float = 0.0, max_length_offset: int = 0,
                             min_decoding_length: int = 0, source_language: Optional[str] = None,
                             target_language: Optional[str] = None, source_prefix: Sequence[int] = (),
                             target_prefix: Sequence[int] = (),
                             cache: Optional["_libmt.TranslationCache"] = None, no_repeat_ngram_size: int = 0,
                             repetition_penalty: float = 1.0, format: str = "plain") -> ParagraphTranslation:
        """Translates running text: splits it into sentences, translates
        them in batches and puts the translations where the sentences were,
        every space and line break between them kept as it is. Sentences
        longer than the translator takes are translated in pieces, never
        refused. Returns ParagraphTranslation(text, sentences): the translated
        text (str for str, bytes for bytes) and each sentence's place in the
        source and in the translation.

        mode: "lines" (each line is a paragraph), "wrapped" (a single line
          break is a space, a blank line ends a paragraph) or "sentence" (the
          whole text is one sentence).
        prefixes: a non-breaking prefix list, one word per line ("Dr", "e.g";
          "No #NUMERIC_ONLY#" for one that holds only before a number);
          prefix_language: libmt's own list for a language ("en", "de", "fr",
          "cs", "es"). Neither: the model's list, or libmt's for its source language.
        format: "plain", or "html": tags, attributes, comments, <script> and <style> kept, inline
          elements (<b>, <a>, ...) moved with the words they wrap by the word alignment (a
          translator made with alignments=True); sentences is then empty (docs/html.md).
        Other options as translate() (cache too: an edited text re-translates only the sentences
        that changed); the best hypothesis of each sentence is written.
        """
        source_ids, target_ids = _languages(self.model, source_language, target_language)
        translated, sentences = self._translate_paragraphs(
            text, mode, prefixes, prefix_language, beam_size, length_penalty, max_decoding_length, max_length_ratio,
            max_length_offset, min_decoding_length, source_ids + list(source_prefix), target_ids + list(target_prefix),
            cache, dict(_extra_options(None, 0, no_repeat_ngram_size, repetition_penalty), format=format))
        return ParagraphTranslation(translated, [TranslatedSentence(*s) for s in sentences])

    def translate_batch(self, source_ids: Sequence[Sequence[int]], *, beam_size: int = 1, num_hypotheses: int = 1,
                        length_penalty: float = 1.0, max_decoding_length: int = 0, max_length_ratio: float = 0.0,
                        max_length_offset: int = 0, min_decoding_length: int = 0,
                        truncate: bool = False, source_language: Optional[str] = None,
                        target_language: Optional[str] = None, source_prefix: Sequence[int] = (),
                        target_prefix: Sequence[int] = (), prefixes: Optional[Sequence[Optional[Sequence[int]]]] = None,
                        alternatives: int = 0, no_repeat_ngram_size: int = 0,
                        repetition_penalty: float = 1.0) -> List[TranslationResult]:
        """Translates sentences given as source token ids (no BOS or EOS:
        libmt appends EOS). Options as translate() (prefixes as target ids). Each result's
        hypotheses are the decoded texts (None when the model has no vocabulary)."""
        _check_list(source_ids, "translate_batch")
        source_lang_ids, target_ids = _languages(self.model, source_language, target_language)
        raw = self._translate_ids(source_ids, beam_size, num_hypotheses, length_penalty, max_decoding_length,
                                  max_length_ratio, max_length_offset, min_decoding_length, truncate,
                                  source_lang_ids + list(source_prefix), target_ids + list(target_prefix),
                                  _extra_options(prefixes, alternatives, no_repeat_ngram_size, repetition_penalty))
        return [TranslationResult(*r) for r in raw]

    def translate_iterable(self, sources: Iterable[Text], *, batch_size: Optional[int] = None,
                           read_batches: int = 16, **options) -> Iterator[Union[str, TranslationResult]]:
        """Translates sentences from any iterable (a file's lines, a generator)
        lazily, yielding one result per source, in the order given.

        batch_size: sentences translated together (at most max_batch_size, the default).
        read_batches: how many batches are read ahead and sorted by length, so
          that each batch holds sentences of similar length.
        options: as translate(): prefixes[i] goes with the i-th source, and on_token's sentence
          is the source's index in the iterable, whatever the sorting.
        """
        _check_list(sources, "translate_iterable", "translate_iterable([text])")
        batch = self._batch_size(batch_size, read_batches)
        prefixes = _prefix_list(options.pop("prefixes", None))
        chunk: List[Text] = []
        start = 0  # the index of chunk[0] in the iterable
        for source in sources:
            chunk.append(source)
            if len(chunk) == batch * read_batches:
                yield from self._translate_sorted(chunk, start, batch, prefixes, options)
                start += len(chunk)
                chunk = []
        if chunk:
            yield from self._translate_sorted(chunk, start, batch, prefixes, options)
            start += len(chunk)
        _check_prefix_count(prefixes, start)

    def _batch_size(self, batch_size: Optional[int], read_batches: int) -> int:
        batch = self.max_batch_size if batch_size is None else int(batch_size)
        if not 1 <= batch <= self.max_batch_size:
            raise ValueError("batch_size = %d: must be in [1, %d] (the translator's max_batch_size)"
                             % (batch, self.max_batch_size))
        if read_batches < 1:
            raise ValueError("read_batches = %d: must be at least 1" % read_batches)
        return batch

    def _translate_sorted(self, chunk: List[Text], start: int, batch: int, prefixes: Optional[List[Any]],
                          options) -> List[Union[str, TranslationResult]]:
        """Translates chunk (sources start, start + 1, ... of the iterable) sorted by length, in
        batches; each source keeps its own prefix and its own index in on_token."""
        order = sorted(range(len(chunk)), key=lambda i: len(chunk[i]))
        out: List[Union[str, TranslationResult]] = [""] * len(chunk)
        for begin in range(0, len(order), batch):
            indexes = order[begin:begin + batch]
            these = dict(options)
            if prefixes is not None:
                these["prefixes"] = [prefixes[start + i] if start + i < len(prefixes) else None for i in indexes]
            if options.get("on_token") is not None:
                these["on_token"] = _renumbered(options["on_token"], [start + i for i in indexes])
            for i, result in zip(indexes, self.translate([chunk[i] for i in indexes], **these)):
                out[i] = result
        return out

    def translate_file(self, source: Union[PathLike, IO], target: Union[PathLike, IO], *,
                       batch_size: Optional[int] = None, read_batches: int = 16, progress: Optional[bool] = None,
                       **options) -> FileStats:
        """Translates a text file line by line: one output line per input line,
        in order, written as each group of batches is done (an interrupted run
        leaves the lines translated so far). A line ends at LF; a CR before
        it is dropped (as mt_translate reads). Paths or open files (text or binary).

        batch_size, read_batches: as translate_iterable().
        progress: show progress on stderr; None (the default) shows it when
          stderr is a terminal (with tqdm when installed).
        options: as translate(), except return_scores, num_hypotheses and alternatives; prefixes[i]
          goes with line i. The options are checked before the target is opened: a bad one leaves
          an existing file as it was.
        Ctrl-C stops between batches with KeyboardInterrupt.
        """
        for name in ("return_scores", "num_hypotheses", "alternatives"):
            if name in options:
                raise TypeError("translate_file() does not take %s: one line of text per line" % name)
        start = time.monotonic()
        lines = _read_lines(source)
        batch = self._batch_size(batch_size, read_batches)
        _check_prefix_count(_prefix_list(options.get("prefixes")), len(lines))
        self.translate([], **dict(options, prefixes=None))  # raises for any other bad option
        if progress is None:
            progress = sys.stderr is not None and sys.stderr.isatty()
        bar = Progress(len(lines)) if progress else None
        source_bytes = sum(len(line) for line in lines)
        with _open_target(target) as out:
            try:
                done = 0
                for translation in self.translate_iterable(lines, batch_size=batch, read_batches=read_batches,
                                                           **options):
                    out.write(translation.encode("utf-8", "surrogateescape") + b"\n")
                    done += 1
                    if bar is not None and done % batch == 0:
                        bar.update(batch)
                if bar is not None and done % batch:
                    bar.update(done % batch)
            finally:
                if bar is not None:
                    bar.close()
        return FileStats(len(lines), source_bytes, time.monotonic() - start)

    def __repr__(self) -> str:
        return "<libmt.Translator %s, device=%r, num_threads=%d, max_batch_size=%d, %.1f MB of working memory>" % (
            repr(self.model), self.device, self.num_threads, self.max_batch_size, self.memory_size / 1e6)


def _languages(model, source_language, target_language):
    """(source prefix ids, target prefix ids) for the languages asked (libmt's language_prefixes:
    the model's own tokens, from its metadata)."""
    if source_language is None and target_language is None:
        return [], []
    source, target = _libmt._language_prefixes(model, source_language or "", target_language or "")
    return list(source), list(target)


def _extra_options(prefixes, alternatives: int, no_repeat_ngram_size: int, repetition_penalty: float) -> dict:
    return {"prefixes": _prefix_list(prefixes), "alternatives": alternatives,
            "no_repeat_ngram_size": no_repeat_ngram_size, "repetition_penalty": repetition_penalty}


def _prefix_list(prefixes) -> Optional[List[Any]]:
    if isinstance(prefixes, (str, bytes)):
        raise TypeError("prefixes: a list of one prefix per source (str or None), not a single str")
    return None if prefixes is None else list(prefixes)


def _check_prefix_count(prefixes: Optional[List[Any]], sources: int) -> None:
    """translate()'s rule for prefixes given apart from their sources."""
    if prefixes is not None and len(prefixes) > sources:
        raise ValueError("prefixes: %d given for %d sources: at most one per source" % (len(prefixes), sources))


def _renumbered(on_token: Callable[..., Any], numbers: List[int]) -> Callable[..., Any]:
    """on_token called with numbers[sentence] for the sentence of a batch."""
    def call(sentence, *event):
        return on_token(numbers[sentence], *event)
    return call


def _check_list(sources, method: str, usage: Optional[str] = None) -> None:
    if isinstance(sources, (str, bytes, bytearray)):
        raise TypeError("%s() takes a list of sentences, not one %s: %s"
                        % (method, type(sources).__name__, usage or "%s([text])[0]" % method))


def _split_lines(data: bytes) -> List[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline ending the last line starts no line
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def _read_lines(source) -> List[bytes]:
    if hasattr(source, "read"):
        data = source.read()
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        return _split_lines(data)
    with open(os.fspath(source), "rb") as f:
        return _split_lines(f.read())


class _open_target:
    """A binary writer over a path (created or truncated) or an open file."""

    def __init__(self, target) -> None:
        self._target = target
        self._file = None

    def __enter__(self):
        if not hasattr(self._target, "write"):
            self._file = open(os.fspath(self._target), "wb")
            return self._file
        if isinstance(self._target, io.TextIOBase):
            return _TextWriter(self._target)
        return self._target

    def __exit__(self, *exc) -> None:
        if self._file is not None:
            self._file.close()
        elif hasattr(self._target, "flush"):
            self._target.flush()


class _TextWriter:
    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, data: bytes) -> None:
        self._stream.write(data.decode("utf-8", "surrogateescape"))
