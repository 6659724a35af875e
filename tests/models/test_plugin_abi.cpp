// tests/models/test_plugin_abi.cpp — the plugin ABI (models/plugin.h): the
// layouts of the public types a plugin shares with Keystone are the ones
// recorded beside KS_PLUGIN_ABI_REVISION, so a change to one fails here until
// the editor bumps the revision and records the new layouts (it had changed
// unnoticed: plugins built against two-day-old headers loaded and crashed);
// the library's own revision and hash are the headers'; and the declaration
// KS_PLUGIN writes holds the fields the loader reads (core/plugin_loader.cpp).
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "models/plugin.h"

using namespace ks;
using namespace ks::plugin_abi;

namespace {

std::string hex(uint64_t v) {
  char s[19];
  std::snprintf(s, sizeof s, "0x%016llx", (unsigned long long)v);
  return s;
}

// The record models/plugin.h should hold for the headers compiled here.
std::string record_to_paste() {
  std::string out = "inline constexpr Revision kRevisions[] = {\n    ...,  // every earlier line, kept\n    {" +
                    std::to_string(KS_PLUGIN_ABI_REVISION) + ", " + hex(kLayoutHash) + "ull},\n};\n" +
                    "inline constexpr TypeLayout kRecordedLayouts[] = {\n";
  for (const TypeLayout& t : kLayouts)
    out += "    {\"" + std::string(t.name) + "\", " + std::to_string(t.size) + ", " + std::to_string(t.align) + ", " +
           std::to_string(t.fields) + ", " + hex(t.members) + "ull},\n";
  return out + "};\n";
}

bool recorded_platform() {
#if defined(__x86_64__)
  return std::string_view(kRecordedPlatform) == std::string_view("x86_64 " KS_PLUGIN_ABI);
#else
  return false;
#endif
}

}  // namespace

TEST_CASE("plugin ABI: the public types' layouts are the ones recorded beside KS_PLUGIN_ABI_REVISION") {
  if (!recorded_platform()) {
    MESSAGE("the record is kept on ", kRecordedPlatform, "; here the layouts are:\n", record_to_paste());
    return;
  }
  std::string changed;
  for (const TypeLayout& t : kLayouts) {
    const TypeLayout* r = nullptr;
    for (const TypeLayout& recorded : kRecordedLayouts)
      if (std::string_view(recorded.name) == t.name) r = &recorded;
    if (!r)
      changed += str("  ", t.name, ": not recorded\n");
    else if (r->size != t.size || r->align != t.align || r->fields != t.fields || r->members != t.members)
      changed += str("  ", t.name, ": sizeof ", t.size, " (recorded ", r->size, "), alignof ", t.align, " (recorded ",
                     r->align, "), members ", t.fields, " (recorded ", r->fields, "), member offsets ", hex(t.members),
                     " (recorded ", hex(r->members), ")\n");
  }
  for (const TypeLayout& r : kRecordedLayouts) {
    bool listed = false;
    for (const TypeLayout& t : kLayouts) listed = listed || std::string_view(r.name) == t.name;
    if (!listed) changed += str("  ", r.name, ": recorded, but no longer in kLayouts\n");
  }
  const Revision& last = kRevisions[std::size(kRevisions) - 1];
  INFO(
      "models/plugin.h: a plugin built against the old headers would load and break. Bump KS_PLUGIN_ABI_REVISION "
      "(to ",
      last.revision + 1, " when it is still ", last.revision,
      "), then record the layouts of these headers, which are (kRevisions gets the new line at its end, "
      "with the new revision):\n",
      record_to_paste());
  CHECK_MESSAGE(changed.empty(), "the layouts changed:\n", changed);
  CHECK_MESSAGE(last.revision == KS_PLUGIN_ABI_REVISION, "kRevisions ends at revision ", last.revision,
                ", but KS_PLUGIN_ABI_REVISION is ", KS_PLUGIN_ABI_REVISION);
  CHECK_MESSAGE(last.layout_hash == kLayoutHash, "revision ", last.revision, " is recorded with layout hash ",
                hex(last.layout_hash), ", the headers give ", hex(kLayoutHash),
                ": a layout changed without a new revision");
  // Append-only, one line per revision (a revision for a new virtual function keeps its layout hash).
  CHECK(kRevisions[0].revision >= 1);
  for (size_t i = 1; i < std::size(kRevisions); ++i) {
    CAPTURE(kRevisions[i].revision);
    CHECK(kRevisions[i].revision > kRevisions[i - 1].revision);
  }
}

TEST_CASE("plugin ABI: the library's revision and layout hash are those of the headers a plugin compiles") {
  const PluginAbi lib = library_plugin_abi();
  CHECK(lib.revision == KS_PLUGIN_ABI_REVISION);
  CHECK(lib.layout_hash == kLayoutHash);
  CHECK(kLayoutHash != 0);
}

TEST_CASE("plugin ABI: a change to one type's size, alignment, member count or member offsets changes the hash") {
  constexpr uint64_t base = offsets_hash({0, 8, 16});
  CHECK(offsets_hash({0, 8, 24}) != base);  // a member moved
  CHECK(offsets_hash({0, 16, 8}) != base);  // two swapped
  CHECK(offsets_hash({}) == 0);
  struct A {
    int64_t x;
    bool y;
  };
  struct B {
    bool y;
    int64_t x;
  };
  CHECK(KS_ABI_TYPE(A, x, y).members != KS_ABI_TYPE(B, x, y).members);  // same size, members reordered
  CHECK(KS_ABI_TYPE(A, x, y).size == KS_ABI_TYPE(B, x, y).size);
  struct C {  // A with a member where A had padding: the same size, offsets of x and y
    int64_t x;
    bool y;
    bool z;
  };
  CHECK(KS_ABI_TYPE(C, x, y).size == KS_ABI_TYPE(A, x, y).size);
  CHECK(KS_ABI_TYPE(C, x, y).members == KS_ABI_TYPE(A, x, y).members);
  CHECK(KS_ABI_TYPE(A, x, y).fields == 2);
  CHECK(KS_ABI_TYPE(C, x, y).fields == 3);  // what tells them apart
  CHECK(field_count<nn::AttentionConfig>() == 14);
  CHECK(field_count<std::string>() == 0);  // not an aggregate
}

TEST_CASE("plugin declaration: NUL-separated magic, name, version, ABI tag, revision, layout hash") {
  constexpr auto d = plugin_declaration(KS_PLUGIN_MAGIC, "mine", "0.1.0", "abi", 12, 0x0123456789abcdefull);
  std::string fields;
  for (char c : d) fields += c ? c : '|';
  CHECK(fields.rfind("keystone-plugin 2|mine|0.1.0|abi|12|0123456789abcdef|", 0) == 0);
  CHECK(fields.find_first_not_of('|', fields.find("cdef|") + 4) == std::string::npos);  // NULs after
  constexpr auto zero = plugin_declaration(KS_PLUGIN_MAGIC, "m", "v", "a", 0, 0);
  CHECK(std::string(zero.data() + sizeof(KS_PLUGIN_MAGIC) + 2 + 2 + 2) == "0");
}
