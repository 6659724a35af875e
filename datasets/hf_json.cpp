// datasets/hf_json.cpp — the shared pieces of reading a tokenizer.json
// (datasets/hf_json.h): key reading, Metaspace and the SentencePiece
// decoders, added tokens, the streaming reader, the model-type registry.
#include "datasets/hf_json.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "core/error.h"
#include "core/registry.h"
#include "datasets/tokenizer_json.h"
#include "nn/user_input.h"

namespace ks::data::hf {

std::string replaced(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, from.size(), from) == 0) {
      out += to;
      i += from.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

size_t char_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
  if (i + n > s.size()) return 1;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  return n;
}

bool is_null_or_absent(const json& j, const char* k) { return !j.contains(k) || j.at(k).is_null(); }

std::string text_or(const json& obj, const char* key, const std::string& fallback, const std::string& at,
                    const std::string& path) {
  if (is_null_or_absent(obj, key)) return fallback;
  KS_CHECK(obj.at(key).is_string(), at, path, key, ": expected a string, got ", nn::json_excerpt(obj.at(key)));
  return obj.at(key).get<std::string>();
}

bool flag_or(const json& obj, const char* key, bool fallback, const std::string& at, const std::string& path) {
  if (is_null_or_absent(obj, key)) return fallback;
  KS_CHECK(obj.at(key).is_boolean(), at, path, key, ": expected true or false, got ", nn::json_excerpt(obj.at(key)));
  return obj.at(key).get<bool>();
}

std::string plain_message(const char* what) {
  std::string s = what;
  if (size_t end = s.find("] "); s.rfind("[json.exception.", 0) == 0 && end != std::string::npos) s.erase(0, end + 2);
  if (s.rfind("parse error at ", 0) == 0) s.erase(0, 15);
  if (s.size() > 2 * nn::kExcerptChars) s = s.substr(0, 2 * nn::kExcerptChars) + "...";
  return s;
}

// ---- Metaspace and the SentencePiece decoders --------------------------------------

Metaspace read_metaspace(const json& m, const std::string& name, const std::string& at) {
  KS_CHECK(text_or(m, "replacement", kMetaspace, at, name + ".") == kMetaspace, at, name,
           ".replacement: only \"\u2581\" is supported");
  const std::string scheme = text_or(m, "prepend_scheme", "", at, name + ".");
  Metaspace out;
  out.prepend = flag_or(m, "add_prefix_space", true, at, name + ".") ? MetaPrepend::Always : MetaPrepend::Never;
  if (!scheme.empty()) {
    KS_CHECK(scheme == "always" || scheme == "first" || scheme == "never", at, name, ".prepend_scheme \"", scheme,
             "\": expected always, first or never");
    out.prepend = scheme == "always"  ? MetaPrepend::Always
                  : scheme == "first" ? MetaPrepend::First
                                      : MetaPrepend::Never;
  }
  out.split = flag_or(m, "split", true, at, name + ".");
  return out;
}

void metaspace_pieces(std::string_view part, bool first, const Metaspace& m, std::vector<std::string>& out) {
  std::string s = replaced(part, " ", kMetaspace);
  if ((m.prepend == MetaPrepend::Always || (m.prepend == MetaPrepend::First && first)) &&
      s.compare(0, kMetaspace.size(), kMetaspace) != 0)
    s.insert(0, kMetaspace);
  if (!m.split) {
    out.push_back(std::move(s));
    return;
  }
  size_t start = 0;
  for (size_t i = s.find(kMetaspace, 1); i != std::string::npos; i = s.find(kMetaspace, i + kMetaspace.size())) {
    out.push_back(s.substr(start, i - start));
    start = i;
  }
  out.push_back(s.substr(start));
}

SpDecoder read_sp_decoder(const json& d, const std::string& at) {
  SpDecoder out;
  const std::string type = d.is_object() ? text_or(d, "type", "", at, "decoder.") : "";
  if (type == "Metaspace") {  // no ByteFallback step: a byte token decodes to its text ("<0x0A>")
    out.strip_first_space = read_metaspace(d, "decoder", at).prepend != MetaPrepend::Never;
    return out;
  }
  KS_CHECK(type == "Sequence" && d.contains("decoders") && d.at("decoders").is_array(), at, "decoder ",
           nn::json_excerpt(d), ": expected Metaspace, or a Sequence of Replace, ByteFallback, Fuse and Strip");
  for (size_t i = 0; i < d.at("decoders").size(); ++i) {
    const json& e = d.at("decoders")[i];
    const std::string name = str("decoder.decoders[", i, "]");
    const std::string t = e.is_object() ? text_or(e, "type", "", at, name + ".") : "";
    if (t == "Replace") {
      const json pat = e.contains("pattern") && e.at("pattern").is_object() ? e.at("pattern") : json::object();
      KS_CHECK(
          pat.contains("String") && pat.at("String") == kMetaspace && text_or(e, "content", "", at, name + ".") == " ",
          at, name, ": only Replace \"\u2581\" -> \" \" is supported");
    } else if (t == "Strip") {
      auto count = [&](const char* k) {
        if (is_null_or_absent(e, k)) return int64_t(0);
        KS_CHECK(e.at(k).is_number_integer(), at, name, ".", k, ": expected an integer, got ",
                 nn::json_excerpt(e.at(k)));
        return e.at(k).get<int64_t>();
      };
      KS_CHECK(text_or(e, "content", " ", at, name + ".") == " " && count("stop") == 0 && count("start") >= 0 &&
                   count("start") <= 1,
               at, name, " ", nn::json_excerpt(e), ": only Strip of one leading space is supported");
      out.strip_first_space = count("start") == 1;
    } else {
      KS_CHECK(t == "ByteFallback" || t == "Fuse", at, name, " ", nn::json_excerpt(e),
               ": expected Replace, ByteFallback, Fuse or Strip");
      out.decode_bytes |= t == "ByteFallback";
    }
  }
  return out;
}

// ---- added tokens --------------------------------------------------------------------

namespace {

// The boolean keys an added token may carry, kept as they were given (Added::flags).
constexpr const char* kAddedFlags[] = {"single_word", "lstrip", "rstrip", "normalized", "special"};
constexpr size_t kNumAddedFlags = std::size(kAddedFlags);

bool added_flag(uint16_t flags, size_t k, bool fallback) {
  return (flags >> (2 * k) & 1) ? bool(flags >> (2 * k + 1) & 1) : fallback;
}

}  // namespace

void AddedTokens::add(size_t index, const json& a, const std::string& at) {
  auto what = [&] { return str("added_tokens[", index, "]"); };  // built for an error only
  KS_CHECK(index < size_t(kMaxAddedTokens), at, "added_tokens holds more entries than the limit of ", kMaxAddedTokens);
  KS_CHECK(a.is_object() && a.contains("id") && a.at("id").is_number_integer() && a.contains("content") &&
               a.at("content").is_string() && !a.at("content").get_ref<const std::string&>().empty(),
           at, what(), " needs an integer \"id\" and a non-empty \"content\", got ", nn::json_excerpt(a));
  bytes_ += a.at("content").get_ref<const std::string&>().size();
  KS_CHECK(bytes_ <= kMaxAddedTokenBytes, at, "added_tokens: their contents hold more than the limit of ",
           kMaxAddedTokenBytes, " bytes in all");
  Added e{a.at("content").get<std::string>(), a.at("id").get<int64_t>(), 0, nullptr};
  for (auto it = a.begin(); it != a.end(); ++it) {
    const std::string& k = it.key();  // not a structured binding: clang 14 cannot capture one
    const json& v = it.value();
    if (k == "id" || k == "content") continue;
    const auto* flag =
        std::find_if(std::begin(kAddedFlags), std::end(kAddedFlags), [&](const char* f) { return k == f; });
    if (flag == std::end(kAddedFlags) || v.is_null()) {  // kept as given
      if (e.more.is_null()) e.more = json::object();
      e.more[k] = v;
      continue;
    }
    KS_CHECK(v.is_boolean(), at, what(), ".", k, ": expected true or false, got ", nn::json_excerpt(v));
    const size_t i = size_t(flag - std::begin(kAddedFlags));
    KS_CHECK(i > 2 || !v.get<bool>(), at, what(), ".", k, ": stripping or whole-word added tokens are not supported");
    e.flags |= uint16_t(1u << (2 * i) | unsigned(v.get<bool>()) << (2 * i + 1));
  }
  added_.push_back(std::move(e));
}

void AddedTokens::build() {
  std::vector<std::string_view> plain, normalized;
  split_of_.clear();
  normalized_of_.clear();
  for (size_t i = 0; i < added_.size(); ++i) {
    const bool special = added_flag(added_[i].flags, 4, false);
    if (added_flag(added_[i].flags, 3, !special)) {
      normalized.push_back(added_[i].content);
      normalized_of_.push_back(int32_t(i));
    } else {
      plain.push_back(added_[i].content);
      split_of_.push_back(int32_t(i));
    }
  }
  split_ = AddedTokenMatcher(plain);
  split_normalized_ = AddedTokenMatcher(normalized);
}

int64_t AddedTokens::id_of(std::string_view text) const {
  const int32_t p = split_.find_exact(text), q = split_normalized_.find_exact(text);
  const int64_t a = p >= 0 ? split_of_[size_t(p)] : -1, b = q >= 0 ? normalized_of_[size_t(q)] : -1;
  if (a < 0 && b < 0) return -1;
  return added_[size_t(a < 0 ? b : b < 0 ? a : std::min(a, b))].id;  // the first listed
}

void AddedTokens::encode(std::string_view text, const std::function<std::string(std::string_view)>& normalize,
                         const std::function<void(std::string_view, bool)>& plain, std::vector<int64_t>& ids) const {
  // The normalizer, then the "normalized" added tokens, in what the first
  // pass left between its matches; `first`: the text's first part.
  auto normalized_pass = [&](std::string_view part) {
    const bool first = part.data() == text.data();
    std::string normalized;
    if (normalize && !part.empty()) {
      normalized = normalize(part);
      part = normalized;
    }
    size_t start = 0;
    split_normalized_.find(part, [&](const AddedTokenMatcher::Match& m) {
      plain(part.substr(start, m.start - start), first && start == 0);
      ids.push_back(added_[size_t(normalized_of_[size_t(m.pattern)])].id);
      start = m.start + m.length;
    });
    plain(part.substr(start), first && start == 0);
  };
  size_t start = 0;
  split_.find(text, [&](const AddedTokenMatcher::Match& m) {
    normalized_pass(text.substr(start, m.start - start));
    ids.push_back(added_[size_t(split_of_[size_t(m.pattern)])].id);
    start = m.start + m.length;
  });
  normalized_pass(text.substr(start));
}

json AddedTokens::to_json(size_t i) const {
  const Added& a = added_[i];
  json o = {{"id", a.id}, {"content", a.content}};
  for (size_t k = 0; k < kNumAddedFlags; ++k)
    if (a.flags >> (2 * k) & 1) o[kAddedFlags[k]] = bool(a.flags >> (2 * k + 1) & 1);
  if (a.more.is_object()) o.update(a.more);
  return o;
}

// ---- the streaming reader --------------------------------------------------------

namespace {

// Builds the tree of a tokenizer.json (raw, or the saved form around one)
// from nlohmann's SAX events, except model.vocab, model.merges and
// added_tokens: those stay empty in the tree and their elements go to the
// sink one by one (an element that is an array or object is built first,
// alone). The limits are nn::parse_json's: nesting depth, each key once per
// object. An error in a table is kept and raised after the settings' (the
// tree constructor's order), so a WordPiece file is named as one rather than
// by its first vocabulary entry.
class StreamReader : public nlohmann::json_sax<json> {
 public:
  StreamReader(TableSink& sink, bool saved_form, const std::string& what)
      : sink_(sink), saved_(saved_form), what_(what), at_(what + ": ") {}

  HfStream out;

  bool null() override { return put(json(nullptr)); }
  bool boolean(bool v) override { return put(json(v)); }
  bool number_integer(number_integer_t v) override { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return put(json(v)); }
  bool string(string_t& v) override { return put(json(std::move(v))); }
  bool binary(binary_t&) override { return false; }  // JSON text has none
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    Frame& f = frames_.back();
    if (f.role != Role::Vocab && !f.keys.insert(k).second) throw Error(str(what_, ": key ", path(k), " appears twice"));
    f.key = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw Error(str(what_, ": not valid JSON: ", plain_message(e.what())));
  }

 private:
  enum class Role { Plain, Top, Tokenizer, Model, Vocab, Merges, Added };
  static bool is_table(Role r) { return r == Role::Vocab || r == Role::Merges || r == Role::Added; }
  struct Frame {
    Frame(json* v, Role r, std::string s) : value(v), role(r), step(std::move(s)) {}
    json* value;  // where this array or object is built
    Role role;
    std::string step;                      // its step in the path ("model", "[3]")
    std::string key;                       // an object's key being read
    size_t index = 0;                      // the element being read
    std::unordered_set<std::string> keys;  // an object's keys so far (not model.vocab's: the sink checks those)
  };

  std::string path(const std::string& last) const {
    std::string p;
    for (const Frame& f : frames_)
      if (!f.step.empty()) p += (f.step[0] == '[' || p.empty() ? "" : ".") + f.step;
    p += (p.empty() ? "" : ".") + last;
    return p.size() <= 2 * nn::kExcerptChars ? p : "..." + p.substr(p.size() - 2 * nn::kExcerptChars);
  }

  json* insert(Frame& parent, json&& v) {
    return parent.value->is_object() ? &((*parent.value)[parent.key] = std::move(v))
                                     : &parent.value->emplace_back(std::move(v));
  }

  bool put(json&& v) {
    if (frames_.empty()) {
      out.root = std::move(v);
      return true;
    }
    Frame& f = frames_.back();
    if (is_table(f.role))
      deliver(f, std::move(v));
    else
      insert(f, std::move(v));
    ++f.index;
    return true;
  }

  bool open(json&& container) {
    if (frames_.size() >= size_t(nn::kMaxJsonDepth))
      throw Error(str(what_, ": JSON nested deeper than ", nn::kMaxJsonDepth, " levels of arrays and objects"));
    const bool object = container.is_object();
    if (frames_.empty()) {
      out.root = std::move(container);
      frames_.emplace_back(&out.root, !object ? Role::Plain : saved_ ? Role::Top : Role::Tokenizer, "");
      return true;
    }
    Frame& parent = frames_.back();
    std::string step = parent.value->is_object() ? parent.key : str("[", parent.index, "]");
    if (is_table(parent.role)) {  // an element of a table, built alone
      capture_ = std::move(container);
      frames_.emplace_back(&capture_, Role::Plain, std::move(step));
      return true;
    }
    Role role = Role::Plain;
    if (object && parent.role == Role::Top && parent.key == "tokenizer") role = Role::Tokenizer;
    if (object && parent.role == Role::Tokenizer && parent.key == "model") role = Role::Model;
    if (parent.role == Role::Model && parent.key == "vocab") role = Role::Vocab;  // BPE's object, Unigram's list
    if (!object && parent.role == Role::Model && parent.key == "merges") role = Role::Merges;
    if (!object && parent.role == Role::Tokenizer && parent.key == "added_tokens") role = Role::Added;
    json* slot = insert(parent, std::move(container));
    frames_.emplace_back(slot, role, std::move(step));
    return true;
  }

  bool close() {
    const Role role = frames_.back().role;
    frames_.pop_back();
    if (role == Role::Vocab) vocab_end();
    if (frames_.empty()) return true;
    Frame& parent = frames_.back();
    if (is_table(parent.role)) deliver(parent, std::exchange(capture_, json()));
    ++parent.index;
    return true;
  }

  // Runs one table step unless that table has failed already; keeps its first error.
  template <class F> void guard(std::string& error, F&& step) {
    if (!error.empty()) return;
    try {
      step();
    } catch (const Error& e) {
      error = e.what();
    }
  }

  void deliver(Frame& f, json&& v) {
    if (f.role == Role::Vocab) {
      guard(out.vocab_error, [&] { sink_.vocab_entry(f.index, f.value->is_object() ? f.key : "", v, at_); });
    } else if (f.role == Role::Merges) {
      if (!vocab_done_)
        pending_merges_.push_back(std::move(v));  // merges before the vocabulary (a file saved with sorted keys)
      else if (out.vocab_error.empty())
        guard(out.merges_error, [&] { sink_.merge(f.index, v, at_); });
    } else {
      guard(out.added_error, [&] { sink_.added(f.index, v, at_); });
    }
  }

  void vocab_end() {
    vocab_done_ = true;
    if (out.vocab_error.empty())
      for (size_t i = 0; i < pending_merges_.size(); ++i)
        guard(out.merges_error, [&] { sink_.merge(i, pending_merges_[i], at_); });
    pending_merges_ = std::vector<json>();
  }

  TableSink& sink_;
  const bool saved_;
  const std::string what_, at_;
  std::vector<Frame> frames_;
  json capture_;
  std::vector<json> pending_merges_;
  bool vocab_done_ = false;
};

}  // namespace

HfStream read_stream(std::string_view text, bool saved_form, TableSink& sink, const std::string& what) {
  StreamReader reader(sink, saved_form, what);
  try {
    json::sax_parse(text.begin(), text.end(), &reader);
  } catch (const std::bad_alloc&) {
    throw Error(str(what, ": out of memory while reading ", text.size(), " bytes of JSON"));
  } catch (const json::exception& e) {
    throw Error(str(what, ": not valid JSON: ", plain_message(e.what())));
  }
  return std::move(reader.out);
}

void load_stream(std::string_view text, bool saved_form, TableSink& sink, const std::string& where) {
  const std::string what = str("load_tokenizer: ", where);
  HfStream stream = read_stream(text, saved_form, sink, what);
  int64_t eos_id = -1;
  if (saved_form) {
    KS_CHECK(stream.root.contains("tokenizer"), what, ": missing field \"tokenizer\"");
    eos_id = detail::field<int64_t>(stream.root, "eos_id", where);
    sink.settings(std::move(stream.root.at("tokenizer")), what + ": ");
  } else {
    sink.settings(std::move(stream.root), what + ": ");
  }
  for (const std::string* error : {&stream.vocab_error, &stream.merges_error, &stream.added_error})
    if (!error->empty()) throw Error(*error);
  sink.finish(what + ": ", eos_id);
}

void load_tree(json tokenizer, TableSink& sink, const std::string& where, int64_t eos_id) {
  const std::string at = str("load_tokenizer: ", where, ": ");
  json& t = sink.settings(std::move(tokenizer), at);
  json& model = t.at("model");
  if (json& vocab = model.at("vocab"); vocab.is_object()) {
    size_t i = 0;
    for (auto it = vocab.begin(); it != vocab.end(); it = vocab.erase(it))
      sink.vocab_entry(i++, it.key(), it.value(), at);
  } else {
    for (size_t i = 0; i < vocab.size(); ++i) sink.vocab_entry(i, "", std::exchange(vocab[i], nullptr), at);
    vocab = json::array();
  }
  // One table at a time, each entry let go once read.
  for (auto [table, name] : {std::pair{&model, "merges"}, std::pair{&t, "added_tokens"}}) {
    if (!table->contains(name) || !table->at(name).is_array()) continue;
    json& list = table->at(name);
    for (size_t i = 0; i < list.size(); ++i) {
      const json entry = std::exchange(list[i], nullptr);
      table == &model ? sink.merge(i, entry, at) : sink.added(i, entry, at);
    }
    list = json::array();
  }
  sink.finish(at, eos_id);
}

// ---- model types -------------------------------------------------------------------------

namespace {
Registry<HfModelKind>& models() {
  static Registry<HfModelKind> r("tokenizer.json model type");
  return r;
}
}  // namespace

bool register_hf_model(const std::string& model_type, HfModelKind kind) { return models().add(model_type, kind); }

const HfModelKind* hf_model(const std::string& model_type) { return models().find(model_type); }

const HfModelKind* hf_model_saved(const std::string& saved_type) {
  for (const std::string& name : models().names())
    if (models().at(name).saved_type == saved_type) return &models().at(name);
  return nullptr;
}

}  // namespace ks::data::hf
