# tests/check_readme_op.cmake — fails if the example op in ops/README.md
# ("Adding an elementwise op", the code block after <!-- readme-op -->) differs
# from the block that tests/ops/test_readme_op.cpp compiles and runs (between
# its [readme-op begin] and [readme-op end] markers), so the recipe cannot drift.
file(READ ${ROOT}/ops/README.md readme)
file(READ ${ROOT}/tests/ops/test_readme_op.cpp test)
set(open "<!-- readme-op -->\n```cpp\n")
set(from_readme "")
string(FIND "${readme}" "${open}" begin)
if(begin GREATER -1)
  string(LENGTH "${open}" n)
  math(EXPR begin "${begin} + ${n}")
  string(SUBSTRING "${readme}" ${begin} -1 rest)
  string(FIND "${rest}" "\n```" end)
  math(EXPR end "${end} + 1")
  string(SUBSTRING "${rest}" 0 ${end} from_readme)
endif()
string(REGEX MATCH "// \\[readme-op begin\\]\n(.*)// \\[readme-op end\\]" hit "${test}")
set(from_test "${CMAKE_MATCH_1}")
if(from_readme STREQUAL "" OR from_test STREQUAL "")
  message(FATAL_ERROR "a marker is missing: <!-- readme-op --> in ops/README.md or [readme-op begin/end] in "
                      "tests/ops/test_readme_op.cpp")
endif()
if(NOT from_readme STREQUAL from_test)
  message(FATAL_ERROR "ops/README.md's example op differs from tests/ops/test_readme_op.cpp's:\n"
                      "--- README\n${from_readme}--- test\n${from_test}")
endif()
message(STATUS "README example op ok")
