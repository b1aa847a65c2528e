// The fifth set of planted pairs of corpus.cu, held out like the third and fourth: written, labelled
// and committed before its first GPU run and before any rule changed for it. Four causes in code
// shapes the other sets lack: blocks of growing work launched lightest first, a barrier every warp
// reaches late in turn, a tile loop that waits for each tile before computing it, and a division by
// a loop-invariant value.
#pragma once
#include "harness.cuh"
#include <cuda_pipeline.h>

// ---------------------------------------------------------------- load-imbalance (block order)
// Block b does (b + 1) units of FMA work, one 1024-thread block per SM (the shared memory both launch
// with allows no second). The slow launch numbers the blocks lightest first, so the heaviest start
// last and a few SMs run them alone at the end; the fast one heaviest first (block b does the work
// of block B - 1 - b), so the light ones fill in behind. Same blocks, same results.
constexpr int kOrderThreads = 1024, kOrderUnit = 64, kOrderSmem = 160 * 1024;
template <bool kHeaviestFirst>
__device__ __forceinline__ void ordered_block(const float* __restrict__ in, float* __restrict__ out) {
    int b = kHeaviestFirst ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    size_t i = (size_t)b * kOrderThreads + threadIdx.x;
    float x = in[i];
    for (int u = 0; u <= b; ++u) {
#pragma unroll 16
        for (int k = 0; k < kOrderUnit; ++k) x = fmaf(x, 0.9999f, 0.0001f);
    }
    out[i] = x;
}
extern "C" __global__ void __launch_bounds__(kOrderThreads) block_order_slow(const float* __restrict__ in, float* __restrict__ out) {
    ordered_block<false>(in, out);
}
extern "C" __global__ void __launch_bounds__(kOrderThreads) block_order_fast(const float* __restrict__ in, float* __restrict__ out) {
    ordered_block<true>(in, out);
}

// ---------------------------------------------------------------- barrier-skew (a late warp in turn)
// 8 warps, 64 rounds of FMA work, a __syncthreads() after each round, 8 blocks per SM. Every warp does
// the same 120 units: 8 rounds of 8 units and 56 of 1. In the slow kernel warp w takes its heavy rounds
// at w, w + 8, ...: in every round one warp is 8x late at the barrier while the other seven wait; in the
// fast one all warps take their heavy rounds together (rounds 0-7), so each round's warps arrive together.
constexpr int kSkewRounds = 64, kSkewUnit = 32;
__device__ __forceinline__ float skew_units(float x, int units) {
    for (int u = 0; u < units; ++u) {
#pragma unroll
        for (int k = 0; k < kSkewUnit; ++k) x = fmaf(x, 0.9999f, 0.0001f);
    }
    return x;
}
extern "C" __global__ void rotating_skew_slow(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int warp = threadIdx.x / 32;
    float x = in[i];
    for (int r = 0; r < kSkewRounds; ++r) {
        x = skew_units(x, (r % 8 == warp) ? 8 : 1);   // warp w is the late one in rounds w, w + 8, ...
        __syncthreads();
    }
    out[i] = x;
}
extern "C" __global__ void rotating_skew_fast(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i];
    // The same 120 units per warp: 8 rounds of 8 units for every warp at once, then 56 of 1.
    for (int r = 0; r < kSkewRounds; ++r) {
        x = skew_units(x, r < 8 ? 8 : 1);
        __syncthreads();
    }
    out[i] = x;
}

// ---------------------------------------------------------------- exposed-latency (a tile loop without prefetch)
// Each block walks 64 tiles of 256 floats: copy a tile to shared memory (cp.async), then 512 FMA steps
// per element on it. One 256-thread block per SM (shared memory caps both). The slow kernel waits for
// each tile right after asking for it; the fast one asks for tile t + 1 before computing tile t (two
// buffers), so the copy runs under the arithmetic. Same FMAs in the same order.
constexpr int kTiles = 64, kTileSteps = 512, kPrefetchSmem = 160 * 1024;
template <bool kPrefetch>
__device__ __forceinline__ void tile_loop(const float* __restrict__ in, float* __restrict__ out) {
    __shared__ float buf[2][kThreads];
    const float* base = in + (size_t)blockIdx.x * kTiles * kThreads;
    int t = threadIdx.x;
    float acc = 0.f;
    if (kPrefetch) {
        __pipeline_memcpy_async(&buf[0][t], &base[t], sizeof(float));
        __pipeline_commit();
    }
    for (int tile = 0; tile < kTiles; ++tile) {
        int cur = kPrefetch ? tile & 1 : 0;
        if (kPrefetch) {
            if (tile + 1 < kTiles) __pipeline_memcpy_async(&buf[cur ^ 1][t], &base[(size_t)(tile + 1) * kThreads + t], sizeof(float));
            __pipeline_commit();
            __pipeline_wait_prior(1);
        } else {
            __pipeline_memcpy_async(&buf[0][t], &base[(size_t)tile * kThreads + t], sizeof(float));
            __pipeline_commit();
            __pipeline_wait_prior(0);
        }
        __syncthreads();
        float x = buf[cur][(t + tile) % kThreads];
#pragma unroll 16
        for (int k = 0; k < kTileSteps; ++k) x = fmaf(x, 0.999f, 0.001f);
        acc += x;
        __syncthreads();
    }
    out[(size_t)blockIdx.x * kThreads + t] = acc;
}
extern "C" __global__ void tile_prefetch_slow(const float* __restrict__ in, float* __restrict__ out) { tile_loop<false>(in, out); }
extern "C" __global__ void tile_prefetch_fast(const float* __restrict__ in, float* __restrict__ out) { tile_loop<true>(in, out); }

// ---------------------------------------------------------------- special-math (a loop-invariant division)
// s = sum over 64 k of (x + k) / y, y per thread. The slow kernel divides in the loop (an IEEE
// division each time: MUFU.RCP and its refinement); the fast one takes 1 / y once and multiplies.
constexpr int kDivTerms = 64;
extern "C" __global__ void loop_division_slow(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float xi = x[i], yi = y[i], s = 0.f;
#pragma unroll 16
    for (int k = 0; k < kDivTerms; ++k) s += (xi + k) / yi;
    out[i] = s;
}
extern "C" __global__ void loop_division_fast(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float xi = x[i], r = 1.0f / y[i], s = 0.f;
#pragma unroll 16
    for (int k = 0; k < kDivTerms; ++k) s += (xi + k) * r;
    out[i] = s;
}

// ---------------------------------------------------------------- the pairs
static void add_set5_pairs(std::vector<Pair>& pairs) {
    auto none = [] {};
    {   // blocks of growing work, lightest or heaviest first
        int blocks = g_sms * 2;
        size_t n = (size_t)blocks * kOrderThreads;
        float *in = random_floats(n, 81, 0, 1), *a = dev<float>(n), *b = dev<float>(n);
        CHECK(cudaFuncSetAttribute(block_order_slow, cudaFuncAttributeMaxDynamicSharedMemorySize, kOrderSmem));
        CHECK(cudaFuncSetAttribute(block_order_fast, cudaFuncAttributeMaxDynamicSharedMemorySize, kOrderSmem));
        pairs.push_back({"block_order", none,
            [=] { block_order_slow<<<blocks, kOrderThreads, kOrderSmem>>>(in, a); },
            [=] { block_order_fast<<<blocks, kOrderThreads, kOrderSmem>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // a late warp in turn
        size_t n = (size_t)g_sms * 8 * kThreads;
        float *in = random_floats(n, 82, 0, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"rotating_skew", none,
            [=] { rotating_skew_slow<<<n / kThreads, kThreads>>>(in, a); },
            [=] { rotating_skew_fast<<<n / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // a tile loop without prefetch
        int blocks = g_sms * 4;
        size_t n = (size_t)blocks * kTiles * kThreads;
        float *in = random_floats(n, 84, -1, 1), *a = dev<float>((size_t)blocks * kThreads), *b = dev<float>((size_t)blocks * kThreads);
        CHECK(cudaFuncSetAttribute(tile_prefetch_slow, cudaFuncAttributeMaxDynamicSharedMemorySize, kPrefetchSmem));
        CHECK(cudaFuncSetAttribute(tile_prefetch_fast, cudaFuncAttributeMaxDynamicSharedMemorySize, kPrefetchSmem));
        pairs.push_back({"tile_prefetch", none,
            [=] { tile_prefetch_slow<<<blocks, kThreads, kPrefetchSmem>>>(in, a); },
            [=] { tile_prefetch_fast<<<blocks, kThreads, kPrefetchSmem>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, (size_t)blocks * kThreads, 0, w); }});
    }
    {   // a loop-invariant division
        size_t n = (size_t)8 << 20;
        float *x = random_floats(n, 85, -1, 1), *y = random_floats(n, 86, 0.5f, 2), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"loop_division", none,
            [=] { loop_division_slow<<<n / kThreads, kThreads>>>(x, y, a); },
            [=] { loop_division_fast<<<n / kThreads, kThreads>>>(x, y, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 1e-5, w); }});
    }
}
