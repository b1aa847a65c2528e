// The fourteenth set of planted pairs of corpus.cu, held out like sets 3-13: written, labelled and
// committed before its first GPU run and before any rule changed for it, by an author who had not
// read the rules. Causes behind CUDA idioms that application code uses: a reaction-diffusion rod split
// over a block pair that trades halos through distributed shared memory, launched in clusters of 4
// where pairs are all it needs; NF4 weight dequantization with its 16-value codebook in __constant__
// memory; a scatter-add (index_add_) of messages sorted by destination, one atomic per message; eight
// pointwise ops horizontally fused into one kernel, warp w running op w, with each op's element loop
// unrolled by 12; and a CSR SpMV over rows ordered by degree, split into equal row ranges per block;
// and one pair that should take the same time (a DRAM-bound row sum that ends with a shared-memory
// tree of 8 barriers against one that ends with warp shuffles and one barrier).
#pragma once
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <vector>
#include "harness.cuh"

// ---------------------------------------------------------------- cluster-residency (a rod split over a block pair, launched in clusters of 4)
// An Allen-Cahn reaction-diffusion rod, u += dt (u[i-1] - 2 u[i] + u[i+1] + u (1 - u^2)), 66 rods of
// 65,536 points, each rod split over a pair of 1,024-thread blocks (32 consecutive points a thread, held
// in registers for 64 time steps; ~50 registers: one block per SM). Every step each thread publishes its
// two edge points to shared memory, one cluster barrier, then each thread reads its neighbours' edges
// (the threads at the cut read the partner block's through distributed shared memory, partner rank ^ 1)
// and updates its 32 points (~7 FP32 instructions a point). The kernel only ever talks to rank ^ 1, so
// any even cluster size works; the slow kernel is declared __cluster_dims__(4) (two rods per cluster),
// the fast one __cluster_dims__(2). Grid of 132 blocks, one per SM, the same instructions, identical
// outputs. Expected: a GPC whose SM count is not a multiple of 4 leaves SMs out of clusters of 4 (~30
// clusters of 4 resident on a 132-SM GH100, at most 32: 120 to 128 blocks), while pairs fill all 132
// SMs; the slow grid runs as a full wave plus a second wave of 4-12 blocks, each block the same
// ~2,300 cycles a step x 64 steps (~150 K cycles, ~75 us): ~2x (~150 us against ~75 us).
constexpr int kRodThreads = 1024, kRodPoints = 32, kRodSteps = 64;
constexpr int kRodHalf = kRodThreads * kRodPoints;  // points per block; a rod is two blocks
constexpr float kRodDt = 0.2f;
__device__ __forceinline__ void rod_pair_steps(const float4* __restrict__ in, float4* __restrict__ out) {
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    __shared__ float edges[2][2][kRodThreads];  // [step parity][first / last point][thread]
    unsigned side = blockIdx.x & 1;             // 0: the rod's left half, 1: its right half
    const float* partner = cluster.map_shared_rank(&edges[0][0][0], cluster.block_rank() ^ 1);
    int t = threadIdx.x;
    const float4* src = in + ((size_t)blockIdx.x * kRodHalf + (size_t)t * kRodPoints) / 4;
    float u[kRodPoints];
#pragma unroll
    for (int q = 0; q < kRodPoints / 4; ++q) {
        float4 v = src[q];
        u[4 * q] = v.x; u[4 * q + 1] = v.y; u[4 * q + 2] = v.z; u[4 * q + 3] = v.w;
    }
    for (int step = 0; step < kRodSteps; ++step) {
        int p = step & 1;
        edges[p][0][t] = u[0];
        edges[p][1][t] = u[kRodPoints - 1];
        cluster.sync();  // also the block's barrier; the parity keeps the next step's edges apart
        float left = t > 0 ? edges[p][1][t - 1] : (side ? partner[(p * 2 + 1) * kRodThreads + kRodThreads - 1] : 0.f);
        float right = t < kRodThreads - 1 ? edges[p][0][t + 1] : (side ? 0.f : partner[(p * 2) * kRodThreads]);
        float prev = left;
#pragma unroll
        for (int i = 0; i < kRodPoints; ++i) {
            float cur = u[i];
            float next = i < kRodPoints - 1 ? u[i + 1] : right;
            u[i] = cur + kRodDt * ((prev + next - 2.0f * cur) + cur * (1.0f - cur * cur));
            prev = cur;
        }
    }
    cluster.sync();  // no block leaves while its partner may still read its edges
    float4* dst = out + ((size_t)blockIdx.x * kRodHalf + (size_t)t * kRodPoints) / 4;
#pragma unroll
    for (int q = 0; q < kRodPoints / 4; ++q) dst[q] = make_float4(u[4 * q], u[4 * q + 1], u[4 * q + 2], u[4 * q + 3]);
}
extern "C" __global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(kRodThreads, 1)
    rod_cluster4_slow(const float4* __restrict__ in, float4* __restrict__ out) {
    rod_pair_steps(in, out);
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kRodThreads, 1)
    rod_cluster4_fast(const float4* __restrict__ in, float4* __restrict__ out) {
    rod_pair_steps(in, out);
}

// ---------------------------------------------------------------- constant-cache-serialization (an NF4 codebook in __constant__ memory)
// Dequantizing NF4 weights (QLoRA's 4-bit NormalFloat) to bf16: 128 M 4-bit codes packed 8 to a
// uint32, one absmax scale per 64 codes; a thread per word: one 4-byte load, the block's scale, 8
// codebook lookups, 8 FMUL, 8 conversions to bf16, one 16-byte store. The slow kernel reads the
// 16-value codebook from __constant__ memory, as one writes a small fixed table: each lookup is an LDC
// at a per-lane address, and 32 random codes hit ~14 of the 16 entries, so each LDC is served ~14
// times over; the fast one copies the same 16 floats to shared memory first (16 words in 16 banks: an
// LDS with no conflict whatever the codes). Same loads, multiplies, conversions and stores; identical
// bf16 outputs. Expected: the fast kernel moves 64 MB in, 8 MB of scales and 256 MB out at the DRAM
// rate (~85 us); the slow one needs 8 x ~14 constant-cache cycles a warp, 3,970 warps an SM: ~445 K
// cycles (~225 us): ~2.6x.
constexpr int kNf4Words = 1 << 24, kNf4CodesPerScale = 64;
__constant__ float c_nf4_codebook[16];
const float kNf4Codebook[16] = {-1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
                                -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
                                0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
                                0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};
__device__ __forceinline__ unsigned nf4_pack2(float lo, float hi) {
    return (unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) | ((unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16);
}
template <class Lookup>
__device__ __forceinline__ void nf4_dequant_word(const unsigned* __restrict__ packed, const float* __restrict__ absmax,
                                                 uint4* __restrict__ out, Lookup lookup) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned w = packed[i];
    float scale = absmax[i * 8 / kNf4CodesPerScale];
    float v[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = lookup((w >> (4 * k)) & 15u) * scale;
    out[i] = make_uint4(nf4_pack2(v[0], v[1]), nf4_pack2(v[2], v[3]), nf4_pack2(v[4], v[5]), nf4_pack2(v[6], v[7]));
}
extern "C" __global__ void nf4_codebook_slow(const unsigned* __restrict__ packed, const float* __restrict__ absmax,
                                             const float* __restrict__ codebook, uint4* __restrict__ out) {
    nf4_dequant_word(packed, absmax, out, [](unsigned c) { return c_nf4_codebook[c]; });
}
extern "C" __global__ void nf4_codebook_fast(const unsigned* __restrict__ packed, const float* __restrict__ absmax,
                                             const float* __restrict__ codebook, uint4* __restrict__ out) {
    __shared__ float table[16];
    if (threadIdx.x < 16) table[threadIdx.x] = codebook[threadIdx.x];
    __syncthreads();
    nf4_dequant_word(packed, absmax, out, [&](unsigned c) { return table[c]; });
}
__global__ void nf4_random_words(unsigned* __restrict__ p, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ 0x9e3779b9u;
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        p[i] = h;
    }
}

// ---------------------------------------------------------------- atomic-contention (a scatter-add of messages sorted by destination)
// The aggregation step of a graph neural network, out.index_add_(0, dst, msg): 32 M scalar messages to
// 131,072 nodes, every node receiving 256, the edge list sorted by destination (CSR order, as graph
// libraries keep it). A thread per message. The slow kernel adds each message with its own atomicAdd
// (RED.ADD.F32), as a generic scatter-add does: the 32 lanes of a warp hold 32 messages to the same
// node, so every warp sends 32 updates of one word (two when it straddles a node) to one L2 slice,
// which applies them one after another. The fast kernel first sums runs of equal destination inside
// the warp (a 5-step segmented shuffle sum keyed by the destination, valid because the list is
// sorted), then the first lane of each run adds the run's sum: ~1 atomic a warp. Same loads of dst and
// msg; sums within 1e-4 (positive messages, 256 terms a node, in a different order). Expected: the
// fast kernel streams the 256 MB at the DRAM rate (~65 us); the slow one issues 32x the atomics, 32 M
// same-address updates spread over the L2 slices at ~one a slice-cycle: ~0.3 M cycles a slice (~200
// us): ~3x.
constexpr int kScatterMessages = 1 << 25, kScatterPerNode = 256;
extern "C" __global__ void scatter_sorted_slow(const int* __restrict__ dst, const float* __restrict__ msg, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&out[dst[i]], msg[i]);
}
extern "C" __global__ void scatter_sorted_fast(const int* __restrict__ dst, const float* __restrict__ msg, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32, node = dst[i];
    float v = msg[i];
#pragma unroll
    for (int offset = 1; offset < 32; offset *= 2) {  // v becomes the sum of this lane's run from here on
        float up = __shfl_down_sync(0xffffffffu, v, offset);
        int other = __shfl_down_sync(0xffffffffu, node, offset);
        if (lane + offset < 32 && other == node) v += up;
    }
    int before = __shfl_up_sync(0xffffffffu, node, 1);
    if (lane == 0 || before != node) atomicAdd(&out[node], v);
}
__global__ void scatter_sorted_destinations(int* __restrict__ dst, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = (int)(i / kScatterPerNode);
}

// ---------------------------------------------------------------- instruction-cache-misses (horizontally fused ops, element loops unrolled by 12)
// Eight unrelated pointwise ops horizontally fused into one launch (as fusers lay out small
// independent kernels): warp w of each 256-thread block runs op w over its own 4.06 M-float tensor,
// each op a degree-128 polynomial fit evaluated by Horner's rule with its own coefficients as FFMA
// immediates (~130 instructions an element, FMA-bound). The slow kernel unrolls each op's element loop
// by 12 (12 loads, 12 interleaved Horner chains, 12 stores an iteration: ~1,560 instructions, ~25 KB
// of code an op, 204 KB for the eight ops, all eight hot on every SM at once); the fast one leaves the
// element loop rolled (one element a lane an iteration, ~160 instructions, ~2.6 KB an op, 21 KB in
// all). Both under __launch_bounds__(256, 8) (32 and 18 registers: 8 blocks per SM); the same FFMAs
// per element in the same order, identical outputs. Expected: the fast kernel issues FFMA at near the
// pipe's rate (32.4 M elements x ~130 / (132 SMs x 128 lanes a cycle): ~250 K cycles, ~130 us); the
// slow one's 200 KB of hot code does not fit the SM's instruction caches, so its warps wait for
// instruction fetches from L2 (cf. set 8's variant_bloat, 128 KB hot: 3.2x): ~2-3x.
constexpr int kFusedOps = 8, kFusedDegree = 128, kFusedUnroll = 12, kFusedIters = 10;
__host__ __device__ constexpr float fused_coef(int op, int k) {
    return (float)((k * 7 + op * 13 + (k * op) % 5) % 17 - 8) * (1.0f / 128.0f) + (float)(op + 1) * (1.0f / 1024.0f);
}
template <int Op, int K>
struct FusedHorner {
    static __device__ __forceinline__ float eval(float acc, float x) {
        return FusedHorner<Op, K - 1>::eval(fmaf(acc, x, fused_coef(Op, K - 1)), x);
    }
};
template <int Op>
struct FusedHorner<Op, 0> {
    static __device__ __forceinline__ float eval(float acc, float) { return acc; }
};
template <int Op, int Unroll>
__device__ __forceinline__ void fused_op_run(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    const float* src = in + (size_t)Op * n;
    float* dst = out + (size_t)Op * n;
    int lane = threadIdx.x % 32;
    for (size_t base = (size_t)blockIdx.x * 32 * Unroll; base < n; base += (size_t)gridDim.x * 32 * Unroll) {
        float x[Unroll], y[Unroll];
#pragma unroll
        for (int u = 0; u < Unroll; ++u) x[u] = src[base + u * 32 + lane];
#pragma unroll
        for (int u = 0; u < Unroll; ++u) y[u] = FusedHorner<Op, kFusedDegree>::eval(fused_coef(Op, kFusedDegree), x[u]);
#pragma unroll
        for (int u = 0; u < Unroll; ++u) dst[base + u * 32 + lane] = y[u];
    }
}
template <int Unroll>
__device__ __forceinline__ void fused_ops(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    switch (threadIdx.x / 32) {  // warp-uniform: one op per warp
        case 0: fused_op_run<0, Unroll>(in, out, n); break;
        case 1: fused_op_run<1, Unroll>(in, out, n); break;
        case 2: fused_op_run<2, Unroll>(in, out, n); break;
        case 3: fused_op_run<3, Unroll>(in, out, n); break;
        case 4: fused_op_run<4, Unroll>(in, out, n); break;
        case 5: fused_op_run<5, Unroll>(in, out, n); break;
        case 6: fused_op_run<6, Unroll>(in, out, n); break;
        default: fused_op_run<7, Unroll>(in, out, n); break;
    }
}
extern "C" __global__ void __launch_bounds__(kThreads, 8) fused_ops_unroll_slow(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    fused_ops<kFusedUnroll>(in, out, n);
}
extern "C" __global__ void __launch_bounds__(kThreads, 8) fused_ops_unroll_fast(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    fused_ops<1>(in, out, n);
}

// ---------------------------------------------------------------- load-imbalance (a CSR SpMV over degree-ordered rows, equal row ranges)
// y = A x for a sparse matrix in CSR of 270,336 rows whose degrees grow along the rows (8 at the first,
// 255 at the last: rows ordered by degree, as a locality reordering leaves them; 35.6 M nonzeros, x
// 1 MB and L2-resident), a persistent grid of one 1,024-thread block per SM, a warp per row (lanes
// strided over the row: val, col, the gather of x, one FFMA; a 5-step shuffle sum), each block's row
// range read from a partition table computed once when the matrix is set up. The kernels are the same
// code; only the table differs. The slow table gives each block an equal range of rows (2,048), so the
// last block holds ~1.93x the average nonzeros and the first ~0.07x; the fast one splits the rows by an
// estimate of their cost (0.6 + ceil(degree / 32) warp iterations a row: the row's loop trips plus its
// pointer loads and sum), as merge-path or an analysis phase would. Identical outputs. Expected: per SM
// one block of 32 warps, latency-bound (~1,000 cycles an iteration: the stream of val and col, then the
// gather), so a block's time follows its warps' iterations: ~330 equivalents a warp in the fast kernel
// (~170 us), 64 rows of 8 iterations (~550) on the slowest SM in the slow one while the first SMs idle:
// ~1.6x.
constexpr int kSpmvThreads = 1024, kSpmvRowsPerBlock = 2048, kSpmvMinDegree = 8, kSpmvMaxDegree = 256;
__host__ __device__ inline int spmv_degree(long long r, long long rows) {
    return kSpmvMinDegree + (int)(r * (kSpmvMaxDegree - kSpmvMinDegree) / rows);
}
__device__ __forceinline__ void spmv_rows(const int* __restrict__ first_row, const int* __restrict__ row_ptr, const int* __restrict__ col,
                                          const float* __restrict__ val, const float* __restrict__ x, float* __restrict__ y) {
    int lane = threadIdx.x % 32, last = first_row[blockIdx.x + 1];
    for (int r = first_row[blockIdx.x] + threadIdx.x / 32; r < last; r += kSpmvThreads / 32) {
        float s = 0.f;
        for (int j = row_ptr[r] + lane; j < row_ptr[r + 1]; j += 32) s = fmaf(val[j], x[col[j]], s);
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
        if (lane == 0) y[r] = s;
    }
}
extern "C" __global__ void __launch_bounds__(kSpmvThreads, 1)
    spmv_degree_split_slow(const int* __restrict__ first_row, const int* __restrict__ row_ptr, const int* __restrict__ col,
                           const float* __restrict__ val, const float* __restrict__ x, float* __restrict__ y) {
    spmv_rows(first_row, row_ptr, col, val, x, y);
}
extern "C" __global__ void __launch_bounds__(kSpmvThreads, 1)
    spmv_degree_split_fast(const int* __restrict__ first_row, const int* __restrict__ row_ptr, const int* __restrict__ col,
                           const float* __restrict__ val, const float* __restrict__ x, float* __restrict__ y) {
    spmv_rows(first_row, row_ptr, col, val, x, y);
}
__global__ void spmv_columns(int* __restrict__ col, size_t nnz, int rows) {
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < nnz; j += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)j * 2654435761u ^ 0x27d4eb2fu;
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        col[j] = (int)(h % (unsigned)rows);
    }
}

// ---------------------------------------------------------------- none: a row sum ending in a shared-memory tree or in warp shuffles
// Row sums of 1,056 rows of 65,536 floats (277 MB: one wave of 8 blocks an SM), one 256-thread block a row: each thread sums its
// 64 float4 (8 loads in flight at a time, in the same order on both sides), then the block combines
// its 256 partial sums. The "slow" kernel does it the textbook way, a tree in shared memory (8 steps,
// a __syncthreads() after each: 9 barriers a row, 8 of them in the tree); the fast one with a 5-step
// shuffle sum in each warp and one barrier before warp 0 adds the 8 warp sums. Sums within 1e-5
// (positive inputs). Both wait on DRAM: a block streams 256 KB (~110 K cycles of an SM's share of DRAM
// at 8 blocks an SM) against a tree of ~300 cycles once at its end. Planted as taking the same time
// (~70 us); excess synchronization named as the cause is a false alarm.
constexpr int kRowSumCols = 65536, kRowSumBatch = 8;
__device__ __forceinline__ float row_sum_partial(const float4* __restrict__ row) {
    float s = 0.f;
    for (int c0 = 0; c0 < kRowSumCols / 4; c0 += kThreads * kRowSumBatch) {
        float4 v[kRowSumBatch];
#pragma unroll
        for (int u = 0; u < kRowSumBatch; ++u) v[u] = row[c0 + u * kThreads + threadIdx.x];
#pragma unroll
        for (int u = 0; u < kRowSumBatch; ++u) s += (v[u].x + v[u].y) + (v[u].z + v[u].w);
    }
    return s;
}
extern "C" __global__ void __launch_bounds__(kThreads) same_tree_shuffle_slow(const float4* __restrict__ in, float* __restrict__ sums) {
    __shared__ float partial[kThreads];
    partial[threadIdx.x] = row_sum_partial(in + (size_t)blockIdx.x * (kRowSumCols / 4));
    __syncthreads();
#pragma unroll
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = partial[0];
}
extern "C" __global__ void __launch_bounds__(kThreads) same_tree_shuffle_fast(const float4* __restrict__ in, float* __restrict__ sums) {
    __shared__ float warp_sums[kThreads / 32];
    float s = row_sum_partial(in + (size_t)blockIdx.x * (kRowSumCols / 4));
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.f;
#pragma unroll
        for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
        sums[blockIdx.x] = total;
    }
}

// ---------------------------------------------------------------- the pairs
static void add_set14_pairs(std::vector<Pair>& pairs) {
    auto none = [] {};
    {   // a rod split over a block pair, launched in clusters of 4
        int blocks = g_sms / 4 * 4;
        size_t n = (size_t)blocks * kRodHalf;
        float *in = random_floats(n, 171, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"rod_cluster4", none,
            [=] { rod_cluster4_slow<<<blocks, kRodThreads>>>((const float4*)in, (float4*)a); },
            [=] { rod_cluster4_fast<<<blocks, kRodThreads>>>((const float4*)in, (float4*)b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // an NF4 codebook in __constant__ memory
        size_t words = kNf4Words;
        unsigned* packed = dev<unsigned>(words);
        nf4_random_words<<<g_sms * 8, kThreads>>>(packed, words);
        CHECK(cudaGetLastError());
        float* absmax = random_floats(words * 8 / kNf4CodesPerScale, 172, 0.5f, 2.0f);
        float* codebook = dev<float>(16);
        CHECK(cudaMemcpy(codebook, kNf4Codebook, sizeof kNf4Codebook, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpyToSymbol(c_nf4_codebook, kNf4Codebook, sizeof kNf4Codebook));
        uint4 *a = dev<uint4>(words), *b = dev<uint4>(words);
        pairs.push_back({"nf4_codebook", none,
            [=] { nf4_codebook_slow<<<words / kThreads, kThreads>>>(packed, absmax, codebook, a); },
            [=] { nf4_codebook_fast<<<words / kThreads, kThreads>>>(packed, absmax, codebook, b); },
            [=](std::string& w) { return compare_bytes(a, b, words * sizeof(uint4), w); }});
    }
    {   // a scatter-add of messages sorted by destination
        size_t n = kScatterMessages, nodes = n / kScatterPerNode;
        int* dst = dev<int>(n);
        scatter_sorted_destinations<<<g_sms * 8, kThreads>>>(dst, n);
        CHECK(cudaGetLastError());
        float *msg = random_floats(n, 173, 0, 1), *a = dev<float>(nodes), *b = dev<float>(nodes);
        pairs.push_back({"scatter_sorted",
            [=] { CHECK(cudaMemset(a, 0, nodes * sizeof(float))); CHECK(cudaMemset(b, 0, nodes * sizeof(float))); },
            [=] { scatter_sorted_slow<<<n / kThreads, kThreads>>>(dst, msg, a); },
            [=] { scatter_sorted_fast<<<n / kThreads, kThreads>>>(dst, msg, b); },
            [=](std::string& w) { return compare_floats(a, b, nodes, 1e-4, w); }});
    }
    {   // horizontally fused ops, element loops unrolled by 12
        int blocks = g_sms * 8;
        size_t per_op = (size_t)blocks * 32 * kFusedUnroll * kFusedIters, n = per_op * kFusedOps;
        float *in = random_floats(n, 174, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"fused_ops_unroll", none,
            [=] { fused_ops_unroll_slow<<<blocks, kThreads>>>(in, a, per_op); },
            [=] { fused_ops_unroll_fast<<<blocks, kThreads>>>(in, b, per_op); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // a CSR SpMV over degree-ordered rows, equal row ranges
        int blocks = g_sms, rows = g_sms * kSpmvRowsPerBlock;
        std::vector<int> ptr(rows + 1, 0);
        for (int r = 0; r < rows; ++r) ptr[r + 1] = ptr[r] + spmv_degree(r, rows);
        size_t nnz = ptr[rows];
        int* row_ptr = dev<int>(rows + 1);
        CHECK(cudaMemcpy(row_ptr, ptr.data(), (rows + 1) * sizeof(int), cudaMemcpyHostToDevice));
        int* col = dev<int>(nnz);
        spmv_columns<<<g_sms * 8, kThreads>>>(col, nnz, rows);
        CHECK(cudaGetLastError());
        float *val = random_floats(nnz, 175, -1, 1), *x = random_floats(rows, 176, -1, 1);
        float *a = dev<float>(rows), *b = dev<float>(rows);
        std::vector<int> by_rows(blocks + 1), by_cost(blocks + 1);  // the partition tables
        std::vector<double> cost(rows + 1, 0.0);
        for (int r = 0; r < rows; ++r) cost[r + 1] = cost[r] + 0.6 + (spmv_degree(r, rows) + 31) / 32;
        for (int k = 0, r = 0; k <= blocks; ++k) {
            by_rows[k] = (int)((long long)k * rows / blocks);
            while (r < rows && cost[r] < cost[rows] * k / blocks) ++r;
            by_cost[k] = k == blocks ? rows : r;
        }
        int *slow_split = dev<int>(blocks + 1), *fast_split = dev<int>(blocks + 1);
        CHECK(cudaMemcpy(slow_split, by_rows.data(), (blocks + 1) * sizeof(int), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(fast_split, by_cost.data(), (blocks + 1) * sizeof(int), cudaMemcpyHostToDevice));
        pairs.push_back({"spmv_degree_split", none,
            [=] { spmv_degree_split_slow<<<blocks, kSpmvThreads>>>(slow_split, row_ptr, col, val, x, a); },
            [=] { spmv_degree_split_fast<<<blocks, kSpmvThreads>>>(fast_split, row_ptr, col, val, x, b); },
            [=](std::string& w) { return compare_floats(a, b, rows, 0, w); }});
    }
    {   // a row sum ending in a shared-memory tree or in warp shuffles (the same time)
        int rows = g_sms * 8;
        size_t n = (size_t)rows * kRowSumCols;
        float *in = random_floats(n, 177, 0, 1), *a = dev<float>(rows), *b = dev<float>(rows);
        pairs.push_back({"same_tree_shuffle", none,
            [=] { same_tree_shuffle_slow<<<rows, kThreads>>>((const float4*)in, a); },
            [=] { same_tree_shuffle_fast<<<rows, kThreads>>>((const float4*)in, b); },
            [=](std::string& w) { return compare_floats(a, b, rows, 1e-5, w); }});
    }
}
