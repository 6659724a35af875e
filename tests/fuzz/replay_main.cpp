// tests/fuzz/replay_main.cpp — a main() for a libFuzzer harness when there is
// no libFuzzer (gcc, the regular test build): it feeds the harness every file
// of the folders or files named on the command line, and for each file also
// its prefixes at eighths of its length and copies with one byte changed at
// 16 spread positions (to 0x00, 0xff and the byte + 1). So the harnesses
// compile and run in every test build, under the sanitizers too, and the
// seed corpus with its simplest damage is checked on every CI run; the
// coverage-guided search itself is tests/fuzz/run.sh (clang).
// Not here: any harness's checks (those are in each fuzz_<name>.cpp).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

size_t run(const std::string& bytes) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return 1;
}

size_t replay(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t inputs = run(bytes);
  for (size_t k = 0; k < 8; ++k) inputs += run(bytes.substr(0, bytes.size() * k / 8));
  for (size_t k = 0; k < 16 && !bytes.empty(); ++k) {
    const size_t at = bytes.size() * k / 16;
    for (int v : {0x00, 0xff, (uint8_t(bytes[at]) + 1) & 0xff}) {
      std::string changed = bytes;
      changed[at] = char(v);
      inputs += run(changed);
    }
  }
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  size_t files = 0, inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p = argv[i];
    std::vector<std::filesystem::path> list;
    if (std::filesystem::is_directory(p))
      for (const auto& e : std::filesystem::directory_iterator(p)) list.push_back(e.path());
    else
      list.push_back(p);
    for (const auto& f : list) {
      inputs += replay(f);
      ++files;
    }
  }
  if (files == 0) {
    std::fprintf(stderr, "usage: %s FILE_OR_FOLDER...: no inputs found\n", argv[0]);
    return 2;
  }
  std::printf("%zu files, %zu inputs, no failure\n", files, inputs);
  return 0;
}
