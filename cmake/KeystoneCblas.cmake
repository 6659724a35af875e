# cmake/KeystoneCblas.cmake — the imported target Keystone::cblas: BLAS::BLAS
# plus the folder of cblas.h (Debian keeps OpenBLAS's under openblas-pthread,
# outside the default include path). Included by CMakeLists.txt when Keystone
# builds and by the installed KeystoneConfig.cmake when a project finds it,
# so the exported Keystone::keystone can name the target and each side finds
# the header on its own machine (no absolute path of the build machine is
# written into the package). Needs BLAS found first; sets
# KEYSTONE_CBLAS_INCLUDE_DIR (NOTFOUND when cblas.h is missing: the includer
# decides what that means). Not here: BLAS itself (find_package(BLAS)).
find_path(KEYSTONE_CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-pthread)
if(KEYSTONE_CBLAS_INCLUDE_DIR AND NOT TARGET Keystone::cblas)
  add_library(Keystone::cblas INTERFACE IMPORTED)
  set_target_properties(Keystone::cblas PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${KEYSTONE_CBLAS_INCLUDE_DIR}"
                                                   INTERFACE_LINK_LIBRARIES BLAS::BLAS)
endif()
