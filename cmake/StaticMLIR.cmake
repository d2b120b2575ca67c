# Find Debian's MLIR 22 and link it statically, so that our tools run on a
# machine without LLVM installed (the GPU machine). See BUILD-NOTES in the design.
set(LLVM_LINK_LLVM_DYLIB OFF CACHE BOOL "" FORCE)
if(NOT MLIR_DIR)
  set(MLIR_DIR /usr/lib/llvm-22/lib/cmake/mlir)
endif()
find_package(MLIR REQUIRED CONFIG PATHS ${MLIR_DIR})
list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
include(TableGen)
include(AddLLVM)
include(AddMLIR)
set(LLVM_LINK_LLVM_DYLIB OFF)
set(MLIR_LINK_MLIR_DYLIB OFF)

# Replace every reference to the LLVM dylib with the static component libraries.
llvm_map_components_to_libnames(QLA_LLVM_STATIC_LIBS
  Core Support Demangle BinaryFormat Remarks TargetParser Analysis
  TransformUtils BitReader BitWriter IRReader AsmParser)
add_library(QlaLLVMStatic INTERFACE)
target_link_libraries(QlaLLVMStatic INTERFACE ${QLA_LLVM_STATIC_LIBS})
get_property(_qla_mlir_libs GLOBAL PROPERTY MLIR_ALL_LIBS)
foreach(_lib IN LISTS _qla_mlir_libs)
  if(TARGET ${_lib})
    get_target_property(_deps ${_lib} INTERFACE_LINK_LIBRARIES)
    if(_deps)
      list(TRANSFORM _deps REPLACE "^LLVM$" "QlaLLVMStatic")
      list(TRANSFORM _deps REPLACE "^\\$<LINK_ONLY:LLVM>$" "$<LINK_ONLY:QlaLLVMStatic>")
      set_target_properties(${_lib} PROPERTIES INTERFACE_LINK_LIBRARIES "${_deps}")
    endif()
  endif()
endforeach()
if(NOT TARGET zstd::libzstd_shared)
  add_library(zstd::libzstd_shared SHARED IMPORTED)
  set_target_properties(zstd::libzstd_shared PROPERTIES
    IMPORTED_LOCATION /usr/lib/x86_64-linux-gnu/libzstd.so)
endif()

include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
separate_arguments(_llvm_defs NATIVE_COMMAND ${LLVM_DEFINITIONS})
add_definitions(${_llvm_defs})
set(LLVM_EXTERNAL_LIT /usr/lib/llvm-22/bin/lit CACHE FILEPATH "")
