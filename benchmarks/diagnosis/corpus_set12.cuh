// The twelfth set of planted pairs of corpus.cu, held out like sets 3-11: written, labelled and
// committed before its first GPU run and before any rule changed for it. Three causes in code shapes
// the other sets lack, each with a symptom that reads like another cause (a causal, triangular
// workload split into consecutive tiles per block, whose late tail looks like a small grid; a warp
// that does the block's bookkeeping alone before a barrier, whose waits look like excess barriers or
// latency; batched 64x64 fp16 products on the CUDA cores, whose busy FMA pipe looks like plain
// compute) and one pair that should take the same time (a DRAM stream with 8 loads in flight per
// thread, launched with 2 or 8 blocks per SM: a lower occupancy that costs nothing).
#pragma once
#include <mma.h>
#include <vector>
#include "harness.cuh"
#include "corpus_set3.cuh"   // halves_from_floats
#include "corpus_set11.cuh"  // round_to_sixteenths

// ---------------------------------------------------------------- load-imbalance (causal tiles, consecutive per block)
// A causal score sum: query tile t (16 queries a thread, 256 threads) scores every key tile u <= t
// (8 keys a thread per tile, L2-resident), acc += s * (0.5 + 0.25 s) with s = q * k: one LDG and 48
// FP32 instructions a key, 16 independent chains, so a warp issues back to back. T = 2 x SMs tiles,
// one block per SM (grid = SMs), two tiles per block: tile t costs t + 1 key tiles. The slow kernel
// gives block b the consecutive tiles 2b and 2b + 1 (the natural contiguous split: 4b + 3 key tiles,
// 527 on the last block against 3 on the first); the fast one pairs a light tile with a heavy one, b
// and T - 1 - b (T + 1 = 265 key tiles on every block). Same loop, same instructions per tile in the
// same order (identical outputs); only the tile a block takes differs. Expected: one block per SM
// issues ~4 instructions a cycle whatever the other SMs do, so the kernel lasts as long as its
// heaviest block: 527 against 265 key tiles (~8 x 49 x 8 warps / 4 = ~780 cycles each: ~240 against
// ~120 us), about 2x, with most SMs idle in the slow kernel's second half (which also looks like a
// grid too small for the GPU; it is not: every SM had a block).
constexpr int kCausalQueries = 16, kCausalKeys = 8;
__device__ __forceinline__ void causal_tile(const float* __restrict__ queries, const float* __restrict__ keys,
                                            float* __restrict__ out, int tile) {
    float q[kCausalQueries], acc[kCausalQueries];
#pragma unroll
    for (int j = 0; j < kCausalQueries; ++j) {
        q[j] = queries[((size_t)tile * kCausalQueries + j) * kThreads + threadIdx.x];
        acc[j] = 0.f;
    }
    for (int u = 0; u <= tile; ++u) {  // the causal mask: key tiles up to the query tile
#pragma unroll
        for (int k = 0; k < kCausalKeys; ++k) {
            float key = keys[((size_t)u * kCausalKeys + k) * kThreads + threadIdx.x];
#pragma unroll
            for (int j = 0; j < kCausalQueries; ++j) {
                float s = q[j] * key;
                acc[j] = fmaf(s, fmaf(s, 0.25f, 0.5f), acc[j]);
            }
        }
    }
#pragma unroll
    for (int j = 0; j < kCausalQueries; ++j) out[((size_t)tile * kCausalQueries + j) * kThreads + threadIdx.x] = acc[j];
}
extern "C" __global__ void __launch_bounds__(kThreads) causal_tiles_slow(const float* __restrict__ queries, const float* __restrict__ keys,
                                                                        float* __restrict__ out) {
    for (int half = 0; half < 2; ++half) causal_tile(queries, keys, out, 2 * blockIdx.x + half);
}
extern "C" __global__ void __launch_bounds__(kThreads) causal_tiles_fast(const float* __restrict__ queries, const float* __restrict__ keys,
                                                                        float* __restrict__ out) {
    int last = 2 * gridDim.x - 1;
    for (int half = 0; half < 2; ++half) causal_tile(queries, keys, out, half ? last - blockIdx.x : blockIdx.x);
}

// ---------------------------------------------------------------- barrier-skew (one warp keeps the books)
// Rows of 256 floats, one per thread: y = an 8-term polynomial of x, stored, and staged in shared
// memory; then the row's bookkeeping, the sums of its 8 segments of 32 (a shuffle reduction each,
// stored per row), between two __syncthreads() (the tile is overwritten by the next row). 2 blocks of
// 256 per SM in the grid, 256 rows a block. The slow kernel has warp 0 keep the books for all 8
// segments in turn while warps 1-7 wait at the second barrier; the fast one has warp w sum segment w.
// The same segment code (an LDS, 5 SHFL and FADD, a store by lane 0), the same 8 segments a row, the
// same two barriers a row: identical sums and outputs. Expected: a segment is a chain of ~6 dependent
// round trips (LDS, then SHFL + FADD 5 times: ~180 cycles), so the slow row waits ~8 x 180 = ~1,400
// cycles at its barrier on top of the ~1,000 cycles of its DRAM load and polynomial, the fast one
// ~180: about 2.3x (~330 against ~150 us). The slow kernel's stall is at a barrier it has as often as
// its twin, with its warps arriving ~1,200 cycles apart.
constexpr int kBookRows = 256, kBookSegments = kThreads / 32;
__device__ __forceinline__ void segment_sum(const float* tile, float* __restrict__ sums, size_t row, int segment) {
    float v = tile[segment * 32 + threadIdx.x % 32];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (threadIdx.x % 32 == 0) sums[row * kBookSegments + segment] = v;
}
template <bool kOneWarpKeepsBooks>
__device__ __forceinline__ void book_rows(const float* __restrict__ in, float* __restrict__ out, float* __restrict__ sums, size_t rows) {
    __shared__ float tile[kThreads];
    int warp = threadIdx.x / 32;
    for (size_t row = blockIdx.x; row < rows; row += gridDim.x) {
        float x = in[row * kThreads + threadIdx.x];
        float y = 0.125f;
#pragma unroll
        for (int k = 0; k < 8; ++k) y = fmaf(y, x, 0.5f - 0.0625f * k);
        out[row * kThreads + threadIdx.x] = y;
        tile[threadIdx.x] = y;
        __syncthreads();
        if (kOneWarpKeepsBooks) {
            if (warp == 0) {
#pragma unroll 1
                for (int segment = 0; segment < kBookSegments; ++segment) segment_sum(tile, sums, row, segment);
            }
        } else {
            segment_sum(tile, sums, row, warp);
        }
        __syncthreads();  // the next row overwrites the tile
    }
}
extern "C" __global__ void __launch_bounds__(kThreads) bookkeeping_warp_slow(const float* __restrict__ in, float* __restrict__ out,
                                                                            float* __restrict__ sums, size_t rows) {
    book_rows<true>(in, out, sums, rows);
}
extern "C" __global__ void __launch_bounds__(kThreads) bookkeeping_warp_fast(const float* __restrict__ in, float* __restrict__ out,
                                                                            float* __restrict__ sums, size_t rows) {
    book_rows<false>(in, out, sums, rows);
}

// ---------------------------------------------------------------- no-tensor-cores (batched 64x64 products)
// C_i = A_i B_i for 4096 independent products, A_i 64 x 256 and B_i 256 x 64 fp16 (row-major), C_i
// 64 x 64 fp32: one 256-thread block a product, 64-wide k-slices of A_i and B_i staged in shared
// memory by the same code on both sides. The slow kernel multiplies on the CUDA cores (each thread a
// 4 x 4 block of C: 4 + 4 halves loaded and converted, 16 FFMA a k); the fast one with WMMA 16x16x16
// (each warp a 16 x 32 strip of C as 2 fragments: HMMA). Inputs are multiples of 1/16 in [-1, 1], so
// every product and partial sum is exact in fp32 and the outputs agree bitwise whatever the order.
// Expected: 80 KB of DRAM traffic per product (A, B, C) bound the fast kernel (~330 MB: ~110 us);
// the slow one issues ~30 instructions per thread and k (16 FFMA, conversions, LDS), ~61 K warp
// instructions a product, ~15 K cycles an SM at 4 a cycle, 31 products an SM: ~270 us, about 2.5x.
// Its FMA pipe is busy and its DRAM rate is lower: it reads like a compute-bound kernel.
constexpr int kBatchProducts = 4096, kBatchTile = 64, kBatchK = 256, kBatchSlice = 64;
struct BatchStage { __half a[kBatchTile][kBatchSlice + 8]; __half b[kBatchSlice][kBatchTile + 8]; };
__device__ __forceinline__ void batch_stage(BatchStage& s, const __half* __restrict__ A, const __half* __restrict__ B, int k0) {
    // 64 x 64 halves of each, 8 halves (16 bytes) a copy, 2 copies a thread and operand.
    for (int e = threadIdx.x; e < kBatchTile * kBatchSlice / 8; e += kThreads) {
        int r = e / (kBatchSlice / 8), c = (e % (kBatchSlice / 8)) * 8;
        *(uint4*)&s.a[r][c] = *(const uint4*)&A[(size_t)r * kBatchK + k0 + c];
        *(uint4*)&s.b[r][c] = *(const uint4*)&B[(size_t)(k0 + r) * kBatchTile + c];
    }
}
extern "C" __global__ void __launch_bounds__(kThreads) batched_64x64_slow(const __half* __restrict__ A, const __half* __restrict__ B,
                                                                         float* __restrict__ C) {
    __shared__ __align__(32) BatchStage s;
    const __half* Ai = A + (size_t)blockIdx.x * kBatchTile * kBatchK;
    const __half* Bi = B + (size_t)blockIdx.x * kBatchK * kBatchTile;
    float* Ci = C + (size_t)blockIdx.x * kBatchTile * kBatchTile;
    int tr = (threadIdx.x / 16) * 4, tc = (threadIdx.x % 16) * 4;  // 16 x 16 threads, 4 x 4 outputs each
    float acc[4][4] = {};
    for (int k0 = 0; k0 < kBatchK; k0 += kBatchSlice) {
        batch_stage(s, Ai, Bi, k0);
        __syncthreads();
#pragma unroll 4
        for (int k = 0; k < kBatchSlice; ++k) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = __half2float(s.a[tr + i][k]);
#pragma unroll
            for (int j = 0; j < 4; ++j) b[j] = __half2float(s.b[k][tc + j]);
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) *(float4*)&Ci[(tr + i) * kBatchTile + tc] = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
}
extern "C" __global__ void __launch_bounds__(kThreads) batched_64x64_fast(const __half* __restrict__ A, const __half* __restrict__ B,
                                                                         float* __restrict__ C) {
    using namespace nvcuda;
    __shared__ __align__(32) BatchStage s;
    const __half* Ai = A + (size_t)blockIdx.x * kBatchTile * kBatchK;
    const __half* Bi = B + (size_t)blockIdx.x * kBatchK * kBatchTile;
    float* Ci = C + (size_t)blockIdx.x * kBatchTile * kBatchTile;
    int warp = threadIdx.x / 32, wr = (warp / 2) * 16, wc = (warp % 2) * 32;  // 4 x 2 warps, 16 x 32 each
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[j], 0.0f);
    for (int k0 = 0; k0 < kBatchK; k0 += kBatchSlice) {
        batch_stage(s, Ai, Bi, k0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kBatchSlice; k += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b[2];
            wmma::load_matrix_sync(a, &s.a[wr][k], kBatchSlice + 8);
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &s.b[k][wc + 16 * j], kBatchTile + 8);
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[j], a, b[j], acc[j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::store_matrix_sync(&Ci[wr * kBatchTile + wc + 16 * j], acc[j], kBatchTile, wmma::mem_row_major);
}

// ---------------------------------------------------------------- none: a DRAM stream at 2 or 8 blocks per SM
// out = in * 1.5 - 0.25 over 277 MB of float4, a grid-stride loop that loads 8 float4 a thread before
// it stores any (128 bytes in flight a thread). The same kernel launched with 2 blocks of 256 per SM
// (16 warps, 25 % occupancy) or 8 (64 warps). Even the small grid keeps 132 x 16 x 32 x 128 B = 8.6 MB
// of loads in flight, over twice what 3.35 TB/s needs at a ~1 us loaded DRAM latency, so both run at
// the DRAM rate (~170 us). Planted as taking the same time; a rule that reads the low occupancy or the
// small grid as the cause is a false alarm.
constexpr int kStreamInFlight = 8;
__device__ __forceinline__ void stream_in_flight(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t base = (size_t)blockIdx.x * blockDim.x + threadIdx.x; base < n4; base += stride * kStreamInFlight) {
        float4 v[kStreamInFlight];
#pragma unroll
        for (int u = 0; u < kStreamInFlight; ++u) v[u] = in[base + u * stride];  // n4 is a multiple of stride * 8
#pragma unroll
        for (int u = 0; u < kStreamInFlight; ++u)
            out[base + u * stride] = make_float4(stream_op(v[u].x), stream_op(v[u].y), stream_op(v[u].z), stream_op(v[u].w));
    }
}
extern "C" __global__ void same_stream_blocks_slow(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
    stream_in_flight(in, out, n4);
}
extern "C" __global__ void same_stream_blocks_fast(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
    stream_in_flight(in, out, n4);
}

// ---------------------------------------------------------------- the pairs
static void add_set12_pairs(std::vector<Pair>& pairs) {
    auto none = [] {};
    {   // causal tiles, consecutive per block
        int blocks = g_sms, tiles = 2 * g_sms;
        size_t nq = (size_t)tiles * kCausalQueries * kThreads, nk = (size_t)tiles * kCausalKeys * kThreads;
        float *queries = random_floats(nq, 151, -1, 1), *keys = random_floats(nk, 152, -1, 1);
        float *a = dev<float>(nq), *b = dev<float>(nq);
        pairs.push_back({"causal_tiles", none,
            [=] { causal_tiles_slow<<<blocks, kThreads>>>(queries, keys, a); },
            [=] { causal_tiles_fast<<<blocks, kThreads>>>(queries, keys, b); },
            [=](std::string& w) { return compare_floats(a, b, nq, 0, w); }});
    }
    {   // one warp keeps the books
        int blocks = g_sms * 2;
        size_t rows = (size_t)blocks * kBookRows, n = rows * kThreads;
        float *in = random_floats(n, 153, -1, 1);
        float *a = dev<float>(n), *b = dev<float>(n);
        float *sums_a = dev<float>(rows * kBookSegments), *sums_b = dev<float>(rows * kBookSegments);
        pairs.push_back({"bookkeeping_warp", none,
            [=] { bookkeeping_warp_slow<<<blocks, kThreads>>>(in, a, sums_a, rows); },
            [=] { bookkeeping_warp_fast<<<blocks, kThreads>>>(in, b, sums_b, rows); },
            [=](std::string& w) {
                std::string sums_why;
                bool ok = compare_floats(a, b, n, 0, w) && compare_floats(sums_a, sums_b, rows * kBookSegments, 0, sums_why);
                w += "; sums: " + sums_why;
                return ok;
            }});
    }
    {   // batched 64x64 products on the CUDA cores
        size_t na = (size_t)kBatchProducts * kBatchTile * kBatchK, nc = (size_t)kBatchProducts * kBatchTile * kBatchTile;
        float *fa = random_floats(na, 154, -1, 1), *fb = random_floats(na, 155, -1, 1);
        round_to_sixteenths<<<g_sms * 8, kThreads>>>(fa, na);  // exact products and sums (see above)
        round_to_sixteenths<<<g_sms * 8, kThreads>>>(fb, na);
        __half *A = dev<__half>(na), *B = dev<__half>(na);
        halves_from_floats<<<g_sms * 8, kThreads>>>(A, fa, na);
        halves_from_floats<<<g_sms * 8, kThreads>>>(B, fb, na);
        CHECK(cudaGetLastError());
        float *a = dev<float>(nc), *b = dev<float>(nc);
        pairs.push_back({"batched_64x64", none,
            [=] { batched_64x64_slow<<<kBatchProducts, kThreads>>>(A, B, a); },
            [=] { batched_64x64_fast<<<kBatchProducts, kThreads>>>(A, B, b); },
            [=](std::string& w) { return compare_floats(a, b, nc, 0, w); }});
    }
    {   // a DRAM stream at 2 or 8 blocks per SM (the same time)
        size_t n4 = (size_t)g_sms * 8 * kThreads * kStreamInFlight * 8;  // 8 sweeps of the larger grid, 32 of the smaller
        float4 *in = (float4*)random_floats(n4 * 4, 156, -1, 1), *a = dev<float4>(n4), *b = dev<float4>(n4);
        pairs.push_back({"same_stream_blocks", none,
            [=] { same_stream_blocks_slow<<<g_sms * 2, kThreads>>>(in, a, n4); },
            [=] { same_stream_blocks_fast<<<g_sms * 8, kThreads>>>(in, b, n4); },
            [=](std::string& w) { return compare_floats((float*)a, (float*)b, n4 * 4, 0, w); }});
    }
}
