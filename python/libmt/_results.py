"""What translators return: plain Python objects."""

from typing import List, NamedTuple, Optional, Tuple, Union


class TranslationResult:
    """One source sentence's translations, best first.

    hypotheses: the texts (None when translating ids with a model that has no vocabulary)
    ids: each hypothesis' target token ids, without BOS and EOS
    scores: log P(y|x) / |y| ** length_penalty, |y| counting EOS
    log_probs: log P(y + EOS | x)
    truncated: whether the source was cut to fit (truncate=True)
    stopped: whether on_token stopped it or a CancelToken cancelled it before it ended
    token_log_probs: each hypothesis' per-token log-probabilities, then EOS's when it ended with
      EOS: summed in order, its log_prob
    words: with Translator(quality_scores=True), each hypothesis' words as (begin, end, score):
      str indices of the hypothesis (the space before a word included, so they tile it) and the
      mean log-probability of its tokens; else None
    quality: with quality_scores, each hypothesis' mean word score; else None
    alignments: with Translator(alignments=True), each hypothesis' soft alignment: a row per token
      (then EOS's) of weights over the source's tokens as encoded (source prefix, tokens, EOS),
      each row summing to 1; else None
    source_ranges: with alignments, text: each alignment column's (begin, end) str indices in the
      source (ids standing for no text: empty); else None
    """

    __slots__ = ("hypotheses", "ids", "scores", "log_probs", "truncated", "stopped", "token_log_probs", "words",
                 "quality", "alignments", "source_ranges")

    def __init__(self, hypotheses: Optional[List[str]], ids: List[List[int]], scores: List[float],
                 log_probs: List[float], truncated: bool = False, stopped: bool = False,
                 token_log_probs: Optional[List[List[float]]] = None,
                 words: Optional[List[List[Tuple[int, int, float]]]] = None,
                 quality: Optional[List[float]] = None, alignments: Optional[List[List[List[float]]]] = None,
                 source_ranges: Optional[List[Tuple[int, int]]] = None) -> None:
        self.hypotheses = hypotheses
        self.ids = ids
        self.scores = scores
        self.log_probs = log_probs
        self.truncated = truncated
        self.stopped = stopped
        self.token_log_probs = token_log_probs if token_log_probs is not None else [[] for _ in ids]
        self.words = words
        self.quality = quality
        self.alignments = alignments
        self.source_ranges = source_ranges

    def __repr__(self) -> str:
        return ("TranslationResult(hypotheses=%r, ids=%r, scores=%r, log_probs=%r, truncated=%r, stopped=%r, "
                "token_log_probs=%r, words=%r, quality=%r, alignments=%r, source_ranges=%r)") % (
            self.hypotheses, self.ids, self.scores, self.log_probs, self.truncated, self.stopped,
            self.token_log_probs, self.words, self.quality, self.alignments, self.source_ranges)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TranslationResult):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None  # type: ignore[assignment]


class FileStats(NamedTuple):
    """What Translator.translate_file did."""

    lines: int          # lines read and written (one output line per input line)
    source_bytes: int   # bytes of the input lines, line breaks not counted
    seconds: float      # wall-clock time of the whole call


class TranslatedSentence(NamedTuple):
    """One sentence of a text Translator.translate_paragraphs translated.

    source: (begin, end) of the sentence in the source text
    target: (begin, end) of its translation in the translated text
      (indices into the str given, or byte offsets for bytes)
    paragraph: the index of its paragraph (mode "lines": of its line, empty lines counted)
    pieces: more than 1 when the sentence was longer than the translator takes
      (max_text_bytes, max_source_length) and was translated in that many pieces
    truncated: a piece was cut to fit (one character encoded to more tokens than a source may have)
    """

    source: Tuple[int, int]
    target: Tuple[int, int]
    paragraph: int
    pieces: int
    truncated: bool


class ParagraphTranslation(NamedTuple):
    """What Translator.translate_paragraphs returns: the translated text (the
    source's own spaces and line breaks between sentences kept as they are)
    and where each sentence and its translation are."""

    text: Union[str, bytes]
    sentences: List[TranslatedSentence]


class TokenEvent(NamedTuple):
    """One token of a translation as soon as it is final (Translator.translate_stream).

    sentence: the source's index; step: the token's position, from 0; token: its id (EOS last
    when the sentence ended on its own); text: what it adds, in whole characters; log_prob:
    its log-probability (the events' sum is the translation's log_prob)
    """

    sentence: int
    step: int
    token: int
    text: str
    log_prob: float
