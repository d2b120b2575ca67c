// qla/device/all.cuh — every QLA device primitive (generated kernels include this).
// Compiles under NVRTC with no toolkit headers (-arch=sm_90a -std=c++17).
#pragma once

#include "qla/device/types.cuh"
#include "qla/device/sync.cuh"
#include "qla/device/mbarrier.cuh"
#include "qla/device/tma.cuh"
#include "qla/device/prefetch.cuh"
#include "qla/device/atomic.cuh"
#include "qla/device/wgmma.cuh"
#include "qla/device/ldstmatrix.cuh"
#include "qla/device/mma_sync.cuh"
#include "qla/device/warp_block.cuh"
#include "qla/device/regs.cuh"
#include "qla/device/math.cuh"
#include "qla/device/smem_layout.cuh"
#include "qla/device/smem_ptr.cuh"
#include "qla/device/trace.cuh"
