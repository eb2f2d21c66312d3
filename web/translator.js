// libmt for JavaScript: a Translator over the WebAssembly module's C API
// (lib/include/mt/mt.h), for Node.js and browsers.
//
//   const createLibmt = require('./libmt.js');           // a page: <script src="libmt.js">
//   const { Translator } = require('./translator.js');   // a page: LibmtTranslator
//   (examples/web/index.html is a page that does this)
//   const t = await Translator.create(createLibmt, modelBytes, { max_batch_size: 8 });
//   t.translate(['A man is walking.'], { beam_size: 4 });   // ['Ein Mann geht spazieren.']
//   t.translate(['Where is it?'], { source_language: 'en', target_language: 'fr' });  // multilingual models
//   t.translate(['A dog runs.'], { onToken: (e) => process.stdout.write(e.text) });   // streaming
//   t.translateParagraphs('Dr. Smith came.  He sat down.\n', { mode: 'wrapped' });
//     // { text: 'Drimmmet.  Er legt sich hin.\n', sentences: [{ source: [0, 15], target: [0, 9], ... }, ...] }
//   t.free();
//
// The model's bytes are copied once into the module's memory and used there
// in place. Errors are LibmtError with libmt's status and message.
'use strict';

// mt_session_options and mt_translate_options, field by field (4 bytes each
// in wasm32), in mt.h's order. The init functions fill every field, those
// this file does not know included.
const SESSION_FIELDS = ['max_batch_size', 'max_source_length', 'max_target_length', 'max_beam_size',
                        'num_threads', 'max_text_bytes', 'device', 'cuda_device', 'allow_tf32', 'thread_split',
                        'quality_scores', 'alignments', 'alignment_layer', 'shortlist'];
// [name, type, slot]: the option's 4-byte slot in mt_translate_options.
const TRANSLATE_FIELDS = [['beam_size', 'i32', 0], ['num_hypotheses', 'i32', 1], ['length_penalty', 'f32', 2],
                          ['max_decoding_length', 'i32', 3], ['max_length_ratio', 'f32', 4],
                          ['max_length_offset', 'i32', 5], ['min_decoding_length', 'i32', 6],
                          ['truncate_long_sources', 'i32', 7], ['alternatives', 'i32', 22],
                          ['no_repeat_ngram_size', 'i32', 23], ['repetition_penalty', 'f32', 24]];
// Slots 8-11: source_prefix, its length, target_prefix, its length; 12-15:
// on_token, its data, cancel, cache; 19-21: text_prefixes, their lengths and count.
const PREFIX_SLOT = 8;
const TEXT_PREFIX_SLOT = 19;
const OPTIONS_BYTES = 256;  // room for the fields of later versions

class LibmtError extends Error {
  constructor(status, message) {
    super(message);
    this.name = 'LibmtError';
    this.status = status;
  }
}

function fillOptions(m, pointer, fields, values, what) {
  const known = new Map(fields.map((f, i) => (typeof f === 'string' ? [f, [i, 'i32']] : [f[0], [f[2], f[1]]])));
  for (const [name, value] of Object.entries(values)) {
    if (!known.has(name)) throw new TypeError(`unknown ${what} option '${name}'`);
    const [index, type] = known.get(name);
    const slot = (pointer >> 2) + index;
    if (type === 'f32') m.HEAPF32[slot] = value;
    else m.HEAP32[slot] = typeof value === 'boolean' ? Number(value) : value;
  }
}

// A translation cache (mt_cache_create): give it to translate's or
// translateParagraphs' options as { cache }; translators of one module may
// share it. Its memory is allocated once, here.
class TranslationCache {
  constructor(module, maxEntries = 1024, memoryBytes = 0) {
    const m = (this.m = module);
    const out = m._malloc(4);
    try {
      const status = m._mt_cache_create(maxEntries, memoryBytes, out);
      if (status !== 0) throw new LibmtError(status, m.UTF8ToString(m._mt_last_error()));
      this.pointer = m.HEAPU32[out >> 2];
    } finally {
      m._free(out);
    }
  }

  // { hits, misses, insertions, evictions, entries } (mt_cache_stats: four
  // uint64 then a size_t in wasm32).
  stats() {
    const m = this.m, s = m._malloc(40);
    try {
      m._mt_cache_stats_get(this.pointer, s);
      const u64 = (i) => m.HEAPU32[(s >> 2) + 2 * i] + m.HEAPU32[(s >> 2) + 2 * i + 1] * 2 ** 32;
      return { hits: u64(0), misses: u64(1), insertions: u64(2), evictions: u64(3), entries: m.HEAPU32[(s >> 2) + 8] };
    } finally {
      m._free(s);
    }
  }

  free() {
    if (this.pointer) this.m._mt_cache_free(this.pointer);
    this.pointer = 0;
  }
}

class Translator {
  // createLibmt: the factory libmt.js exports; modelBytes: a Uint8Array.
  static async create(createLibmt, modelBytes, sessionOptions = {}) {
    return new Translator(await createLibmt(), modelBytes, sessionOptions);
  }

  constructor(module, modelBytes, sessionOptions = {}) {
    const m = (this.m = module);
    this.image = m._aligned_alloc(64, Math.ceil(modelBytes.length / 64) * 64);
    if (!this.image) throw new LibmtError(6, 'cannot allocate the model image');
    m.HEAPU8.set(modelBytes, this.image);
    const scratch = m._malloc(OPTIONS_BYTES);
    try {
      this.check(m._mt_model_load_buffer(this.image, modelBytes.length, scratch));
      this.model = m.HEAPU32[scratch >> 2];
      m._mt_session_options_init(scratch);
      fillOptions(m, scratch, SESSION_FIELDS, sessionOptions, 'session');
      this.maxBatch = m.HEAP32[scratch >> 2];
      this.qualityScores = m.HEAP32[(scratch >> 2) + 10] !== 0;
      this.alignments = m.HEAP32[(scratch >> 2) + 11] !== 0;
      const out = m._malloc(4);
      try {
        this.check(m._mt_session_create(this.model, scratch, out));
        this.session = m.HEAPU32[out >> 2];
      } finally {
        m._free(out);
      }
    } catch (e) {
      this.free();
      throw e;
    } finally {
      m._free(scratch);
    }
  }

  check(status) {
    if (status !== 0) throw new LibmtError(status, this.m.UTF8ToString(this.m._mt_last_error()));
  }

  // The model's token ids for a language pair (either may be omitted):
  // [source id or -1, target id or -1] (mt_language_prefixes).
  languagePrefixes(sourceLanguage, targetLanguage) {
    const m = this.m, encoder = new TextEncoder();
    const strings = [sourceLanguage, targetLanguage].map((s) => (s ? encoder.encode(s) : null));
    const block = m._malloc(8 + strings.reduce((n, s) => n + (s ? s.length + 1 : 0), 0));
    try {
      let at = block + 8;
      const pointers = strings.map((s) => {
        if (!s) return 0;
        const p = at;
        m.HEAPU8.set(s, p);
        m.HEAPU8[p + s.length] = 0;
        at += s.length + 1;
        return p;
      });
      this.check(m._mt_language_prefixes(this.model, pointers[0], pointers[1], block, block + 4));
      return [m.HEAP32[block >> 2], m.HEAP32[(block >> 2) + 1]];
    } finally {
      m._free(block);
    }
  }

  // One translation per line (the best hypothesis), in order; lines are
  // sent in batches of the session's max_batch_size. Besides mt.h's
  // translate options (alternatives, no_repeat_ngram_size and
  // repetition_penalty among them): source_language and target_language (a
  // multilingual model's languages), source_prefix and target_prefix
  // (arrays of token ids put before every source, and forced first), and
  // prefixes: the start of each line's translation (a string or null per
  // line), scored as the model scores it.
  translate(lines, options = {}) {
    const results = [];
    this.eachBatch(lines, null, options, (i) => results.push(this.resultText(i, 0)));
    return results;
  }

  // translate() with every hypothesis and its numbers: per line { truncated,
  // stopped, hypotheses: [{ text, score, log_prob, token_log_probs, words,
  // quality, alignment }], sourceRanges }; words ([{ begin, end, score }],
  // string indices that tile the text) and quality only for a translator made
  // with quality_scores; alignment (a row of weights over the source's tokens
  // per token, then EOS) and sourceRanges (each source token's [begin, end]
  // in the line) with alignments.
  translateDetailed(lines, options = {}) {
    const results = [];
    this.eachBatch(lines, null, options, (i) => results.push(this.detailedResult(i)));
    return results;
  }

  // Scores given translations (forced decoding, mt_score_text): targets[i] as
  // a translation of sources[i]; per line the same as translateDetailed's,
  // one hypothesis each. Options: source_prefix, target_prefix, length_penalty,
  // min_decoding_length, truncate_long_sources, the languages.
  score(sources, targets, options = {}) {
    if (sources.length !== targets.length) {
      throw new TypeError(`score needs one target per source: ${sources.length} sources, ${targets.length} targets`);
    }
    const results = [];
    this.eachBatch(sources, targets, options, (i) => results.push(this.detailedResult(i)));
    return results;
  }

  // Runs the lines in batches of max_batch_size through mt_translate_text, or
  // mt_score_text with `targets`, then read(i) for each line of a batch.
  eachBatch(lines, targets, options, read) {
    const m = this.m;
    const encoder = new TextEncoder();
    const { prefixes, ...rest } = options;
    if (prefixes !== undefined && (!Array.isArray(prefixes) || prefixes.length > lines.length)) {
      throw new TypeError('prefixes: an array of at most one string (or null) per line');
    }
    this.withTranslateOptions(rest, (opts) => {
      for (let b = 0; b < lines.length; b += this.maxBatch) {
        this.streamBase = b;  // onToken's sentence index: this batch's first line
        const batch = lines.slice(b, b + this.maxBatch).map((line) => encoder.encode(line));
        this.lineBytes = batch;  // detailedResult's source ranges: indices into these
        const n = batch.length;
        const second = (targets || prefixes || []).slice(b, b + n).map((s) => encoder.encode(s || ''));
        const bytes = batch.concat(second).reduce((k, t) => k + t.length, 0);
        // texts[], lengths[], the second list's texts[] and lengths[], the UTF-8 bytes.
        const block = m._malloc(16 * n + bytes + 8);
        try {
          const texts = block, lengths = block + 4 * n, texts2 = block + 8 * n, lengths2 = block + 12 * n;
          let text = block + 16 * n;
          const put = (list, pointers, sizes) => list.forEach((t, i) => {
            m.HEAPU32[(pointers >> 2) + i] = text;
            m.HEAPU32[(sizes >> 2) + i] = t.length;
            m.HEAPU8.set(t, text);
            text += t.length;
          });
          put(batch, texts, lengths);
          put(second, texts2, lengths2);
          if (targets) {
            this.check(m._mt_score_text(this.session, texts, lengths, texts2, lengths2, n, opts));
          } else {
            const slot = (opts >> 2) + TEXT_PREFIX_SLOT;
            m.HEAPU32[slot] = texts2;
            m.HEAPU32[slot + 1] = lengths2;
            m.HEAPU32[slot + 2] = second.length;
            this.check(m._mt_translate_text(this.session, texts, lengths, n, opts));
          }
          for (let i = 0; i < n; ++i) read(i);
        } finally {
          m._free(block);
        }
      }
    });
  }

  // Hypothesis k's text of line i of the last results.
  resultText(i, k) {
    const m = this.m, out = m._malloc(8);
    try {
      this.check(m._mt_result_text(this.session, i, k, out, out + 4, 0));
      const start = m.HEAPU32[out >> 2], length = m.HEAPU32[(out >> 2) + 1];
      return new TextDecoder().decode(m.HEAPU8.subarray(start, start + length));
    } finally {
      m._free(out);
    }
  }

  // Line i of the last results, every hypothesis with its numbers.
  detailedResult(i) {
    const m = this.m, out = m._malloc(16);
    const decoder = new TextDecoder();
    try {
      this.check(m._mt_result_count(this.session, i, out));
      const count = m.HEAPU32[out >> 2];
      this.check(m._mt_result_truncated(this.session, i, out));
      const truncated = m.HEAP32[out >> 2] !== 0;
      this.check(m._mt_result_stopped(this.session, i, out));
      const stopped = m.HEAP32[out >> 2] !== 0;
      const hypotheses = [];
      for (let k = 0; k < count; ++k) {
        this.check(m._mt_result_text(this.session, i, k, out, out + 4, out + 8));
        const start = m.HEAPU32[out >> 2], bytes = m.HEAPU8.slice(start, start + m.HEAPU32[(out >> 2) + 1]);
        const h = { text: decoder.decode(bytes), score: m.HEAPF32[(out >> 2) + 2] };
        this.check(m._mt_result_log_probs(this.session, i, k, out, out + 4, out + 8));
        const values = m.HEAPU32[out >> 2];
        h.token_log_probs = Array.from(m.HEAPF32.subarray(values >> 2, (values >> 2) + m.HEAPU32[(out >> 2) + 1]));
        h.log_prob = m.HEAPF32[(out >> 2) + 2];
        if (this.qualityScores) {
          // mt_word_score: begin, end (size_t), score: 12 bytes in wasm32.
          this.check(m._mt_result_words(this.session, i, k, out, out + 4, out + 8));
          const words = m.HEAPU32[out >> 2] >> 2, n = m.HEAPU32[(out >> 2) + 1];
          h.quality = m.HEAPF32[(out >> 2) + 2];
          const at = [];
          for (let w = 0; w < n; ++w) at.push(m.HEAPU32[words + 3 * w], m.HEAPU32[words + 3 * w + 1]);
          let byte = 0, index = 0;  // UTF-8 offsets to string indices, both ascending
          const indices = at.map((o) => {
            index += decoder.decode(bytes.subarray(byte, o)).length;
            byte = o;
            return index;
          });
          h.words = [];
          for (let w = 0; w < n; ++w) {
            h.words.push({ begin: indices[2 * w], end: indices[2 * w + 1], score: m.HEAPF32[words + 3 * w + 2] });
          }
        }
        if (this.alignments) {
          this.check(m._mt_result_alignment(this.session, i, k, out, out + 4, out + 8, out + 12));
          const at = m.HEAPU32[out >> 2] >> 2, rows = m.HEAPU32[(out >> 2) + 1];
          const columns = m.HEAPU32[(out >> 2) + 2], stride = m.HEAPU32[(out >> 2) + 3];
          h.alignment = [];
          for (let r = 0; r < rows; ++r) {
            h.alignment.push(Array.from(m.HEAPF32.subarray(at + r * stride, at + r * stride + columns)));
          }
        }
        hypotheses.push(h);
      }
      const result = { truncated, stopped, hypotheses };
      if (this.alignments) {
        // mt_byte_range: begin, end (size_t: 4 bytes each in wasm32), bytes of the line as encoded.
        this.check(m._mt_result_source_ranges(this.session, i, out, out + 4));
        const at = m.HEAPU32[out >> 2] >> 2, n = m.HEAPU32[(out >> 2) + 1];
        const bytes = this.lineBytes[i];
        let byte = 0, index = 0;
        const indexOf = (o) => {
          index += decoder.decode(bytes.subarray(byte, o)).length;
          byte = o;
          return index;
        };
        result.sourceRanges = [];
        for (let c = 0; c < n; ++c) result.sourceRanges.push([indexOf(m.HEAPU32[at + 2 * c]), indexOf(m.HEAPU32[at + 2 * c + 1])]);
      }
      return result;
    } finally {
      m._free(out);
    }
  }

  // Runs body(pointer) with an mt_translate_options filled from `options`:
  // mt.h's fields, source_language, target_language (a multilingual
  // model's languages), source_prefix and target_prefix (token ids), and
  // onToken({ sentence, step, token, text, log_prob }): each token as soon as
  // it is final (the texts joined are the translation, EOS last); returning
  // true stops that sentence; cache (createCache()): earlier translations.
  withTranslateOptions(options, body) {
    const m = this.m;
    const { source_language, target_language, source_prefix = [], target_prefix = [], onToken, cache, ...rest } =
      options;
    const source = [...source_prefix], target = [...target_prefix];
    if (source_language || target_language) {
      const [s, t] = this.languagePrefixes(source_language, target_language);
      if (s >= 0) source.unshift(s);
      if (t >= 0) target.unshift(t);
    }
    const opts = m._malloc(OPTIONS_BYTES + 4 * (source.length + target.length));
    let callback = 0;
    try {
      m._mt_translate_options_init(opts);
      fillOptions(m, opts, TRANSLATE_FIELDS, rest, 'translate');
      const ids = opts + OPTIONS_BYTES;
      source.concat(target).forEach((id, i) => { m.HEAP32[(ids >> 2) + i] = id; });
      const slot = (opts >> 2) + PREFIX_SLOT;
      m.HEAPU32[slot] = source.length ? ids : 0;
      m.HEAPU32[slot + 1] = source.length;
      m.HEAPU32[slot + 2] = target.length ? ids + 4 * source.length : 0;
      m.HEAPU32[slot + 3] = target.length;
      if (onToken) {
        // mt_token_event: sentence, step, token, text, text_length, log_prob (4 bytes each).
        const decoder = new TextDecoder();
        callback = m.addFunction((user, event) => {
          const w = event >> 2, text = m.HEAPU32[w + 3];
          const stop = onToken({
            sentence: this.streamBase + m.HEAPU32[w], step: m.HEAP32[w + 1], token: m.HEAP32[w + 2],
            text: decoder.decode(m.HEAPU8.subarray(text, text + m.HEAPU32[w + 4])), log_prob: m.HEAPF32[w + 5],
          });
          return stop ? 1 : 0;
        }, 'iii');
        m.HEAPU32[slot + 4] = callback;
      }
      if (cache) m.HEAPU32[slot + 7] = cache.pointer;  // after on_token, its data and cancel
      return body(opts);
    } finally {
      if (callback) m.removeFunction(callback);
      m._free(opts);
    }
  }

  // Translates running text (mt_translate_paragraphs): split into sentences,
  // each translated, every space and line break between them kept. Returns
  // { text, sentences: [{ source: [begin, end], target: [begin, end],
  // paragraph, pieces, truncated }] }, indices into the JavaScript strings.
  // Options: mode ('lines', 'wrapped' or 'sentence'), prefixes (a
  // non-breaking prefix list's text) or prefix_language ('en', 'de', ...;
  // neither: the model's list), format ('plain' or 'html': tags kept, inline
  // ones moved with their words; needs a translator made with alignments;
  // sentences is then empty), and translate()'s options.
  translateParagraphs(text, options = {}) {
    const m = this.m;
    const { mode = 'lines', prefixes, prefix_language, format = 'plain', ...rest } = options;
    const formats = { plain: 0, html: 1 };
    if (!(format in formats)) throw new TypeError(`format '${format}': must be 'plain' or 'html'`);
    const modes = { sentence: 0, lines: 1, wrapped: 2 };
    if (!(mode in modes)) throw new TypeError(`mode '${mode}': must be 'sentence', 'lines' or 'wrapped'`);
    if (prefixes !== undefined && prefix_language !== undefined) {
      throw new TypeError('prefixes and prefix_language: give one or neither');
    }
    const encoder = new TextEncoder();
    const source = encoder.encode(text);
    const chunks = [], records = [];
    let written = 0;
    const writeText = m.addFunction((user, bytes, length) => {
      chunks.push(m.HEAPU8.slice(bytes, bytes + length));
      written += length;
      return 0;
    }, 'iiii');
    const writeSentence = m.addFunction((user, s) => {
      const w = s >> 2;
      records.push([m.HEAPU32[w], m.HEAPU32[w + 1], m.HEAPU32[w + 2], m.HEAPU32[w + 3], m.HEAPU32[w + 4],
                    m.HEAP32[w + 5], m.HEAP32[w + 6]]);
      return 0;
    }, 'iii');
    const list = prefixes !== undefined ? encoder.encode(prefixes) : prefix_language !== undefined
      ? encoder.encode(prefix_language + '\0') : null;
    const block = m._malloc(64 + source.length + (list ? list.length : 0));
    let prefixHandle = 0;
    try {
      const po = block, out = block + 32, textAt = block + 64, listAt = textAt + source.length;
      m.HEAPU8.set(source, textAt);
      if (list) {
        m.HEAPU8.set(list, listAt);
        this.check(prefixes !== undefined ? m._mt_prefixes_parse(listAt, list.length, out)
                                          : m._mt_prefixes_builtin(listAt, out));
        prefixHandle = m.HEAPU32[out >> 2];
      }
      m._mt_paragraph_options_init(po);
      m.HEAP32[po >> 2] = modes[mode];
      m.HEAPU32[(po >> 2) + 1] = prefixHandle;
      m.HEAPU32[(po >> 2) + 2] = writeText;
      m.HEAPU32[(po >> 2) + 3] = writeSentence;
      m.HEAP32[(po >> 2) + 5] = formats[format];  // after user_data
      this.withTranslateOptions(rest, (opts) =>
        this.check(m._mt_translate_paragraphs(this.session, textAt, source.length, po, opts)));
    } finally {
      if (prefixHandle) m._mt_prefixes_free(prefixHandle);
      m._free(block);
      m.removeFunction(writeText);
      m.removeFunction(writeSentence);
    }
    const bytes = new Uint8Array(written);
    let at = 0;
    for (const c of chunks) {
      bytes.set(c, at);
      at += c.length;
    }
    const decoder = new TextDecoder();
    // UTF-8 byte offsets to string indices, both ascending.
    const indices = (data, offsets) => {
      let byte = 0, index = 0;
      return offsets.map((o) => {
        index += decoder.decode(data.subarray(byte, o)).length;
        byte = o;
        return index;
      });
    };
    const sourceAt = indices(source, records.flatMap((r) => [r[0], r[1]]));
    const targetAt = indices(bytes, records.flatMap((r) => [r[2], r[3]]));
    return {
      text: decoder.decode(bytes),
      sentences: records.map((r, i) => ({
        source: [sourceAt[2 * i], sourceAt[2 * i + 1]], target: [targetAt[2 * i], targetAt[2 * i + 1]],
        paragraph: r[4], pieces: r[5], truncated: r[6] !== 0,
      })),
    };
  }

  // A TranslationCache in this translator's module, for { cache } options.
  createCache(maxEntries = 1024, memoryBytes = 0) {
    return new TranslationCache(this.m, maxEntries, memoryBytes);
  }

  // Releases the session, the model and its image (the module stays).
  free() {
    const m = this.m;
    if (this.session) m._mt_session_free(this.session);
    if (this.model) m._mt_model_free(this.model);
    if (this.image) m._free(this.image);
    this.session = this.model = this.image = 0;
  }
}

// CommonJS (Node.js, bundlers), or globals for a page's <script> tag.
if (typeof module === 'object' && module.exports) module.exports = { Translator, TranslationCache, LibmtError };
else Object.assign(globalThis, { LibmtTranslator: Translator, LibmtTranslationCache: TranslationCache, LibmtError });
