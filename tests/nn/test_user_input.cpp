// tests/nn/test_user_input.cpp — the shared guards on user input: regular
// files of bounded size, depth-limited JSON with plain messages, and bounded
// excerpts of JSON values in error messages.
#include "support/testing.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "nn/user_input.h"

using namespace ks;
using nlohmann::json;

namespace {

std::string temp_path(const std::string& name) { return "/tmp/ks_test_" + std::to_string(::getpid()) + "_" + name; }
std::string nested(int depth) { return std::string(size_t(depth), '[') + std::string(size_t(depth), ']'); }
template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("parse_json accepts nesting up to the limit and refuses one more level") {
  CHECK(nn::parse_json(nested(nn::kMaxJsonDepth), "x").is_array());
  CHECK(error_of([] { (void)nn::parse_json(nested(nn::kMaxJsonDepth + 1), "cfg.json"); }) ==
        "cfg.json: JSON nested deeper than 64 levels of arrays and objects");
  CHECK(nn::parse_json(R"({"a": {"b": [1]}})", "x", 3).is_object());
  CHECK_THROWS_AS((void)nn::parse_json(R"({"a": {"b": [1]}})", "x", 2), Error);
}

TEST_CASE("parse_json refuses depth 200000 without overflowing the stack") {
  CHECK(error_of([] { (void)nn::parse_json(nested(200000), "deep"); }).find("nested deeper") != std::string::npos);
  CHECK(error_of([] { (void)nn::try_parse_json(nested(200000), "deep"); }).find("nested deeper") != std::string::npos);
  std::string objects;
  for (int i = 0; i < 200000; ++i) objects += "{\"a\":";
  CHECK(error_of([&] { (void)nn::parse_json(objects, "deep"); }).find("nested deeper") != std::string::npos);
}

TEST_CASE("parse_json refuses a key that appears twice in one object, naming its path") {
  // nlohmann keeps the last of two equal keys: a config's second "d_model" would silently win.
  CHECK(error_of([] { (void)nn::parse_json(R"({"model": {"d_model": 8, "layers": 2, "d_model": 16}})", "config"); }) ==
        "config: key model.d_model appears twice");
  CHECK(error_of([] { (void)nn::parse_json(R"({"a": 1, "a": 1})", "x"); }) == "x: key a appears twice");
  CHECK(error_of([] { (void)nn::parse_json(R"({"l": [{"k": 1}, 2, [3], {"k": 1, "k": 2}]})", "x"); }) ==
        "x: key l[3].k appears twice");
  CHECK(error_of([] { (void)nn::try_parse_json(R"({"": 1, "": 2})", "x"); }) == "x: key \"\" appears twice");
  // The same key in different objects, or a key named like its parent, is fine.
  CHECK(nn::parse_json(R"({"a": {"a": 1}, "b": {"a": 2}, "c": [{"a": 1}, {"a": 2}]})", "x")["b"]["a"] == 2);
  // A 1 MB key is cut short in the message.
  const std::string big = std::string(1 << 20, 'k');
  CHECK(error_of([&] { (void)nn::parse_json("{\"" + big + "\": 1, \"" + big + "\": 2}", "x"); }).size() < 300);
}

TEST_CASE("parse_json errors name the input and the position, not nlohmann's internals") {
  CHECK(error_of([] { (void)nn::parse_json("{\"a\": ", "run.json"); }) ==
        "run.json: not valid JSON: line 1, column 7: syntax error while parsing value - unexpected end of input; "
        "expected '[', '{', or a literal");
  std::string e = error_of([] { (void)nn::parse_json("[1e999]", "n"); });
  CHECK(e.rfind("n: not valid JSON: ", 0) == 0);
  CHECK(e.find("json.exception") == std::string::npos);
  // nlohmann quotes the token it last read; a 1 MB token must not make a 1 MB message.
  CHECK(error_of([] { (void)nn::parse_json("\"" + std::string(1 << 20, 'x'), "big"); }).size() < 300);
  CHECK(nn::try_parse_json("not json", "x").is_discarded());
  CHECK(nn::try_parse_json("[1]", "x") == json::array({1}));
}

TEST_CASE("json_excerpt cuts long values and keeps short ones as dump() writes them") {
  CHECK(nn::json_excerpt(json::parse(R"({"a":[1,"x"],"b":null})")) == R"({"a":[1,"x"],"b":null})");
  std::string big = nn::json_excerpt(json(std::string(1 << 20, 'y')));
  CHECK(big.size() == nn::kExcerptChars + 3);
  CHECK(big.substr(big.size() - 3) == "...");
  json many = json::array();
  for (int i = 0; i < 100000; ++i) many.push_back(i);
  CHECK(nn::json_excerpt(many).size() == nn::kExcerptChars + 3);
  CHECK(nn::json_excerpt(json(std::string("\xff\xfe"))) == "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");  // not UTF-8: U+FFFD
}

TEST_CASE("read_regular_file refuses directories, devices, FIFOs and files over the limit") {
  std::string dir = temp_path("a_dir"), fifo = temp_path("a_fifo"), file = temp_path("a_file");
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  CHECK(error_of([&] { nn::read_regular_file(dir, 100, "cfg"); }) ==
        "cfg: " + dir + " is a directory, expected a file");
  ::rmdir(dir.c_str());
  CHECK(error_of([] { nn::read_regular_file("/dev/zero", 100, "cfg"); }) ==
        "cfg: /dev/zero is not a regular file (it is a character device)");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // no writer: a plain open would block forever
  CHECK(error_of([&] { nn::read_regular_file(fifo, 100, "cfg"); }) ==
        "cfg: " + fifo + " is not a regular file (it is a FIFO)");
  CHECK(error_of([&] { nn::check_regular_file(fifo, "gz"); }) ==
        "gz: " + fifo + " is not a regular file (it is a FIFO)");
  ::unlink(fifo.c_str());
  CHECK(error_of([&] { nn::read_regular_file(file, 100, "cfg"); }) == "cfg: file not found: " + file);
  { std::ofstream(file) << "0123456789"; }
  CHECK(nn::read_regular_file(file, 10, "cfg") == "0123456789");
  CHECK(error_of([&] { nn::read_regular_file(file, 9, "cfg"); }) ==
        "cfg: " + file + " is 10 bytes, over the 9-byte limit for this file");
  std::remove(file.c_str());
}
