"""Instruction-cache probe for warp-specialized kernels (docs/internals.md, fragment <-> global copies).

Writes a CUDA program in which each CTA of 512 threads runs 4 warpgroups ("roles"), each its own
straight-line block of N FFMAs (8 independent chains) in a loop, and prints the clock cycles per
FFMA per warp of each role for several N (code per CTA = 4 x N x 16 bytes), with one CTA and with
one CTA per SM. Four warps share each scheduler, so about 4 cycles is issue-bound; more is the
cost of fetching the code. Build and run:

    python3 bench/icache_probe.py /tmp/icache_probe.cu
    nvcc -arch=sm_90a -O3 -o /tmp/icache_probe /tmp/icache_probe.cu   # (CUDA 13; here or there)
    /tmp/icache_probe                                                  # on the GPU

(bench/results/gdn_bwd_fused_gpu_2026-12-05.txt: H100, 2026-12-05.)
"""
import sys
Ns = [256, 512, 1024, 2048, 3072, 4096, 6144]
out = ['#include <cstdio>', '#include <cstdlib>', '#include <cuda_runtime.h>',
       '#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s line %d\\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)']
def body(N, role):
    s = []
    for k in range(N):
        c = 1.0 + ((k * 7 + role * 13) % 97) * 1e-6
        d = ((k * 5 + role * 3) % 89) * 1e-7
        s.append(f'    x{k % 8} = fmaf(x{k % 8}, {c:.9f}f, {d:.9e}f);')
    return '\n'.join(s)
for N in Ns:
    out.append(f'__global__ void __launch_bounds__(512, 1) probe_{N}(float* o, long long* clk, int iters) {{')
    out.append('  int role = threadIdx.x / 128;')
    out.append('  float x0 = threadIdx.x, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3, x4 = x0 + 4, x5 = x0 + 5, x6 = x0 + 6, x7 = x0 + 7;')
    out.append('  __syncthreads(); long long t0 = clock64();')
    for r in range(4):
        out.append(f'  {"if" if r == 0 else "else if"} (role == {r}) {{')
        out.append('  #pragma unroll 1')
        out.append('  for (int it = 0; it < iters; ++it) {')
        out.append(body(N, r))
        out.append('  }')
        out.append('  }')
    out.append('  long long t1 = clock64();')
    out.append('  if (threadIdx.x % 128 == 0) clk[blockIdx.x * 4 + role] = t1 - t0;')
    out.append('  o[blockIdx.x * 512 + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;')
    out.append('}')
out.append('int main() {')
out.append('  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));')
out.append('  float* o; long long* clk; CK(cudaMalloc(&o, 4 * 512 * 1024)); CK(cudaMalloc(&clk, 8 * 4 * 1024));')
out.append('  long long h[4 * 1024];')
for N in Ns:
    out.append(f'  for (int grid : {{1, sms}}) {{')
    out.append(f'    int iters = {max(4, 200000 // N)};')
    out.append(f'    probe_{N}<<<grid, 512>>>(o, clk, 2); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());')
    out.append(f'    probe_{N}<<<grid, 512>>>(o, clk, iters); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());')
    out.append('    CK(cudaMemcpy(h, clk, 8 * 4 * grid, cudaMemcpyDeviceToHost));')
    out.append('    double m[4] = {0, 0, 0, 0}; for (int b = 0; b < grid; ++b) for (int r = 0; r < 4; ++r) m[r] += h[b * 4 + r] / double(grid);')
    out.append(f'    printf("N=%5d per role (%6.1f KB code per CTA), grid %3d: clk per FFMA per warp: %.2f %.2f %.2f %.2f\\n", {N}, 4.0 * {N} * 16 / 1024, grid, m[0] / ((double)iters * {N}), m[1] / ((double)iters * {N}), m[2] / ((double)iters * {N}), m[3] / ((double)iters * {N}));')
    out.append('  }')
out.append('  return 0;')
out.append('}')
open(sys.argv[1], 'w').write('\n'.join(out) + '\n')
