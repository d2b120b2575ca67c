/* The QLA C ABI: JIT-compile .qla kernels and launch them, from C, Python
 * (ctypes) or any language with a C FFI. Every function reports errors
 * through its return value and a caller-provided message buffer; none throws
 * or aborts. */
#ifndef QLA_C_API_H
#define QLA_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qla_kernel qla_kernel;

/* `defines`: "NAME=VALUE;NAME=VALUE" or NULL. `kernel`: the kernel of the
 * file to compile, NULL for the file's only kernel. Returns NULL on error and
 * writes the diagnostics (file:line:col: error: ...) to `err`. */
qla_kernel *qla_compile_file(const char *path, const char *defines, const char *kernel, char *err,
                             size_t errlen);
qla_kernel *qla_compile_string(const char *source, const char *filename, const char *defines,
                               const char *kernel, char *err, size_t errlen);
void qla_kernel_free(qla_kernel *k);

/* Launch metadata (KernelInfo text form), valid while `k` lives. */
const char *qla_kernel_info(const qla_kernel *k);
/* 0: compiled now (cache miss), 1: from the in-memory cache, 2: from the disk cache. */
int qla_kernel_cache_hit(const qla_kernel *k);
/* Seconds spent in qla_compile_*: front end, cache lookup, NVRTC on a miss. */
double qla_kernel_build_seconds(const qla_kernel *k);

/* Launches on `stream` (a CUstream / cudaStream_t; NULL: the default stream).
 * Tensor i has data pointer ptrs[i], rank ranks[i]; shapes and strides (in
 * elements) are concatenated over the tensors; strides may be NULL (all
 * contiguous). Scalars are given as doubles and converted. Returns 0 on
 * success, -1 with a message in `err`. */
int qla_launch(qla_kernel *k, int ntensors, void *const *ptrs, const int *ranks, const int64_t *shapes,
               const int64_t *strides, int nscalars, const double *scalars, void *stream, char *err,
               size_t errlen);

const char *qla_version(void);

#ifdef __cplusplus
}
#endif

#endif /* QLA_C_API_H */
