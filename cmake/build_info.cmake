# cmake/build_info.cmake — run at every build (cmake -P) by the ks_build_info
# target: writes OUT, a C++ file with the commit the binary is built from and
# whether tracked files differed from it, so that every run folder can record
# which code trained it (tools/train/provenance.h). configure_file rewrites OUT only
# when its text changes, so an unchanged checkout relinks nothing.
# Not here: the version number (project() in CMakeLists.txt).
set(commit "unknown")
set(dirty "false")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${SRC}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SRC}" rev-parse HEAD
                  OUTPUT_VARIABLE head RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0)
    set(commit "${head}")
    # Tracked files only: run folders and build outputs are not code.
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SRC}" diff --quiet HEAD --
                    RESULT_VARIABLE changed ERROR_QUIET)
    if(NOT changed EQUAL 0)
      set(dirty "true")
    endif()
  endif()
endif()
configure_file("${SRC}/tools/train/build_info.cpp.in" "${OUT}" @ONLY)
