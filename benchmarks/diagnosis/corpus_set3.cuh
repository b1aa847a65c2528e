// The third set of planted pairs of corpus.cu: written, labelled and committed before any GPU run
// and before any rule was changed for them, so that their first diff measures the diagnosis on
// pairs it was not built from (benchmarks/diagnosis/README.md). One cause each, as in corpus.cu;
// they take other code shapes than the first two sets (a tail wave, a store-side transpose, an
// array of structs, Horner chains, CUDA-core GEMM against WMMA, a loop left rolled, a register cap,
// a GEMV over shared rows, data-dependent trip counts, atomics to one word), and one pair that
// should take the same time (two unroll factors of a copy at the DRAM limit).
#pragma once
#include "harness.cuh"
#include <cuda_fp16.h>
#include <mma.h>

// ---------------------------------------------------------------- grid-too-small (a tail wave)
// 5 x SMs chunks of FMA work, grid-stride over chunks, one 1024-thread block per SM (the shared
// memory both launch with allows no second). The fast launch has one block per SM (5 chunks
// each); the slow one 5/4 as many blocks (4 chunks each), so a second wave of a quarter of the
// SMs runs after the first: 8 chunk-times instead of 5.
constexpr int kTailThreads = 1024, kTailIters = 2048, kTailSmem = 160 * 1024;
__device__ __forceinline__ void tail_chunks(const float* __restrict__ in, float* __restrict__ out, int chunks) {
    for (int c = blockIdx.x; c < chunks; c += gridDim.x) {
        size_t i = (size_t)c * kTailThreads + threadIdx.x;
        float x = in[i];
#pragma unroll 16
        for (int k = 0; k < kTailIters; ++k) x = fmaf(x, 0.9999f, 0.0001f);
        out[i] = x;
    }
}
extern "C" __global__ void __launch_bounds__(kTailThreads) tail_wave_slow(const float* __restrict__ in, float* __restrict__ out, int chunks) {
    tail_chunks(in, out, chunks);
}
extern "C" __global__ void __launch_bounds__(kTailThreads) tail_wave_fast(const float* __restrict__ in, float* __restrict__ out, int chunks) {
    tail_chunks(in, out, chunks);
}

// ---------------------------------------------------------------- uncoalesced-access (stores)
// Transpose of an R x C float matrix. The slow kernel reads rows (coalesced) and writes each
// value straight to its transposed place, so a warp's 32 stores land in 32 rows of the output;
// the fast one stages a 32 x 33 tile in shared memory so that reads and writes are both rows.
constexpr int kTrR = 8192, kTrC = 4096, kTrTile = 32, kTrRows = 8;
extern "C" __global__ void transpose_store_slow(const float* __restrict__ in, float* __restrict__ out) {
    int c = blockIdx.x * kTrTile + threadIdx.x, r = blockIdx.y * kTrTile + threadIdx.y;
    for (int j = 0; j < kTrTile; j += kTrRows) out[(size_t)c * kTrR + r + j] = in[(size_t)(r + j) * kTrC + c];
}
extern "C" __global__ void transpose_store_fast(const float* __restrict__ in, float* __restrict__ out) {
    __shared__ float tile[kTrTile][kTrTile + 1];
    int c = blockIdx.x * kTrTile + threadIdx.x, r = blockIdx.y * kTrTile + threadIdx.y;
    for (int j = 0; j < kTrTile; j += kTrRows) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(r + j) * kTrC + c];
    __syncthreads();
    int oc = blockIdx.y * kTrTile + threadIdx.x, orow = blockIdx.x * kTrTile + threadIdx.y;
    for (int j = 0; j < kTrTile; j += kTrRows) out[(size_t)(orow + j) * kTrR + oc] = tile[threadIdx.x][threadIdx.y + j];
}

// ---------------------------------------------------------------- uncoalesced-access (array of structs)
// Kinetic energy 0.5 m |v|^2 of N particles. The slow kernel reads m, vx, vy, vz from an array of
// 32-byte structs (8 floats: position, velocity, mass, charge), so each of its loads touches one
// sector per lane; the fast one reads the same four fields from separate arrays.
struct Particle { float x, y, z, vx, vy, vz, m, q; };
__device__ __forceinline__ float kinetic(float m, float vx, float vy, float vz) {
    return 0.5f * m * (vx * vx + vy * vy + vz * vz);
}
extern "C" __global__ void aos_fields_slow(const Particle* __restrict__ p, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = kinetic(p[i].m, p[i].vx, p[i].vy, p[i].vz);
}
extern "C" __global__ void aos_fields_fast(const float* __restrict__ m, const float* __restrict__ vx,
                                           const float* __restrict__ vy, const float* __restrict__ vz, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = kinetic(m[i], vx[i], vy[i], vz[i]);
}
__global__ void aos_from_soa(Particle* p, const float* m, const float* vx, const float* vy, const float* vz, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = Particle{0.f, 0.f, 0.f, vx[i], vy[i], vz[i], m[i], 1.f};
}

// ---------------------------------------------------------------- dependent-arithmetic
// A degree-256 polynomial (Horner) at 4 points per thread, at an occupancy both kernels share: the
// shared memory both launch with leaves one 256-thread block per SM, two warps per scheduler. Both
// issue the 4 points' loads together; the slow kernel then finishes one point's chain before it
// starts the next (`unroll 1` over the points, the values rotating through registers), so each FFMA
// waits for the one before; the fast one steps the 4 chains together. Same FFMAs, same order per
// chain. (The first version loaded each point inside the rolled loop, which also serialized the
// loads: its slow kernel waited on memory more than on its chains. The notes of labels.toml.)
constexpr int kHornerDegree = 256, kHornerPoints = 4, kHornerSmem = 160 * 1024;
__device__ __forceinline__ float horner_coefficient(int k) { return 1.0f / (float)(k + 2); }
extern "C" __global__ void horner_chains_slow(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride * kHornerPoints) {
        float x0 = in[i], x1 = in[i + stride], x2 = in[i + 2 * stride], x3 = in[i + 3 * stride];
#pragma unroll 1
        for (int p = 0; p < kHornerPoints; ++p) {
            float acc = 1.0f;
#pragma unroll
            for (int k = 0; k < kHornerDegree; ++k) acc = fmaf(acc, x0, horner_coefficient(k));
            out[i + p * stride] = acc;
            x0 = x1; x1 = x2; x2 = x3;
        }
    }
}
extern "C" __global__ void horner_chains_fast(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride * kHornerPoints) {
        float x[kHornerPoints], acc[kHornerPoints];
#pragma unroll
        for (int p = 0; p < kHornerPoints; ++p) { x[p] = in[i + p * stride]; acc[p] = 1.0f; }
#pragma unroll
        for (int k = 0; k < kHornerDegree; ++k) {
#pragma unroll
            for (int p = 0; p < kHornerPoints; ++p) acc[p] = fmaf(acc[p], x[p], horner_coefficient(k));
        }
#pragma unroll
        for (int p = 0; p < kHornerPoints; ++p) out[i + p * stride] = acc[p];
    }
}

// ---------------------------------------------------------------- no-tensor-cores
// C = A B, fp16 in, fp32 out, 2048^3, 64 x 64 block tiles over k-slices of 32 staged in shared
// memory by the same code on both sides. The slow kernel multiplies on the CUDA cores (each
// thread 4 x 8 outputs, FFMA on converted halves); the fast one with WMMA 16x16x16 (each warp
// 32 x 32 outputs as 2 x 2 fragments, HMMA).
constexpr int kMmN = 2048, kMmTile = 64, kMmK = 32, kMmThreads = 128;
struct MmStage { __half a[kMmTile][kMmK + 8]; __half b[kMmK][kMmTile + 8]; };
__device__ __forceinline__ void mm_stage(MmStage& s, const __half* __restrict__ A, const __half* __restrict__ B,
                                         int row0, int col0, int k0) {
    // 64 x 32 of A and 32 x 64 of B, 8 halves (16 bytes) per thread and copy.
    for (int e = threadIdx.x; e < kMmTile * kMmK / 8; e += kMmThreads) {
        int r = e / (kMmK / 8), c = (e % (kMmK / 8)) * 8;
        *(uint4*)&s.a[r][c] = *(const uint4*)&A[(size_t)(row0 + r) * kMmN + k0 + c];
    }
    for (int e = threadIdx.x; e < kMmK * kMmTile / 8; e += kMmThreads) {
        int r = e / (kMmTile / 8), c = (e % (kMmTile / 8)) * 8;
        *(uint4*)&s.b[r][c] = *(const uint4*)&B[(size_t)(k0 + r) * kMmN + col0 + c];
    }
}
extern "C" __global__ void __launch_bounds__(kMmThreads) wmma_gemm_slow(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C) {
    __shared__ __align__(32) MmStage s;  // WMMA loads need 256-bit aligned tiles
    int row0 = blockIdx.y * kMmTile, col0 = blockIdx.x * kMmTile;
    int tr = (threadIdx.x / 8) * 4, tc = (threadIdx.x % 8) * 8;  // 16 x 8 threads, 4 x 8 outputs each
    float acc[4][8] = {};
    for (int k0 = 0; k0 < kMmN; k0 += kMmK) {
        mm_stage(s, A, B, row0, col0, k0);
        __syncthreads();
#pragma unroll 4
        for (int k = 0; k < kMmK; ++k) {
            float a[4], b[8];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = __half2float(s.a[tr + i][k]);
#pragma unroll
            for (int j = 0; j < 8; ++j) b[j] = __half2float(s.b[k][tc + j]);
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) C[(size_t)(row0 + tr + i) * kMmN + col0 + tc + j] = acc[i][j];
}
extern "C" __global__ void __launch_bounds__(kMmThreads) wmma_gemm_fast(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C) {
    using namespace nvcuda;
    __shared__ __align__(32) MmStage s;
    int row0 = blockIdx.y * kMmTile, col0 = blockIdx.x * kMmTile;
    int warp = threadIdx.x / 32, wr = (warp / 2) * 32, wc = (warp % 2) * 32;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    for (int k0 = 0; k0 < kMmN; k0 += kMmK) {
        mm_stage(s, A, B, row0, col0, k0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kMmK; k += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b[2];
#pragma unroll
            for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], &s.a[wr + 16 * i][k], kMmK + 8);
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &s.b[k][wc + 16 * j], kMmTile + 8);
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(&C[(size_t)(row0 + wr + 16 * i) * kMmN + col0 + wc + 16 * j], acc[i][j], kMmN, wmma::mem_row_major);
}
__global__ void halves_from_floats(__half* h, const float* f, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        h[i] = __float2half_rn(f[i]);
}

// ---------------------------------------------------------------- spills-local (a loop left rolled)
// Each thread sorts 16 values (bubble sort by compare-exchange, min/max: no branches) and writes
// their rank-weighted sum. The fast kernel's loops are fully unrolled, so every index is a
// constant and the 16 values stay in registers; the slow one keeps them rolled (`unroll 1`), so the
// array is indexed at run time and lives in local memory. Same exchanges in the same order.
constexpr int kSortN = 16;
template <int N, bool kUnrolled>
__device__ __forceinline__ float ranked_sum(const float* __restrict__ in, size_t i, size_t n) {
    float v[N];
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = in[i + k * n];
    if constexpr (kUnrolled) {
#pragma unroll
        for (int pass = 0; pass < N - 1; ++pass)
#pragma unroll
            for (int j = 0; j < N - 1 - pass; ++j) {
                float lo = fminf(v[j], v[j + 1]), hi = fmaxf(v[j], v[j + 1]);
                v[j] = lo; v[j + 1] = hi;
            }
    } else {
#pragma unroll 1
        for (int pass = 0; pass < N - 1; ++pass)
#pragma unroll 1
            for (int j = 0; j < N - 1 - pass; ++j) {
                float lo = fminf(v[j], v[j + 1]), hi = fmaxf(v[j], v[j + 1]);
                v[j] = lo; v[j + 1] = hi;
            }
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N; ++k) s = fmaf(v[k], (float)(k + 1), s);
    return s;
}
extern "C" __global__ void sort_rolled_slow(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = ranked_sum<kSortN, false>(in, i, n);
}
extern "C" __global__ void sort_rolled_fast(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = ranked_sum<kSortN, true>(in, i, n);
}

// ---------------------------------------------------------------- spills-local (a register cap)
// The same unrolled sort over 48 values. The slow kernel asks for 8 blocks of 256 threads per SM
// (`__launch_bounds__(256, 8)`: at most 32 registers), which the 48 live values do not fit, so
// ptxas spills (1,676 bytes of spill stores; the fast kernel: 63 registers, no spills); the fast one
// states only the block size.
constexpr int kCapN = 48;
extern "C" __global__ void __launch_bounds__(256, 8) register_cap_slow(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = ranked_sum<kCapN, true>(in, i, n);
}
extern "C" __global__ void __launch_bounds__(256) register_cap_fast(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = ranked_sum<kCapN, true>(in, i, n);
}

// ---------------------------------------------------------------- bank-conflicts (a GEMV over shared rows)
// y = A x for a tall R x 64 matrix: a block stages 256 rows of A in shared memory (coalesced, row
// by row), then thread t sums row t. Rows of 64 floats put every lane's word k in the same bank
// (32-way conflicts on each read); the fast tile pads a row to 65 floats.
constexpr int kGvCols = 64;
template <int PAD>
__device__ __forceinline__ void gemv_rows(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y) {
    __shared__ float rows[kThreads][kGvCols + PAD];
    size_t row0 = (size_t)blockIdx.x * kThreads;
    for (int e = threadIdx.x; e < kThreads * kGvCols; e += kThreads)
        rows[e / kGvCols][e % kGvCols] = A[row0 * kGvCols + e];
    __syncthreads();
    float s = 0.f;
#pragma unroll 16
    for (int k = 0; k < kGvCols; ++k) s = fmaf(rows[threadIdx.x][k], x[k], s);
    y[row0 + threadIdx.x] = s;
}
extern "C" __global__ void gemv_rows_slow(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y) { gemv_rows<0>(A, x, y); }
extern "C" __global__ void gemv_rows_fast(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y) { gemv_rows<1>(A, x, y); }

// ---------------------------------------------------------------- divergence (data-dependent trip counts)
// Each element runs its own number of steps (0-255) of x = x * a + b. Both launches run the same
// kernel over the same (count, value) elements; the slow one gets them in random order, so each
// warp runs as long as its longest lane, and the fast one sorted by count, so a warp's lanes
// finish together. The check compares each element's result through the permutation.
extern "C" __global__ void trip_counts_slow(const int* __restrict__ trips, const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i];
    for (int k = 0; k < trips[i]; ++k) x = fmaf(x, 0.999f, 0.001f);
    out[i] = x;
}
extern "C" __global__ void trip_counts_fast(const int* __restrict__ trips, const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i];
    for (int k = 0; k < trips[i]; ++k) x = fmaf(x, 0.999f, 0.001f);
    out[i] = x;
}

// ---------------------------------------------------------------- atomic-contention (one word)
// The sum of n unsigned values into one 64-bit counter. Both kernels sum a grid-stride slice per
// thread; the slow one then adds every thread's partial to the counter, the fast one reduces a
// warp's 32 partials by shuffles first (one atomic per warp, 32x fewer). Integer sums: exact.
__device__ __forceinline__ unsigned long long slice_sum(const unsigned* __restrict__ in, size_t n) {
    unsigned long long s = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) s += in[i];
    return s;
}
extern "C" __global__ void one_counter_slow(const unsigned* __restrict__ in, unsigned long long* total, size_t n) {
    atomicAdd(total, slice_sum(in, n));
}
extern "C" __global__ void one_counter_fast(const unsigned* __restrict__ in, unsigned long long* total, size_t n) {
    unsigned long long s = slice_sum(in, n);
#pragma unroll
    for (int d = 16; d > 0; d /= 2) s += __shfl_xor_sync(0xffffffffu, s, d);
    if ((threadIdx.x & 31) == 0) atomicAdd(total, s);
}

// ---------------------------------------------------------------- none: the same time
// A float4 copy at the DRAM limit, grid-stride, with the loop unrolled by 4 (slow) or not (fast):
// four times fewer loop branches and index updates, and the same bytes; expected within noise.
template <int UNROLL>
__device__ __forceinline__ void copy_unrolled(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
#pragma unroll UNROLL
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) out[i] = in[i];
}
extern "C" __global__ void copy_unroll_slow(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) { copy_unrolled<4>(in, out, n4); }
extern "C" __global__ void copy_unroll_fast(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) { copy_unrolled<1>(in, out, n4); }

// ---------------------------------------------------------------- the pairs
static void add_set3_pairs(std::vector<Pair>& pairs) {
    auto none = [] {};
    {   // a tail wave
        int chunks = 5 * g_sms;
        size_t n = (size_t)chunks * kTailThreads;
        float *in = random_floats(n, 41, 0, 1), *a = dev<float>(n), *b = dev<float>(n);
        CHECK(cudaFuncSetAttribute(tail_wave_slow, cudaFuncAttributeMaxDynamicSharedMemorySize, kTailSmem));
        CHECK(cudaFuncSetAttribute(tail_wave_fast, cudaFuncAttributeMaxDynamicSharedMemorySize, kTailSmem));
        int slow_blocks = (chunks + 3) / 4;
        pairs.push_back({"tail_wave", none,
            [=] { tail_wave_slow<<<slow_blocks, kTailThreads, kTailSmem>>>(in, a, chunks); },
            [=] { tail_wave_fast<<<g_sms, kTailThreads, kTailSmem>>>(in, b, chunks); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // transposed stores
        size_t n = (size_t)kTrR * kTrC;
        float *in = random_floats(n, 42, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        dim3 grid(kTrC / kTrTile, kTrR / kTrTile), block(kTrTile, kTrRows);
        pairs.push_back({"transpose_store", none,
            [=] { transpose_store_slow<<<grid, block>>>(in, a); },
            [=] { transpose_store_fast<<<grid, block>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // an array of structs
        size_t n = (size_t)8 << 20;
        float *m = random_floats(n, 43, 0.5f, 2), *vx = random_floats(n, 44, -1, 1);
        float *vy = random_floats(n, 45, -1, 1), *vz = random_floats(n, 46, -1, 1);
        Particle* p = dev<Particle>(n);
        aos_from_soa<<<g_sms * 8, kThreads>>>(p, m, vx, vy, vz, n);
        CHECK(cudaGetLastError());
        float *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"aos_fields", none,
            [=] { aos_fields_slow<<<n / kThreads, kThreads>>>(p, a); },
            [=] { aos_fields_fast<<<n / kThreads, kThreads>>>(m, vx, vy, vz, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // Horner chains
        int blocks = g_sms * 8;
        size_t n = (size_t)blocks * kThreads * kHornerPoints * 16;
        float *in = random_floats(n, 47, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        CHECK(cudaFuncSetAttribute(horner_chains_slow, cudaFuncAttributeMaxDynamicSharedMemorySize, kHornerSmem));
        CHECK(cudaFuncSetAttribute(horner_chains_fast, cudaFuncAttributeMaxDynamicSharedMemorySize, kHornerSmem));
        pairs.push_back({"horner_chains", none,
            [=] { horner_chains_slow<<<blocks, kThreads, kHornerSmem>>>(in, a, n); },
            [=] { horner_chains_fast<<<blocks, kThreads, kHornerSmem>>>(in, b, n); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // CUDA cores against tensor cores
        size_t nn = (size_t)kMmN * kMmN;
        float *fa = random_floats(nn, 48, 0, 1), *fb = random_floats(nn, 49, 0, 1);
        __half *A = dev<__half>(nn), *B = dev<__half>(nn);
        halves_from_floats<<<g_sms * 8, kThreads>>>(A, fa, nn);
        halves_from_floats<<<g_sms * 8, kThreads>>>(B, fb, nn);
        CHECK(cudaGetLastError());
        float *a = dev<float>(nn), *b = dev<float>(nn);
        dim3 grid(kMmN / kMmTile, kMmN / kMmTile);
        pairs.push_back({"wmma_gemm", none,
            [=] { wmma_gemm_slow<<<grid, kMmThreads>>>(A, B, a); },
            [=] { wmma_gemm_fast<<<grid, kMmThreads>>>(A, B, b); },
            [=](std::string& w) { return compare_floats(a, b, nn, 1e-3, w); }});
    }
    {   // a sort left rolled
        size_t n = (size_t)2 << 20;
        float *in = random_floats(n * kSortN, 50, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"sort_rolled", none,
            [=] { sort_rolled_slow<<<n / kThreads, kThreads>>>(in, a, n); },
            [=] { sort_rolled_fast<<<n / kThreads, kThreads>>>(in, b, n); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // a register cap
        size_t n = (size_t)1 << 20;
        float *in = random_floats(n * kCapN, 51, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"register_cap", none,
            [=] { register_cap_slow<<<n / kThreads, kThreads>>>(in, a, n); },
            [=] { register_cap_fast<<<n / kThreads, kThreads>>>(in, b, n); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // a GEMV over shared rows
        size_t rows = (size_t)1 << 20;
        float *A = random_floats(rows * kGvCols, 52, -1, 1), *x = random_floats(kGvCols, 53, -1, 1);
        float *a = dev<float>(rows), *b = dev<float>(rows);
        pairs.push_back({"gemv_rows", none,
            [=] { gemv_rows_slow<<<rows / kThreads, kThreads>>>(A, x, a); },
            [=] { gemv_rows_fast<<<rows / kThreads, kThreads>>>(A, x, b); },
            [=](std::string& w) { return compare_floats(a, b, rows, 0, w); }});
    }
    {   // data-dependent trip counts, in random order and sorted
        size_t n = (size_t)4 << 20;
        std::vector<int> trips(n);
        std::vector<float> vals(n);
        unsigned h = 12345u;
        for (size_t i = 0; i < n; ++i) {
            h = h * 1664525u + 1013904223u; trips[i] = (int)(h >> 24);
            h = h * 1664525u + 1013904223u; vals[i] = (h >> 8) * (1.0f / 16777216.0f);
        }
        std::vector<size_t> order(n);
        for (size_t i = 0; i < n; ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return trips[x] < trips[y]; });
        std::vector<int> sorted_trips(n);
        std::vector<float> sorted_vals(n);
        for (size_t j = 0; j < n; ++j) { sorted_trips[j] = trips[order[j]]; sorted_vals[j] = vals[order[j]]; }
        int *t_rand = dev<int>(n), *t_sorted = dev<int>(n);
        float *v_rand = dev<float>(n), *v_sorted = dev<float>(n), *a = dev<float>(n), *b = dev<float>(n);
        CHECK(cudaMemcpy(t_rand, trips.data(), n * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(v_rand, vals.data(), n * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(t_sorted, sorted_trips.data(), n * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(v_sorted, sorted_vals.data(), n * 4, cudaMemcpyHostToDevice));
        pairs.push_back({"trip_counts", none,
            [=] { trip_counts_slow<<<n / kThreads, kThreads>>>(t_rand, v_rand, a); },
            [=] { trip_counts_fast<<<n / kThreads, kThreads>>>(t_sorted, v_sorted, b); },
            [=](std::string& w) { return compare_through_permutation(a, b, order, w); }});
    }
    {   // atomics to one word
        int blocks = g_sms * 8;
        size_t n = (size_t)blocks * kThreads * 16;
        unsigned* in = (unsigned*)random_floats(n, 54, 0, 1);  // any bits: the sums are exact
        unsigned long long *a = dev<unsigned long long>(1), *b = dev<unsigned long long>(1);
        pairs.push_back({"one_counter",
            [=] { CHECK(cudaMemset(a, 0, 8)); CHECK(cudaMemset(b, 0, 8)); },
            [=] { one_counter_slow<<<blocks, kThreads>>>(in, a, n); },
            [=] { one_counter_fast<<<blocks, kThreads>>>(in, b, n); },
            [=](std::string& w) { return compare_bytes(a, b, 8, w); }});
    }
    {   // the same time
        int blocks = g_sms * 8;
        size_t n4 = (size_t)8 << 20;  // 128 MB each way
        float4 *in = (float4*)random_floats(n4 * 4, 55, -1, 1), *a = dev<float4>(n4), *b = dev<float4>(n4);
        pairs.push_back({"copy_unroll", none,
            [=] { copy_unroll_slow<<<blocks, kThreads>>>(in, a, n4); },
            [=] { copy_unroll_fast<<<blocks, kThreads>>>(in, b, n4); },
            [=](std::string& w) { return compare_floats((float*)a, (float*)b, n4 * 4, 0, w); }});
    }
}
