# What `cmake --install BUILD --prefix P` puts under P (docs/install.md):
#
#   bin/qlac, bin/qla-opt               the offline compiler and the pass driver
#   lib/libqla.so                       C++ JIT API, C ABI, GDN operators (MLIR linked in)
#   include/qla/...                     the public headers: qla/jit.h, qla/c_api.h,
#                                       qla/gdn.h, qla/gdn_c.h and what they include
#                                       (qla/DType.h among them)
#   include/qla/device/*.cuh            the device header library (embedded in
#                                       libqla.so for NVRTC; here for nvcc users)
#   lib/cmake/qla/qlaConfig.cmake       find_package(qla): qla::qla, qla::qlac, qla::qla-opt
#   share/qla/examples/                 the examples' .qla files, host/gemm_host.cpp,
#                                       consumer/ (an out-of-tree find_package(qla) project)
#
# (bin/qla-gemm-host, examples/CMakeLists.txt, finds share/qla/examples/gemm.qla.)
#
# The pip build (pyproject.toml, scikit-build-core sets SKBUILD) installs only
# the "python" component: libqla.so into the qla package, qlac into the
# wheel's scripts (on the PATH after pip install).

include(CMakePackageConfigHelpers)

# QLA_INSTALL_CMAKEDIR and QLA_INSTALL_EXAMPLESDIR are set in CMakeLists.txt.

# Binaries and the library, exported as qla::qla, qla::qlac, qla::qla-opt.
install(TARGETS qla qlac qla-opt
  EXPORT qlaTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The public headers: the C++ JIT API (qla/jit.h and the compiler and runtime
# headers it includes), the C ABI, the GDN operators. qla/frontend/ is the
# compiler's own and is not installed.
install(FILES
  ${PROJECT_SOURCE_DIR}/compiler/include/qla/jit.h
  ${PROJECT_SOURCE_DIR}/compiler/include/qla/c_api.h
  ${PROJECT_SOURCE_DIR}/kernels/gdn/include/qla/gdn.h
  ${PROJECT_SOURCE_DIR}/kernels/gdn/include/qla/gdn_c.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qla)
install(FILES ${PROJECT_SOURCE_DIR}/compiler/include/qla/compiler/Compiler.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qla/compiler)
# The element types every part names (qla/DType.h, included by the headers above).
install(FILES ${PROJECT_SOURCE_DIR}/include/qla/DType.h ${PROJECT_SOURCE_DIR}/include/qla/Tensor.h
              ${PROJECT_SOURCE_DIR}/include/qla/tensor_c.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qla)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/qla/runtime
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qla
  FILES_MATCHING PATTERN "*.h")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/qla/device
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qla
  FILES_MATCHING PATTERN "*.cuh")

install(EXPORT qlaTargets NAMESPACE qla:: DESTINATION ${QLA_INSTALL_CMAKEDIR})
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/qlaConfig.cmake.in
  ${PROJECT_BINARY_DIR}/qlaConfig.cmake
  INSTALL_DESTINATION ${QLA_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR QLA_INSTALL_EXAMPLESDIR)
# 0.x: a new minor version may change the API.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/qlaConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/qlaConfig.cmake ${PROJECT_BINARY_DIR}/qlaConfigVersion.cmake
  DESTINATION ${QLA_INSTALL_CMAKEDIR})

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The Python package (pip install .): libqla.so beside qla/__init__.py, which
# finds it there; qlac as a script of the wheel.
if(SKBUILD)
  install(TARGETS qla LIBRARY DESTINATION qla COMPONENT python)
  install(TARGETS qlac RUNTIME DESTINATION "${SKBUILD_SCRIPTS_DIR}" COMPONENT python)
endif()

# Prebuilt kernels (docs/install.md, "No cold start"): a folder that
# `python -m qla warmup --cache-dir DIR` filled, installed read-only as
# prebuilt/ beside libqla.so, where the kernel cache looks after its own
# folder (pip wheel . -Ccmake.define.QLA_PREBUILT_DIR=DIR puts it into the
# wheel). Entries serve only the NVRTC version and GPU they were built for.
set(QLA_PREBUILT_DIR "" CACHE PATH "kernel cache entries (*.qlak) to install as prebuilt/ beside libqla.so")
if(QLA_PREBUILT_DIR)
  if(NOT IS_DIRECTORY "${QLA_PREBUILT_DIR}")
    message(FATAL_ERROR "QLA_PREBUILT_DIR=${QLA_PREBUILT_DIR} is not a folder (fill one with "
                        "`python -m qla warmup --cache-dir DIR`)")
  endif()
  file(GLOB _qla_prebuilt "${QLA_PREBUILT_DIR}/*.qlak")
  list(LENGTH _qla_prebuilt _qla_prebuilt_n)
  message(STATUS "QLA: installing ${_qla_prebuilt_n} prebuilt kernels from ${QLA_PREBUILT_DIR}")
  if(SKBUILD)
    install(FILES ${_qla_prebuilt} DESTINATION qla/prebuilt COMPONENT python)
  else()
    install(FILES ${_qla_prebuilt} DESTINATION ${CMAKE_INSTALL_LIBDIR}/prebuilt)
  endif()
endif()
