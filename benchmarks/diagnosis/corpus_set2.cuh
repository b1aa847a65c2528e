// The second set of planted pairs of corpus.cu, recorded after the first into a report of their
// own (reports/planted-set2.json.xz; benchmarks/diagnosis/README.md). One cause each, as in
// corpus.cu: the slow kernel differs from its fast twin only by the defect.
// tests/test_diagnosis_corpus_sass.py compiles them for sm_90a and checks each slow kernel's SASS
// holds the defect's instructions (DFMA and F2F, extra BAR, MEMBAR, code size, LDC), or for the two
// load-imbalance pairs that they differ only in index math (which rows a block or warp takes), for
// the shared-atomics pair that only its slow kernel adds to shared memory in its element loop, for
// the data-reuse pair that only its fast kernel stages tiles in shared memory.
#pragma once
#include "harness.cuh"

// ---------------------------------------------------------------- fp64
// 256 steps of x = x * a + b on a float. The slow kernel writes the constants as double literals
// (0.999, as C++ reads them), so every step widens x (F2F.F64.F32), runs a DFMA on the fp64 pipe
// and narrows the result (F2F.F32.F64); the fast one keeps them float (0.999f: one FFMA).
constexpr int kFp64Iters = 256;
template <class Literal>
__device__ __forceinline__ float affine_chain(float x) {
#pragma unroll 16
    for (int k = 0; k < kFp64Iters; ++k) x = x * Literal(0.999) + Literal(0.001);
    return x;
}
extern "C" __global__ void fp64_fast(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = affine_chain<float>(in[i]);
}
extern "C" __global__ void fp64_slow(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = affine_chain<double>(in[i]);
}

// ---------------------------------------------------------------- excess-synchronization
// A 16-tap box filter over tiles staged in shared memory, grid-stride over the tiles. Both kernels
// need the two barriers around each tile; the slow one also waits at a __syncthreads() after each
// tap (the taps only read shared memory: nothing to wait for), 18 barriers per tile instead of 2.
constexpr int kTaps = 16;
template <bool kSyncEachTap>
__device__ __forceinline__ void box_filter(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    __shared__ float tile[kThreads + kTaps];
    int t = threadIdx.x;
    for (size_t base = (size_t)blockIdx.x * kThreads; base < n; base += (size_t)gridDim.x * kThreads) {
        tile[t] = in[base + t];
        if (t < kTaps) tile[kThreads + t] = in[base + kThreads + t];  // `in` holds n + kTaps values
        __syncthreads();
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < kTaps; ++k) {
            s += tile[t + k];
            if (kSyncEachTap) __syncthreads();
        }
        out[base + t] = s;
        __syncthreads();
    }
}
extern "C" __global__ void excess_sync_fast(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    box_filter<false>(in, out, n);
}
extern "C" __global__ void excess_sync_slow(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    box_filter<true>(in, out, n);
}

// ---------------------------------------------------------------- memory-fences
// A grid-stride scale; the slow kernel issues __threadfence() after each store (MEMBAR at GPU
// scope: the warp waits until its store is visible device-wide), which nothing reads.
template <bool kFence>
__device__ __forceinline__ void scale_stream(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = in[i] * 2.0f + 1.0f;
        if (kFence) __threadfence();
    }
}
extern "C" __global__ void memory_fences_fast(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    scale_stream<false>(in, out, n);
}
extern "C" __global__ void memory_fences_slow(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    scale_stream<true>(in, out, n);
}

// ---------------------------------------------------------------- instruction-cache-misses
// 16384 dependent FFMAs whose multiplier cycles through 64 values. The fast kernel loops over a
// body of 64 (about 1 KB of SASS); the slow one unrolls all 16384 (about 256 KB: more than the SM's
// instruction caches hold), so warps stall fetching code. Same FFMAs in the same order.
constexpr int kBloatIters = 16384, kBloatBody = 64;
__device__ constexpr float bloat_multiplier(int k) { return 0.9990f + (float)(k % kBloatBody) * 1.0e-5f; }
extern "C" __global__ void icache_fast(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i];
#pragma unroll 1
    for (int j = 0; j < kBloatIters / kBloatBody; ++j) {
#pragma unroll
        for (int k = 0; k < kBloatBody; ++k) x = fmaf(x, bloat_multiplier(k), 1.0e-4f);
    }
    out[i] = x;
}
extern "C" __global__ void icache_slow(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i];
    // nvcc unrolls one loop to at most 4096 iterations: four unrolled quarters, in order.
#pragma unroll
    for (int q = 0; q < 4; ++q) {
#pragma unroll
        for (int k = 0; k < kBloatIters / 4; ++k) x = fmaf(x, bloat_multiplier(k), 1.0e-4f);
    }
    out[i] = x;
}

// ---------------------------------------------------------------- constant-cache-serialization
// 64 lookups per thread into a 256-entry table at a per-lane index (32 different addresses per
// warp). The slow kernel keeps the table in __constant__ memory, whose cache serves one address
// per request, so each LDC is replayed per distinct address; the fast one reads the same values
// from global memory through L1 (one request per warp instruction).
constexpr int kTableSize = 256, kLookups = 64;
__constant__ float c_lookup_table[kTableSize];
__device__ __forceinline__ unsigned lookup_index(size_t i, int k) { return (unsigned)(i * 97u + k * 13u) % kTableSize; }
extern "C" __global__ void constant_cache_fast(const float* __restrict__ table, const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float s = in[i];
#pragma unroll 8
    for (int k = 0; k < kLookups; ++k) s += table[lookup_index(i, k)];
    out[i] = s;
}
extern "C" __global__ void constant_cache_slow(const float* __restrict__ table, const float* __restrict__ in, float* __restrict__ out) {
    (void)table;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float s = in[i];
#pragma unroll 8
    for (int k = 0; k < kLookups; ++k) s += c_lookup_table[lookup_index(i, k)];
    out[i] = s;
}

// ---------------------------------------------------------------- occupancy-block-size
// stream_element (harness.cuh), as the occupancy pairs of corpus.cu run it. The
// same kernel body launched with 32-thread blocks (slow) or 256-thread blocks (fast): an SM holds
// at most 32 blocks, so 1-warp blocks fill 32 of its 64 warp slots (theoretical occupancy 50%).
extern "C" __global__ void block_size_fast(const float* __restrict__ in, float* __restrict__ out) { stream_element(in, out); }
extern "C" __global__ void block_size_slow(const float* __restrict__ in, float* __restrict__ out) { stream_element(in, out); }

// ---------------------------------------------------------------- load-imbalance (over the SMs)
// Row sums of a packed lower triangle (row r holds r + 1 floats), one block per SM, a warp per row
// (lanes stride along the row, then a shuffle reduction). The slow kernel gives block b a
// contiguous range of rows, so the cost of a block grows with b and the SMs holding the last
// ones should run about twice as long as the average (not yet measured); the fast one deals rows out cyclically (block b
// takes b, b + grid, ...), the same cost per block. Same rows, same per-row code and order.
constexpr int kWarpsPerBlock = kThreads / 32;
__device__ __forceinline__ void warp_row_sum(const float* __restrict__ row, int length, float* __restrict__ out) {
    int lane = threadIdx.x % 32;
    float s = 0.f;
    for (int c = lane; c < length; c += 32) s += row[c];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) *out = s;
}
__device__ __forceinline__ void triangle_row(const float* __restrict__ packed, float* __restrict__ out, int r) {
    warp_row_sum(packed + (size_t)r * (r + 1) / 2, r + 1, out + r);
}
extern "C" __global__ void imbalance_sms_slow(const float* __restrict__ packed, float* __restrict__ out, int rows) {
    int per_block = (rows + gridDim.x - 1) / gridDim.x, warp = threadIdx.x / 32;
    int first = blockIdx.x * per_block, last = min(rows, first + per_block);
    for (int r = first + warp; r < last; r += kWarpsPerBlock) triangle_row(packed, out, r);
}
extern "C" __global__ void imbalance_sms_fast(const float* __restrict__ packed, float* __restrict__ out, int rows) {
    int warp = threadIdx.x / 32;
    for (int r = blockIdx.x + gridDim.x * warp; r < rows; r += gridDim.x * kWarpsPerBlock) triangle_row(packed, out, r);
}

// ---------------------------------------------------------------- load-imbalance (over a block's warps)
// Segments in groups of 8: seven of kShortRow floats, then one of kLongRow. Each block sums 64
// segments, each warp 8 of them. The slow kernel gives warp w the segments w, w + 8, ... of its
// block's 64, so warp 7 gets every long one (8 x kLongRow floats against 8 x kShortRow): the
// block holds its 8 warp slots until warp 7 ends, its other warps long finished. The fast one gives
// warp w the segments 8w .. 8w + 7, one long each: equal work per warp. Same segments, same code.
constexpr int kShortRow = 128, kLongRow = 1024, kGroupFloats = 7 * kShortRow + kLongRow;
__device__ __forceinline__ void skewed_segment(const float* __restrict__ data, float* __restrict__ out, int s) {
    size_t offset = (size_t)(s / 8) * kGroupFloats + (size_t)(s % 8) * kShortRow;
    warp_row_sum(data + offset, s % 8 == 7 ? kLongRow : kShortRow, out + s);
}
extern "C" __global__ void imbalance_warps_slow(const float* __restrict__ data, float* __restrict__ out) {
    int warp = threadIdx.x / 32, first = blockIdx.x * 64;
#pragma unroll 1
    for (int j = 0; j < 8; ++j) skewed_segment(data, out, first + warp + 8 * j);
}
extern "C" __global__ void imbalance_warps_fast(const float* __restrict__ data, float* __restrict__ out) {
    int warp = threadIdx.x / 32, first = blockIdx.x * 64;
#pragma unroll 1
    for (int j = 0; j < 8; ++j) skewed_segment(data, out, first + 8 * warp + j);
}

// ---------------------------------------------------------------- atomic contention in shared memory
// A per-block weighted histogram in shared memory: each float's pattern gives a bin (its low two
// bits: 4 hot bins, so the 32 lanes of a warp land on 4 words) and a weight (1 to 8), flushed to
// global memory once per block. The slow kernel issues one shared atomic add per element, so each
// ATOMS.ADD is replayed for the lanes that collide. (An add of the constant 1 would compile to
// ATOMS.POPC.INC, which merges the colliding lanes itself: hence the weights.) The fast one keeps
// each thread's four sums in registers and adds them to the shared bins once, after its loop
// (privatization). Same totals (integers, exact). A first fast kernel summed each bin over the
// warp per element (__reduce_add_sync): four REDUX and a branch per bin made it issue-bound and
// 17 % slower than the atomics (H100, ncu).
constexpr int kHistBins = 32, kHotBins = 4;
__device__ __forceinline__ unsigned hot_bin(float x) { return __float_as_uint(x) % kHotBins; }
__device__ __forceinline__ unsigned bin_weight(float x) { return 1u + (__float_as_uint(x) >> 2) % 8u; }
template <bool kPrivate>
__device__ __forceinline__ void shared_histogram(const float* __restrict__ in, unsigned* hist, size_t n) {
    __shared__ unsigned bins[kHistBins];
    for (int b = threadIdx.x; b < kHistBins; b += blockDim.x) bins[b] = 0;
    unsigned own[kHotBins] = {0u, 0u, 0u, 0u};
    __syncthreads();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float x = in[i];
        unsigned bin = hot_bin(x), weight = bin_weight(x);
        if (kPrivate) {
#pragma unroll
            for (unsigned b = 0; b < kHotBins; ++b) own[b] += bin == b ? weight : 0u;
        } else {
            atomicAdd(&bins[bin], weight);
        }
    }
    if (kPrivate) {
#pragma unroll
        for (unsigned b = 0; b < kHotBins; ++b) atomicAdd(&bins[b], own[b]);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < kHistBins; b += blockDim.x)
        if (bins[b]) atomicAdd(&hist[b], bins[b]);
}
extern "C" __global__ void shared_atomics_slow(const float* __restrict__ in, unsigned* hist, size_t n) {
    shared_histogram<false>(in, hist, n);
}
extern "C" __global__ void shared_atomics_fast(const float* __restrict__ in, unsigned* hist, size_t n) {
    shared_histogram<true>(in, hist, n);
}

// ---------------------------------------------------------------- no data reuse
// C = A B for fp32 2048 x 2048 matrices, one output per thread, 32 x 32 threads per block. The slow
// kernel loads its row of A and column of B from global memory for every product (the whole block
// re-reads the same 32 rows and columns, mostly from L1); the fast one stages 32 x 32 tiles of A
// and B in shared memory once per block and step. Both sum k in ascending order with one fmaf per
// product: bitwise-equal outputs.
constexpr int kMatTile = 32;
extern "C" __global__ void data_reuse_slow(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n) {
    int i = blockIdx.y * kMatTile + threadIdx.y, j = blockIdx.x * kMatTile + threadIdx.x;
    float acc = 0.f;
    for (int k = 0; k < n; ++k) acc = fmaf(a[(size_t)i * n + k], b[(size_t)k * n + j], acc);
    c[(size_t)i * n + j] = acc;
}
extern "C" __global__ void data_reuse_fast(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n) {
    __shared__ float a_tile[kMatTile][kMatTile], b_tile[kMatTile][kMatTile];
    int i = blockIdx.y * kMatTile + threadIdx.y, j = blockIdx.x * kMatTile + threadIdx.x;
    float acc = 0.f;
    for (int k0 = 0; k0 < n; k0 += kMatTile) {
        a_tile[threadIdx.y][threadIdx.x] = a[(size_t)i * n + k0 + threadIdx.x];
        b_tile[threadIdx.y][threadIdx.x] = b[(size_t)(k0 + threadIdx.y) * n + j];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kMatTile; ++k) acc = fmaf(a_tile[threadIdx.y][k], b_tile[k][threadIdx.x], acc);
        __syncthreads();
    }
    c[(size_t)i * n + j] = acc;
}

static void add_set2_pairs(std::vector<Pair>& pairs) {
    auto none = [] {};
    {   // fp64
        size_t n = (size_t)8 << 20;
        float *in = random_floats(n, 21, 0, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"fp64", none,
            [=] { fp64_slow<<<n / kThreads, kThreads>>>(in, a); },
            [=] { fp64_fast<<<n / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 1e-4, w); }});
    }
    {   // excess-synchronization
        size_t n = (size_t)16 << 20;
        int blocks = g_sms * 8;
        float *in = random_floats(n + kTaps, 22, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"excess_sync", none,
            [=] { excess_sync_slow<<<blocks, kThreads>>>(in, a, n); },
            [=] { excess_sync_fast<<<blocks, kThreads>>>(in, b, n); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // memory-fences
        size_t n = (size_t)16 << 20;
        int blocks = g_sms * 8;
        float *in = random_floats(n, 23, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"memory_fences", none,
            [=] { memory_fences_slow<<<blocks, kThreads>>>(in, a, n); },
            [=] { memory_fences_fast<<<blocks, kThreads>>>(in, b, n); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // instruction-cache-misses
        size_t n = (size_t)1 << 20;
        float *in = random_floats(n, 24, 0, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"icache", none,
            [=] { icache_slow<<<n / kThreads, kThreads>>>(in, a); },
            [=] { icache_fast<<<n / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // constant-cache-serialization
        size_t n = (size_t)8 << 20;
        float *table = random_floats(kTableSize, 25, -1, 1), *in = random_floats(n, 26, -1, 1);
        float *a = dev<float>(n), *b = dev<float>(n);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpyToSymbol(c_lookup_table, table, kTableSize * sizeof(float), 0, cudaMemcpyDeviceToDevice));
        pairs.push_back({"constant_cache", none,
            [=] { constant_cache_slow<<<n / kThreads, kThreads>>>(table, in, a); },
            [=] { constant_cache_fast<<<n / kThreads, kThreads>>>(table, in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // occupancy-block-size
        size_t n = (size_t)16 << 20;
        float *in = random_floats(n, 27, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"block_size", none,
            [=] { block_size_slow<<<n / 32, 32>>>(in, a); },
            [=] { block_size_fast<<<n / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // load-imbalance over the SMs
        int rows = 8192;
        size_t n = (size_t)rows * (rows + 1) / 2;
        float *in = random_floats(n, 28, -1, 1), *a = dev<float>(rows), *b = dev<float>(rows);
        pairs.push_back({"imbalance_sms", none,
            [=] { imbalance_sms_slow<<<g_sms, kThreads>>>(in, a, rows); },
            [=] { imbalance_sms_fast<<<g_sms, kThreads>>>(in, b, rows); },
            [=](std::string& w) { return compare_floats(a, b, rows, 0, w); }});
    }
    {   // load-imbalance over a block's warps
        int segments = 262144;      // 4096 blocks: about 4 waves at 8 blocks per SM
        size_t n = (size_t)(segments / 8) * kGroupFloats;
        float *in = random_floats(n, 29, -1, 1), *a = dev<float>(segments), *b = dev<float>(segments);
        pairs.push_back({"imbalance_warps", none,
            [=] { imbalance_warps_slow<<<segments / 64, kThreads>>>(in, a); },
            [=] { imbalance_warps_fast<<<segments / 64, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, segments, 0, w); }});
    }
    {   // atomic contention in shared memory
        int blocks = g_sms * 8;
        size_t n = (size_t)blocks * kThreads * 128;
        float* in = random_floats(n, 30, -1, 1);
        unsigned *a = dev<unsigned>(kHistBins), *b = dev<unsigned>(kHistBins);
        pairs.push_back({"shared_atomics",
            [=] { CHECK(cudaMemset(a, 0, kHistBins * 4)); CHECK(cudaMemset(b, 0, kHistBins * 4)); },
            [=] { shared_atomics_slow<<<blocks, kThreads>>>(in, a, n); },
            [=] { shared_atomics_fast<<<blocks, kThreads>>>(in, b, n); },
            [=](std::string& w) { return compare_bytes(a, b, kHistBins * 4, w); }});
    }
    {   // no data reuse
        int n = 2048;
        size_t nn = (size_t)n * n;
        float *a_in = random_floats(nn, 31, -1, 1), *b_in = random_floats(nn, 32, -1, 1);
        float *a = dev<float>(nn), *b = dev<float>(nn);
        dim3 grid(n / kMatTile, n / kMatTile), block(kMatTile, kMatTile);
        pairs.push_back({"data_reuse", none,
            [=] { data_reuse_slow<<<grid, block>>>(a_in, b_in, a, n); },
            [=] { data_reuse_fast<<<grid, block>>>(a_in, b_in, b, n); },
            [=](std::string& w) { return compare_floats(a, b, nn, 0, w); }});
    }
}
