// A translation model: the Transformer of Vaswani et al. 2017, loaded from a
// libmt model file (schema/model.fbs) by mapping it read-only. The weights are
// used in place from the mapping: loading verifies the file's structure and
// its consistency with the config, and never reads or copies weight bytes.
//
// A Model is immutable and may be shared by any number of sessions and threads.
#pragma once

#include "mt/export.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mt/activation.hpp"
#include "mt/status.hpp"
#include "mt/vocabulary.hpp"

namespace mt {

struct MT_API ModelConfig {
  int encoder_layers = 6;
  int decoder_layers = 6;
  int d_model = 512;
  int heads = 8;
  int d_ff = 2048;
  int source_vocab_size = 32000;
  int target_vocab_size = 32000;
  int max_positions = 1024;
  Activation activation = Activation::relu;  // relu, gelu or swish
  bool pre_norm = false;                     // post-norm as in the paper unless set
  float layer_norm_epsilon = 1e-5f;
  bool shared_embeddings = false;  // source and target share "target_embedding"
  bool tied_output = false;        // output projection is "target_embedding"
  int pad_id = 0;
  int bos_id = 1;
  int eos_id = 2;
  int unk_id = 3;
  // What models made elsewhere need (format version 3; these defaults are
  // what every older file means):
  float embedding_scale = 0.0f;  // token embeddings are multiplied by this; 0: sqrt(d_model)
  int decoder_start_id = -1;     // the decoder's first input; -1: bos_id (Marian starts from pad, fairseq from eos)
  bool source_eos = true;        // eos_id ends every source sentence (OpenNMT-py models have none)
  // Position encodings from the tensor "position_encoding" [max_positions,
  // d_model] instead of the interleaved sinusoid computed at run time: any
  // layout, frequency or offset, or learned positions.
  bool stored_positions = false;
  // Target ids search never emits (HF's OPUS-MT models: <pad>). They are
  // masked after the log-softmax, so they keep their share of the probability
  // mass, as Hugging Face's bad_words_ids does.
  std::vector<int32_t> suppressed_ids;

  float embedding_multiplier() const { return embedding_scale > 0.0f ? embedding_scale : std::sqrt(float(d_model)); }
  int start_id() const { return decoder_start_id >= 0 ? decoder_start_id : bos_id; }

  // Named configurations used by benchmarks and tests:
  //   "base":  6+6 layers, d_model 512, 8 heads, d_ff 2048, vocab 32000 (the paper's base model)
  //   "small": 6+2 layers, d_model 256, 4 heads, d_ff 1024, vocab 8000
  //   "tiny":  4+4 layers, d_model 128, 4 heads, d_ff 256,  vocab 8000
  // All with shared and tied embeddings, post-norm, ReLU. Unknown name: error.
  static Expected<ModelConfig> preset(std::string_view name);

  // Points the vocabulary sizes and special ids at `vocabulary`'s pieces:
  // unk = its unknown piece, bos = "<s>", eos = "</s>", pad = "<pad>" (or eos
  // when absent: padding is never fed to the model). Error if one is missing.
  Status use_vocabulary(const VocabularyData& vocabulary);

  // Checks the values are usable (positive sizes, heads divide d_model, ids in range...).
  Status validate() const;
  int64_t parameter_count() const;
};

enum class DType : uint8_t { f32 = 0, i8 = 1 };
// packed_n16: fp32 linear weights (mt/kernels.h, packed_size); packed_k4n16:
// int8 linear weights and embeddings (mt/kernels.h, packed_size_i8).
enum class Layout : uint8_t { row_major = 0, packed_n16 = 1, packed_k4n16 = 2 };

// What the model file says about one tensor; `data` points into the mapping.
struct TensorView {
  std::string_view name;
  std::span<const uint32_t> shape;
  DType dtype = DType::f32;
  Layout layout = Layout::row_major;
  std::span<const float> scales;      // int8: one per row (output channel)
  std::span<const int32_t> row_sums;  // int8, dynamic activations: each row's sum (computed at load)
  std::span<const uint8_t> data;

  const float* f32() const { return reinterpret_cast<const float*>(data.data()); }
  const int8_t* i8() const { return reinterpret_cast<const int8_t*>(data.data()); }
  // An fp32 tensor's values row-major (packed_n16 weights unpacked): what
  // the quantizer, the trainer and checkpoint averaging read. Allocates.
  MT_API std::vector<float> f32_values() const;
};

// How an int8 model quantizes the inputs of its int8 linear layers.
enum class ActivationScales : uint8_t {
  dynamic_per_row = 0,  // each row's own range at run time
  calibrated = 1,       // one fixed (scale, zero_point) per layer, from calibration
};

// Calibrated input quantization of one linear layer: x = (q - zero_point) * scale.
struct LayerInputScale {
  std::string layer;  // scope, e.g. "encoder/layer_0/ffn/linear_0", or "output"
  float scale = 0.0f;
  int32_t zero_point = 0;
};

struct ModelQuantization {
  bool int8 = false;  // some tensor is int8
  ActivationScales activations = ActivationScales::dynamic_per_row;
  std::string method;                   // calibration method, e.g. "percentile 99.99"
  std::vector<LayerInputScale> inputs;  // calibrated: one per int8 linear layer, sorted by layer
};

struct KeyValue {
  std::string key;
  std::string value;
};

struct ModelMetadata {
  std::string source_language;
  std::string target_language;
  std::string training_corpus;
  std::string tool;
  std::string tool_version;
  std::string created;
  std::vector<KeyValue> extra;
};

// A vocabulary shortlist (mt_shortlist build): the target ids each source id
// may translate to. A sentence is translated over the union of its source
// ids' rows, `frequent`, EOS and the ids the caller forces (prefixes): the
// output layer computes those columns only, and the candidates depend on the
// sentence alone, never on the batch (SessionOptions::shortlist).
struct ShortlistData {
  std::vector<int32_t> frequent;   // ascending
  std::vector<uint32_t> row_ends;  // one per source id: row s is targets[row_ends[s - 1], row_ends[s])
  std::vector<int32_t> targets;    // each row ascending, no repeats
  std::string method;              // how it was made
};

// The model file's shortlist, read in place (checked at load: ids in range,
// rows ascending).
struct MT_API ShortlistView {
  std::span<const int32_t> frequent;
  std::span<const uint32_t> row_ends;
  std::span<const int32_t> targets;
  std::string_view method;
  int longest_row = 0;

  std::span<const int32_t> row(int32_t source_id) const {
    const uint32_t begin = source_id == 0 ? 0 : row_ends[size_t(source_id) - 1];
    return targets.subspan(begin, row_ends[size_t(source_id)] - begin);
  }
  ShortlistData to_data() const;
};

struct LoadOptions {
  // Also read every fp32 weight and refuse NaN or Inf. This touches all the
  // weight pages (the cost of reading the file once); off by default.
  bool check_weights_finite = false;
  // Build (and check) the tokenizer from the file's vocabulary. Off, the
  // model translates token ids only (translate_text refuses), as for a
  // program that tokenizes elsewhere; the vocabulary's checks are then
  // skipped, which is most of a small model's load.
  bool load_vocabulary = true;
  // Model::load: read the file into memory instead of mapping it. A mapped
  // file must not change in place while the Model lives (see Model::load);
  // a copy is immune to that, at the cost of reading the whole file now and
  // of private memory instead of shared page cache.
  bool read_into_memory = false;
};

class NonBreakingPrefixes;

namespace detail {
struct ModelWeights;
class Tokenizer;
class CudaWeightCache;
struct Access;  // lib/src/access.hpp: what libmt's own code reaches inside a Model or a Session
}  // namespace detail

// Loading reads no weight byte of an fp32 model, nor of an int8 model with
// calibrated activations (their zero-point compensation is folded into the
// biases). An int8 model with per-row dynamic activations is read once at
// load, to sum each row for that compensation (mt/kernels.h): milliseconds
// for tens of megabytes, instead of 4 bytes per row in the file.
class MT_API Model {
 public:
  // Maps the file read-only and verifies it. Errors name the field or tensor at fault.
  // The mapping reads the file as it is on disk for the Model's lifetime, and
  // only the header and tables are verified at load: replace a model file by
  // writing a new one and renaming it over the old (as ModelWriter::write and
  // the tools do; the loaded Model keeps the old file's bytes), never by
  // rewriting it in place (cp, truncation): reads of a file changed in place
  // see unverified bytes, and of a shortened one kill the process with SIGBUS.
  // LoadOptions::read_into_memory copies the file instead, for files that may
  // change in place.
  static Expected<std::shared_ptr<const Model>> load(const std::string& path, const LoadOptions& options = {});
  // Same checks on bytes the caller owns and keeps alive (and 64-byte aligned)
  // for the Model's lifetime, e.g. a model linked into a firmware image.
  static Expected<std::shared_ptr<const Model>> from_buffer(std::span<const uint8_t> bytes,
                                                            const LoadOptions& options = {});

  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const;
  const ModelMetadata& metadata() const;
  const ModelQuantization& quantization() const;
  uint32_t format_version() const;
  size_t file_size() const;
  std::span<const TensorView> tensors() const;
  // The tensor of that name, or null.
  const TensorView* find_tensor(std::string_view name) const;
  // The whole file's bytes (the mapping).
  std::span<const uint8_t> bytes() const;
  // Writes those bytes to `path` as ModelWriter::write does: a temporary
  // file renamed over it, so a failure never leaves a partial model.
  Status save(const std::string& path) const;

  // The tokenizer's vocabulary, or null for a model that translates token ids only.
  const VocabularyData* vocabulary() const;
  // The vocabulary target ids decode with, when the file has one of its own
  // (models whose vocabulary has model_ids); null: vocabulary() decodes too.
  const VocabularyData* target_vocabulary() const;
  // The file's vocabulary shortlist, or null when it has none.
  const ShortlistView* shortlist() const;

  // The model's tokenizer for callers outside a session (bindings, tools):
  // UTF-8 text -> source ids (no BOS or EOS), exactly as a session tokenizes,
  // and target ids -> text (with the target vocabulary when there is one), with its line breaks kept or, as
  // translate_text gives them, each made one space. These allocate; sessions tokenize in their own memory. Error if the
  // model has no vocabulary.
  Status encode(std::string_view text, std::vector<int32_t>* ids) const;
  // Target text -> target ids, as score_text and text prefixes encode it
  // (with the target vocabulary when there is one).
  Status encode_target(std::string_view text, std::vector<int32_t>* ids) const;
  Status decode(std::span<const int32_t> ids, std::string* text, bool line_breaks_as_spaces = false) const;

  // Whether the file carries a vocabulary (text in and out), without
  // building the VocabularyData that vocabulary() returns.
  bool has_vocabulary() const;

  struct Impl;

 private:
  friend struct detail::Access;
  // Resolved per-layer weight pointers and the tokenizer, used by sessions.
  const detail::ModelWeights& weights() const;
  const detail::Tokenizer* tokenizer() const;
  const detail::Tokenizer* target_tokenizer() const;  // tokenizer() when one vocabulary serves both
  const NonBreakingPrefixes& sentence_prefixes() const;
  const Status& sentence_prefixes_status() const;
  // The weights' device copies, shared by the model's CUDA sessions.
  detail::CudaWeightCache& cuda_weights() const;
  // A 64-bit hash of the whole file, computed once (the translation cache's key).
  uint64_t content_fingerprint() const;

  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The alignment of memory a caller hands libmt: model images
// (Model::from_buffer) and session memory (Session::create with a buffer).
inline constexpr size_t kBufferAlignment = 64;

// The newest format version this libmt reads (it reads every older one too;
// schema/model.fbs lists what each version changed). It writes the oldest
// version that holds a file's features: 2, or 3 for a version 3 feature
// (ModelWriter::format_version), so older readers keep reading what they can.
inline constexpr uint32_t kModelFormatVersion = 3;

}  // namespace mt
