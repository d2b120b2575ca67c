# qla_embed_files(OUT_CPP BASE_DIR NAMESPACE FUNCTION FILES...)
# Generates OUT_CPP defining `const std::vector<std::pair<std::string,
# std::string>> &NAMESPACE::FUNCTION()` with (path relative to BASE_DIR,
# contents) for each file; regenerated when a file changes.
function(qla_embed_files out_cpp base_dir namespace function)
  set(files ${ARGN})
  string(REPLACE ";" "|" files_arg "${files}")
  add_custom_command(
    OUTPUT ${out_cpp}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${out_cpp} -DBASE_DIR=${base_dir} "-DFILES=${files_arg}"
            -DNAMESPACE=${namespace} -DFUNCTION=${function}
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedFiles.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/EmbedFiles.cmake
    COMMENT "Embedding ${base_dir}"
    VERBATIM)
endfunction()

# qla_kernel_args(TARGET OUT_DIR INCLUDE_DIR FILES...)
# For each kernel file X.qla, OUT_DIR/qla/kernels/X.h from `qlac
# --emit=args` (the kernel's argument struct and signature, namespace
# qla::kernels::KERNEL; `include`s resolved in INCLUDE_DIR), regenerated
# when qlac or any file in the family changes (an include may change the
# file's parse); TARGET gets OUT_DIR as an include folder and waits for the
# headers.
function(qla_kernel_args target out_dir include_dir)
  set(headers)
  file(GLOB family CONFIGURE_DEPENDS ${include_dir}/*.qla ${include_dir}/lib/*.qla)
  foreach(f ${ARGN})
    get_filename_component(stem ${f} NAME_WE)
    set(h ${out_dir}/qla/kernels/${stem}.h)
    add_custom_command(
      OUTPUT ${h}
      COMMAND qlac ${f} -I ${include_dir} --emit=args -o ${h}
      DEPENDS qlac ${family}
      COMMENT "qlac --emit=args ${stem}.qla"
      VERBATIM)
    list(APPEND headers ${h})
  endforeach()
  add_custom_target(${target}_kernel_args DEPENDS ${headers})
  add_dependencies(${target} ${target}_kernel_args)
  target_include_directories(${target} PRIVATE ${out_dir})
endfunction()
