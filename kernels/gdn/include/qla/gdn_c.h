/* The C ABI of the GDN forward operator (qla/gdn.h), exported by libqla.so.
 * Used by the Python package (python/qla/gdn.py, through ctypes). No function
 * throws or aborts: each returns 0, or -1 with a message in `err` (which may
 * be NULL; the message is truncated to errlen - 1 bytes and NUL-terminated).
 *
 *   qla_gdn_forward_args a;
 *   qla_gdn_forward_args_init(&a);            // abi_version, scale = NaN, all absent
 *   a.q = (qla_gdn_tensor){dq, QLA_GDN_BF16, 4, {B, T, H, K}, {0}, 0};  ...
 *   size_t n; qla_gdn_forward_workspace_bytes(&a, &n, err, sizeof err);
 *   qla_gdn_forward(&a, workspace, n, err, sizeof err);
 */
#ifndef QLA_GDN_C_H
#define QLA_GDN_C_H

#include <stddef.h>
#include <stdint.h>

#include "qla/tensor_c.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QLA_GDN_ABI_VERSION 11

/* Dtype codes (the values of qla::DType). */
enum { QLA_GDN_BF16 = 0, QLA_GDN_F16 = 1, QLA_GDN_F32 = 2, QLA_GDN_I32 = 3, QLA_GDN_I64 = 4 };

/* The tensor argument (qla/tensor_c.h): one struct for every family. */
typedef qla_tensor qla_gdn_tensor;

typedef struct qla_gdn_forward_args {
  int32_t abi_version;        /* QLA_GDN_ABI_VERSION */
  int32_t use_qk_l2norm;      /* 0 or 1 */
  double scale;               /* NaN: K^-0.5 */
  qla_gdn_tensor q, k;        /* [B, T, Hqk, K] bf16/f16 */
  qla_gdn_tensor v;           /* [B, T, Hv, V] */
  qla_gdn_tensor g;           /* [B, T, Hv] f32 or the input dtype */
  qla_gdn_tensor beta;        /* [B, T, Hv] f32 or the input dtype */
  qla_gdn_tensor o;           /* out [B, T, Hv, V] */
  qla_gdn_tensor initial_state; /* optional [N, Hv, K, V] f32 */
  qla_gdn_tensor final_state;   /* optional out [N, Hv, K, V] f32 */
  qla_gdn_tensor cu_seqlens;    /* optional [N + 1] i32/i64, requires B = 1 */
  const int64_t *cu_seqlens_host; /* optional host copy (cu_seqlens.shape[0] values): validated, and planned for */
  void *stream;               /* CUstream / cudaStream_t; NULL: the default stream */
  int64_t segment_chunks;     /* context parallelism: 0 the cost model, -1 never, n > 0 segments of n chunks */
  qla_gdn_tensor checkpoints; /* optional out, training mode (ABI 4): f32 of qla_gdn_forward_checkpoint_shape */
  int32_t beta_activation;    /* (ABI 5) 0: beta is beta; 1: beta = sigmoid(beta); 2: beta = 2 sigmoid(beta) */
  int32_t use_gate;           /* (ABI 6) FLA's use_gate_in_kernel: g is the raw input, the log decay
                                 -exp(A_log) softplus(g + dt_bias) */
  qla_gdn_tensor A_log;       /* (ABI 6) [Hv] f32, with use_gate */
  qla_gdn_tensor dt_bias;     /* (ABI 6) optional [Hv] f32, with use_gate */
  int32_t state_v_first;      /* (ABI 7) initial_state and final_state are [N, Hv, V, K] */
  int32_t reserved7;
  qla_gdn_tensor state_pool;  /* (ABI 8) optional [slots, Hv, V, K] f32/bf16, read and written in place */
  qla_gdn_tensor initial_slots; /* (ABI 8) optional [N] i32: each sequence's start slot (< 0: zero) */
  qla_gdn_tensor final_slots;   /* (ABI 8) optional [N] i32: where each final state goes (< 0: nowhere) */
  int32_t state_pool_k_first;   /* (ABI 9) the pool is [slots, Hv, K, V] */
  int32_t reserved9;
  int64_t checkpoint_every;     /* (ABI 9) prefix caching: the state every this many tokens (a multiple of
                                   64; 0: none) into the pool slots of checkpoint_slots */
  qla_gdn_tensor checkpoint_slots; /* (ABI 9) [N, M] i32: slot of sequence n's m-th such state (< 0: none) */
  int64_t max_seqlen;           /* (ABI 10) with cu_seqlens and no host copy: a bound on the longest sequence in
                                   tokens (vLLM's max_query_len) that the plan may assume; 0: none */
  const int32_t *initial_slots_host;    /* (ABI 11) optional host copies of the slot arrays, checked before the */
  const int32_t *final_slots_host;      /* launch: in range, no slot written by two sequences, none read by one */
  const int32_t *checkpoint_slots_host; /* and written by another (NULL: unchecked; a slot past the pool is skipped) */
} qla_gdn_forward_args;

/* Specialization selector for qla_gdn_forward_warmup. */
typedef struct qla_gdn_forward_config {
  int32_t dtype;          /* QLA_GDN_BF16 or QLA_GDN_F16 */
  int32_t beta_dtype;     /* QLA_GDN_F32 or dtype */
  int32_t k, v;           /* k: 64 or 128; v: 64, 128 or 256 */
  int32_t varlen;         /* 0 or 1 */
  int32_t cu_dtype;       /* QLA_GDN_I32 or QLA_GDN_I64 (varlen only) */
  int32_t use_qk_l2norm;
  int32_t initial_state;  /* 0 or 1 */
  int32_t final_state;    /* 0 or 1 */
  int32_t g_dtype;        /* QLA_GDN_F32 or dtype (ABI 3) */
  int32_t beta_activation; /* 0, 1 or 2, as in qla_gdn_forward_args (ABI 5) */
  int32_t gate;            /* 0: none; 1: the in-kernel gate with dt_bias; 2: without (ABI 6) */
  int32_t state_v_first;   /* 0 or 1 (ABI 7) */
  int32_t pool;            /* 0: no state pool; 1: an f32 pool; 2: a bf16 pool (ABI 8) */
  int32_t pool_k_first;    /* (ABI 9) 0 or 1, as state_pool_k_first */
  int32_t pool_checkpoints; /* (ABI 9) 0 or 1: checkpoint_every > 0 */
} qla_gdn_forward_config;

/* The backward (qla::gdn::backward): the forward's inputs again, the
 * gradients of its outputs, and the gradients it writes. */
typedef struct qla_gdn_backward_args {
  int32_t abi_version;        /* QLA_GDN_ABI_VERSION */
  int32_t use_qk_l2norm;      /* as in the forward */
  double scale;               /* NaN: K^-0.5 */
  qla_gdn_tensor q, k, v, g, beta; /* the forward's inputs */
  qla_gdn_tensor initial_state;    /* optional, as in the forward */
  qla_gdn_tensor cu_seqlens;       /* optional, as in the forward */
  const int64_t *cu_seqlens_host;  /* optional host copy: validated, and planned for */
  void *stream;                    /* NULL: the default stream */
  int64_t segment_chunks;          /* as in the forward (the states' recompute) */
  qla_gdn_tensor dout;             /* [B, T, Hv, V], the input dtype: dL/do */
  qla_gdn_tensor dht;              /* optional [N, Hv, K, V] f32: dL/d final_state */
  qla_gdn_tensor dq, dk;           /* out [B, T, Hqk, K], the input dtype */
  qla_gdn_tensor dv;               /* out [B, T, Hv, V], the input dtype */
  qla_gdn_tensor dg;               /* out [B, T, Hv], the dtype of g */
  qla_gdn_tensor dbeta;            /* out [B, T, Hv], the dtype of beta */
  qla_gdn_tensor dh0;              /* optional out [N, Hv, K, V] f32 (requires initial_state) */
  qla_gdn_tensor checkpoints;      /* optional (ABI 4): the forward's, with segment_chunks = the forward's */
  int32_t beta_activation;         /* (ABI 5) as in the forward: dbeta is then dL/d(the beta given) */
  int32_t use_gate;                /* (ABI 6) as in the forward: dg is then dL/d(the raw g) */
  qla_gdn_tensor A_log, dt_bias;   /* (ABI 6) as in the forward */
  qla_gdn_tensor dA_log;           /* (ABI 6) optional out [Hv] f32 (with use_gate) */
  qla_gdn_tensor ddt_bias;         /* (ABI 6) optional out [Hv] f32 (with use_gate and dt_bias) */
  int32_t state_v_first;           /* (ABI 7) initial_state, dht and dh0 are [N, Hv, V, K] */
  int32_t reserved7;
} qla_gdn_backward_args;

/* Decode and speculative verify over a state pool (qla::gdn::recurrent,
 * ABI 7): T tokens of N sequences, the state read from pool slot
 * read_index[n] (< 0: zero) and written to write_index[n, t] after token t
 * (< 0: not stored). */
typedef struct qla_gdn_recurrent_args {
  int32_t abi_version;             /* QLA_GDN_ABI_VERSION */
  int32_t use_qk_l2norm;           /* 0 or 1 (qla_gdn_recurrent_args_init: 1) */
  double scale;                    /* NaN: K^-0.5 */
  qla_gdn_tensor q, k;             /* [N, T, Hqk, K] bf16/f16 */
  qla_gdn_tensor v;                /* [N, T, Hv, V] */
  qla_gdn_tensor g;                /* [N, T, Hv]: log decay, or the raw gate input with use_gate */
  qla_gdn_tensor beta;             /* [N, T, Hv]: beta, or logits with beta_activation */
  qla_gdn_tensor A_log, dt_bias;   /* [Hv] f32, with use_gate (dt_bias optional) */
  qla_gdn_tensor state_pool;       /* [slots, Hv, V, K] f32 or bf16, read and written in place */
  qla_gdn_tensor read_index;       /* [N] i32 */
  qla_gdn_tensor write_index;      /* [N, T] i32 */
  qla_gdn_tensor o;                /* out [N, T, Hv, V], the dtype of q */
  void *stream;                    /* NULL: the default stream */
  int32_t beta_activation;         /* 0, 1 or 2 as in qla_gdn_forward_args */
  int32_t use_gate;                /* 0 or 1 */
  int32_t state_pool_k_first;      /* (ABI 9) the pool is [slots, Hv, K, V] */
  int32_t reserved9;
  const int32_t *read_index_host;  /* (ABI 11) optional host copies, checked before the launch as the */
  const int32_t *write_index_host; /* forward's slots are (NULL: unchecked; a slot past the pool is skipped) */
} qla_gdn_recurrent_args;

/* Fills `a` with: abi_version, use_qk_l2norm = 1, scale = NaN, every tensor
 * absent, no stream. */
void qla_gdn_recurrent_args_init(qla_gdn_recurrent_args *a);
/* Validates everything (nothing is launched on an error), then launches on
 * a->stream: no synchronization, no allocation, no workspace. */
int qla_gdn_recurrent(const qla_gdn_recurrent_args *a, char *err, size_t errlen);

/* Specialization selector for qla_gdn_recurrent_warmup (ABI 9). */
typedef struct qla_gdn_recurrent_config {
  int32_t dtype;           /* QLA_GDN_BF16 or QLA_GDN_F16: q, k, v, o */
  int32_t g_dtype;         /* QLA_GDN_F32 or dtype */
  int32_t beta_dtype;      /* QLA_GDN_F32 or dtype */
  int32_t state_dtype;     /* QLA_GDN_F32 or QLA_GDN_BF16: the pool */
  int32_t k, v;            /* k: 64 or 128; v: 64, 128 or 256 */
  int32_t use_qk_l2norm;   /* 0 or 1 */
  int32_t beta_activation; /* 0, 1 or 2 */
  int32_t gate;            /* 0: none; 1: the in-kernel gate with dt_bias; 2: without */
  int32_t pool_k_first;    /* 0 or 1, as state_pool_k_first */
} qla_gdn_recurrent_config;

/* Compiles (and, with a GPU, loads) the decode / verify kernel of one
 * configuration, so that qla_gdn_recurrent costs no compile (and may be
 * captured in a CUDA graph). */
int qla_gdn_recurrent_warmup(const qla_gdn_recurrent_config *c, char *err, size_t errlen);

/* Fills `a` with: abi_version, scale = NaN, every tensor absent, no stream. */
void qla_gdn_forward_args_init(qla_gdn_forward_args *a);

/* Validates `a` (every host-side check) and writes the workspace size. */
int qla_gdn_forward_workspace_bytes(const qla_gdn_forward_args *a, size_t *bytes, char *err, size_t errlen);

/* Training mode (qla::gdn::forwardCheckpointShape): validates `a` (its
 * checkpoints aside) and writes the shape of the checkpoints the forward can
 * keep for a backward ({NZ, Hv, K, V}; shape[0] = 0: it keeps none, the
 * forward does not split) and the segment length the backward must be given
 * with them (*segment_chunks; 0 with none). */
int qla_gdn_forward_checkpoint_shape(const qla_gdn_forward_args *a, int64_t shape[4], int64_t *segment_chunks,
                                     char *err, size_t errlen);

/* Validates everything (nothing is launched on an error), then launches the
 * forward kernels on a->stream: no synchronization, no allocation. The
 * workspace (device memory, 256-byte aligned, >= the size above) needs no
 * initialization. */
int qla_gdn_forward(const qla_gdn_forward_args *a, void *workspace, size_t workspace_bytes, char *err,
                    size_t errlen);

/* JIT-compiles (and, with a GPU, loads into the current context) the kernels
 * of one configuration, so that a later qla_gdn_forward may be captured in a
 * CUDA graph without compiling. */
int qla_gdn_forward_warmup(const qla_gdn_forward_config *c, char *err, size_t errlen);

/* Fills `a` with: abi_version, scale = NaN, every tensor absent, no stream. */
void qla_gdn_backward_args_init(qla_gdn_backward_args *a);
/* Validates `a` and writes the backward's workspace size. */
int qla_gdn_backward_workspace_bytes(const qla_gdn_backward_args *a, size_t *bytes, char *err, size_t errlen);
/* Validates everything (nothing is launched on an error), then launches the
 * backward's kernels on a->stream: no synchronization, no allocation. */
int qla_gdn_backward(const qla_gdn_backward_args *a, void *workspace, size_t workspace_bytes, char *err,
                     size_t errlen);
/* Compiles (and loads) the backward's kernels of one configuration; dht and
 * dh0 (0 or 1) say whether a final-state gradient is given and the initial
 * state's gradient is wanted. */
int qla_gdn_backward_warmup(const qla_gdn_forward_config *c, int32_t dht, int32_t dh0, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* QLA_GDN_C_H */
