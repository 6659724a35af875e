// nn/user_input.cpp — depth-limited JSON parsing that refuses repeated keys,
// with plain messages, and bounded excerpts of JSON values (the bounded reads
// of regular files are core/user_file.cpp's).
#include "nn/user_input.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "core/error.h"

namespace ks::nn {
namespace {

using json = nlohmann::json;

// Raised by the parser callback; turned into a ks::Error by parse().
struct TooDeep {};
struct DuplicateKey {
  std::string path;
};

// A key as a step of a dotted path: as it is when plain, else quoted as JSON
// (an empty key, one with a dot or a space), cut to a bounded length.
std::string path_step(const std::string& key) {
  const bool plain = !key.empty() && key.size() <= kExcerptChars && std::none_of(key.begin(), key.end(), [](char c) {
    return c == '.' || c == '[' || c == ']' || c == '"' || static_cast<unsigned char>(c) <= ' ';
  });
  return plain ? key : json_excerpt(json(key));
}

// The parser callback's record of the open arrays and objects, to find a key
// that appears twice in one object (nlohmann keeps the last silently) and
// name it by its path ("model.d_model", "layers[2].name").
class KeyTracker {
 public:
  void event(json::parse_event_t e, const json& parsed) {
    using E = json::parse_event_t;
    if (e == E::object_start || e == E::array_start) {
      std::string step = open_.empty()            ? ""
                         : open_.back().is_object ? path_step(open_.back().key)
                                                  : str("[", open_.back().index, "]");
      open_.push_back({e == E::object_start, std::move(step), 0, {}, {}});
    } else if (e == E::key) {
      Open& o = open_.back();
      o.key = parsed.get_ref<const std::string&>();
      if (!o.keys.insert(o.key).second) throw DuplicateKey{path()};
    } else if (e == E::object_end || e == E::array_end) {
      open_.pop_back();
      element_done();
    } else if (e == E::value) {
      element_done();
    }
  }

 private:
  struct Open {
    bool is_object;
    std::string step;                      // this value's step in the path ("" at the top)
    size_t index;                          // arrays: the element being read
    std::string key;                       // objects: the key being read
    std::unordered_set<std::string> keys;  // objects: the keys read so far
  };
  void element_done() {
    if (!open_.empty() && !open_.back().is_object) ++open_.back().index;
  }
  // The dotted path of the current key; of a deep one, its last 2 * kExcerptChars bytes or so.
  std::string path() const {
    std::string p;
    for (size_t i = 1; i < open_.size(); ++i) p += (open_[i].step[0] == '[' || p.empty() ? "" : ".") + open_[i].step;
    p += (p.empty() ? "" : ".") + path_step(open_.back().key);
    if (p.size() <= 2 * kExcerptChars) return p;
    size_t cut = p.size() - 2 * kExcerptChars;
    while (cut < p.size() && (static_cast<unsigned char>(p[cut]) & 0xC0) == 0x80) ++cut;  // not inside a character
    return "..." + p.substr(cut);
  }
  std::vector<Open> open_;
};

// nlohmann's message without its "[json.exception.parse_error.101] parse error
// at " prefix, and cut short: its "last read: '...'" can quote a whole token.
std::string plain(const char* what) {
  std::string s = what;
  if (size_t end = s.find("] "); s.rfind("[json.exception.", 0) == 0 && end != std::string::npos) s.erase(0, end + 2);
  if (s.rfind("parse error at ", 0) == 0) s.erase(0, 15);
  if (s.size() > 2 * kExcerptChars) s = s.substr(0, 2 * kExcerptChars) + "...";
  return s;
}

json parse(std::string_view text, const std::string& what, int max_depth, bool allow_exceptions) {
  // depth counts the arrays/objects around the one being started (0 at the top).
  KeyTracker keys;
  auto guard = [max_depth, &keys](int depth, json::parse_event_t event, json& parsed) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) && depth >= max_depth)
      throw TooDeep{};
    keys.event(event, parsed);
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), guard, allow_exceptions);
  } catch (const TooDeep&) {
    throw Error(str(what, ": JSON nested deeper than ", max_depth, " levels of arrays and objects"));
  } catch (const DuplicateKey& d) {
    throw Error(str(what, ": key ", d.path, " appears twice"));
  } catch (const json::exception& e) {
    throw Error(str(what, ": not valid JSON: ", plain(e.what())));
  } catch (const std::bad_alloc&) {
    throw Error(str(what, ": out of memory while parsing ", text.size(), " bytes of JSON"));
  }
}

void dump_to(std::string& out, const json& v) { out += v.dump(-1, ' ', false, json::error_handler_t::replace); }

// Appends v as compact JSON (as dump() writes it), stopping soon after `limit` characters.
void excerpt(const json& v, std::string& out, size_t limit) {
  if (v.is_object() || v.is_array()) {
    out += v.is_object() ? '{' : '[';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= limit; ++it, first = false) {
      if (!first) out += ',';
      if (v.is_object()) {
        excerpt(it.key(), out, limit);
        out += ':';
      }
      excerpt(*it, out, limit);
    }
    out += v.is_object() ? '}' : ']';
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    size_t room = out.size() < limit ? limit - out.size() + 1 : 1;
    dump_to(out, json(s.substr(0, room)));
  } else {
    dump_to(out, v);
  }
}

}  // namespace

json parse_json(std::string_view text, const std::string& what, int max_depth) {
  return parse(text, what, max_depth, true);
}

json try_parse_json(std::string_view text, const std::string& what, int max_depth) {
  return parse(text, what, max_depth, false);
}

std::string json_excerpt(const json& v, size_t max_chars) {
  std::string out;
  excerpt(v, out, max_chars);
  if (out.size() <= max_chars) return out;
  size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return out.substr(0, cut) + "...";
}

}  // namespace ks::nn
