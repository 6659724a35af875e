# tests/check_test_names.cmake — fails if a doctest TEST_CASE name contains a
# ';'. doctest_discover_tests keeps names in a CMake list, where ';' splits one
# name into two: ctest would then run nothing for that case and report a pass.
file(GLOB_RECURSE files ${ROOT}/tests/*.cpp)
set(bad "")
foreach(f ${files})
  file(READ ${f} content)
  string(REGEX MATCH "TEST_CASE\\(\"[^\"\n]*;" hit "${content}")
  if(hit)
    list(APPEND bad "${f}")
  endif()
endforeach()
if(bad)
  list(JOIN bad "\n  " msg)
  message(FATAL_ERROR "TEST_CASE names with ';' (ctest would silently skip them):\n  ${msg}")
endif()
message(STATUS "test names ok")
