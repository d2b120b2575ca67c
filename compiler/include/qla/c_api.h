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

/* Writes the traces of every loaded kernel compiled with tracing (qlac
 * --trace, QLA_TRACE=1) to `path` after synchronizing the device, and clears
 * them (docs/internals.md, "Tracing"). Returns how many kernels it wrote
 * (0: none traced, no file written), -1 on error (message in err). */
int qla_trace_dump(const char *path, char *err, size_t errlen);

/* "0.1.0": the QLA version (part of every kernel cache key). */
const char *qla_version(void);

/* "13.0": the version of the NVRTC library loaded at run time (part of every
 * kernel cache key); "unknown" when NVRTC cannot say. */
const char *qla_nvrtc_version(void);

/* The kernel cache folder used by qla_compile_*: $QLA_CACHE_DIR, else
 * $HOME/.cache/qla (read once, at the first call of any qla_ function that
 * uses the cache; created on the first write). */
const char *qla_cache_dir(void);

/* The read-only folders searched after the cache folder, ':'-separated
 * (empty: none): $QLA_PREBUILT_DIRS' folders, then prebuilt/ beside
 * libqla.so when it exists (a wheel's ahead-of-time kernels). */
const char *qla_prebuilt_dirs(void);

/* 1 when kernels can be launched here: the CUDA driver loads, a device is
 * present and device 0 is sm_90a (H100/H200); `msg` then gets device 0's
 * architecture ("sm_90a"). 0 otherwise, with the reason in `msg` ("no CUDA
 * driver (libcuda.so.1 not found)", "no CUDA device", "device 0 is sm_80; QLA
 * kernels need sm_90a"). Compiling to a cubin needs no GPU. `msg` may be NULL. */
int qla_gpu_available(char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif

#endif /* QLA_C_API_H */
