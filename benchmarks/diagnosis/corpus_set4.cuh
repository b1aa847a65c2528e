// The fourth set of planted pairs of corpus.cu, held out like the third: written, labelled and
// committed before its first GPU run and before any rule changed for it (benchmarks/diagnosis/README.md).
// Seven causes in code shapes the other sets lack (a double-precision formula, a modulo by a run-time
// length, gathers one at a time, 2-way bank conflicts, a shared histogram of skewed data, block barriers
// where warp barriers do, a row per thread of a row-major matrix) and a pair that should take the same
// time (a stream in blocks of 256 or 512 threads).
#pragma once
#include "harness.cuh"

// ---------------------------------------------------------------- fp64-arithmetic (a double formula)
// x / sqrt(x*x + 1) per element. The slow kernel writes 1.0 (a double), so the product, the sum, the
// square root and the division all run in double precision (DMUL, DADD, the DSQRT and DDIV
// subroutines); the fast one writes 1.0f.
extern "C" __global__ void softsign_fp64_slow(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i];
    out[i] = x / sqrt(x * x + 1.0);
}
extern "C" __global__ void softsign_fp64_fast(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[i];
    out[i] = x / sqrtf(x * x + 1.0f);
}

// ---------------------------------------------------------------- integer-index-math (a modulo)
// A circular 16-tap sum: out[i] = sum_k in[(i + k) mod n] for a run-time n that is not a power of
// two. The slow kernel takes the modulo for every tap (an unsigned division by a run-time value); the
// fast one wraps the index once and steps it with a compare and subtract. Same loads, same order.
constexpr int kRingTaps = 16;
extern "C" __global__ void modulo_ring_slow(const float* __restrict__ in, float* __restrict__ out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.f;
#pragma unroll
    for (unsigned k = 0; k < kRingTaps; ++k) s += in[(i + k) % n];
    out[i] = s;
}
extern "C" __global__ void modulo_ring_fast(const float* __restrict__ in, float* __restrict__ out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.f;
    unsigned j = i % n;
#pragma unroll
    for (unsigned k = 0; k < kRingTaps; ++k) {
        s += in[j];
        j = j + 1 == n ? 0 : j + 1;
    }
    out[i] = s;
}

// ---------------------------------------------------------------- exposed-latency (gathers)
// Each element sums 32 values gathered through an index array (random addresses on both sides), in a
// grid-stride loop at two 256-thread blocks per SM (the shared memory both launch with allows no
// more). The slow kernel keeps the gather loop rolled (`unroll 1`): an index load, then its gather,
// one at a time; the fast one issues 8 index loads, then 8 gathers, then adds them in the same order.
constexpr int kGathers = 32, kGatherSmem = 100 * 1024;
extern "C" __global__ void gather_chain_slow(const float* __restrict__ table, const unsigned* __restrict__ idx,
                                             float* __restrict__ out, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float s = 0.f;
#pragma unroll 1
        for (int k = 0; k < kGathers; ++k) s += table[idx[k * n + i]];
        out[i] = s;
    }
}
extern "C" __global__ void gather_chain_fast(const float* __restrict__ table, const unsigned* __restrict__ idx,
                                             float* __restrict__ out, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float s = 0.f;
        for (int k = 0; k < kGathers; k += 8) {
            unsigned j[8];
            float v[8];
#pragma unroll
            for (int u = 0; u < 8; ++u) j[u] = idx[(k + u) * n + i];
#pragma unroll
            for (int u = 0; u < 8; ++u) v[u] = table[j[u]];
#pragma unroll
            for (int u = 0; u < 8; ++u) s += v[u];
        }
        out[i] = s;
    }
}

// ---------------------------------------------------------------- bank-conflicts (2-way)
// A block stages 1024 floats in shared memory, then each thread sums 64 of them. The slow kernel
// reads every second word from its starting point (word 2t + 2k: two lanes per bank, 2-way
// conflicts on every read); the fast one consecutive words (t + k), conflict-free. Each thread sums
// the same values: the slow order visits the staged words through an odd/even-split copy.
constexpr int kConfWords = 1024, kConfReads = 64;
extern "C" __global__ void stride2_conflicts_slow(const float* __restrict__ in, float* __restrict__ out) {
    __shared__ float words[kConfWords];
    const float* block_in = in + (size_t)blockIdx.x * kConfWords;
    for (int e = threadIdx.x; e < kConfWords; e += blockDim.x) words[e] = block_in[e];
    __syncthreads();
    float s = 0.f;
#pragma unroll 16
    for (int k = 0; k < kConfReads; ++k) s += words[(2 * (threadIdx.x + k)) % kConfWords];
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = s;
}
extern "C" __global__ void stride2_conflicts_fast(const float* __restrict__ in, float* __restrict__ out) {
    // The same values in the same order: word 2m of the slow layout is word m of this one (the
    // even words first, as stored by the copy below), so reading m = t + k conflicts nowhere. The odd
    // words go 16 words further, to other banks than the even ones of the same warp's store.
    __shared__ float words[kConfWords + 16];
    const float* block_in = in + (size_t)blockIdx.x * kConfWords;
    for (int e = threadIdx.x; e < kConfWords; e += blockDim.x) {
        int m = e % 2 == 0 ? e / 2 : kConfWords / 2 + 16 + e / 2;
        words[m] = block_in[e];
    }
    __syncthreads();
    float s = 0.f;
#pragma unroll 16
    for (int k = 0; k < kConfReads; ++k) s += words[(threadIdx.x + k) % (kConfWords / 2)];
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// ---------------------------------------------------------------- atomic-contention (a skewed histogram)
// A 256-bin histogram of bytes in which 7 of 8 values fall into bin 0, counted in shared memory and
// added to the global bins at the end. The slow kernel adds 1 per byte, so the lanes of a warp that
// hold the hot value update one word and are serialized; the fast one first finds the lanes holding
// the same value (__match_any_sync) and lets one of them add their count.
constexpr int kBytesPerThread = 64;
extern "C" __global__ void hist_skewed_slow(const uint8_t* __restrict__ in, unsigned* bins) {
    __shared__ unsigned counts[256];
    counts[threadIdx.x] = 0;
    __syncthreads();
    const uint8_t* p = in + (size_t)blockIdx.x * kThreads * kBytesPerThread;
    for (int k = 0; k < kBytesPerThread; ++k) atomicAdd(&counts[p[k * kThreads + threadIdx.x]], 1u);
    __syncthreads();
    atomicAdd(&bins[threadIdx.x], counts[threadIdx.x]);
}
extern "C" __global__ void hist_skewed_fast(const uint8_t* __restrict__ in, unsigned* bins) {
    __shared__ unsigned counts[256];
    counts[threadIdx.x] = 0;
    __syncthreads();
    const uint8_t* p = in + (size_t)blockIdx.x * kThreads * kBytesPerThread;
    for (int k = 0; k < kBytesPerThread; ++k) {
        unsigned v = p[k * kThreads + threadIdx.x];
        unsigned same = __match_any_sync(0xffffffffu, v);
        if ((int)(threadIdx.x & 31) == __ffs(same) - 1) atomicAdd(&counts[v], (unsigned)__popc(same));
    }
    __syncthreads();
    atomicAdd(&bins[threadIdx.x], counts[threadIdx.x]);
}

// ---------------------------------------------------------------- excess-synchronization (a reduction tree)
// Each block reduces 64 segments of 256 floats, one after another, by a tree in shared memory.
// Both trees take the same steps in the same order; the slow one waits at __syncthreads() after
// every step, the fast one only while the steps span warps (128 and more apart) and at __syncwarp()
// for the last five, within the first warp.
constexpr int kSegments = 64;
template <bool kBlockBarrierEverywhere>
__device__ __forceinline__ void reduce_segments(const float* __restrict__ in, float* __restrict__ out) {
    __shared__ float part[kThreads];
    int t = threadIdx.x;
    for (int seg = 0; seg < kSegments; ++seg) {
        size_t base = ((size_t)blockIdx.x * kSegments + seg) * kThreads;
        part[t] = in[base + t];
        __syncthreads();
        for (int d = kThreads / 2; d > 0; d /= 2) {
            if (t < d) part[t] += part[t + d];
            if (kBlockBarrierEverywhere || d > 32) __syncthreads();
            else __syncwarp();
        }
        if (t == 0) out[(size_t)blockIdx.x * kSegments + seg] = part[0];
        __syncthreads();
    }
}
extern "C" __global__ void reduce_syncs_slow(const float* __restrict__ in, float* __restrict__ out) { reduce_segments<true>(in, out); }
extern "C" __global__ void reduce_syncs_fast(const float* __restrict__ in, float* __restrict__ out) { reduce_segments<false>(in, out); }

// ---------------------------------------------------------------- uncoalesced-access (a row per thread)
// y = A x for A of R x 128 floats, a row per thread. The slow kernel reads A row-major, so a warp's
// load of column k touches 32 rows; the fast one reads the same matrix stored column-major (a copy
// made before the launches), so the warp reads one contiguous column slice. Same products, same order.
constexpr int kRowCols = 128;
extern "C" __global__ void row_per_thread_slow(const float* __restrict__ A, const float* __restrict__ x,
                                               float* __restrict__ y, size_t rows) {
    size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.f;
#pragma unroll 8
    for (int k = 0; k < kRowCols; ++k) s = fmaf(A[r * kRowCols + k], x[k], s);
    y[r] = s;
}
extern "C" __global__ void row_per_thread_fast(const float* __restrict__ At, const float* __restrict__ x,
                                               float* __restrict__ y, size_t rows) {
    size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.f;
#pragma unroll 8
    for (int k = 0; k < kRowCols; ++k) s = fmaf(At[(size_t)k * rows + r], x[k], s);
    y[r] = s;
}
__global__ void column_major_copy(const float* __restrict__ A, float* __restrict__ At, size_t rows) {
    size_t n = rows * kRowCols;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (size_t)gridDim.x * blockDim.x)
        At[(e % kRowCols) * rows + e / kRowCols] = A[e];
}

// ---------------------------------------------------------------- none: the same time
// out = in * 3 + 1 over 64 MB, one element per thread, in blocks of 512 threads (slow) or 256 (fast):
// both fill every SM's warp slots; expected within noise.
extern "C" __global__ void block_512_slow(const float* __restrict__ in, float* __restrict__ out) { stream_element(in, out); }
extern "C" __global__ void block_512_fast(const float* __restrict__ in, float* __restrict__ out) { stream_element(in, out); }

// ---------------------------------------------------------------- the pairs
__global__ void skewed_bytes(uint8_t* p, size_t n, unsigned seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15;
        p[i] = (h & 7) ? 0 : (uint8_t)(h >> 24);
    }
}
__global__ void random_indices(unsigned* p, size_t n, unsigned range, unsigned seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        p[i] = h % range;
    }
}

static void add_set4_pairs(std::vector<Pair>& pairs) {
    auto none = [] {};
    {   // a double-precision formula
        size_t n = (size_t)16 << 20;
        float *in = random_floats(n, 61, -4, 4), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"softsign_fp64", none,
            [=] { softsign_fp64_slow<<<n / kThreads, kThreads>>>(in, a); },
            [=] { softsign_fp64_fast<<<n / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 1e-5, w); }});
    }
    {   // a modulo by a run-time length
        unsigned n = (16u << 20) - 3;  // not a power of two
        float *in = random_floats(n, 62, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        unsigned blocks = (n + kThreads - 1) / kThreads;
        pairs.push_back({"modulo_ring", none,
            [=] { modulo_ring_slow<<<blocks, kThreads>>>(in, a, n); },
            [=] { modulo_ring_fast<<<blocks, kThreads>>>(in, b, n); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // gathers one at a time
        size_t n = (size_t)1 << 20, table_n = (size_t)64 << 20;  // a 256 MB table: gathers miss L2
        float *table = random_floats(table_n, 63, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        unsigned* idx = dev<unsigned>(n * kGathers);
        random_indices<<<g_sms * 8, kThreads>>>(idx, n * kGathers, (unsigned)table_n, 64);
        CHECK(cudaGetLastError());
        CHECK(cudaFuncSetAttribute(gather_chain_slow, cudaFuncAttributeMaxDynamicSharedMemorySize, kGatherSmem));
        CHECK(cudaFuncSetAttribute(gather_chain_fast, cudaFuncAttributeMaxDynamicSharedMemorySize, kGatherSmem));
        int blocks = g_sms * 2;
        pairs.push_back({"gather_chain", none,
            [=] { gather_chain_slow<<<blocks, kThreads, kGatherSmem>>>(table, idx, a, n); },
            [=] { gather_chain_fast<<<blocks, kThreads, kGatherSmem>>>(table, idx, b, n); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // 2-way bank conflicts
        int blocks = g_sms * 64;
        float *in = random_floats((size_t)blocks * kConfWords, 65, -1, 1);
        float *a = dev<float>((size_t)blocks * kThreads), *b = dev<float>((size_t)blocks * kThreads);
        pairs.push_back({"stride2_conflicts", none,
            [=] { stride2_conflicts_slow<<<blocks, kThreads>>>(in, a); },
            [=] { stride2_conflicts_fast<<<blocks, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, (size_t)blocks * kThreads, 0, w); }});
    }
    {   // a shared histogram of skewed bytes
        int blocks = g_sms * 16;
        size_t n = (size_t)blocks * kThreads * kBytesPerThread;
        uint8_t* in = dev<uint8_t>(n);
        skewed_bytes<<<g_sms * 8, kThreads>>>(in, n, 66);
        CHECK(cudaGetLastError());
        unsigned *a = dev<unsigned>(256), *b = dev<unsigned>(256);
        pairs.push_back({"hist_skewed",
            [=] { CHECK(cudaMemset(a, 0, 1024)); CHECK(cudaMemset(b, 0, 1024)); },
            [=] { hist_skewed_slow<<<blocks, kThreads>>>(in, a); },
            [=] { hist_skewed_fast<<<blocks, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_bytes(a, b, 1024, w); }});
    }
    {   // block barriers where warp barriers do
        int blocks = g_sms * 8;
        size_t n = (size_t)blocks * kSegments * kThreads;
        float *in = random_floats(n, 67, -1, 1), *a = dev<float>((size_t)blocks * kSegments), *b = dev<float>((size_t)blocks * kSegments);
        pairs.push_back({"reduce_syncs", none,
            [=] { reduce_syncs_slow<<<blocks, kThreads>>>(in, a); },
            [=] { reduce_syncs_fast<<<blocks, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, (size_t)blocks * kSegments, 0, w); }});
    }
    {   // a row per thread
        size_t rows = (size_t)512 << 10;  // 256 MB of A
        float *A = random_floats(rows * kRowCols, 68, -1, 1), *x = random_floats(kRowCols, 69, -1, 1);
        float* At = dev<float>(rows * kRowCols);
        column_major_copy<<<g_sms * 8, kThreads>>>(A, At, rows);
        CHECK(cudaGetLastError());
        float *a = dev<float>(rows), *b = dev<float>(rows);
        pairs.push_back({"row_per_thread", none,
            [=] { row_per_thread_slow<<<rows / kThreads, kThreads>>>(A, x, a, rows); },
            [=] { row_per_thread_fast<<<rows / kThreads, kThreads>>>(At, x, b, rows); },
            [=](std::string& w) { return compare_floats(a, b, rows, 0, w); }});
    }
    {   // the same time
        size_t n = (size_t)16 << 20;
        float *in = random_floats(n, 70, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"block_512", none,
            [=] { block_512_slow<<<n / 512, 512>>>(in, a); },
            [=] { block_512_fast<<<n / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
}
