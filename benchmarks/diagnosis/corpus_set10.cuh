// The tenth set of planted pairs of corpus.cu, held out like sets 3-9: written, labelled and
// committed before its first GPU run and before any rule changed for it. Three causes in code shapes
// the other sets lack (an mma.sync of half the K, a per-thread table indexed by data, a gather through
// an index array in random order) and one pair that should take the same time (an FMA-bound kernel
// in blocks of 128 or 256 threads).
#pragma once
#include <cuda_fp16.h>
#include <algorithm>
#include <cstdint>
#include <vector>
#include "harness.cuh"

// ---------------------------------------------------------------- tensor-underused (mma.sync of half the K)
// Registers only: each warp runs four independent accumulator tiles of m16n8 through mma.sync with
// fp16 inputs and fp32 accumulation. The slow kernel uses m16n8k8 (twice the instructions for the same
// products), the fast one m16n8k16. A = 1/16 and B = 1 everywhere, so every sum is exact and both
// write the same accumulators.
constexpr int kMmaSteps = 2048, kMmaChains = 4;
__device__ __forceinline__ void mma_k16(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma_k8(float (&d)[4], unsigned a0, unsigned a1, unsigned b0) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a0), "r"(a1), "r"(b0));
}
__device__ __forceinline__ unsigned half2_bits(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&h);
}
extern "C" __global__ void mma_half_k_slow(const float* __restrict__ scale, float* __restrict__ out) {
    unsigned a = half2_bits(scale[0], scale[0]), b = half2_bits(scale[1], scale[1]);
    float d[kMmaChains][4] = {};
#pragma unroll 2
    for (int s = 0; s < 2 * kMmaSteps; ++s) {
#pragma unroll
        for (int c = 0; c < kMmaChains; ++c) mma_k8(d[c], a, a, b);
    }
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
    for (int c = 0; c < kMmaChains; ++c)
#pragma unroll
        for (int r = 0; r < 4; ++r) out[(t * kMmaChains + c) * 4 + r] = d[c][r];
}
extern "C" __global__ void mma_half_k_fast(const float* __restrict__ scale, float* __restrict__ out) {
    unsigned a = half2_bits(scale[0], scale[0]), b = half2_bits(scale[1], scale[1]);
    float d[kMmaChains][4] = {};
#pragma unroll 2
    for (int s = 0; s < kMmaSteps; ++s) {
#pragma unroll
        for (int c = 0; c < kMmaChains; ++c) mma_k16(d[c], a, a, a, a, b, b);
    }
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
    for (int c = 0; c < kMmaChains; ++c)
#pragma unroll
        for (int r = 0; r < 4; ++r) out[(t * kMmaChains + c) * 4 + r] = d[c][r];
}

// ---------------------------------------------------------------- spills-local (a table indexed by data)
// Each thread builds a 16-entry table from its input and then looks it up 64 times at indices that
// depend on the data. A per-thread array indexed at run time lives in local memory: the slow kernel
// keeps the table there (STL to build, LDL per lookup); the fast one keeps it in shared memory, one
// column per thread (STS, LDS). Same lookups, same sums.
constexpr int kTableEntries = 16, kTableLookups = 64;
__device__ __forceinline__ int table_index(float s, int k) { return ((int)(s * 7.0f) + k * 5) & (kTableEntries - 1); }
extern "C" __global__ void local_table_slow(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i];
    float table[kTableEntries];
#pragma unroll
    for (int e = 0; e < kTableEntries; ++e) table[e] = x * (float)(e + 1) - 0.5f;
    float s = x;
#pragma unroll 8
    for (int k = 0; k < kTableLookups; ++k) s = s * 0.5f + table[table_index(s, k)];
    out[i] = s;
}
extern "C" __global__ void local_table_fast(const float* __restrict__ in, float* __restrict__ out) {
    __shared__ float table[kTableEntries][kThreads];
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i];
#pragma unroll
    for (int e = 0; e < kTableEntries; ++e) table[e][threadIdx.x] = x * (float)(e + 1) - 0.5f;
    float s = x;
#pragma unroll 8
    for (int k = 0; k < kTableLookups; ++k) s = s * 0.5f + table[table_index(s, k)][threadIdx.x];
    out[i] = s;
}

// ---------------------------------------------------------------- uncoalesced-access (a gather in random order)
// out[i] = table[index[i]] * 2 over 32 M lookups into a 128 MB table, each entry looked up once. The
// same kernel runs over the index array in random order (a warp's 32 lookups land in 32 sectors) or
// sorted (a warp reads 128 consecutive bytes); the outputs are compared through the permutation.
extern "C" __global__ void gather_order_slow(const unsigned* __restrict__ index, const float* __restrict__ table, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = table[index[i]] * 2.0f;
}
extern "C" __global__ void gather_order_fast(const unsigned* __restrict__ index, const float* __restrict__ table, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = table[index[i]] * 2.0f;
}

// ---------------------------------------------------------------- none: blocks of 128 or 256 threads, FMA-bound
// Eight independent FFMA chains of 512 steps per thread; the same kernel launched in blocks of 128
// (16 per SM) or 256 threads (8 per SM): both fill every warp slot and the FMA pipe. Planted as
// taking the same time.
constexpr int kChainSteps = 512, kChainCount = 8;
__device__ __forceinline__ void fma_chains(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x[kChainCount];
#pragma unroll
    for (int c = 0; c < kChainCount; ++c) x[c] = in[i] + (float)c;
#pragma unroll 4
    for (int k = 0; k < kChainSteps; ++k)
#pragma unroll
        for (int c = 0; c < kChainCount; ++c) x[c] = fmaf(x[c], 0.999f, 0.001f);
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < kChainCount; ++c) s += x[c];
    out[i] = s;
}
extern "C" __global__ void same_block_128_slow(const float* __restrict__ in, float* __restrict__ out) { fma_chains(in, out); }
extern "C" __global__ void same_block_128_fast(const float* __restrict__ in, float* __restrict__ out) { fma_chains(in, out); }

// ---------------------------------------------------------------- the pairs
static void add_set10_pairs(std::vector<Pair>& pairs) {
    auto none = [] {};
    {   // mma.sync of half the K
        int blocks = g_sms * 8, threads = 128;
        size_t n = (size_t)blocks * threads * kMmaChains * 4;
        float* scale = dev<float>(2);
        float host_scale[2] = {0.0625f, 1.0f};
        CHECK(cudaMemcpy(scale, host_scale, sizeof host_scale, cudaMemcpyHostToDevice));
        float *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"mma_half_k", none,
            [=] { mma_half_k_slow<<<blocks, threads>>>(scale, a); },
            [=] { mma_half_k_fast<<<blocks, threads>>>(scale, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // a per-thread table indexed by data
        size_t n = (size_t)16 << 20;
        float *in = random_floats(n, 131, 0, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"local_table", none,
            [=] { local_table_slow<<<n / kThreads, kThreads>>>(in, a); },
            [=] { local_table_fast<<<n / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // a gather in random order
        size_t n = (size_t)32 << 20;
        std::vector<unsigned> index(n);
        for (size_t i = 0; i < n; ++i) index[i] = (unsigned)i;
        unsigned h = 777u;
        for (size_t i = n - 1; i > 0; --i) {  // Fisher-Yates with a fixed LCG
            h = h * 1664525u + 1013904223u;
            size_t j = (size_t)(((uint64_t)h * (i + 1)) >> 32);
            std::swap(index[i], index[j]);
        }
        // index is a permutation: sorted, it is 0, 1, 2, ..., and lookup j of the sorted order is
        // lookup order[j] of the random one.
        std::vector<size_t> order(n);
        for (size_t i = 0; i < n; ++i) order[index[i]] = i;
        std::vector<unsigned> sorted(n);
        for (size_t j = 0; j < n; ++j) sorted[j] = (unsigned)j;
        unsigned *i_rand = dev<unsigned>(n), *i_sorted = dev<unsigned>(n);
        CHECK(cudaMemcpy(i_rand, index.data(), n * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(i_sorted, sorted.data(), n * 4, cudaMemcpyHostToDevice));
        float *table = random_floats(n, 132, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"gather_order", none,
            [=] { gather_order_slow<<<n / kThreads, kThreads>>>(i_rand, table, a); },
            [=] { gather_order_fast<<<n / kThreads, kThreads>>>(i_sorted, table, b); },
            [=](std::string& w) { return compare_through_permutation(a, b, order, w); }});
    }
    {   // blocks of 128 or 256 threads (the same time)
        size_t n = (size_t)8 << 20;
        float *in = random_floats(n, 133, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"same_block_128", none,
            [=] { same_block_128_slow<<<n / 128, 128>>>(in, a); },
            [=] { same_block_128_fast<<<n / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
}
