// The eighth set of planted pairs of corpus.cu, held out like sets 3-7: written, labelled and
// committed before its first GPU run and before any rule changed for it. Five causes in code shapes
// the other sets lack (an integer hash recurrence at one warp per scheduler, a 1-D stencil read from
// global memory, a 2-D launch with one-warp blocks, a complex multiply-add written with
// round-to-nearest intrinsics, one specialised copy of a loop per block variant) and one pair that
// should take the same time (a memory-bound stream whose slow side adds index division).
#pragma once
#include <utility>
#include "harness.cuh"

// ---------------------------------------------------------------- dependent-arithmetic (an integer recurrence)
// Four xorshift-multiply streams per thread, 4096 steps each, one warp per scheduler (128 threads
// per SM). The slow kernel runs the streams one after another, so every step waits for the one
// before it (IMAD then SHF and LOP3 on one value); the fast one advances the four streams together.
// Same steps, same result (the XOR of the four final states).
constexpr int kHashSteps = 4096, kHashStreams = 4;
__device__ __forceinline__ unsigned hash_step(unsigned s) { s = s * 1664525u + 1013904223u; return s ^ (s >> 13); }
__device__ __forceinline__ unsigned hash_seed(size_t i, int c) { return (unsigned)i * 2654435761u + (unsigned)c * 40503u + 1u; }
extern "C" __global__ void hash_chain_slow(unsigned* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned result = 0;
#pragma unroll 1
    for (int c = 0; c < kHashStreams; ++c) {
        unsigned s = hash_seed(i, c);
#pragma unroll 8
        for (int k = 0; k < kHashSteps; ++k) s = hash_step(s);
        result ^= s;
    }
    out[i] = result;
}
extern "C" __global__ void hash_chain_fast(unsigned* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned s[kHashStreams];
#pragma unroll
    for (int c = 0; c < kHashStreams; ++c) s[c] = hash_seed(i, c);
#pragma unroll 8
    for (int k = 0; k < kHashSteps; ++k) {
#pragma unroll
        for (int c = 0; c < kHashStreams; ++c) s[c] = hash_step(s[c]);
    }
    out[i] = s[0] ^ s[1] ^ s[2] ^ s[3];
}

// ---------------------------------------------------------------- no-data-reuse (a stencil from global memory)
// out[i] = the sum of in[i .. i + 32] (a 33-point box filter over a padded row), summed in the same
// order by both kernels. The slow kernel reads the 33 values of every output from global memory
// (each value is loaded by 33 threads, served by L1, and 31 of the 33 warp requests straddle two
// cache lines); the fast one stages the block's 256 + 32 values in shared memory once and reads them
// there.
constexpr int kStencilRadius = 16, kStencilTaps = 2 * kStencilRadius + 1;
extern "C" __global__ void stencil_global_slow(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < kStencilTaps; ++k) s += in[i + k];
    out[i] = s;
}
extern "C" __global__ void stencil_global_fast(const float* __restrict__ in, float* __restrict__ out) {
    __shared__ float window[kThreads + kStencilTaps - 1];
    size_t base = (size_t)blockIdx.x * blockDim.x;
    window[threadIdx.x] = in[base + threadIdx.x];
    if (threadIdx.x < kStencilTaps - 1) window[kThreads + threadIdx.x] = in[base + kThreads + threadIdx.x];
    __syncthreads();
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < kStencilTaps; ++k) s += window[threadIdx.x + k];
    out[base + threadIdx.x] = s;
}

// ---------------------------------------------------------------- occupancy-block-size (2-D blocks of one warp)
// A 4096 x 4096 fp32 image, out = in * 1.5 - 0.25 at (x, y), one load in flight per warp. The same
// kernel is launched with 16 x 2 blocks (one warp: an SM holds 32 blocks, so 32 of its 64 warp slots)
// or 32 x 8 blocks. Each warp's two 64-byte row pieces use every sector they touch.
__device__ __forceinline__ void image_element(const float* __restrict__ in, float* __restrict__ out, int width) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    size_t i = (size_t)y * width + x;
    out[i] = stream_op(in[i]);
}
extern "C" __global__ void tiny_blocks_2d_slow(const float* __restrict__ in, float* __restrict__ out, int width) { image_element(in, out, width); }
extern "C" __global__ void tiny_blocks_2d_fast(const float* __restrict__ in, float* __restrict__ out, int width) { image_element(in, out, width); }

// ---------------------------------------------------------------- unfused-fp32 (a complex multiply-add)
// 512 steps of z = z * w + c on complex floats (|w| < 1, a damped rotation). The slow kernel writes
// the products and sums with __fmul_rn / __fadd_rn / __fsub_rn, which the compiler may not contract:
// 4 FMUL and 4 FADD per step; the fast one uses fmaf: 4 FFMA per step. Same math, rounded differently.
constexpr int kComplexSteps = 512;
extern "C" __global__ void complex_mac_slow(const float2* __restrict__ in, float2* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float2 z = in[i];
    const float wr = 0.70f, wi = 0.69f, cr = 0.01f, ci = -0.02f;
#pragma unroll 8
    for (int k = 0; k < kComplexSteps; ++k) {
        float re = __fadd_rn(__fsub_rn(__fmul_rn(z.x, wr), __fmul_rn(z.y, wi)), cr);
        float im = __fadd_rn(__fadd_rn(__fmul_rn(z.x, wi), __fmul_rn(z.y, wr)), ci);
        z = make_float2(re, im);
    }
    out[i] = z;
}
extern "C" __global__ void complex_mac_fast(const float2* __restrict__ in, float2* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float2 z = in[i];
    const float wr = 0.70f, wi = 0.69f, cr = 0.01f, ci = -0.02f;
#pragma unroll 8
    for (int k = 0; k < kComplexSteps; ++k) {
        float re = fmaf(z.x, wr, fmaf(-z.y, wi, cr));
        float im = fmaf(z.x, wi, fmaf(z.y, wr, ci));
        z = make_float2(re, im);
    }
    out[i] = z;
}

// ---------------------------------------------------------------- instruction-cache-misses (a copy per variant)
// Each block applies 8 rounds of a 1024-step FFMA chain whose multipliers depend on the block's
// variant (blockIdx.x % 32). The slow kernel specialises the chain per variant (a template
// instantiated 32 times, its multipliers folded into the instructions: 32 copies of 16 KB), so the
// blocks resident on one SM run different copies; the fast one keeps one copy and reads the
// variant's 64 multipliers from registers. Same FFMAs in the same order with the same multipliers.
constexpr int kVariants = 32, kVariantSteps = 1024, kVariantCycle = 64, kVariantRounds = 8;
__device__ __forceinline__ constexpr float variant_multiplier(int v, int k) {
    return 0.9990f + (float)v * 1.0e-6f + (float)(k % kVariantCycle) * 1.0e-5f;
}
template <int V>
__device__ __noinline__ float variant_rounds(float x) {
#pragma unroll 1
    for (int r = 0; r < kVariantRounds; ++r) {
#pragma unroll
        for (int k = 0; k < kVariantSteps; ++k) x = fmaf(x, variant_multiplier(V, k), 1.0e-4f);
    }
    return x;
}
template <int V0, int... Rest>
__device__ __forceinline__ float dispatch_from(int v, float x) {
    if (v == V0) return variant_rounds<V0>(x);
    if constexpr (sizeof...(Rest) > 0) return dispatch_from<Rest...>(v, x);
    return x;
}
template <int... V>
__device__ __forceinline__ float dispatch_all(int v, float x, std::integer_sequence<int, V...>) { return dispatch_from<V...>(v, x); }
extern "C" __global__ void variant_bloat_slow(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = dispatch_all(blockIdx.x % kVariants, in[i], std::make_integer_sequence<int, kVariants>{});
}
extern "C" __global__ void variant_bloat_fast(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int v = blockIdx.x % kVariants;
    float m[kVariantCycle];
#pragma unroll
    for (int k = 0; k < kVariantCycle; ++k) m[k] = 0.9990f + (float)v * 1.0e-6f + (float)k * 1.0e-5f;
    float x = in[i];
#pragma unroll 1
    for (int r = 0; r < kVariantRounds * kVariantSteps / kVariantCycle; ++r) {
#pragma unroll
        for (int k = 0; k < kVariantCycle; ++k) x = fmaf(x, m[k], 1.0e-4f);
    }
    out[i] = x;
}

// ---------------------------------------------------------------- none: index division under a memory-bound stream
// A row-major 8192 x 4095 fp32 matrix (an odd width, so no shift does), out = in * 1.5 - 0.25. The
// slow kernel recovers (row, column) from the flat index by division and modulo by the run-time
// width and rebuilds the address from them (about 20 more integer instructions per element); the
// fast one uses the flat index. Both wait on DRAM, where the extra instructions hide: planted as
// taking the same time.
extern "C" __global__ void same_index_div_slow(const float* __restrict__ in, float* __restrict__ out, int width, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned row = (unsigned)i / (unsigned)width, col = (unsigned)i % (unsigned)width;
    size_t at = (size_t)row * width + col;
    out[at] = stream_op(in[at]);
}
extern "C" __global__ void same_index_div_fast(const float* __restrict__ in, float* __restrict__ out, int width, size_t n) {
    (void)width;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = stream_op(in[i]);
}

// ---------------------------------------------------------------- the pairs
static void add_set8_pairs(std::vector<Pair>& pairs) {
    auto none = [] {};
    {   // an integer recurrence at one warp per scheduler
        size_t threads = (size_t)g_sms * 128;
        unsigned *a = dev<unsigned>(threads), *b = dev<unsigned>(threads);
        pairs.push_back({"hash_chain", none,
            [=] { hash_chain_slow<<<g_sms, 128>>>(a); },
            [=] { hash_chain_fast<<<g_sms, 128>>>(b); },
            [=](std::string& w) { return compare_bytes(a, b, threads * 4, w); }});
    }
    {   // a stencil read from global memory
        size_t n = (size_t)16 << 20;
        float *in = random_floats(n + kStencilTaps - 1, 111, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"stencil_global", none,
            [=] { stencil_global_slow<<<n / kThreads, kThreads>>>(in, a); },
            [=] { stencil_global_fast<<<n / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // 2-D blocks of one warp
        int width = 4096, height = 4096;
        size_t n = (size_t)width * height;
        float *in = random_floats(n, 112, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"tiny_blocks_2d", none,
            [=] { tiny_blocks_2d_slow<<<dim3(width / 16, height / 2), dim3(16, 2)>>>(in, a, width); },
            [=] { tiny_blocks_2d_fast<<<dim3(width / 32, height / 8), dim3(32, 8)>>>(in, b, width); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // a complex multiply-add unfused
        size_t n = (size_t)4 << 20;
        float2* in = (float2*)random_floats(n * 2, 113, -1, 1);
        float2 *a = dev<float2>(n), *b = dev<float2>(n);
        pairs.push_back({"complex_mac", none,
            [=] { complex_mac_slow<<<n / kThreads, kThreads>>>(in, a); },
            [=] { complex_mac_fast<<<n / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats((float*)a, (float*)b, n * 2, 1e-3, w); }});
    }
    {   // one specialised copy per block variant
        size_t n = (size_t)g_sms * 8 * kThreads * 4;
        float *in = random_floats(n, 114, 0, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"variant_bloat", none,
            [=] { variant_bloat_slow<<<n / kThreads, kThreads>>>(in, a); },
            [=] { variant_bloat_fast<<<n / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 1e-5, w); }});
    }
    {   // index division under a memory-bound stream (the same time)
        int width = 4095, height = 8192;
        size_t n = (size_t)width * height;
        float *in = random_floats(n, 115, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        unsigned blocks = (unsigned)((n + kThreads - 1) / kThreads);
        pairs.push_back({"same_index_div", none,
            [=] { same_index_div_slow<<<blocks, kThreads>>>(in, a, width, n); },
            [=] { same_index_div_fast<<<blocks, kThreads>>>(in, b, width, n); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
}
