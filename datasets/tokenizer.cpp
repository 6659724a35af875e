// datasets/tokenizer.cpp — special tokens, the tokenizer registry (save/load
// and train_tokenizer dispatch by "type"), the byte-level tokenizer.
#include "datasets/tokenizer.h"

#include <algorithm>

#include "core/registry.h"
#include "datasets/hf_bpe.h"
#include "datasets/hf_form.h"
#include "datasets/io.h"
#include "datasets/tokenizer_json.h"

namespace ks::data {

using detail::json;

namespace {
// The largest raw tokenizer.json parsed whole to look for a Keystone form:
// a word vocabulary of 2^20 words is about 20 MB.
constexpr size_t kMaxKeystoneFormBytes = size_t(32) << 20;

Registry<TokenizerKind>& registry() {
  static Registry<TokenizerKind> r("tokenizer type");
  return r;
}
}  // namespace

bool register_tokenizer(const std::string& type, TokenizerKind kind, int order) {
  return registry().add(type, kind, order);
}

const std::vector<std::string>& special_tokens() {
  static const std::vector<std::string> names = {"<pad>", "<bos>", "<eos>", "<unk>"};
  return names;
}

std::string Tokenizer::file_text() const { return to_json() + "\n"; }

void Tokenizer::save(const std::filesystem::path& path) const {
  std::string text;
  try {
    text = file_text();
  } catch (const Error& e) {
    throw Error(str(e.what(), "; nothing was written to ", path.string()));
  }
  write_file_atomic(path, text, "tokenizer save");
}

std::unique_ptr<Tokenizer> tokenizer_from_json(const std::string& json_text, const std::string& where) {
  // Hugging Face ids are the file's own, without Keystone's fixed specials. A
  // tokenizer.json ({"type": "hf_bpe"} saved, or raw: no "type", a "model") is
  // read as a stream, never as one tree (datasets/hf_bpe.h: its memory).
  if (const detail::HfBpeForm form = detail::hf_bpe_form(json_text); form != detail::HfBpeForm::None) {
    // A raw one may be the exact form of a Keystone tokenizer (datasets/hf_form.h, what `keystone export`
    // writes): that tokenizer, with its end-of-text id. Only a small file naming all four specials is
    // parsed whole to see; any other is streamed as it is, never held as a tree, and a file that does
    // not parse is left to the streaming reader, whose errors name the key.
    if (form == detail::HfBpeForm::Raw && json_text.size() <= kMaxKeystoneFormBytes &&
        std::all_of(special_tokens().begin(), special_tokens().end(), [&](const std::string& name) {
          return json_text.find("\"" + name + "\"") != std::string_view::npos;
        })) {
      try {
        if (std::unique_ptr<Tokenizer> own = keystone_tokenizer_from_hf(nn::parse_json(json_text, where))) return own;
      } catch (const Error&) {  // not JSON Keystone takes: the streaming reader below says why
      }
    }
    return detail::hf_bpe_tokenizer_from_text(json_text, form, where);
  }
  json j = nn::parse_json(json_text, str("load_tokenizer: ", where));
  KS_CHECK(j.is_object(), "load_tokenizer: ", where, ": expected a JSON object");
  auto specials = detail::field<std::vector<std::string>>(j, "specials", where);
  KS_CHECK(specials == special_tokens(), "load_tokenizer: ", where,
           ": \"specials\" must be [\"<pad>\", \"<bos>\", \"<eos>\", \"<unk>\"] (Keystone's fixed ids 0-3)");
  auto type = detail::field<std::string>(j, "type", where);
  if (const TokenizerKind* kind = registry().find(type); kind && kind->from_json) return kind->from_json(j, where);
  throw Error(
      str("load_tokenizer: ", where, ": unknown tokenizer type \"", type, "\" (expected ", tokenizer_types(), ")"));
}

bool is_tokenizer_type(const std::string& type) { return registry().contains(type); }

std::vector<std::string> trainable_tokenizer_types() {
  std::vector<std::string> trainable;
  for (const std::string& type : registry().names())
    if (registry().at(type).train) trainable.push_back(type);
  return trainable;
}

std::string tokenizer_types() { return listed(trainable_tokenizer_types(), " or "); }

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path) {
  return tokenizer_from_json(read_file(path, "load_tokenizer", kMaxTokenizerFileBytes), path.string());
}

// ---- byte-level ----------------------------------------------------------------

std::vector<int64_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = kNumSpecial + static_cast<unsigned char>(text[i]);
  return ids;
}

std::string decode_known(const Tokenizer& tok, const std::vector<int64_t>& ids, int64_t* skipped) {
  std::vector<int64_t> known;
  known.reserve(ids.size());
  for (int64_t id : ids) {
    if (tok.has_id(id))
      known.push_back(id);
    else if (skipped)
      ++*skipped;
  }
  return tok.decode(known);
}

std::string ByteTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  out.reserve(ids.size());
  for (int64_t id : ids) {
    KS_CHECK(id >= 0 && id < vocab_size(), "tokenizer decode: id ", id, " is out of range for a byte tokenizer (",
             vocab_size(), " ids)");
    if (id >= kNumSpecial)
      out.push_back(static_cast<char>(id - kNumSpecial));
    else if (id == kUnkId)
      out += special_tokens()[kUnkId];
  }
  return out;
}

std::string ByteTokenizer::token(int64_t id) const {
  KS_CHECK(id >= 0 && id < vocab_size(), "tokenizer token: id ", id, " is out of range (", vocab_size(), " ids)");
  return id < kNumSpecial ? special_tokens()[id] : std::string(1, static_cast<char>(id - kNumSpecial));
}

std::string ByteTokenizer::to_json() const { return detail::dump_tokenizer(detail::tokenizer_head("byte")); }

// ---- from a recipe -------------------------------------------------------------

std::unique_ptr<Tokenizer> train_tokenizer(const TokenizerOptions& o, const std::vector<std::string>& corpus) {
  KS_CHECK(o.vocab_size >= 0, "train_tokenizer: vocab_size must be >= 0, got ", o.vocab_size);
  KS_CHECK(o.min_freq >= 1, "train_tokenizer: min_freq must be >= 1, got ", o.min_freq);
  if (!o.file.empty()) {
    std::unique_ptr<Tokenizer> t = load_tokenizer(o.file);
    KS_CHECK(t->type() == o.type, "train_tokenizer: ", o.file, " is a ", t->type(),
             " tokenizer, but the config's tokenizer type is ", o.type, ": set its \"type\" to \"", t->type(), "\"");
    return t;
  }
  if (const TokenizerKind* kind = registry().find(o.type)) {
    KS_CHECK(kind->train, "train_tokenizer: an ", o.type, " tokenizer is not trained here; it comes with a model ",
             "(keystone import --from hf) or from a file (the tokenizer's \"file\": a tokenizer.json)");
    return kind->train(o, corpus);
  }
  throw Error(str("train_tokenizer: unknown tokenizer type \"", o.type, "\" (expected ", tokenizer_types(), ")"));
}

}  // namespace ks::data
