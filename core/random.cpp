// core/random.cpp — the default generator (Philox itself is inline in random.h).
#include "core/random.h"

namespace ks {

Generator& default_generator() {
  static Generator* g = new Generator();
  return *g;
}

}  // namespace ks
