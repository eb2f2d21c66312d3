/*
 * libmt C API: load a model, create sessions, translate token ids.
 *
 * Errors: every function that can fail returns an mt_status; MT_OK is 0. On
 * failure, mt_last_error() returns a message for the last failed call on the
 * calling thread (valid until that thread's next failing call). No C++
 * exception ever crosses this API.
 *
 * Ownership: objects returned through an out-pointer belong to the caller and
 * are released with the matching mt_*_free (NULL is accepted). A session keeps
 * its model alive: the model may be freed before its sessions.
 *
 * Threads: a model may be shared by any number of sessions and threads; a
 * session is used by one thread at a time. Results read with
 * mt_result_hypothesis stay valid until the session's next translate call.
 */
#ifndef MT_MT_H
#define MT_MT_H

#include <stddef.h>
#include <stdint.h>

#include "mt/export.h" /* MT_API: plain C, installed beside this header */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mt_status {
  MT_OK = 0,
  MT_ERROR_INVALID_ARGUMENT = 1,
  MT_ERROR_IO = 2,
  MT_ERROR_CORRUPT_MODEL = 3,
  MT_ERROR_UNSUPPORTED_VERSION = 4,
  MT_ERROR_INVALID_MODEL = 5,
  MT_ERROR_OUT_OF_MEMORY = 6,
  MT_ERROR_CAPACITY_EXCEEDED = 7,
  MT_ERROR_INTERNAL = 8,
  MT_ERROR_UNSUPPORTED = 9, /* this build or machine lacks it (CUDA, a GPU) */
  MT_ERROR_CANCELLED = 10   /* the caller stopped the call (a callback returned nonzero) */
} mt_status;

typedef enum mt_device { MT_DEVICE_CPU = 0, MT_DEVICE_CUDA = 1 } mt_device;

typedef struct mt_model mt_model;
typedef struct mt_session mt_session;
typedef struct mt_cache mt_cache;

/* How a session with num_threads > 1 shares a batch (see mt::ThreadSplit). */
typedef enum mt_thread_split {
  MT_THREAD_SPLIT_AUTOMATIC = 0, /* sentences for models that fit the caches, layers otherwise */
  MT_THREAD_SPLIT_LAYERS = 1,    /* every layer's work divided: one sentence uses every thread */
  MT_THREAD_SPLIT_SENTENCES = 2  /* each thread translates its share of the batch's sentences */
} mt_thread_split;

typedef struct mt_session_options {
  int max_batch_size;    /* sentences per translate call (default 16) */
  int max_source_length; /* source tokens, the appended EOS included (default 128) */
  int max_target_length; /* generated tokens, EOS included (default 128) */
  int max_beam_size;     /* largest beam_size used later (default 4) */
  int num_threads;       /* threads of the session (default 1) */
  int max_text_bytes;    /* longest source text in bytes, for mt_translate_text, >= 4 (default 4096) */
  int device;            /* MT_DEVICE_CPU or MT_DEVICE_CUDA (default MT_DEVICE_CPU) */
  int cuda_device;       /* CUDA: index of the GPU (default 0) */
  int allow_tf32;        /* CUDA: nonzero runs GEMMs in TF32, about 1e-3 relative error (default 0) */
  int thread_split;      /* an mt_thread_split (default MT_THREAD_SPLIT_AUTOMATIC) */
  /* Nonzero: text results also give token byte ranges and word quality
   * scores (mt_result_token_ranges, mt_result_words), memory planned for
   * them (default 0) */
  int quality_scores;
  /* Nonzero: word alignments (mt_result_alignment), memory planned for them; CPU only (default 0) */
  int alignments;
  /* The decoder layer whose attention aligns: -1 for the model's metadata alignment_layer, else its last (default -1) */
  int alignment_layer;
  /* Nonzero: translate over the model's vocabulary shortlist when its file
   * has one (mt_shortlist build): each sentence over its own candidate ids,
   * the same in any batch; 0: the whole vocabulary. CPU only (default 1) */
  int shortlist;
} mt_session_options;

/* One token as it becomes final (mt::TokenEvent): the source's index, the
 * token's position, its id (EOS last when the sentence ended on its own),
 * the text it adds in whole UTF-8 characters (valid during the call only)
 * and its log-probability. */
typedef struct mt_token_event {
  size_t sentence;
  int step;
  int32_t token;
  const char* text;
  size_t text_length;
  float log_prob;
} mt_token_event;

typedef struct mt_translate_options {
  int beam_size;             /* 1: greedy (default 1) */
  int num_hypotheses;        /* n-best, <= beam_size (default 1) */
  float length_penalty;      /* score = log P / length^length_penalty (default 1) */
  int max_decoding_length;   /* 0: the session's max_target_length (default 0) */
  float max_length_ratio;    /* > 0: at most ratio * source length + max_length_offset (default 0) */
  int max_length_offset;     /* (default 0) */
  int min_decoding_length;   /* EOS forbidden before this many tokens (default 0) */
  int truncate_long_sources; /* nonzero: cut over-long sources to fit instead of failing (default 0) */
  /* Ids put before every source, e.g. a multilingual model's language token (mt_language_prefixes).
   * The caller keeps them alive during the call. (default NULL, 0) */
  const int32_t* source_prefix;
  size_t source_prefix_length;
  /* Ids every hypothesis starts with, forced and scored 0 (M2M-100's, NLLB's target language). (default NULL, 0) */
  const int32_t* target_prefix;
  size_t target_prefix_length;
  /* Streaming: called with each token as it becomes final, one call at a
   * time; nonzero stops that sentence (mt_result_stopped says so). CPU
   * sessions only. (default NULL) */
  int (*on_token)(void* user_data, const mt_token_event* event);
  void* on_token_user_data;
  /* Cancelling: the address of a C11 atomic_int (C++ std::atomic<int>) that
   * another thread sets nonzero to end the call within one decoder step,
   * each unfinished sentence with its best so far (mt_result_stopped). CPU
   * sessions only. (default NULL) */
  const void* cancel;
  /* A translation cache (mt_cache_create) to look sentences up in and store
   * them in; not used with on_token or cancel. (default NULL) */
  mt_cache* cache;
  /* The start of each sentence's translation, given (mt::TranslateOptions::prefixes):
   * prefixes[i] of prefix_lengths[i] ids for sentence i < prefix_count; every
   * hypothesis starts with it, its tokens scored as the model scores them.
   * CPU sessions only. (default NULL, NULL, 0) */
  const int32_t* const* prefixes;
  const size_t* prefix_lengths;
  size_t prefix_count;
  /* mt_translate_text: the same as UTF-8 text (text_prefixes[i] of
   * text_prefix_lengths[i] bytes), encoded with the target vocabulary. (default NULL, NULL, 0) */
  const char* const* text_prefixes;
  const size_t* text_prefix_lengths;
  size_t text_prefix_count;
  /* > 0: that many hypotheses whose tokens after the prefix are the most
   * probable next tokens, each completed greedily (<= max_beam_size; beam_size and
   * num_hypotheses then unused). CPU sessions only. (default 0) */
  int alternatives;
  /* > 0: no n-gram of this many tokens occurs twice in a hypothesis. (default 0) */
  int no_repeat_ngram_size;
  /* > 1: logits of tokens already in the hypothesis divided by it (multiplied when negative). (default 1) */
  float repetition_penalty;
} mt_translate_options;

/* Bytes [begin, end) of a result's text (mt::ByteRange). */
typedef struct mt_byte_range {
  size_t begin, end;
} mt_byte_range;

/* A word of a translation and its quality score, the mean log-probability
 * of its tokens (mt::WordScore); words' ranges tile the text. */
typedef struct mt_word_score {
  mt_byte_range bytes;
  float score;
} mt_word_score;

/* Message of the calling thread's last failed call ("" if none). The string
 * belongs to libmt and stays valid until this thread's next failing call. */
MT_API const char* mt_last_error(void);

/* Loads a model file: mapped read-only, verified, weights used in place.
 * Replace a loaded model's file by renaming a new file over it, never by
 * rewriting it in place (cp, truncation): a file changed in place feeds the
 * model unverified bytes, and a shortened one kills the process with SIGBUS.
 * For a file that may change in place, read it into memory yourself and use
 * mt_model_load_buffer.
 * *model receives a new model the caller frees with mt_model_free (NULL on
 * failure). Errors: MT_ERROR_IO (cannot open or map), MT_ERROR_CORRUPT_MODEL,
 * MT_ERROR_UNSUPPORTED_VERSION, MT_ERROR_INVALID_MODEL (mt_last_error names
 * the field or tensor), MT_ERROR_INVALID_ARGUMENT (a NULL pointer). A model
 * is immutable: any number of threads and sessions may use it at once. */
MT_API mt_status mt_model_load(const char* path, mt_model** model);
/* The same on a model image the caller owns, e.g. one linked into firmware
 * or read into memory: `data` (64-byte aligned) holds `size` bytes and must
 * stay valid and unchanged until the model and every session made from it
 * are freed. Nothing is copied. Errors: as mt_model_load, and
 * MT_ERROR_INVALID_ARGUMENT for a misaligned buffer. */
MT_API mt_status mt_model_load_buffer(const void* data, size_t size, mt_model** model);
/* Releases the caller's reference; sessions made from it keep it alive. NULL is accepted. */
MT_API void mt_model_free(mt_model* model);

/* Fill the options with their defaults; call before setting any field (the
 * structs grow between versions). NULL is accepted. */
MT_API void mt_session_options_init(mt_session_options* options);
MT_API void mt_translate_options_init(mt_translate_options* options);

/* Bytes of working memory a session with these options needs (options NULL:
 * the defaults). Errors: MT_ERROR_INVALID_ARGUMENT (an option out of range,
 * named), MT_ERROR_CAPACITY_EXCEEDED (larger than the address space). */
MT_API mt_status mt_session_memory_size(const mt_model* model, const mt_session_options* options, size_t* bytes);
/* Creates a session that allocates its working memory once, now; *session
 * is freed with mt_session_free. Errors: those of mt_session_memory_size,
 * MT_ERROR_OUT_OF_MEMORY, MT_ERROR_UNSUPPORTED (CUDA asked of a build or
 * machine without it). A session is used by one thread at a time. */
MT_API mt_status mt_session_create(const mt_model* model, const mt_session_options* options, mt_session** session);
/* Creates a session working in `buffer` (64-byte aligned, at least
 * mt_session_memory_size bytes), which the caller keeps alive until
 * mt_session_free; libmt then never allocates translation memory itself.
 * Errors: as mt_session_create, and MT_ERROR_INVALID_ARGUMENT for a buffer
 * too small or misaligned. */
MT_API mt_status mt_session_create_in(const mt_model* model, const mt_session_options* options, void* buffer,
                                      size_t buffer_size, mt_session** session);
/* Releases the session (not its caller-supplied buffer). NULL is accepted. */
MT_API void mt_session_free(mt_session* session);

/* Translates `count` sentences; sentence i is lengths[i] token ids at sources[i]
 * (without BOS/EOS). Makes no heap allocation; the results replace the
 * previous ones. Errors: MT_ERROR_INVALID_ARGUMENT (an id outside the
 * vocabulary, an option out of range), MT_ERROR_CAPACITY_EXCEEDED (more
 * sentences or longer ones than the session was created for, unless
 * truncate_long_sources), MT_ERROR_INTERNAL (a GPU fault). On error the
 * session stays usable and no result is available. */
MT_API mt_status mt_translate_ids(mt_session* session, const int32_t* const* sources, const size_t* lengths,
                                  size_t count, const mt_translate_options* options);
/* Translates `count` UTF-8 sentences (texts[i] of lengths[i] bytes, not
 * necessarily NUL-terminated) with the model's vocabulary. Makes no heap
 * allocation. Errors: as mt_translate_ids, and MT_ERROR_INVALID_ARGUMENT if
 * the model has no vocabulary. Invalid UTF-8 is not an error: each bad byte
 * becomes U+FFFD, as SentencePiece does. */
MT_API mt_status mt_translate_text(mt_session* session, const char* const* texts, const size_t* lengths, size_t count,
                                   const mt_translate_options* options);
/* Hypothesis k of sentence i of the last mt_translate_text: UTF-8 text of
 * `length` bytes (owned by the session, valid until its next translate call,
 * not NUL-terminated) and score (score may be NULL). The text is one line:
 * line breaks the vocabulary decodes to (LF, VT, FF, CR, CR LF, U+0085,
 * U+2028, U+2029) are each one space. Errors:
 * MT_ERROR_INVALID_ARGUMENT (no such sentence or hypothesis, no text results). */
MT_API mt_status mt_result_text(const mt_session* session, size_t sentence, size_t k, const char** text, size_t* length,
                                float* score);
/* A multilingual model's language tokens for translating from source_language to target_language
 * (either may be NULL or "": not given), named by token or by the code inside it (">>fra<<" or
 * "fra", "__fr__" or "fr", "fra_Latn"): *source_id (-1: none) goes first in
 * mt_translate_options.source_prefix, *target_id (-1: none) in target_prefix. Errors:
 * MT_ERROR_INVALID_ARGUMENT (a language the model does not have, named with some it has; a model
 * of one language pair; a source language for a Marian model, whose target language alone counts). */
MT_API mt_status mt_language_prefixes(const mt_model* model, const char* source_language, const char* target_language,
                                      int32_t* source_id, int32_t* target_id);

/* Paragraphs (mt::Session::translate_paragraphs, mt/sentence_splitter.hpp). */
typedef enum mt_split_mode {
  MT_SPLIT_SENTENCE = 0, /* the whole text is one sentence */
  MT_SPLIT_LINES = 1,    /* each line is a paragraph */
  MT_SPLIT_WRAPPED = 2   /* a single line feed is a space, a blank line ends a paragraph */
} mt_split_mode;

/* Non-breaking prefixes of a language ("Dr", "e.g"; "No" before numbers only). */
typedef struct mt_prefixes mt_prefixes;
/* Parses a list in the Moses format (one prefix per line, "#" comments,
 * "#NUMERIC_ONLY#"). Errors: MT_ERROR_INVALID_ARGUMENT (a line over 256 bytes, invalid UTF-8). */
MT_API mt_status mt_prefixes_parse(const char* list, size_t length, mt_prefixes** prefixes);
/* libmt's own list for a language ("en", "de", "fr", "cs", "es"; "zh", "ja", "ko": empty).
 * Errors: MT_ERROR_INVALID_ARGUMENT (no list for that language). */
MT_API mt_status mt_prefixes_builtin(const char* language, mt_prefixes** prefixes);
MT_API void mt_prefixes_free(mt_prefixes* prefixes);

/* What mt_translate_paragraphs' text is (mt::TextFormat). */
typedef enum mt_text_format {
  MT_FORMAT_PLAIN = 0,
  MT_FORMAT_HTML = 1 /* tags kept, inline ones moved with their words (docs/html.md) */
} mt_text_format;

typedef struct mt_translated_sentence {
  size_t source_begin, source_end; /* bytes of the source text */
  size_t target_begin, target_end; /* bytes of the translated text */
  size_t paragraph;                /* index of its paragraph (lines: of its line) */
  int pieces;                      /* > 1: too long for the session, translated in that many pieces */
  int truncated;                   /* nonzero: a piece was cut to fit */
} mt_translated_sentence;

typedef struct mt_paragraph_options {
  int split_mode;              /* an mt_split_mode (default MT_SPLIT_LINES) */
  const mt_prefixes* prefixes; /* NULL: the model's own list, or libmt's for its source language (default NULL) */
  /* Receives the translated text in order: the source's bytes before, between
   * and after sentences, and each sentence's translation. Nonzero stops the
   * call (MT_ERROR_CANCELLED). Required. */
  int (*write_text)(void* user_data, const char* bytes, size_t length);
  /* After each sentence's translation; may be NULL. Nonzero stops the call. */
  int (*write_sentence)(void* user_data, const mt_translated_sentence* sentence);
  void* user_data; /* passed to both */
  /* An mt_text_format (default MT_FORMAT_PLAIN); MT_FORMAT_HTML needs a
   * session created with alignments, and calls no write_sentence. */
  int format;
} mt_paragraph_options;
MT_API void mt_paragraph_options_init(mt_paragraph_options* options);

/* Translates a text of paragraphs: split into sentences, translated in
 * batches, written through options->write_text with every byte between
 * sentences kept. Sentences longer than the session takes are translated in
 * pieces. Makes no heap allocation. Errors: as mt_translate_text, and
 * MT_ERROR_CANCELLED when a writer returned nonzero. */
MT_API mt_status mt_translate_paragraphs(mt_session* session, const char* text, size_t length,
                                         const mt_paragraph_options* paragraphs, const mt_translate_options* options);

/* A translation cache (mt/translation_cache.hpp): memory allocated here,
 * once; any number of sessions of one model on any threads may share it. */
MT_API mt_status mt_cache_create(size_t max_entries, size_t memory_bytes, mt_cache** cache);
MT_API void mt_cache_free(mt_cache* cache);
typedef struct mt_cache_stats {
  uint64_t hits, misses, insertions, evictions;
  size_t entries;
} mt_cache_stats;
MT_API mt_status mt_cache_stats_get(const mt_cache* cache, mt_cache_stats* stats);

/* Scores given translations (forced decoding, mt::Session::score): target i
 * (target_lengths[i] ids without EOS) given source i. Read the results as a
 * translation's (one hypothesis each): mt_result_hypothesis for the tokens
 * and score, mt_result_log_probs for each token's log-probability then
 * EOS's. Of the options: source_prefix, target_prefix (a target must start
 * with it; scored 0), min_decoding_length, length_penalty,
 * truncate_long_sources. Errors: as mt_translate_ids, naming the target. */
MT_API mt_status mt_score_ids(mt_session* session, const int32_t* const* sources, const size_t* source_lengths,
                              const int32_t* const* targets, const size_t* target_lengths, size_t count,
                              const mt_translate_options* options);
/* The same for UTF-8 text; results as mt_translate_text's. */
MT_API mt_status mt_score_text(mt_session* session, const char* const* sources, const size_t* source_lengths,
                               const char* const* targets, const size_t* target_lengths, size_t count,
                               const mt_translate_options* options);
/* Hypothesis k of sentence i of the last results (ids or text, translated or
 * scored): each token's log-probability, then EOS's when it ended with EOS
 * (*count of them, owned by the session), and *log_prob their sum (either
 * output may be NULL). */
MT_API mt_status mt_result_log_probs(const mt_session* session, size_t sentence, size_t k, const float** log_probs,
                                     size_t* count, float* log_prob);
/* Text results of a session created with quality_scores or alignments: each
 * token's bytes of the text (they tile it), *count of them. */
MT_API mt_status mt_result_token_ranges(const mt_session* session, size_t sentence, size_t k,
                                        const mt_byte_range** ranges, size_t* count);
/* Text results of a session created with quality_scores: its words with
 * their scores (*count of them) and *quality, the mean of the words' scores
 * (Bergamot's unsupervised estimate); quality may be NULL. */
MT_API mt_status mt_result_words(const mt_session* session, size_t sentence, size_t k, const mt_word_score** words,
                                 size_t* count, float* quality);
/* A session created with alignments: hypothesis k of sentence i's soft
 * alignment, *rows rows (its tokens, then EOS when it ended with it) of
 * *columns weights (the source's tokens as encoded: source_prefix, tokens,
 * EOS), row r at weights + r * *stride, each summing to 1 (owned by the session). */
MT_API mt_status mt_result_alignment(const mt_session* session, size_t sentence, size_t k, const float** weights,
                                     size_t* rows, size_t* columns, size_t* stride);
/* Text results of a session created with alignments: each alignment column's
 * bytes of source text i (*count of them; ids that stand for no text: empty). */
MT_API mt_status mt_result_source_ranges(const mt_session* session, size_t sentence, const mt_byte_range** ranges,
                                         size_t* count);
/* Whether sentence i of the last translation was truncated to fit (0 or 1). */
MT_API mt_status mt_result_truncated(const mt_session* session, size_t sentence, int* truncated);

/* Whether sentence i of the last translation was stopped by on_token or cancelled (0 or 1). */
MT_API mt_status mt_result_stopped(const mt_session* session, size_t sentence, int* stopped);

/* Number of hypotheses of sentence i in the last results. */
MT_API mt_status mt_result_count(const mt_session* session, size_t sentence, size_t* count);
/* Hypothesis k of sentence i of the last token-id results (mt_translate_ids,
 * mt_score_ids): its tokens (owned by the session) and score. After a text
 * call, MT_ERROR_INVALID_ARGUMENT: read those with mt_result_text. */
MT_API mt_status mt_result_hypothesis(const mt_session* session, size_t sentence, size_t k, const int32_t** tokens,
                                      size_t* length, float* score);

#ifdef __cplusplus
}
#endif

#endif /* MT_MT_H */
