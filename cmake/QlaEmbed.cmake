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
