/* The C ABI of the simple-GLA forward operator (qla/gla.h), exported by
 * libqla.so and used by python/qla/gla.py through ctypes. No function throws
 * or aborts: each returns 0, or -1 with a message in `err` (which may be
 * NULL; truncated to errlen - 1 bytes and NUL-terminated).
 *
 *   qla_gla_forward_args a;
 *   qla_gla_forward_args_init(&a);        // abi_version, scale = NaN, all absent
 *   a.q = (qla_gla_tensor){dq, QLA_GLA_BF16, 4, {B, T, H, K}, {0}, 0};  ...
 *   qla_gla_forward(&a, err, sizeof err);
 */
#ifndef QLA_GLA_C_H
#define QLA_GLA_C_H

#include <stddef.h>
#include <stdint.h>

#include "qla/tensor_c.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QLA_GLA_ABI_VERSION 1

/* Dtype codes (the values of qla::DType). */
enum { QLA_GLA_BF16 = 0, QLA_GLA_F16 = 1, QLA_GLA_F32 = 2, QLA_GLA_I32 = 3, QLA_GLA_I64 = 4 };

/* The tensor argument (qla/tensor_c.h): one struct for every family. */
typedef qla_tensor qla_gla_tensor;

typedef struct qla_gla_forward_args {
  int32_t abi_version;          /* QLA_GLA_ABI_VERSION */
  int32_t reserved;
  double scale;                 /* NaN: K^-0.5 */
  qla_gla_tensor q, k;          /* [B, T, Hqk, K] bf16/f16 */
  qla_gla_tensor v;             /* [B, T, H, V] */
  qla_gla_tensor g;             /* [B, T, H] f32 log decay */
  qla_gla_tensor o;             /* out [B, T, H, V] */
  qla_gla_tensor initial_state; /* optional [N, H, K, V] f32 */
  qla_gla_tensor final_state;   /* optional out [N, H, K, V] f32 */
  qla_gla_tensor cu_seqlens;    /* optional [N + 1] i32/i64, requires B = 1 */
  const int64_t *cu_seqlens_host; /* optional host copy (cu_seqlens.shape[0] values), to validate */
  void *stream;                 /* CUstream / cudaStream_t; NULL: the default stream */
} qla_gla_forward_args;

/* Specialization selector for qla_gla_forward_warmup. */
typedef struct qla_gla_forward_config {
  int32_t dtype;          /* QLA_GLA_BF16 or QLA_GLA_F16 */
  int32_t k, v;           /* 64 or 128 */
  int32_t varlen;         /* 0 or 1 */
  int32_t cu_dtype;       /* QLA_GLA_I32 or QLA_GLA_I64 (varlen only) */
  int32_t initial_state;  /* 0 or 1 */
  int32_t final_state;    /* 0 or 1 */
} qla_gla_forward_config;

void qla_gla_forward_args_init(qla_gla_forward_args *a);

/* Validates `a` (every host-side check); launches nothing. */
int qla_gla_forward_validate(const qla_gla_forward_args *a, char *err, size_t errlen);

/* Validates everything (nothing is launched on an error), then launches the
 * kernel on a->stream: no synchronization, no allocation, no workspace. */
int qla_gla_forward(const qla_gla_forward_args *a, char *err, size_t errlen);

/* JIT-compiles (and, with a GPU, loads into the current context) the kernel
 * of one configuration, so that a later call may be captured in a CUDA graph. */
int qla_gla_forward_warmup(const qla_gla_forward_config *c, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* QLA_GLA_C_H */
