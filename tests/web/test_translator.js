// web/translator.js over libmt.wasm under Node.js: the shipped int8 model
// translates the committed sentences as the native build does (greedy), beam
// search and batching work through the options, and errors come back as
// LibmtError with libmt's message.
//   node test_translator.js WEB_BUILD_DIR MODELS_DIR TEST_DATA_DIR
'use strict';
const assert = require('assert');
const fs = require('fs');
const path = require('path');

const [webDir, modelsDir, dataDir] = process.argv.slice(2);
const createLibmt = require(path.resolve(webDir, 'libmt.js'));
const { Translator, LibmtError } = require(path.resolve(webDir, 'translator.js'));

const lines = (file) => fs.readFileSync(path.join(dataDir, file), 'utf8').split('\n').filter((l) => l.length);

async function main() {
  const model = fs.readFileSync(path.join(modelsDir, 'en-de-tiny.int8.mtm'));
  const sources = lines('shipped_sentences.en');
  const expected = lines('shipped_sentences.de-tiny-int8-greedy');
  assert.strictEqual(sources.length, 40);

  const t = await Translator.create(createLibmt, model, { max_batch_size: 8 });
  const greedy = t.translate(sources, { beam_size: 1, max_length_ratio: 2, max_length_offset: 10 });
  assert.deepStrictEqual(greedy, expected, 'greedy translations differ from the native build');
  const beam = t.translate(sources.slice(0, 8), { beam_size: 4, max_length_ratio: 2, max_length_offset: 10 });
  assert.strictEqual(beam.length, 8);
  assert.ok(beam.every((s) => s.length > 0));
  assert.deepStrictEqual(t.translate([]), []);

  // Errors by status and message, and the translator stays usable.
  assert.throws(() => t.translate(sources.slice(0, 1), { beam_size: 9 }),
                (e) => e instanceof LibmtError && e.status === 1 && /beam_size/.test(e.message));
  assert.throws(() => t.translate(sources, { beam: 4 }), /unknown translate option 'beam'/);
  assert.deepStrictEqual(t.translate(sources.slice(0, 2), { beam_size: 1, max_length_ratio: 2, max_length_offset: 10 }),
                         expected.slice(0, 2));
  // Prefixes reach the search: a forced first target token (its text: the translation cut after it)
  // starts every translation, greedy and beam.
  const piece = t.translate(sources.slice(0, 1), { target_prefix: [100], max_decoding_length: 1 })[0];
  assert.ok(piece.length > 0);
  for (const beam_size of [1, 4]) {
    const forced = t.translate(sources.slice(0, 3), { beam_size, target_prefix: [100] });
    assert.ok(forced.every((s) => s.startsWith(piece)), `${piece}: ${forced.join(' | ')}`);
  }
  assert.throws(() => t.translate(sources.slice(0, 1), { target_language: 'fr' }),
                (e) => e instanceof LibmtError && /no language tokens/.test(e.message));

  // Streaming: each line's events are its translation, EOS last; stopping one leaves the others.
  const events = [];
  const streamed = t.translate(sources, { max_length_ratio: 2, max_length_offset: 10,
                                          onToken: (e) => { events.push(e); return e.sentence === 9 && e.step === 0; } });
  sources.forEach((_, i) => {
    const mine = events.filter((e) => e.sentence === i);
    if (i === 9) {
      assert.strictEqual(mine.length, 1);
      assert.strictEqual(streamed[i], mine[0].text);
      return;
    }
    assert.strictEqual(mine.map((e) => e.text).join(''), expected[i]);
    assert.strictEqual(streamed[i], expected[i]);
    assert.deepStrictEqual(mine.map((e) => e.step), mine.map((_, k) => k));
  });

  // A cache: the second pass is found whole and the same.
  const cache = t.createCache(100);
  const cached = [0, 1].map(() => t.translate(sources, { max_length_ratio: 2, max_length_offset: 10, cache }));
  assert.deepStrictEqual(cached[0], expected);
  assert.deepStrictEqual(cached[1], expected);
  assert.deepStrictEqual(cache.stats(), { hits: 40, misses: 40, insertions: 40, evictions: 0, entries: 40 });
  cache.free();

  // Paragraphs: the sentences joined into running text translate as alone, the gaps kept;
  // indices are JavaScript string indices (the German text has multi-byte characters).
  const gaps = sources.map((_, i) => (i === 0 ? '  ' : i % 5 === 0 ? '\n\n' : i % 2 ? ' ' : '\n'));
  const text = sources.map((s, i) => gaps[i] + s).join('') + '\n';
  const para = t.translateParagraphs(text, { mode: 'wrapped', max_length_ratio: 2, max_length_offset: 10 });
  assert.strictEqual(para.sentences.length, 40);
  assert.strictEqual(para.text, expected.map((s, i) => gaps[i] + s).join('') + '\n');
  para.sentences.forEach((s, i) => {
    assert.strictEqual(text.slice(s.source[0], s.source[1]), sources[i]);
    assert.strictEqual(para.text.slice(s.target[0], s.target[1]), expected[i]);
    assert.strictEqual(s.paragraph, Math.floor(i / 5));
    assert.strictEqual(s.pieces, 1);
  });
  assert.strictEqual(t.translateParagraphs('Dr. Smith runs.', { prefix_language: 'en' }).sentences.length, 1);
  assert.strictEqual(t.translateParagraphs('Dr. Smith runs.', { prefixes: '' }).sentences.length, 2);
  const long = t.translateParagraphs('The ' + Array(300).fill('dog runs in the park').join(' ') + '.');
  assert.ok(long.sentences[0].pieces > 1);
  assert.throws(() => t.translateParagraphs('x', { mode: 'words' }), /mode 'words'/);
  assert.throws(() => t.translateParagraphs('x', { prefix_language: 'xx' }),
                (e) => e instanceof LibmtError && /there are/.test(e.message));
  assert.deepStrictEqual(t.translateParagraphs(' \n'), { text: ' \n', sentences: [] });
  t.free();

  // Forced decoding, prefixes, alternatives, guards and word scores.
  const q = await Translator.create(createLibmt, model, { max_batch_size: 4, quality_scores: 1 });
  const detailed = q.translateDetailed(sources.slice(0, 5), { beam_size: 2, num_hypotheses: 2 });
  assert.strictEqual(detailed.length, 5);
  for (const r of detailed) {
    assert.strictEqual(r.hypotheses.length, 2);
    for (const h of r.hypotheses) {
      let sum = 0;
      for (const v of h.token_log_probs) sum = Math.fround(sum + v);
      assert.ok(Math.abs(sum - h.log_prob) < 1e-4);
      assert.strictEqual(h.words[0].begin, 0);
      assert.strictEqual(h.words[h.words.length - 1].end, h.text.length);
      const mean = h.words.reduce((s, w) => s + w.score, 0) / h.words.length;
      assert.ok(Math.abs(mean - h.quality) < 1e-4);
    }
  }
  const best = detailed.map((r) => r.hypotheses[0]);
  const scored = q.score(sources.slice(0, 5), best.map((h) => h.text));
  scored.forEach((r, i) => {
    assert.strictEqual(r.hypotheses.length, 1);
    assert.strictEqual(r.hypotheses[0].text, best[i].text);
  });
  assert.throws(() => q.score(sources.slice(0, 2), ['x']), /one target per source/);
  const woman = q.translate(sources.slice(0, 6), { prefixes: [null, null, null, null, 'Eine Frau'] });
  assert.ok(woman[4].startsWith('Eine Frau'));
  assert.deepStrictEqual(woman.slice(0, 4), q.translate(sources.slice(0, 4)));
  const alternatives = q.translateDetailed(sources.slice(0, 1), { prefixes: ['Ein'], alternatives: 3 })[0];
  assert.strictEqual(alternatives.hypotheses.length, 3);
  assert.strictEqual(new Set(alternatives.hypotheses.map((h) => h.text)).size, 3);
  const guarded = q.translate(['salad', 'the the the the'], { no_repeat_ngram_size: 1, repetition_penalty: 1.5 });
  for (const text of guarded) {
    const words = text.split(' ');
    assert.strictEqual(new Set(words).size, words.length, text);
  }
  assert.throws(() => q.translate(['x'], { repetition_penalty: 0.5 }), (e) => /repetition_penalty/.test(e.message));
  assert.throws(() => q.translate(['x'], { prefixes: 'Ein' }), /prefixes/);
  q.free();
  const a = await Translator.create(createLibmt, model, { max_batch_size: 4, alignments: 1 });
  const aligned = a.translateDetailed(['A man is riding a bicycle.', 'Two dogs play.'], { beam_size: 2, num_hypotheses: 2 });
  for (const r of aligned) {
    for (const h of r.hypotheses) {
      assert.strictEqual(h.alignment.length, h.token_log_probs.length);
      for (const row of h.alignment) assert.ok(Math.abs(row.reduce((s, w) => s + w, 0) - 1) < 1e-5);
      assert.strictEqual(h.alignment[0].length, r.sourceRanges.length);
    }
  }
  assert.deepStrictEqual(aligned[0].sourceRanges[1], [1, 5]);  // " man"
  const htmlPage = '<p>A <b>dog</b> runs.</p><script>x<y</script>';
  const html = a.translateParagraphs(htmlPage, { format: 'html' });
  assert.ok(html.text.includes('<b>Hund</b>'), html.text);
  assert.ok(html.text.endsWith('<script>x<y</script>'));
  assert.throws(() => a.translateParagraphs(htmlPage, { format: 'xml' }), /format 'xml'/);
  const plain = await Translator.create(createLibmt, model, { max_batch_size: 2 });
  // The shortlist option reaches the session (the shipped model has none: the same output either way).
  const whole = await Translator.create(createLibmt, model, { max_batch_size: 2, shortlist: 0 });
  assert.deepStrictEqual(whole.translate(sources.slice(0, 2)), plain.translate(sources.slice(0, 2)));
  whole.free();
  assert.throws(() => plain.translateParagraphs(htmlPage, { format: 'html' }), (e) => /alignments/.test(e.message));
  plain.free();
  a.free();

  const damaged = Buffer.from(model);
  damaged.fill(0, 0, 64);
  await assert.rejects(Translator.create(createLibmt, damaged), (e) => e instanceof LibmtError && e.status !== 0);
  await assert.rejects(Translator.create(createLibmt, model, { num_threads: 2 }), /num_threads = 2/);
  // A page's <script> tags: no module object, globals instead (examples/web/index.html).
  const vm = require('vm');
  const page = { TextEncoder, TextDecoder };
  vm.createContext(page);
  vm.runInContext(fs.readFileSync(path.resolve(webDir, 'translator.js'), 'utf8'), page);
  assert.strictEqual(typeof page.LibmtTranslator, 'function');
  assert.strictEqual(typeof page.LibmtError, 'function');
  console.log('translator.js: all checks passed');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
