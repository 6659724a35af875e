// models/seq2seq_kind.cpp — the "seq2seq" kind's descriptor (models/kind.h): its
// keys with their meanings, its defaults (post-LN and sinusoidal positions, as
// Vaswani et al.; padding id 0), its checks, its factory, and the data it trains
// on (source and target pairs). Not here: the network (models/seq2seq.h).
#include "models/kind.h"
#include "models/seq2seq.h"

namespace ks::models {
namespace {

void defaults(ModelConfig& m) {
  m.pre_norm = false;
  m.positions = "sinusoidal";
  m.pad_id = 0;
}

void validate(const ModelConfig& m, const std::string& p) {
  check_positive(m.src_vocab_size, p, "src_vocab_size");
  check_positive(m.tgt_vocab_size, p, "tgt_vocab_size");
  check_positive(m.encoder_layers, p, "encoder_layers");
  check_positive(m.decoder_layers, p, "decoder_layers");
  KS_CHECK(!m.share_embeddings || m.src_vocab_size == m.tgt_vocab_size, "config: ", p,
           "share_embeddings: needs src_vocab_size == tgt_vocab_size (", m.src_vocab_size, " vs ", m.tgt_vocab_size,
           ")");
  KS_CHECK(m.label_smoothing >= 0 && m.label_smoothing < 1, "config: ", p, "label_smoothing: must be in [0, 1), got ",
           m.label_smoothing);
  for (auto [id, key] : {std::pair{m.pad_id, "pad_id"}, {m.bos_id, "bos_id"}, {m.eos_id, "eos_id"}})
    KS_CHECK(id >= 0 && id < m.tgt_vocab_size, "config: ", p, key, ": must be a token id in [0, ", m.tgt_vocab_size,
             "), got ", id);
}

std::shared_ptr<Model> make_seq2seq(const ModelConfig& cfg) { return std::make_shared<Seq2Seq>(cfg); }

}  // namespace

KS_REGISTER_MODEL({
    .name = "seq2seq",
    .task = "seq2seq",
    .task_default = true,
    .keys = {{"src_vocab_size", "source token ids (the data's)"},
             {"tgt_vocab_size", "target token ids (the data's)"},
             {"encoder_layers", "encoder layers"},
             {"decoder_layers", "decoder layers"},
             {"share_embeddings", "one table for source, target and output (needs equal vocabularies)"},
             {"tied_lookup_reversed",
              "a shared table's lookups enter with their features reversed (a better first loss)"},
             {"label_smoothing", "the training loss's label smoothing, in [0, 1)"},
             {"pad_id", "the padding token's id"},
             {"bos_id", "the begin-of-sequence token's id"},
             {"eos_id", "the end-of-sequence token's id"}},
    .defaults = defaults,
    .validate = validate,
    .make = make_seq2seq,
    .stored_defaults = {{"tied_lookup_reversed", false}},  // ModelConfig::tied_lookup_reversed
});

}  // namespace ks::models
