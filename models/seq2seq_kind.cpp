// models/seq2seq_kind.cpp — the "seq2seq" kind's descriptor (models/kind.h): the
// shared keys it takes with their meanings, its own options (Seq2SeqOptions:
// parsed, documented and checked here), its defaults (post-LN and sinusoidal
// positions, as Vaswani et al.; padding id 0), its factory, and the data it
// trains on (source and target pairs). Not here: the network (models/seq2seq.h).
#include "models/kind.h"
#include "models/seq2seq.h"
#include "nn/user_input.h"

namespace ks::models {

Seq2SeqOptions Seq2SeqOptions::parse(const nlohmann::json& section, const std::string& prefix) {
  Seq2SeqOptions o;
  nn::read_json_key(section, "src_vocab_size", o.src_vocab_size, prefix);
  nn::read_json_key(section, "tgt_vocab_size", o.tgt_vocab_size, prefix);
  nn::read_json_key(section, "encoder_layers", o.encoder_layers, prefix);
  nn::read_json_key(section, "decoder_layers", o.decoder_layers, prefix);
  nn::read_json_key(section, "share_embeddings", o.share_embeddings, prefix);
  nn::read_json_key(section, "label_smoothing", o.label_smoothing, prefix);
  nn::read_json_key(section, "bos_id", o.bos_id, prefix);
  nn::read_json_key(section, "eos_id", o.eos_id, prefix);
  return o;
}

std::vector<KeyDoc> Seq2SeqOptions::option_keys() {
  return {{"src_vocab_size", "source token ids (the data's)"},
          {"tgt_vocab_size", "target token ids (the data's)"},
          {"encoder_layers", "encoder layers"},
          {"decoder_layers", "decoder layers"},
          {"share_embeddings", "one table for source, target and output (needs equal vocabularies)"},
          {"label_smoothing", "the training loss's label smoothing, in [0, 1)"},
          {"bos_id", "the begin-of-sequence token's id"},
          {"eos_id", "the end-of-sequence token's id"}};
}

nlohmann::json Seq2SeqOptions::to_json() const {
  return {{"src_vocab_size", src_vocab_size},
          {"tgt_vocab_size", tgt_vocab_size},
          {"encoder_layers", encoder_layers},
          {"decoder_layers", decoder_layers},
          {"share_embeddings", share_embeddings},
          {"label_smoothing", label_smoothing},
          {"bos_id", bos_id},
          {"eos_id", eos_id}};
}

void Seq2SeqOptions::validate(const ModelConfig& m, const std::string& p) const {
  check_at_most(src_vocab_size, kMaxVocabSize, p, "src_vocab_size");
  check_at_most(tgt_vocab_size, kMaxVocabSize, p, "tgt_vocab_size");
  check_at_most(encoder_layers, kMaxLayers, p, "encoder_layers");
  check_at_most(decoder_layers, kMaxLayers, p, "decoder_layers");
  check_positive(src_vocab_size, p, "src_vocab_size");
  check_positive(tgt_vocab_size, p, "tgt_vocab_size");
  check_positive(encoder_layers, p, "encoder_layers");
  check_positive(decoder_layers, p, "decoder_layers");
  KS_CHECK(!share_embeddings || src_vocab_size == tgt_vocab_size, "config: ", p,
           "share_embeddings: needs src_vocab_size == tgt_vocab_size (", src_vocab_size, " vs ", tgt_vocab_size, ")");
  KS_CHECK(label_smoothing >= 0 && label_smoothing < 1, "config: ", p, "label_smoothing: must be in [0, 1), got ",
           label_smoothing);
  for (auto [id, key] : {std::pair{m.pad_id, "pad_id"}, {bos_id, "bos_id"}, {eos_id, "eos_id"}})
    KS_CHECK(id >= 0 && id < tgt_vocab_size, "config: ", p, key, ": must be a token id in [0, ", tgt_vocab_size,
             "), got ", id);
}

namespace {

void defaults(ModelConfig& m) {
  m.pre_norm = false;
  m.positions = "sinusoidal";
  m.pad_id = 0;
}

std::shared_ptr<Model> make_seq2seq(const ModelConfig& cfg) { return std::make_shared<Seq2Seq>(cfg); }

}  // namespace

KS_REGISTER_MODEL(with_model_options<Seq2SeqOptions>({
    .name = "seq2seq",
    .task = "seq2seq",
    .task_default = true,
    .keys = {{"tied_lookup_reversed",
              "a shared table's lookups enter with their features reversed (a better first loss)"},
             {"pad_id", "the padding token's id"}},
    .defaults = defaults,
    .make = make_seq2seq,
    .stored_defaults = {{"tied_lookup_reversed", false}},  // ModelConfig::tied_lookup_reversed
}));

}  // namespace ks::models
