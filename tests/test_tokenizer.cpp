// libmt's tokenizer against libsentencepiece 0.1.97 on fixture models trained
// here from tests/data (unigram and BPE; nmt_nfkc, identity and nfkc_cf
// rules; byte fallback, user-defined symbols, unused pieces, whitespace
// options): identical ids and decoded text for every fixture line, malformed
// UTF-8, random bytes and random ids. Then the pieces of our own: the
// ModelProto reader and the charsmap checker on broken input, and the errors
// encode/decode return.
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <random>

#include "tokenizer/normalizer.hpp"
#include "tokenizer/vocabulary_view.hpp"
#include "tokenizer_parity.hpp"

namespace mt::test {
namespace {

const std::filesystem::path kData = MT_TEST_DATA_DIR;

std::string fixture_model(const std::string& name, const std::string& args) {
  return cached_model(name, "--vocab_size=600 --hard_vocab_limit=false --num_threads=2 " + args,
                      {kData / "tokenizer_corpus.txt"});
}

// --- A little protobuf writing, to derive model variants the trainer cannot make.

void put_varint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

uint64_t get_varint(std::string_view s, size_t* pos) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const auto b = static_cast<uint8_t>(s[(*pos)++]);
    v |= uint64_t(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
}

// Rewrites each length-delimited top-level field through `edit` (given the
// field number, its index among equal numbers and its payload); other fields
// are copied. The input is a valid ModelProto.
std::string rewrite(std::string_view proto, const std::function<std::string(uint32_t, size_t, std::string)>& edit) {
  std::string out;
  size_t pos = 0;
  std::map<uint32_t, size_t> seen;
  while (pos < proto.size()) {
    const size_t start = pos;
    const uint64_t tag = get_varint(proto, &pos);
    const uint32_t wire = tag & 7;
    if (wire == 0) {
      get_varint(proto, &pos);
    } else if (wire == 1 || wire == 5) {
      pos += wire == 1 ? 8 : 4;
    } else {
      const uint64_t length = get_varint(proto, &pos);
      const std::string payload(proto.substr(pos, length));
      pos += length;
      const std::string edited = edit(static_cast<uint32_t>(tag >> 3), seen[tag >> 3]++, payload);
      put_varint(&out, tag);
      put_varint(&out, edited.size());
      out += edited;
      continue;
    }
    out.append(proto.substr(start, pos - start));
  }
  return out;
}

// Appends a varint field: protobuf keeps the last value of a repeated scalar.
std::string with_varint(std::string payload, uint32_t field, uint64_t value) {
  put_varint(&payload, uint64_t(field) << 3);
  put_varint(&payload, value);
  return payload;
}

// Marks every 5th normal piece of two or more characters UNUSED (type 5).
std::string with_unused_pieces(const std::string& proto) {
  auto vocabulary = VocabularyData::from_sentencepiece({reinterpret_cast<const uint8_t*>(proto.data()), proto.size()});
  REQUIRE(vocabulary.ok());
  size_t long_pieces = 0;
  return rewrite(proto, [&](uint32_t field, size_t index, std::string payload) {
    if (field != 1) return payload;
    const VocabularyPiece& p = vocabulary->pieces[index];
    const bool multi = p.text.size() > 1 && p.text != "\xE2\x96\x81";
    if (p.type == PieceType::normal && multi && ++long_pieces % 5 == 0) return with_varint(payload, 3, 5);
    return payload;
  });
}

std::string with_normalizer_flag(const std::string& proto, uint32_t field, bool value) {
  return rewrite(proto, [&](uint32_t f, size_t, std::string payload) {
    return f == 3 ? with_varint(payload, field, value) : payload;
  });
}

// --- Fixture parity.

// Random text: bytes drawn from a pool that mixes ASCII, spaces, controls,
// pieces of multi-byte characters and whole ones, so malformed sequences
// meet valid ones.
std::string random_text(std::mt19937& rng) {
  static const std::vector<std::string> kPool = {"a",
                                                 "b",
                                                 "e",
                                                 "t",
                                                 "s",
                                                 " ",
                                                 " ",
                                                 "  ",
                                                 "\t",
                                                 "\n",
                                                 "\r",
                                                 std::string(1, '\0'),
                                                 "\x01",
                                                 "\x7F",
                                                 ".",
                                                 ",",
                                                 "1",
                                                 "\x80",
                                                 "\xBF",
                                                 "\xC0",
                                                 "\xC3",
                                                 "\xE2",
                                                 "\x96",
                                                 "\x81",
                                                 "\xE4",
                                                 "\xF0",
                                                 "\x9F",
                                                 "\xFF",
                                                 "\xED\xA0\x80",
                                                 "\xC3\xA9",
                                                 "\xE2\x96\x81",
                                                 "\xEF\xBC\xA1",
                                                 "\xEF\xAC\x81",
                                                 "\xE2\x91\xA0",
                                                 "\xE4\xB8\xAD",
                                                 "\xF0\x9F\x98\x80",
                                                 "e\xCC\x81",
                                                 "\xE3\x80\x80",
                                                 "\xC2\xA0",
                                                 "\xEF\xBF\xBD",
                                                 "the",
                                                 "ing",
                                                 "Der",
                                                 "\xC3\x9F",
                                                 "<sep>",
                                                 "mt"};
  std::uniform_int_distribution<int> length(0, 24), pick(0, static_cast<int>(kPool.size()) - 1), byte(0, 255),
      coin(0, 3);
  std::string s;
  const int n = length(rng);
  for (int i = 0; i < n; ++i) {
    if (coin(rng) == 0) {
      s.push_back(static_cast<char>(byte(rng)));
    } else {
      s += kPool[pick(rng)];
    }
  }
  return s;
}

void check_fixture_parity(const std::string& model_proto) {
  const auto pair = load_pair(model_proto);
  ParityChecker checker(*pair);
  for (const auto& file : {"tokenizer_fixture.txt", "tokenizer_invalid_utf8.bin", "tokenizer_corpus.txt"}) {
    for (const std::string& line : read_lines(kData / file)) checker.check(line);
  }
  // Whole files at once: long inputs, newlines inside.
  checker.check(read_file(kData / "tokenizer_fixture.txt"));
  checker.check(read_file(kData / "tokenizer_invalid_utf8.bin"));

  std::mt19937 rng(1234);
  for (int i = 0; i < 3000; ++i) checker.check(random_text(rng));

  // Random ids: every piece type, byte runs cut anywhere, controls at the start.
  std::uniform_int_distribution<int> id(0, pair->ours->size() - 1), length(0, 12), low(0, 8);
  for (int i = 0; i < 2000; ++i) {
    std::vector<int> ids(length(rng));
    for (int& x : ids) x = i % 3 == 0 ? low(rng) : id(rng);
    checker.check_decode(ids);
  }
  checker.require_none();
}

TEST_CASE("tokenizer fixture parity unigram nmt_nfkc", "[tokenizer]") {
  check_fixture_parity(fixture_model("unigram", "--model_type=unigram"));
}

TEST_CASE("tokenizer fixture parity bpe nmt_nfkc", "[tokenizer]") {
  check_fixture_parity(fixture_model("bpe", "--model_type=bpe"));
}

TEST_CASE("tokenizer fixture parity unigram byte_fallback", "[tokenizer]") {
  check_fixture_parity(fixture_model("unigram-bytes", "--model_type=unigram --byte_fallback=true"));
}

TEST_CASE("tokenizer fixture parity bpe byte_fallback", "[tokenizer]") {
  check_fixture_parity(fixture_model("bpe-bytes", "--model_type=bpe --byte_fallback=true"));
}

TEST_CASE("tokenizer fixture parity unigram identity", "[tokenizer]") {
  check_fixture_parity(fixture_model("unigram-identity", "--model_type=unigram --normalization_rule_name=identity"));
}

TEST_CASE("tokenizer fixture parity bpe identity", "[tokenizer]") {
  check_fixture_parity(fixture_model("bpe-identity", "--model_type=bpe --normalization_rule_name=identity"));
}

const char* kUserSymbols = "--user_defined_symbols=<sep>,[MASK],mt,\xC3\x9F,2024,@@,\xE2\x96\x81the";

TEST_CASE("tokenizer fixture parity unigram user_defined_symbols", "[tokenizer]") {
  check_fixture_parity(fixture_model("unigram-user", std::string("--model_type=unigram ") + kUserSymbols));
}

TEST_CASE("tokenizer fixture parity bpe user_defined_symbols", "[tokenizer]") {
  check_fixture_parity(fixture_model("bpe-user", std::string("--model_type=bpe --byte_fallback=true ") + kUserSymbols));
}

TEST_CASE("tokenizer fixture parity unigram whitespace kept", "[tokenizer]") {
  check_fixture_parity(fixture_model(
      "unigram-ws",
      "--model_type=unigram --add_dummy_prefix=false --remove_extra_whitespaces=false --unk_surface=<?>"));
}

TEST_CASE("tokenizer fixture parity bpe whitespace as suffix", "[tokenizer]") {
  check_fixture_parity(fixture_model("bpe-suffix", "--model_type=bpe --treat_whitespace_as_suffix=true"));
}

TEST_CASE("tokenizer fixture parity unigram nfkc_cf whitespace as suffix", "[tokenizer]") {
  check_fixture_parity(fixture_model(
      "unigram-suffix", "--model_type=unigram --normalization_rule_name=nfkc_cf --treat_whitespace_as_suffix=true"));
}

TEST_CASE("tokenizer fixture parity unused pieces", "[tokenizer]") {
  check_fixture_parity(with_unused_pieces(fixture_model("unigram", "--model_type=unigram")));
  check_fixture_parity(with_unused_pieces(fixture_model("bpe", "--model_type=bpe")));
  check_fixture_parity(with_unused_pieces(fixture_model("bpe-bytes", "--model_type=bpe --byte_fallback=true")));
}

TEST_CASE("tokenizer fixture parity normalizer flags", "[tokenizer]") {
  // Flags the trainer does not expose, set in the model itself.
  const std::string unigram = fixture_model("unigram", "--model_type=unigram");
  const std::string bpe = fixture_model("bpe", "--model_type=bpe");
  check_fixture_parity(with_normalizer_flag(unigram, 5, false));  // escape_whitespaces
  check_fixture_parity(with_normalizer_flag(bpe, 5, false));
  check_fixture_parity(with_normalizer_flag(with_normalizer_flag(bpe, 3, false), 4, true));  // no dummy prefix
  check_fixture_parity(with_normalizer_flag(unigram, 4, false));  // keep extra whitespace, dummy prefix on
}

// --- The ModelProto reader on malformed input.

Expected<VocabularyData> parse(std::string_view bytes) {
  return VocabularyData::from_sentencepiece({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
}

// --- The ModelProto writer (VocabularyData::to_sentencepiece, mt_model vocab extract).

void same_vocabulary(const VocabularyData& a, const VocabularyData& b) {
  REQUIRE(a.pieces.size() == b.pieces.size());
  for (size_t i = 0; i < a.pieces.size(); ++i) {
    INFO("piece " << i);
    CHECK(a.pieces[i].text == b.pieces[i].text);
    CHECK(a.pieces[i].score == b.pieces[i].score);
    CHECK(a.pieces[i].type == b.pieces[i].type);
  }
  CHECK(a.type == b.type);
  CHECK(a.precompiled_charsmap == b.precompiled_charsmap);
  CHECK(a.normalization_name == b.normalization_name);
  CHECK(a.add_dummy_prefix == b.add_dummy_prefix);
  CHECK(a.remove_extra_whitespaces == b.remove_extra_whitespaces);
  CHECK(a.escape_whitespaces == b.escape_whitespaces);
  CHECK(a.treat_whitespace_as_suffix == b.treat_whitespace_as_suffix);
  CHECK(a.byte_fallback == b.byte_fallback);
  CHECK(a.unk_surface == b.unk_surface);
}

TEST_CASE("tokenizer vocabularies written back as SentencePiece models tokenize as before", "[tokenizer]") {
  const std::string unigram = fixture_model("unigram", "--model_type=unigram");
  const std::string bpe = fixture_model("bpe", "--model_type=bpe");
  const std::vector<std::string> models = {
      unigram,
      fixture_model("bpe-bytes", "--model_type=bpe --byte_fallback=true"),
      fixture_model("unigram-identity", "--model_type=unigram --normalization_rule_name=identity"),
      fixture_model("unigram-ws",
                    "--model_type=unigram --add_dummy_prefix=false --remove_extra_whitespaces=false --unk_surface=<?>"),
      fixture_model("bpe-suffix", "--model_type=bpe --treat_whitespace_as_suffix=true"),
      fixture_model("bpe-user", std::string("--model_type=bpe --byte_fallback=true ") + kUserSymbols),
      with_normalizer_flag(with_normalizer_flag(bpe, 3, false), 4, true),
      with_unused_pieces(unigram),
  };
  for (size_t i = 0; i < models.size(); ++i) {
    INFO("model " << i);
    auto original = parse(models[i]);
    REQUIRE(original.ok());
    const std::vector<uint8_t> written = original->to_sentencepiece();
    auto reread = VocabularyData::from_sentencepiece(written);
    REQUIRE(reread.ok());
    same_vocabulary(*original, *reread);
    // SentencePiece itself loads the written model and tokenizes as libmt does.
    check_fixture_parity(std::string(written.begin(), written.end()));
  }
}

TEST_CASE("tokenizer model proto reader refuses malformed bytes", "[tokenizer]") {
  const std::string model = fixture_model("unigram", "--model_type=unigram");
  REQUIRE(parse(model).ok());

  const std::vector<std::pair<const char*, std::string>> cases = {
      {"empty", ""},
      {"length past the end", std::string("\x0A\x05"
                                          "ab",
                                          4)},
      {"truncated tag", std::string("\x80", 1)},
      {"varint of 11 bytes", std::string("\x18\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x01", 12)},
      {"varint beyond 64 bits", std::string("\x18\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x7F", 11)},
      {"pieces as a varint", std::string("\x08\x01", 2)},
      {"group wire type", std::string("\x0B\x0C", 2)},
      {"wire type 7", std::string("\x0F", 1)},
      {"field number 0", std::string("\x02\x00", 2)},
      {"score as varint", std::string("\x0A\x02\x10\x01", 4)},
      {"truncated fixed32", std::string("\x0A\x03\x15\x00\x00", 5)},
      {"piece text past its message", std::string("\x0A\x03\x0A\x05x", 5)},
  };
  for (const auto& [what, bytes] : cases) {
    INFO(what);
    const auto v = parse(bytes);
    REQUIRE_FALSE(v.ok());
    REQUIRE(std::strlen(v.status().message()) > 0);
  }

  // Truncated anywhere: an error or (at a field boundary) a smaller model,
  // never a crash; an accepted one must tokenize.
  for (size_t length = 0; length < model.size(); length += 1 + length / 16) {
    const auto v = parse(std::string_view(model).substr(0, length));
    if (v.ok()) REQUIRE(detail::Tokenizer::create(v.value()).ok());
  }

  // Random corruption: never a crash (the sanitizer build checks reads).
  std::mt19937 rng(99);
  std::uniform_int_distribution<size_t> where(0, model.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  int accepted = 0;
  for (int i = 0; i < 300; ++i) {
    std::string broken = model;
    for (int k = 0; k < 1 + i % 4; ++k) broken[where(rng)] = static_cast<char>(byte(rng));
    const auto v = parse(broken);
    if (!v.ok()) continue;
    auto t = detail::Tokenizer::create(v.value());
    if (!t.ok()) continue;
    ++accepted;
    for (const char* text : {"Hello world.", "caf\xC3\xA9 \xE4\xB8\xAD\xFF", "  x  "}) {
      std::vector<std::byte> workspace(t.value()->encode_workspace_bytes(std::strlen(text)));
      std::vector<int32_t> ids(t.value()->max_encoded_ids(std::strlen(text)));
      size_t count = 0;
      (void)t.value()->encode(text, workspace, ids, &count);
    }
  }
  WARN(accepted << " of 300 corrupted models still loaded");
}

TEST_CASE("tokenizer model proto reader refuses unsupported models", "[tokenizer]") {
  const std::string model = fixture_model("unigram", "--model_type=unigram");
  const auto with_trainer_field = [&](uint32_t field, uint64_t value) {
    return rewrite(model, [&](uint32_t f, size_t, std::string p) { return f == 2 ? with_varint(p, field, value) : p; });
  };
  auto word = parse(with_trainer_field(3, 3));
  REQUIRE_FALSE(word.ok());
  REQUIRE(std::string(word.status().message()).find("WORD") != std::string::npos);
  REQUIRE_FALSE(parse(with_trainer_field(3, 4)).ok());
  REQUIRE(parse(with_trainer_field(3, 2))->type == VocabularyType::bpe);
  REQUIRE(parse(with_trainer_field(3, 77))->type == VocabularyType::unigram);  // unknown enum: unchanged

  // A denormalizer with rules: field 5, NormalizerSpec with a charsmap.
  std::string denormalizer;
  put_varint(&denormalizer, (2 << 3) | 2);
  put_varint(&denormalizer, 8);
  denormalizer += std::string("\x04\x00\x00\x00\x00\x00\x00\x00", 8);
  std::string with_denormalizer = model;
  put_varint(&with_denormalizer, (5 << 3) | 2);
  put_varint(&with_denormalizer, denormalizer.size());
  with_denormalizer += denormalizer;
  auto refused = parse(with_denormalizer);
  REQUIRE_FALSE(refused.ok());
  REQUIRE(std::string(refused.status().message()).find("denormalizer") != std::string::npos);

  // byte_fallback claimed without the 256 byte pieces.
  REQUIRE_FALSE(parse(with_trainer_field(35, 1)).ok());
}

TEST_CASE("tokenizer vocabulary validate", "[tokenizer]") {
  auto v = parse(fixture_model("unigram", "--model_type=unigram"));
  REQUIRE(v.ok());
  REQUIRE(v->validate().ok());
  VocabularyData copy = v.value();
  copy.pieces[10].text = copy.pieces[11].text;
  CHECK_THAT(copy.validate().message(),
             Catch::Contains("piece 11 (\"" + copy.pieces[11].text + "\") is defined twice (also piece 10)"));
  copy = v.value();
  copy.pieces[3].type = PieceType::normal;  // no unknown piece left
  REQUIRE_FALSE(copy.validate().ok());
  copy = v.value();
  copy.pieces[5].text = "";
  REQUIRE_FALSE(copy.validate().ok());
  copy = v.value();
  copy.pieces[5].text = std::string("a\0b", 3);
  REQUIRE_FALSE(copy.validate().ok());
  copy = v.value();
  copy.type = VocabularyType::none;
  REQUIRE_FALSE(copy.validate().ok());
  REQUIRE_FALSE(detail::Tokenizer::create(copy).ok());
}

// --- The piece trie: built at load, or stored by ModelWriter and checked.

TEST_CASE("tokenizer built and stored piece tries encode alike", "[tokenizer]") {
  for (const auto& [name, args] : {std::pair{"unigram", "--model_type=unigram"}, std::pair{"bpe", "--model_type=bpe"},
                                   std::pair{"unigram-user", "--model_type=unigram --user_defined_symbols=<sep>,ab"}}) {
    INFO(name);
    const std::string proto = fixture_model(name, args);
    const auto stored = load_pair(proto);  // the stored trie, checked
    auto built = detail::Tokenizer::create(parse(proto).value());
    REQUIRE(built.ok());
    for (const std::string& line : read_lines(kData / "tokenizer_corpus.txt")) {
      REQUIRE(encode(*built.value(), line) == encode(*stored->ours, line));
    }
  }
}

// Keys whose trie has shared prefixes, a key inside another and a lone byte.
struct SmallTrie {
  std::vector<std::string> keys{"ab", "a", "abc", "b", "ba", "c"};
  std::string text;
  std::vector<uint32_t> ends;
  std::vector<uint8_t> edge_counts, labels;
  std::vector<uint32_t> key_nodes;
  SmallTrie() {
    std::vector<detail::PieceTrie::Key> k;
    for (size_t i = 0; i < keys.size(); ++i) {
      text += keys[i];
      ends.push_back(uint32_t(text.size()));
    }
    for (size_t i = 0; i < keys.size(); ++i) k.push_back({keys[i], int32_t(i)});
    auto trie = detail::PieceTrie::build(k);
    REQUIRE(trie.ok());
    trie->store(keys.size(), &edge_counts, &labels, &key_nodes);
  }
  Expected<detail::PieceTrie> load() const {
    return detail::PieceTrie::from_stored({edge_counts, labels, key_nodes}, text, ends);
  }
};

TEST_CASE("tokenizer stored piece trie round trip", "[tokenizer]") {
  const SmallTrie t;
  CHECK(t.edge_counts == std::vector<uint8_t>{3, 1, 1, 0, 1, 0, 0});  // breadth first: root, a, b, c, ab, ba, abc
  CHECK(t.labels == std::vector<uint8_t>{'a', 'b', 'c', 'b', 'a', 'c'});
  CHECK(t.key_nodes == std::vector<uint32_t>{4, 1, 6, 2, 5, 3});
  auto trie = t.load();
  REQUIRE(trie.ok());
  for (size_t i = 0; i < t.keys.size(); ++i) CHECK(trie->find(t.keys[i]) == int32_t(i));
  CHECK(trie->find("abcd") == detail::PieceTrie::kNone);
  CHECK(trie->find("bb") == detail::PieceTrie::kNone);
  CHECK(trie->longest_prefix("abx") == 2);
}

TEST_CASE("tokenizer stored piece trie damage is refused by name", "[tokenizer]") {
  const auto refused = [](const SmallTrie& t, const char* why) {
    auto trie = t.load();
    REQUIRE_FALSE(trie.ok());
    CHECK_THAT(trie.status().message(), Catch::Contains(why));
  };
  SmallTrie t;
  t.edge_counts[3] = 1;  // one edge more than there are
  refused(t, "has edges beyond the 6 edges");
  t = SmallTrie();
  t.edge_counts[1] = 0, t.edge_counts[3] = 1;  // totals kept, edges moved to a later node
  refused(t, "does not spell");
  t = SmallTrie();
  std::swap(t.labels[0], t.labels[1]);
  refused(t, "not sorted");
  t = SmallTrie();
  t.labels[3] = 'x';  // "ab" becomes "ax"
  refused(t, "path to piece 0");
  t = SmallTrie();
  t.key_nodes[1] = t.key_nodes[0];
  refused(t, "taken");
  t = SmallTrie();
  t.key_nodes[2] = 99;
  refused(t, "outside the trie");
  t = SmallTrie();
  t.key_nodes[5] = 0;  // the root spells the empty string
  refused(t, "does not spell");
  t = SmallTrie();
  t.key_nodes.pop_back();
  refused(t, "key nodes for");
  t = SmallTrie();
  t.edge_counts = {0, 3, 1, 0, 1, 1, 0};  // the root's edges given to node 1: they lead back to it
  refused(t, "lead back");
}

TEST_CASE("tokenizer stored piece trie any flipped byte is refused or harmless", "[tokenizer]") {
  // The checks are complete: whatever loads is the trie of the keys.
  const SmallTrie good;
  size_t loaded = 0, flips = 0;
  for (int array = 0; array < 3; ++array) {
    const size_t bytes = array == 0   ? good.edge_counts.size()
                         : array == 1 ? good.labels.size()
                                      : 4 * good.key_nodes.size();
    for (size_t at = 0; at < bytes; ++at) {
      for (int bit = 0; bit < 8; ++bit) {
        SmallTrie t = good;
        uint8_t* p = array == 0   ? t.edge_counts.data()
                     : array == 1 ? t.labels.data()
                                  : reinterpret_cast<uint8_t*>(t.key_nodes.data());
        p[at] ^= uint8_t(1u << bit);
        ++flips;
        auto trie = t.load();
        if (!trie.ok()) continue;
        ++loaded;
        for (size_t i = 0; i < t.keys.size(); ++i) CHECK(trie->find(t.keys[i]) == int32_t(i));
      }
    }
  }
  CHECK(flips == 8 * (7 + 6 + 24));
  CHECK(loaded == 0);  // every byte matters in so small a trie
}

// --- The charsmap checker.

uint32_t read_u32(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 | uint32_t(b[at + 2]) << 16 | uint32_t(b[at + 3]) << 24;
}
void write_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

// A hand-made charsmap with one rule, "a" -> "bc": root base 256, the 'a'
// unit at 256 ^ 'a' with a leaf at 400 holding offset 0 into "bc\0".
std::vector<uint8_t> tiny_charsmap() {
  std::vector<uint8_t> blob(4 + 512 * 4, 0);
  write_u32(blob, 0, 512 * 4);
  const auto unit = [&](size_t i, uint32_t v) { write_u32(blob, 4 + 4 * i, v); };
  unit(0, 256u << 10);
  const uint32_t a = 256 ^ 'a';
  unit(a, ((a ^ 400u) << 10) | (1u << 8) | 'a');
  unit(400, 0u | (1u << 31));
  for (const char c : std::string("bc", 3)) blob.push_back(static_cast<uint8_t>(c));
  return blob;
}

TEST_CASE("tokenizer charsmap checker", "[tokenizer]") {
  const std::vector<uint8_t> good = tiny_charsmap();
  size_t expansion = 0;
  REQUIRE(detail::check_charsmap(good, &expansion).ok());
  REQUIRE(expansion == 3);
  REQUIRE(normalize_with(good, "a xa") ==
          "\xE2\x96\x81"
          "bc\xE2\x96\x81x"
          "bc");

  auto broken = good;
  write_u32(broken, 4 + 4 * 400, 99u | (1u << 31));  // replacement offset past the strings
  REQUIRE_FALSE(detail::check_charsmap(broken, nullptr).ok());
  broken = good;
  broken.back() = 'd';  // replacement not NUL-terminated
  REQUIRE_FALSE(detail::check_charsmap(broken, nullptr).ok());
  broken = good;
  write_u32(broken, 0, 100000);  // trie larger than the blob
  REQUIRE_FALSE(detail::check_charsmap(broken, nullptr).ok());
  broken = good;
  const uint32_t a = 256 ^ 'a';
  write_u32(broken, 4 + 4 * a, ((a ^ 5000u) << 10) | (1u << 8) | 'a');  // leaf beyond the array
  REQUIRE_FALSE(detail::check_charsmap(broken, nullptr).ok());
  broken.assign(4 + 64, 0);
  write_u32(broken, 0, 60);  // all-zero units: the root is its own NUL child, a harmless loop
  REQUIRE(detail::check_charsmap(broken, nullptr).ok());
  REQUIRE(normalize_with(broken, std::string("a\0\0b", 4)) == std::string("\xE2\x96\x81"
                                                                          "a\0\0b",
                                                                          7));
  REQUIRE_FALSE(detail::check_charsmap(std::vector<uint8_t>{1, 0, 0}, nullptr).ok());

  // A real charsmap, corrupted at random: an error or a usable normalizer.
  auto v = parse(fixture_model("unigram", "--model_type=unigram"));
  REQUIRE(v.ok());
  const std::vector<uint8_t>& real = v->precompiled_charsmap;
  REQUIRE(detail::check_charsmap(real, &expansion).ok());
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> where(4, read_u32(real, 0));
  std::uniform_int_distribution<int> byte(0, 255);
  int accepted = 0;
  for (int i = 0; i < 50; ++i) {
    auto corrupt = real;
    for (int k = 0; k < 8; ++k) corrupt[where(rng)] = static_cast<uint8_t>(byte(rng));
    if (!detail::check_charsmap(corrupt, nullptr).ok()) continue;
    ++accepted;
    for (int k = 0; k < 20; ++k) normalize_with(corrupt, random_text(rng));
  }
  WARN(accepted << " of 50 corrupted charsmaps passed the check");
}

// --- Errors and bounds of encode/decode.

TEST_CASE("tokenizer encode and decode errors", "[tokenizer]") {
  const auto pair = load_pair(fixture_model("unigram", "--model_type=unigram"));
  const detail::Tokenizer& t = *pair->ours;

  std::vector<int32_t> ids(4);
  std::string out(64, '\0');
  size_t length = 0;
  for (const int32_t bad : {-1, t.size(), 1 << 30}) {
    ids = {5, bad};
    const Status s = t.decode(ids, {out.data(), out.size()}, &length);
    REQUIRE(s.code() == Errc::invalid_argument);
    REQUIRE(std::string(s.message()).find(std::to_string(bad)) != std::string::npos);
  }
  ids = {10, 11, 12, 13};
  REQUIRE(t.decode(ids, {out.data(), 1}, &length).code() == Errc::capacity_exceeded);

  const std::string text = "A sentence long enough to need several pieces.";
  std::vector<std::byte> workspace(t.encode_workspace_bytes(text.size()));
  size_t count = 0;
  std::vector<int32_t> few(2);
  REQUIRE(t.encode(text, workspace, few, &count).code() == Errc::capacity_exceeded);
  std::vector<int32_t> enough(t.max_encoded_ids(text.size()));
  REQUIRE(t.encode(text, std::span(workspace).first(workspace.size() - 1), enough, &count).code() ==
          Errc::capacity_exceeded);
  REQUIRE(t.encode(text, workspace, enough, &count).ok());
  REQUIRE(count > 2);
  REQUIRE(t.encode("", workspace, enough, &count).ok());
  REQUIRE(count == 0);
}

}  // namespace
}  // namespace mt::test
