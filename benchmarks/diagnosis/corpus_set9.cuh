// The ninth set of planted pairs of corpus.cu, held out like sets 3-8: written, labelled and
// committed before its first GPU run and before any rule changed for it. Four causes in code shapes
// the other sets lack (pointers that may alias, so every load waits for the store before it; a
// fast-math power for a square; an interpreter whose lanes take different cases; a mask read as floats where bytes
// do) and one pair that should take the same time (precise expf against __expf in a DRAM-bound map).
#pragma once
#include <algorithm>
#include <vector>
#include "harness.cuh"

// ---------------------------------------------------------------- exposed-latency (aliasing pointers)
// Each thread accumulates 16 rows of a column into a running prefix it stores after every row
// (out[r][col] = sum of in[0..r][col]). Without __restrict__ the compiler must assume a store to out
// may change in, so it cannot load row r + 1 before storing row r: one load in flight per thread,
// each waiting out the full latency. With __restrict__ it issues the 16 loads together. Same loads,
// same stores, same sums.
constexpr int kPrefixRows = 16;
extern "C" __global__ void alias_prefix_slow(const float* in, float* out, int width) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.f;
#pragma unroll
    for (int r = 0; r < kPrefixRows; ++r) {
        s += in[(size_t)r * width + col];
        out[(size_t)r * width + col] = s;
    }
}
extern "C" __global__ void alias_prefix_fast(const float* __restrict__ in, float* __restrict__ out, int width) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.f;
#pragma unroll
    for (int r = 0; r < kPrefixRows; ++r) {
        s += in[(size_t)r * width + col];
        out[(size_t)r * width + col] = s;
    }
}

// ---------------------------------------------------------------- special-math (a power for a square)
// The energy of 16 scaled copies of each element, the squares taken as __powf(|y|, 2.0f), which is
// what powf(y, 2.0f) compiles to under --use_fast_math (MUFU.LG2, a multiply, MUFU.EX2), against
// y * y. One load and one store per element on both sides.
constexpr int kEnergyTaps = 16;
extern "C" __global__ void pow_square_slow(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i], e = 0.f;
#pragma unroll
    for (int k = 0; k < kEnergyTaps; ++k) e += __powf(fabsf(x * (1.0f + 0.0625f * k) - 0.5f), 2.0f);
    out[i] = e;
}
extern "C" __global__ void pow_square_fast(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i], e = 0.f;
#pragma unroll
    for (int k = 0; k < kEnergyTaps; ++k) {
        float y = x * (1.0f + 0.0625f * k) - 0.5f;
        e += y * y;
    }
    out[i] = e;
}

// ---------------------------------------------------------------- divergence (an interpreter)
// Each element carries an opcode (0-7) that picks one of eight 64-step update rules of the same
// cost. The slow kernel runs the elements in their given order (a warp's lanes hold different
// opcodes, so it runs up to eight cases one after another); the fast one runs them sorted by opcode
// (host-side, inputs permuted alike), so a warp's lanes take one case. The check compares each
// element's result through the permutation.
__device__ __forceinline__ float interpret(int op, float x) {
    switch (op) {
        case 0: for (int k = 0; k < 64; ++k) x = fmaf(x, 0.991f, 0.011f); break;
        case 1: for (int k = 0; k < 64; ++k) x = fmaf(x, 0.992f, 0.012f); break;
        case 2: for (int k = 0; k < 64; ++k) x = fmaf(x, 0.993f, 0.013f); break;
        case 3: for (int k = 0; k < 64; ++k) x = fmaf(x, 0.994f, 0.014f); break;
        case 4: for (int k = 0; k < 64; ++k) x = fmaf(x, 0.995f, 0.015f); break;
        case 5: for (int k = 0; k < 64; ++k) x = fmaf(x, 0.996f, 0.016f); break;
        case 6: for (int k = 0; k < 64; ++k) x = fmaf(x, 0.997f, 0.017f); break;
        default: for (int k = 0; k < 64; ++k) x = fmaf(x, 0.998f, 0.018f); break;
    }
    return x;
}
extern "C" __global__ void interpreter_slow(const int* __restrict__ ops, const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = interpret(ops[i], in[i]);
}
extern "C" __global__ void interpreter_fast(const int* __restrict__ ops, const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = interpret(ops[i], in[i]);
}

// ---------------------------------------------------------------- dram-traffic (a mask as floats)
// out = in where the mask is set, else 0, over 64 M elements (float4 per thread). The slow kernel
// reads the mask as 0.0f / 1.0f floats (16 bytes per four elements), the fast one as bytes (4 bytes
// per four elements): 768 MB against 576 MB moved for the same result.
extern "C" __global__ void float_mask_slow(const float4* __restrict__ in, const float4* __restrict__ mask, float4* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float4 x = in[i], m = mask[i];
    out[i] = make_float4(m.x != 0.f ? x.x : 0.f, m.y != 0.f ? x.y : 0.f, m.z != 0.f ? x.z : 0.f, m.w != 0.f ? x.w : 0.f);
}
extern "C" __global__ void float_mask_fast(const float4* __restrict__ in, const uchar4* __restrict__ mask, float4* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float4 x = in[i];
    uchar4 m = mask[i];
    out[i] = make_float4(m.x ? x.x : 0.f, m.y ? x.y : 0.f, m.z ? x.z : 0.f, m.w ? x.w : 0.f);
}
__global__ void fill_masks(float* as_float, unsigned char* as_byte, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u;
        h ^= h >> 15;
        bool on = (h & 3u) != 0;
        as_float[i] = on ? 1.f : 0.f;
        as_byte[i] = on;
    }
}

// ---------------------------------------------------------------- none: precise expf under a DRAM stream
// out = exp(in) over 128 MB of float4. The slow kernel calls expf (a range reduction, ex2.approx and
// a correction: several instructions more per value), the fast one __expf (one MUFU.EX2 and a
// multiply). Both wait on DRAM; planted as taking the same time. Results agree to a few ulps.
extern "C" __global__ void same_expf_slow(const float4* __restrict__ in, float4* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float4 x = in[i];
    out[i] = make_float4(expf(x.x), expf(x.y), expf(x.z), expf(x.w));
}
extern "C" __global__ void same_expf_fast(const float4* __restrict__ in, float4* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float4 x = in[i];
    out[i] = make_float4(__expf(x.x), __expf(x.y), __expf(x.z), __expf(x.w));
}

// ---------------------------------------------------------------- the pairs
static void add_set9_pairs(std::vector<Pair>& pairs) {
    auto none = [] {};
    {   // aliasing pointers: every load waits for the store before it
        int width = 1 << 20;
        size_t n = (size_t)width * kPrefixRows;
        float *in = random_floats(n, 121, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"alias_prefix", none,
            [=] { alias_prefix_slow<<<width / kThreads, kThreads>>>(in, a, width); },
            [=] { alias_prefix_fast<<<width / kThreads, kThreads>>>(in, b, width); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // a power for a square
        size_t n = (size_t)16 << 20;
        float *in = random_floats(n, 122, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"pow_square", none,
            [=] { pow_square_slow<<<n / kThreads, kThreads>>>(in, a); },
            [=] { pow_square_fast<<<n / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 1e-3, w); }});
    }
    {   // an interpreter whose lanes take different cases
        size_t n = (size_t)8 << 20;
        std::vector<int> ops(n);
        std::vector<float> vals(n);
        unsigned h = 4242u;
        for (size_t i = 0; i < n; ++i) {
            h = h * 1664525u + 1013904223u; ops[i] = (int)(h >> 29);
            h = h * 1664525u + 1013904223u; vals[i] = (h >> 8) * (1.0f / 16777216.0f);
        }
        std::vector<size_t> order(n);
        for (size_t i = 0; i < n; ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return ops[x] < ops[y]; });
        std::vector<int> sorted_ops(n);
        std::vector<float> sorted_vals(n);
        for (size_t j = 0; j < n; ++j) { sorted_ops[j] = ops[order[j]]; sorted_vals[j] = vals[order[j]]; }
        int *o_rand = dev<int>(n), *o_sorted = dev<int>(n);
        float *v_rand = dev<float>(n), *v_sorted = dev<float>(n), *a = dev<float>(n), *b = dev<float>(n);
        CHECK(cudaMemcpy(o_rand, ops.data(), n * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(v_rand, vals.data(), n * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(o_sorted, sorted_ops.data(), n * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(v_sorted, sorted_vals.data(), n * 4, cudaMemcpyHostToDevice));
        pairs.push_back({"interpreter", none,
            [=] { interpreter_slow<<<n / kThreads, kThreads>>>(o_rand, v_rand, a); },
            [=] { interpreter_fast<<<n / kThreads, kThreads>>>(o_sorted, v_sorted, b); },
            [=](std::string& w) { return compare_through_permutation(a, b, order, w); }});
    }
    {   // a mask read as floats
        size_t n = (size_t)64 << 20, n4 = n / 4;
        float4* in = (float4*)random_floats(n, 123, -1, 1);
        float* mask_f = dev<float>(n);
        unsigned char* mask_b = dev<unsigned char>(n);
        fill_masks<<<g_sms * 8, kThreads>>>(mask_f, mask_b, n);
        CHECK(cudaGetLastError());
        float4 *a = dev<float4>(n4), *b = dev<float4>(n4);
        pairs.push_back({"float_mask", none,
            [=] { float_mask_slow<<<n4 / kThreads, kThreads>>>(in, (const float4*)mask_f, a); },
            [=] { float_mask_fast<<<n4 / kThreads, kThreads>>>(in, (const uchar4*)mask_b, b); },
            [=](std::string& w) { return compare_floats((float*)a, (float*)b, n, 0, w); }});
    }
    {   // precise expf under a DRAM stream (the same time)
        size_t n = (size_t)32 << 20, n4 = n / 4;
        float4* in = (float4*)random_floats(n, 124, -4, 4);
        float4 *a = dev<float4>(n4), *b = dev<float4>(n4);
        pairs.push_back({"same_expf", none,
            [=] { same_expf_slow<<<n4 / kThreads, kThreads>>>(in, a); },
            [=] { same_expf_fast<<<n4 / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats((float*)a, (float*)b, n, 1e-5, w); }});
    }
}
