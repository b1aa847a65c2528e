// The seventh set of planted pairs of corpus.cu, held out like sets 3-6: written, labelled and
// committed before its first GPU run and before any rule changed for it. Three causes in code shapes
// the other sets lack: an oversized static shared array, a fence after every store of a publishing
// thread, and a lookup table in constant memory indexed per lane.
#pragma once
#include "harness.cuh"

// ---------------------------------------------------------------- occupancy-shared-memory (a static array)
// A stream with one load in flight per warp (its rate follows the resident warps). Each block stages
// its 256 values in a static shared array and reads a neighbour's; the slow kernel declares the array
// with 12,288 floats (48 KB, of which it uses 256), so 4 blocks fit an SM; the fast one declares 256.
template <int kWords>
__device__ __forceinline__ void neighbour_stream(const float* __restrict__ in, float* __restrict__ out) {
    __shared__ float staged[kWords];
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    staged[threadIdx.x] = in[i];
    __syncthreads();
    out[i] = staged[(threadIdx.x + 1) % kThreads] * 1.5f - staged[threadIdx.x];
}
extern "C" __global__ void static_smem_slow(const float* __restrict__ in, float* __restrict__ out) { neighbour_stream<12288>(in, out); }
extern "C" __global__ void static_smem_fast(const float* __restrict__ in, float* __restrict__ out) { neighbour_stream<kThreads>(in, out); }

// ---------------------------------------------------------------- memory-fences (a fence per store)
// Each thread writes 8 results and then raises a per-block flag for a consumer. The slow kernel puts
// __threadfence() after every one of the 8 stores; the fast one once, before the flag (all that the
// flag's readers need). Same stores, same flag.
constexpr int kPublished = 8;
template <bool kFenceEach>
__device__ __forceinline__ void publish(const float* __restrict__ in, float* __restrict__ out, unsigned* flags, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i];
#pragma unroll
    for (int k = 0; k < kPublished; ++k) {
        out[k * n + i] = x * (k + 1);
        if (kFenceEach) __threadfence();
    }
    if (!kFenceEach) __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(&flags[blockIdx.x], 1u);
}
extern "C" __global__ void fence_each_slow(const float* __restrict__ in, float* __restrict__ out, unsigned* flags, size_t n) { publish<true>(in, out, flags, n); }
extern "C" __global__ void fence_each_fast(const float* __restrict__ in, float* __restrict__ out, unsigned* flags, size_t n) { publish<false>(in, out, flags, n); }

// ---------------------------------------------------------------- constant-cache-serialization (a per-lane table)
// A piecewise-cubic map: each value picks one of 64 segments and evaluates its 4 coefficients. The
// slow kernel reads the coefficients from __constant__ memory, which serves a warp's different
// addresses one after another; the fast one from a copy in shared memory.
constexpr int kSegments64 = 64;
__constant__ float c_cubic[kSegments64 * 4];
__device__ __forceinline__ int segment_of(float x) { return min(kSegments64 - 1, max(0, (int)(x * kSegments64))); }
extern "C" __global__ void cubic_lut_slow(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i];
    int s = segment_of(x);
    out[i] = ((c_cubic[4 * s + 3] * x + c_cubic[4 * s + 2]) * x + c_cubic[4 * s + 1]) * x + c_cubic[4 * s];
}
extern "C" __global__ void cubic_lut_fast(const float* __restrict__ table, const float* __restrict__ in, float* __restrict__ out) {
    __shared__ float cubic[kSegments64 * 4];
    cubic[threadIdx.x] = table[threadIdx.x];  // 256 threads, 256 coefficients
    __syncthreads();
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i];
    int s = segment_of(x);
    out[i] = ((cubic[4 * s + 3] * x + cubic[4 * s + 2]) * x + cubic[4 * s + 1]) * x + cubic[4 * s];
}

// ---------------------------------------------------------------- the pairs
static void add_set7_pairs(std::vector<Pair>& pairs) {
    auto none = [] {};
    {   // an oversized static shared array
        size_t n = (size_t)16 << 20;
        float *in = random_floats(n, 101, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"static_smem", none,
            [=] { static_smem_slow<<<n / kThreads, kThreads>>>(in, a); },
            [=] { static_smem_fast<<<n / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // a fence per store
        size_t n = (size_t)4 << 20;
        size_t blocks = n / kThreads;
        float *in = random_floats(n, 102, -1, 1), *a = dev<float>(n * kPublished), *b = dev<float>(n * kPublished);
        unsigned *fa = dev<unsigned>(blocks), *fb = dev<unsigned>(blocks);
        pairs.push_back({"fence_each",
            [=] { CHECK(cudaMemset(fa, 0, blocks * 4)); CHECK(cudaMemset(fb, 0, blocks * 4)); },
            [=] { fence_each_slow<<<blocks, kThreads>>>(in, a, fa, n); },
            [=] { fence_each_fast<<<blocks, kThreads>>>(in, b, fb, n); },
            [=](std::string& w) { return compare_floats(a, b, n * kPublished, 0, w) && compare_bytes(fa, fb, blocks * 4, w); }});
    }
    {   // a per-lane table in constant memory
        size_t n = (size_t)16 << 20;
        float *table = random_floats(kSegments64 * 4, 103, -1, 1), *in = random_floats(n, 104, 0, 1);
        float *a = dev<float>(n), *b = dev<float>(n);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpyToSymbol(c_cubic, table, kSegments64 * 4 * sizeof(float), 0, cudaMemcpyDeviceToDevice));
        pairs.push_back({"cubic_lut", none,
            [=] { cubic_lut_slow<<<n / kThreads, kThreads>>>(in, a); },
            [=] { cubic_lut_fast<<<n / kThreads, kThreads>>>(table, in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
}
