// tools/tokenize/tokenize.cpp — `keystone tokenize`: text files, folders and
// globs (plain, gzip, xz, zstd) to llm.c .bin token shards
// (datasets/token_shards.h), with a manifest and the tokenizer beside them.
//
// The pipeline (oneTBB parallel_pipeline, in its own arena of --threads):
//   1. read   (serial, in order)  the inputs in order, cut into chunks of
//             about --chunk-bytes at content-defined places, split into
//             documents by --doc-sep, each document's split drawn
//   2. encode (parallel)          each chunk's documents to ids, the
//             end-of-text id before every document (as llm.c's fineweb.py)
//   3. write  (serial, in order)  ids appended to the train or val shards,
//             a new shard every --shard-tokens ids (a document may straddle two)
// Where a chunk ends depends on the bytes only (never on the thread count or
// timing), and chunks are written in input order, so the same inputs give
// byte-identical shards at any thread count. A chunk ends after a newline
// followed by a non-space byte, where the pre-tokenizers of GPT-2, Llama 3 and
// Keystone's BPE also cut, so cutting there changes no token; only a stretch
// of 4 chunks with no such place is cut elsewhere (at a newline, else between
// UTF-8 characters). Memory: about (2 × threads + 2) chunks of 4 × chunk
// bytes of text and their ids, whatever the input's size.
//
// Every shard is written under a temporary name and all are renamed into
// place only when every input has been read: an error (a missing or corrupt
// file, a full disk) leaves no shard of this run, half or whole.
//
// Not here: the file format (datasets/token_shards.h), reading and
// decompressing inputs (text_stream.h), training on shards.
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fingerprint.h"
#include "core/parallel.h"
#include "datasets/io.h"
#include "datasets/token_shards.h"
#include "datasets/tokenizer.h"
#include "tools/cli/cli.h"
#include "tools/cli/commands.h"
#include "tools/tokenize/text_stream.h"
#include "tools/train/build_info.h"

namespace fs = std::filesystem;

namespace ks::tools {

namespace {

const char* kUsage =
    "usage: keystone tokenize INPUT... --out DIR [flags]\n"
    "Tokenizes text files into llm.c .bin token shards (256 int32 header, then uint16 ids, or uint32 for a\n"
    "vocabulary over 65,536): DIR/NAME_train_000000.bin, ..., DIR/NAME_val_000000.bin, ..., with\n"
    "DIR/NAME_tokenizer.json and DIR/NAME_manifest.json (inputs, fingerprints, token counts) beside them.\n"
    "INPUT: a file, a folder (every file under it, recursively, sorted; hidden names skipped) or a glob\n"
    "pattern ('corpus/*.txt.gz'); plain text, gzip, xz or zstd (told by the bytes, not the name).\n"
    "  --out DIR             the output folder (created)\n"
    "  --name NAME           the shards' name prefix (default: corpus)\n"
    "  --tokenizer T         byte (default) | a tokenizer.json (Keystone's or Hugging Face's) | a run folder\n"
    "                        (its tokenizer.json) | bpe:N (Keystone BPE with N ids, trained first on up to\n"
    "                        --bpe-sample-bytes of the training inputs)\n"
    "  --doc-sep S           what a document is: file (default: each file) | blank-line (paragraphs between\n"
    "                        blank lines, newlines kept) | line (each non-empty line, without its newline)\n"
    "  --eot ID|none         the id put before every document (default: the tokenizer's end of text,\n"
    "                        <eos> = 2 for Keystone's; required when the tokenizer has none)\n"
    "  --shard-tokens N      ids per shard (default 100000000, as llm.c; the last shard of a split holds the rest)\n"
    "  --valid-fraction F    hold out each document for validation with probability F (seeded, default 0)\n"
    "  --valid INPUT         hold out these inputs (file, folder or glob; repeatable) for validation instead\n"
    "  --seed N              the seed of --valid-fraction's draw (default 0)\n"
    "  --threads N           encoding threads (default: KS_NUM_THREADS, else every core); the shards are the\n"
    "                        same bytes at any count\n"
    "  --chunk-bytes N       text per encoding task (default 1048576); it decides where long documents are\n"
    "                        cut, so it is recorded in the manifest\n"
    "  --bpe-sample-bytes N  text read to train bpe:N (default 16777216)\n"
    "  --overwrite           replace shards of the same name in DIR (else refused); stale ones are removed\n"
    "  --quiet               no progress line\n"
    "Prints the shards written and the throughput (MB of text per second) when done.\n";

enum class DocSep { File, BlankLine, Line };

struct Piece {
  size_t off = 0, len = 0;  // bytes of the chunk's text
  bool starts_doc = false;  // the first piece of a document: gets the end-of-text id before it
  int split = 0;            // 0 train, 1 val
};

struct Chunk {
  std::string text;
  std::vector<Piece> pieces;
  size_t input = 0;              // index into the inputs
  uint64_t disk_bytes_done = 0;  // bytes of all inputs read from disk when this chunk was cut (progress)
  uint64_t text_bytes = 0;
  std::vector<int32_t> ids;       // filled by the encode stage
  std::vector<size_t> piece_end;  // ids of pieces [0, i] end at piece_end[i]
};

// What travels through the pipeline: shared, because oneTBB copies its items
// (and destroys the ones in flight when an error cancels it, so nothing leaks).
using ChunkPtr = std::shared_ptr<Chunk>;

struct InputStats {
  fs::path path;
  bool forced_valid = false;
  std::string compression, fingerprint;
  uint64_t file_bytes = 0, text_bytes = 0;
  int64_t documents[2] = {0, 0}, tokens[2] = {0, 0};
};

// splitmix64: the per-document draw of --valid-fraction, a pure function of (seed, document number).
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

// Reads the inputs in order and hands out chunks (stage 1; see the file comment).
class ChunkReader {
 public:
  ChunkReader(std::vector<InputStats>& inputs, DocSep sep, size_t chunk_bytes, double valid_fraction, uint64_t seed)
      : inputs_(inputs), sep_(sep), chunk_bytes_(chunk_bytes), valid_fraction_(valid_fraction), seed_(seed) {}

  // The next chunk, or null after the last input.
  std::unique_ptr<Chunk> next() {
    for (;;) {
      if (!stream_) {
        if (index_ == inputs_.size()) return nullptr;
        stream_ = std::make_unique<TextStream>(inputs_[index_].path, "tokenize");
        inputs_[index_].compression = compression_name(stream_->compression());
        eof_ = false;
        new_file_ = true;
        in_para_ = line_open_ = false;
        pending_.clear();
      }
      size_t target = chunk_bytes_;
      size_t cut = 0;
      for (;;) {
        while (!eof_ && pending_.size() < target) {
          if (stream_->read(pending_, target - pending_.size()) == 0) eof_ = true;
        }
        if (eof_) {
          cut = pending_.size();
          break;
        }
        cut = safe_cut(pending_);
        if (cut > 0) break;
        if (target < 4 * chunk_bytes_) {
          target *= 2;  // no safe place yet: look further
          continue;
        }
        cut = forced_cut(pending_);
        break;
      }
      if (cut == 0) {  // this input is done
        InputStats& in = inputs_[index_];
        in.file_bytes = stream_->file_bytes();
        in.text_bytes = stream_->text_bytes();
        in.fingerprint = stream_->fingerprint();
        disk_done_ += in.file_bytes;
        stream_.reset();
        ++index_;
        continue;
      }
      auto c = std::make_unique<Chunk>();
      c->text = pending_.substr(0, cut);
      pending_.erase(0, cut);
      c->input = index_;
      c->text_bytes = cut;
      c->disk_bytes_done = disk_done_ + stream_->file_bytes();
      split_documents(*c, eof_ && pending_.empty());
      return c;
    }
  }

  int64_t documents() const { return doc_count_; }

 private:
  // The end of the last "newline, then a non-space byte" in s (line mode: of
  // the last newline), or 0.
  size_t safe_cut(const std::string& s) const {
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] != '\n') continue;
      if (sep_ == DocSep::Line) return i + 1;
      if (i + 1 < s.size() && !is_space(s[i + 1])) return i + 1;
    }
    return 0;
  }
  // No safe place in 4 chunks: after the last newline, else between UTF-8 characters.
  size_t forced_cut(const std::string& s) const {
    const size_t nl = s.rfind('\n');
    if (nl != std::string::npos) return nl + 1;
    size_t cut = s.size();
    while (cut > 1 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    return cut == s.size() ? s.size() : cut;
  }

  int draw_split() {
    const int64_t doc = doc_count_++;
    if (inputs_[index_].forced_valid) return 1;
    if (valid_fraction_ <= 0) return 0;
    return double(mix(seed_ ^ mix(uint64_t(doc))) >> 11) * 0x1.0p-53 < valid_fraction_ ? 1 : 0;
  }

  void add_piece(Chunk& c, size_t off, size_t len, bool starts) {
    if (len == 0) return;
    if (starts) split_ = draw_split();
    c.pieces.push_back({off, len, starts, split_});
  }

  // Cuts the chunk's text into pieces of documents; `file_end`: the input ends with this chunk.
  void split_documents(Chunk& c, bool file_end) {
    const std::string& t = c.text;
    if (sep_ == DocSep::File) {
      add_piece(c, 0, t.size(), new_file_);
      new_file_ = false;
      return;
    }
    size_t pos = 0;
    while (pos < t.size()) {
      size_t nl = t.find('\n', pos);
      const bool whole = nl != std::string::npos;
      const size_t end = whole ? nl + 1 : t.size();  // the line with its newline
      if (sep_ == DocSep::Line) {
        size_t len = (whole ? nl : end) - pos;
        if (whole && len > 0 && t[pos + len - 1] == '\r') --len;
        add_piece(c, pos, len, !line_open_);
        line_open_ = !whole && !file_end;
      } else {
        bool blank = true;
        for (size_t i = pos; i < end && blank; ++i) blank = is_space(t[i]);
        if (blank && whole) {
          in_para_ = false;
        } else if (!blank) {
          // Extends the chunk's last piece when it ends right here (the paragraph's previous line).
          if (in_para_ && !c.pieces.empty() && c.pieces.back().off + c.pieces.back().len == pos)
            c.pieces.back().len += end - pos;
          else
            add_piece(c, pos, end - pos, !in_para_);
          in_para_ = true;
        }
      }
      pos = end;
    }
    if (file_end) line_open_ = in_para_ = false;
  }

  std::vector<InputStats>& inputs_;
  DocSep sep_;
  size_t chunk_bytes_;
  double valid_fraction_;
  uint64_t seed_;
  size_t index_ = 0;
  std::unique_ptr<TextStream> stream_;
  std::string pending_;
  bool eof_ = false, new_file_ = false, in_para_ = false, line_open_ = false;
  int split_ = 0;
  int64_t doc_count_ = 0;
  uint64_t disk_done_ = 0;
};

// One split's shards: a new one every shard_tokens ids; all unpublished until publish().
class ShardSink {
 public:
  ShardSink(fs::path dir, std::string prefix, data::ShardFormat format, int64_t shard_tokens)
      : dir_(std::move(dir)), prefix_(std::move(prefix)), format_(format), shard_tokens_(shard_tokens) {}
  void append(std::span<const int32_t> ids) {
    while (!ids.empty()) {
      if (!cur_) {
        char name[32];
        std::snprintf(name, sizeof name, "%06zu.bin", done_.size());
        cur_ = std::make_unique<data::TokenShardWriter>(dir_ / (prefix_ + name), format_);
      }
      const size_t take = size_t(std::min<int64_t>(int64_t(ids.size()), shard_tokens_ - cur_->tokens()));
      cur_->write(ids.first(take));
      ids = ids.subspan(take);
      total_ += int64_t(take);
      if (cur_->tokens() == shard_tokens_) close_current();
    }
  }
  void close_current() {
    if (!cur_) return;
    cur_->close();
    done_.push_back(std::move(cur_));
  }
  void publish() {
    close_current();
    for (auto& w : done_) w->publish();
  }
  int64_t tokens() const { return total_; }
  const std::vector<std::unique_ptr<data::TokenShardWriter>>& shards() const { return done_; }

 private:
  fs::path dir_;
  std::string prefix_;
  data::ShardFormat format_;
  int64_t shard_tokens_;
  std::unique_ptr<data::TokenShardWriter> cur_;
  std::vector<std::unique_ptr<data::TokenShardWriter>> done_;
  int64_t total_ = 0;
};

std::string mb(double bytes) { return str(std::fixed, std::setprecision(1), bytes / 1e6, " MB"); }

std::string with_commas(int64_t v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string s = v < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

// The files of an earlier tokenize of this name in dir.
std::vector<fs::path> existing_outputs(const fs::path& dir, const std::string& name) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  const std::regex shard("(train|val)_[0-9]{6}\\.bin");
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.rfind(name + "_", 0) != 0) continue;
    const std::string rest = f.substr(name.size() + 1);
    if (std::regex_match(rest, shard) || rest == "manifest.json" || rest == "tokenizer.json") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// bpe:N — trained on the first `sample` bytes of the training inputs' text, line by line.
std::unique_ptr<data::Tokenizer> train_bpe(int64_t vocab, const std::vector<InputStats>& inputs, size_t sample,
                                           bool quiet) {
  std::vector<std::string> corpus;
  size_t taken = 0;
  for (const InputStats& in : inputs) {
    if (in.forced_valid || taken >= sample) continue;
    TextStream s(in.path, "tokenize");
    std::string text;
    while (taken + text.size() < sample && s.read(text, std::min<size_t>(sample - taken - text.size(), 1 << 20)) > 0) {
    }
    taken += text.size();
    for (std::string& line : data::split_lines(text))
      if (!line.empty()) corpus.push_back(std::move(line));
  }
  KS_CHECK(!corpus.empty(), "tokenize: bpe:", vocab, ": the training inputs have no text to learn merges from");
  if (!quiet)
    std::fprintf(stderr, "tokenize: training bpe:%lld on %s of text\n", (long long)vocab, mb(double(taken)).c_str());
  data::TokenizerOptions o;
  o.type = "bpe";
  o.vocab_size = vocab;
  o.min_freq = 2;
  return data::train_tokenizer(o, corpus);
}

}  // namespace

int tokenize(const std::vector<std::string>& args_in) {
  if (cli::help_requested(args_in, kUsage)) return 0;
  // Inputs are the arguments that are neither a flag nor a flag's value.
  static const std::set<std::string> kValued = {"out",  "name",         "tokenizer",      "doc-sep",
                                                "eot",  "shard-tokens", "valid-fraction", "valid",
                                                "seed", "threads",      "chunk-bytes",    "bpe-sample-bytes"};
  static const std::set<std::string> kSwitches = {"overwrite", "quiet"};
  std::vector<std::string> flag_args, input_args;
  for (size_t i = 0; i < args_in.size(); ++i) {
    const std::string& a = args_in[i];
    if (a.rfind("--", 0) == 0) {
      flag_args.push_back(a);
      if (kValued.count(a.substr(2)) && i + 1 < args_in.size()) flag_args.push_back(args_in[++i]);
    } else {
      input_args.push_back(a);
    }
  }
  const cli::Flags flags(flag_args, kValued, kSwitches, {"valid"});
  if (!flags.has("out")) throw cli::UsageError("--out DIR is required");
  if (input_args.empty()) throw cli::UsageError("no input: name text files, folders or glob patterns");
  const fs::path out = flags.get("out", "");
  const std::string name = flags.get("name", "corpus");
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.')
    throw cli::UsageError("--name: expected a file name prefix (no '/', not starting with '.'), got '" + name + "'");
  const std::string sep_text = flags.get_choice("doc-sep", "file", {"file", "blank-line", "line"});
  const DocSep sep = sep_text == "file" ? DocSep::File : sep_text == "line" ? DocSep::Line : DocSep::BlankLine;
  const int64_t shard_tokens =
      flags.get_int_between("shard-tokens", 100000000, 1, data::kMaxShardTokens, "a shard's int32 token count");
  const double valid_fraction = flags.get_double("valid-fraction", 0.0);
  if (!(valid_fraction >= 0 && valid_fraction < 1))
    throw cli::UsageError(str("--valid-fraction: must be in [0, 1), got ", flags.get("valid-fraction", "")));
  const std::vector<std::string> valid_args = flags.get_all("valid");
  if (!valid_args.empty() && valid_fraction > 0)
    throw cli::UsageError("--valid and --valid-fraction: give one way of holding out validation data, not both");
  const uint64_t seed = uint64_t(flags.get_int_at_least("seed", 0, 0));
  const int threads = int(flags.get_int_between("threads", num_threads(), 1, 1024));
  const size_t chunk_bytes = size_t(flags.get_int_between("chunk-bytes", 1 << 20, 4096, int64_t(1) << 30));
  const size_t bpe_sample = size_t(flags.get_int_between("bpe-sample-bytes", 16 << 20, 1, int64_t(1) << 34));
  const bool quiet = flags.has("quiet"), overwrite = flags.has("overwrite");

  // ---- inputs -----------------------------------------------------------------
  std::vector<InputStats> inputs;
  const std::vector<fs::path> train_files = expand_inputs(input_args, "tokenize");
  const std::vector<fs::path> valid_files = expand_inputs(valid_args, "tokenize: --valid");
  std::set<fs::path> train_set;
  for (const fs::path& p : train_files) train_set.insert(fs::weakly_canonical(p));
  for (const fs::path& p : valid_files)
    KS_CHECK(!train_set.count(fs::weakly_canonical(p)), "tokenize: ", p.string(),
             " is both an input and a --valid input: a validation file must not also be trained on");
  for (size_t i = 0; i < train_files.size() + valid_files.size(); ++i) {
    InputStats in;
    in.forced_valid = i >= train_files.size();
    in.path = in.forced_valid ? valid_files[i - train_files.size()] : train_files[i];
    inputs.push_back(std::move(in));
  }

  // ---- tokenizer ----------------------------------------------------------------
  const std::string tok_arg = flags.get("tokenizer", "byte");
  std::unique_ptr<data::Tokenizer> tok;
  if (tok_arg == "byte") {
    tok = std::make_unique<data::ByteTokenizer>();
  } else if (tok_arg.rfind("bpe:", 0) == 0) {
    const std::optional<int64_t> v = cli::parse_int(tok_arg.substr(4));
    if (!v || *v < 260 || *v > data::kMaxVocabSize)
      throw cli::UsageError(str("--tokenizer bpe:N: N must be an integer in [260, ", data::kMaxVocabSize, "], got '",
                                tok_arg.substr(4), "'"));
    tok = train_bpe(*v, inputs, bpe_sample, quiet);
  } else {
    fs::path p = tok_arg;
    std::error_code ec;
    if (fs::is_directory(p, ec)) p /= "tokenizer.json";
    KS_CHECK(fs::exists(p, ec), "tokenize: --tokenizer ", tok_arg,
             ": not byte, bpe:N, a tokenizer.json or a run folder with one (", p.string(), " not found)");
    tok = data::load_tokenizer(p);
  }
  int64_t eot = tok->eos_id();
  if (flags.has("eot")) {
    const std::string e = flags.get("eot", "");
    if (e == "none") {
      eot = -1;
    } else {
      const std::optional<int64_t> id = cli::parse_int(e);
      if (!id || !tok->has_id(*id))
        throw cli::UsageError(
            str("--eot: expected an id of the tokenizer (0..", tok->vocab_size() - 1, ") or none, got '", e, "'"));
      eot = *id;
    }
  } else if (eot < 0) {
    throw Error(str("tokenize: the tokenizer (", tok->type(),
                    ") has no end-of-text token to put between documents: give --eot ID (an id of its vocabulary "
                    "that marks a document's start) or --eot none (documents joined with nothing between them)"));
  }
  const data::ShardFormat format = data::shard_format_for_vocab(tok->vocab_size());
  // A tokenizer that puts a space before every text it encodes (a tokenizer.json whose ByteLevel
  // pre-tokenizer has add_prefix_space; not GPT-2's or Llama 3's own) puts it before every piece of a
  // document cut into chunks too: said, since only a larger --chunk-bytes avoids it.
  const bool prefix_space = tok->encode("a") == tok->encode(" a");
  if (prefix_space)
    std::fprintf(stderr,
                 "tokenize: warning: this tokenizer adds a space before each text it encodes (add_prefix_space): a "
                 "document longer than --chunk-bytes (%zu) is encoded in pieces, each with that space\n",
                 chunk_bytes);

  // ---- the output folder ----------------------------------------------------------
  std::error_code ec;
  fs::create_directories(out, ec);
  KS_CHECK(!ec && fs::is_directory(out), "tokenize: cannot create the output folder ", out.string(), ": ",
           ec ? ec.message() : "it is not a folder");
  const std::vector<fs::path> old = existing_outputs(out, name);
  if (!old.empty() && !overwrite)
    throw Error(str("tokenize: ", out.string(), " already holds shards named ", name, " (", old.front().string(),
                    old.size() > 1 ? str(" and ", old.size() - 1, " more") : std::string(),
                    "): give --overwrite to replace them, or another --name or --out"));

  // ---- the pipeline ------------------------------------------------------------------
  uint64_t disk_total = 0;
  for (const InputStats& in : inputs) {
    const uintmax_t n = fs::file_size(in.path, ec);
    if (!ec) disk_total += n;  // a FIFO or device is refused when opened, by name
  }
  ShardSink sinks[2] = {ShardSink(out, name + "_train_", format, shard_tokens),
                        ShardSink(out, name + "_val_", format, shard_tokens)};
  ChunkReader reader(inputs, sep, chunk_bytes, valid_fraction, seed);
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  double last_progress = 0;
  uint64_t text_done = 0;
  int64_t tokens_done = 0;
  const data::Tokenizer& tk = *tok;

  tbb::task_arena arena(threads);
  arena.execute([&] {
    tbb::parallel_pipeline(
        size_t(2 * threads + 2),
        tbb::make_filter<void, ChunkPtr>(tbb::filter_mode::serial_in_order, [&](tbb::flow_control& fc) -> ChunkPtr {
          ChunkPtr c(reader.next().release());
          if (!c) fc.stop();
          return c;
        }) & tbb::make_filter<ChunkPtr, ChunkPtr>(tbb::filter_mode::parallel, [&](ChunkPtr c) {
          for (const Piece& p : c->pieces) {
            if (p.starts_doc && eot >= 0) c->ids.push_back(int32_t(eot));
            for (int64_t id : tk.encode(std::string_view(c->text).substr(p.off, p.len))) c->ids.push_back(int32_t(id));
            c->piece_end.push_back(c->ids.size());
          }
          std::string().swap(c->text);  // the text is not needed any more
          return c;
        }) & tbb::make_filter<ChunkPtr, void>(tbb::filter_mode::serial_in_order, [&](ChunkPtr c) {
          size_t begin = 0;
          InputStats& in = inputs[c->input];
          for (size_t i = 0; i < c->pieces.size(); ++i) {
            const Piece& p = c->pieces[i];
            const size_t end = c->piece_end[i];
            sinks[p.split].append(std::span<const int32_t>(c->ids).subspan(begin, end - begin));
            in.tokens[p.split] += int64_t(end - begin);
            in.documents[p.split] += p.starts_doc;
            begin = end;
          }
          text_done += c->text_bytes;
          tokens_done += int64_t(c->ids.size());
          const double now = seconds();
          if (!quiet && now - last_progress >= 0.5) {
            last_progress = now;
            std::fprintf(stderr,
                         "\rtokenize: %s of %s on disk (%.0f%%), %s of text, %.1f MB/s, %s tokens, file %zu/%zu  ",
                         mb(double(c->disk_bytes_done)).c_str(), mb(double(disk_total)).c_str(),
                         disk_total ? 100.0 * double(c->disk_bytes_done) / double(disk_total) : 100.0,
                         mb(double(text_done)).c_str(), double(text_done) / 1e6 / now, with_commas(tokens_done).c_str(),
                         c->input + 1, inputs.size());
          }
        }));
  });
  if (!quiet && last_progress > 0) std::fputc('\n', stderr);

  KS_CHECK(sinks[0].tokens() > 0, "tokenize: the training inputs hold no text (",
           inputs.size() == 1 ? inputs[0].path.string() : str(inputs.size(), " files"),
           valid_fraction > 0 ? ", or every document was drawn for validation" : "", ")");
  if (sinks[1].tokens() == 0 && (valid_fraction > 0 || !valid_files.empty()))
    throw Error(str("tokenize: no document was held out for validation (",
                    valid_fraction > 0 ? str("--valid-fraction ", valid_fraction, " of ", reader.documents(),
                                             " documents; with --doc-sep ", sep_text, " each is a whole ",
                                             sep == DocSep::File ? "file" : "unit",
                                             ": raise the fraction or use --doc-sep line/blank-line")
                                       : std::string("the --valid inputs hold no text"),
                    ")"));

  // ---- publish: the tokenizer, the manifest, then every shard ----------------------
  for (ShardSink& s : sinks) s.close_current();
  const std::string tok_text = tok->file_text();
  nlohmann::json m;
  m["format"] = "llm.c token shards (datasets/token_shards.h)";
  m["magic"] = format == data::ShardFormat::U16 ? data::kShardMagicU16 : data::kShardMagicU32;
  m["version"] = format == data::ShardFormat::U16 ? data::kShardVersionU16 : data::kShardVersionU32;
  m["token_bytes"] = data::shard_token_bytes(format);
  m["tokenizer"] = {{"type", tok->type()},
                    {"source", tok_arg},
                    {"vocab_size", tok->vocab_size()},
                    {"file", name + "_tokenizer.json"},
                    {"fingerprint", fingerprint_of(tok_text)}};
  m["eot_id"] = eot;
  m["eot_placement"] = "before every document";
  m["doc_sep"] = sep_text;
  m["shard_tokens"] = shard_tokens;
  m["chunk_bytes"] = chunk_bytes;
  m["valid_fraction"] = valid_fraction;
  m["seed"] = seed;
  m["keystone_commit"] = build_commit();
  nlohmann::json ins = nlohmann::json::array();
  for (const InputStats& in : inputs)
    ins.push_back({{"path", in.path.string()},
                   {"held_out", in.forced_valid},
                   {"compression", in.compression},
                   {"bytes", in.file_bytes},
                   {"text_bytes", in.text_bytes},
                   {"fingerprint", in.fingerprint},
                   {"documents", {{"train", in.documents[0]}, {"val", in.documents[1]}}},
                   {"tokens", {{"train", in.tokens[0]}, {"val", in.tokens[1]}}}});
  m["inputs"] = ins;
  const char* split_names[2] = {"train", "val"};
  for (int s = 0; s < 2; ++s) {
    nlohmann::json shards = nlohmann::json::array();
    int64_t docs = 0;
    for (const InputStats& in : inputs) docs += in.documents[s];
    for (const auto& w : sinks[s].shards())
      shards.push_back({{"file", w->path().filename().string()}, {"tokens", w->tokens()}});
    m["splits"][split_names[s]] = {{"tokens", sinks[s].tokens()}, {"documents", docs}, {"shards", shards}};
  }
  data::write_file_atomic(out / (name + "_tokenizer.json"), tok_text, "tokenize");
  for (ShardSink& s : sinks) s.publish();
  data::write_file_atomic(out / (name + "_manifest.json"), m.dump(1) + "\n", "tokenize");
  // Shards of an earlier run of this name that this one did not replace.
  std::set<fs::path> mine = {out / (name + "_tokenizer.json"), out / (name + "_manifest.json")};
  for (ShardSink& s : sinks)
    for (const auto& w : s.shards()) mine.insert(w->path());
  for (const fs::path& p : old)
    if (!mine.count(p)) fs::remove(p, ec);

  const double elapsed = seconds();  // reading, encoding, writing and every shard's fsync and rename
  uint64_t text_total = 0;
  for (const InputStats& in : inputs) text_total += in.text_bytes;
  std::printf("tokenized %zu file%s (%s of text, %s on disk) into %s: %zu train shard%s (%s tokens, %lld documents)",
              inputs.size(), inputs.size() == 1 ? "" : "s", mb(double(text_total)).c_str(),
              mb(double(disk_total)).c_str(), out.string().c_str(), sinks[0].shards().size(),
              sinks[0].shards().size() == 1 ? "" : "s", with_commas(sinks[0].tokens()).c_str(),
              (long long)m["splits"]["train"]["documents"].get<int64_t>());
  if (sinks[1].tokens() > 0)
    std::printf(", %zu val shard%s (%s tokens, %lld documents)", sinks[1].shards().size(),
                sinks[1].shards().size() == 1 ? "" : "s", with_commas(sinks[1].tokens()).c_str(),
                (long long)m["splits"]["val"]["documents"].get<int64_t>());
  std::printf("\n%.2f s, %.1f MB/s of text, %s tokens/s, %d thread%s, %s ids\n", elapsed,
              double(text_total) / 1e6 / std::max(elapsed, 1e-9),
              with_commas(int64_t(double(tokens_done) / std::max(elapsed, 1e-9))).c_str(), threads,
              threads == 1 ? "" : "s", data::shard_format_name(format));
  return 0;
}

}  // namespace ks::tools
