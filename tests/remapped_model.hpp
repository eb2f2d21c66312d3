// A model with every section a converted model has (format version 3): a
// source vocabulary whose pieces map to shuffled model ids (some to unk, and
// unknown texts with ids of their own), a target vocabulary in model-id
// order, a stored position table and a suppressed id. Shared by the tests of
// those sections and the corruption sweep.
#pragma once

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace mt::test {

inline int piece_of(const VocabularyData& v, PieceType type, const std::string& text = "") {
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    if (v.pieces[i].type == type && (text.empty() || v.pieces[i].text == text)) return int(i);
  }
  return -1;
}

// V model ids over `v`'s pieces, shuffled: piece i is model id source.model_ids[i],
// except the `lacking` pieces, which the model does not have (they map to
// unk). Ids no piece maps to decode as "extraN"; the texts "extraN" of the
// first few such ids are unknown texts with those ids.
struct Remapped {
  ModelConfig config;
  VocabularyData source, target;
  std::vector<int> lacking;
};

inline Remapped remapped(const VocabularyData& v, int V, uint32_t seed) {
  Remapped r;
  r.source = v;
  std::vector<int32_t> ids(static_cast<size_t>(V));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(seed));
  ids.resize(v.pieces.size());
  const int unk = piece_of(v, PieceType::unknown);
  for (size_t i = 0; i < v.pieces.size() && r.lacking.size() < 3; ++i) {
    if (v.pieces[i].type == PieceType::normal && v.pieces[i].text.size() > 3) r.lacking.push_back(int(i));
  }
  for (int i : r.lacking) ids[size_t(i)] = ids[size_t(unk)];
  r.source.model_ids = ids;

  r.target = v;
  r.target.pieces.assign(size_t(V), {});
  for (int id = 0; id < V; ++id) r.target.pieces[size_t(id)] = {"extra" + std::to_string(id), 0.0f, PieceType::normal};
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    if (std::find(r.lacking.begin(), r.lacking.end(), int(i)) == r.lacking.end())
      r.target.pieces[size_t(ids[i])] = v.pieces[i];
  }
  for (int id = 0; id < V && r.source.unknown_ids.size() < 4; ++id) {
    const std::string& text = r.target.pieces[size_t(id)].text;
    if (text.rfind("extra", 0) == 0) r.source.unknown_ids.push_back({text, id});
  }
  std::sort(r.source.unknown_ids.begin(), r.source.unknown_ids.end(),
            [](const auto& a, const auto& b) { return a.text < b.text; });
  r.config = tiny_config();
  r.config.source_vocab_size = r.config.target_vocab_size = V;
  r.config.unk_id = ids[size_t(unk)];
  r.config.bos_id = ids[size_t(piece_of(v, PieceType::control, "<s>"))];
  r.config.eos_id = r.config.pad_id = ids[size_t(piece_of(v, PieceType::control, "</s>"))];
  r.config.stored_positions = true;
  r.config.suppressed_ids = {r.source.unknown_ids.front().model_id};
  return r;
}

inline Expected<ModelWriter> remapped_writer(const Remapped& r, uint64_t seed) {
  auto writer = random_model_writer(r.config, seed);
  if (!writer) return writer.status();
  writer->set_vocabulary(r.source);
  writer->set_target_vocabulary(r.target);
  return writer;
}

}  // namespace mt::test
