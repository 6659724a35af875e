// core/registry.cpp — nearest_key, the "did you mean" of every unknown-name
// error (core/registry.h). The registry itself is a header template.
#include "core/registry.h"

#include <algorithm>

namespace ks {

std::string nearest_key(const std::string& key, const std::vector<std::string>& known) {
  // The optimal string alignment distance: insertions, deletions,
  // substitutions and swaps of neighbours ("stpes" is one from "steps").
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    return d[a.size()][b.size()];
  };
  if (key.size() > 256) return "";  // no key is that long; spare the quadratic table
  std::string best;
  size_t best_distance = std::max<size_t>(1, key.size() / 3) + 1;  // a near miss: under this
  for (const std::string& k : known) {
    const size_t d = distance(key, k);
    if (d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace ks
