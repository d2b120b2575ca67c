/* The tensor argument of every kernel family's C ABI (qla/gdn_c.h,
 * qla/gla_c.h): a device pointer, a dtype code (the values of qla::DType:
 * QLA_BF16 .. QLA_I64), the rank, the shape (outermost first) and, when
 * has_strides != 0, the strides in elements (otherwise contiguous
 * row-major). qla_gdn_tensor and qla_gla_tensor are this type. */
#ifndef QLA_TENSOR_C_H
#define QLA_TENSOR_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Dtype codes (the values of qla::DType, qla/DType.h). */
enum { QLA_BF16 = 0, QLA_F16 = 1, QLA_F32 = 2, QLA_I32 = 3, QLA_I64 = 4 };

typedef struct qla_tensor {
  void *data;           /* device pointer; NULL: absent (only for the optional tensors) */
  int32_t dtype;        /* QLA_BF16 .. QLA_I64 */
  int32_t rank;         /* 1..4 */
  int64_t shape[4];     /* outermost first */
  int64_t strides[4];   /* in elements; used only when has_strides != 0 */
  int32_t has_strides;  /* 0: contiguous row-major */
  int32_t reserved;
} qla_tensor;

#ifdef __cplusplus
}
#endif

#endif /* QLA_TENSOR_C_H */
