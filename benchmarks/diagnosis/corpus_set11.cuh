// The eleventh set of planted pairs of corpus.cu, held out like sets 3-10: written, labelled and
// committed before its first GPU run and before any rule changed for it. Five causes in code shapes
// the other sets lack (a small MLP whose weights each thread caches in registers, a row kernel with one
// block per row on few rows, per-channel filter taps in constant memory with the channels on the lanes,
// a quasi-random sum kept in double, atomics with libcu++'s default sequentially consistent order) and
// one pair that should take the same time (an FMA-bound kernel launched with 64 KB of shared memory it
// does not use, which lowers its occupancy but not its FMA rate).
#pragma once
#include <cooperative_groups.h>
#include <cuda/atomic>
#include <vector>
#include "harness.cuh"
#include "corpus_set4.cuh"  // random_indices

// ---------------------------------------------------------------- occupancy-registers (weights cached in registers)
// A per-element MLP 1 -> 8 -> 8 -> 1 with ReLUs (96 weights: w1, b1, W2, b2, w3) over 32 M floats, one
// element per iteration of a rolled grid-stride loop, 8 blocks of 256 per SM in the grid. The slow
// kernel copies the weights from global memory into a register array before its loop, "to read them
// once" (24 LDG.128): 126 registers a thread (cuobjdump -res-usage), so 2 blocks fit an SM (16 warps,
// 25 %). The fast one reads them from __constant__ memory (ULDC into uniform registers, which the
// FFMAs take as operands, and a few LDC): 32 registers, 8 blocks (64 warps). Both issue the same 80
// FFMA and 16 FMNMX per element in the same order (identical outputs) and one 4-byte load and store.
// Expected: the fast kernel is issue-bound (~135 instructions per element with the ULDCs, 16 warps a
// scheduler cover a load's latency: ~150 us); the slow one has 4 warps a scheduler, each waiting out
// a DRAM load (~0.6-1 us, 1000-1700 cycles) per element against ~110 issue cycles of its own, so a
// scheduler issues ~440 instructions per ~1300 cycles: about 2x.
constexpr int kMlpHidden = 8;
constexpr int kMlpW1 = 0, kMlpB1 = kMlpW1 + kMlpHidden, kMlpW2 = kMlpB1 + kMlpHidden,
              kMlpB2 = kMlpW2 + kMlpHidden * kMlpHidden, kMlpW3 = kMlpB2 + kMlpHidden, kMlpWeights = kMlpW3 + kMlpHidden;
__constant__ float c_mlp_weights[kMlpWeights];
template <class Weight>
__device__ __forceinline__ float mlp_eval(float x, Weight w) {
    float h[kMlpHidden];
#pragma unroll
    for (int j = 0; j < kMlpHidden; ++j) h[j] = fmaxf(fmaf(x, w(kMlpW1 + j), w(kMlpB1 + j)), 0.f);
    float y = 0.f;
#pragma unroll
    for (int k = 0; k < kMlpHidden; ++k) {
        float a = w(kMlpB2 + k);
#pragma unroll
        for (int j = 0; j < kMlpHidden; ++j) a = fmaf(w(kMlpW2 + k * kMlpHidden + j), h[j], a);
        y = fmaf(w(kMlpW3 + k), fmaxf(a, 0.f), y);
    }
    return y;
}
extern "C" __global__ void mlp_registers_slow(const float4* __restrict__ weights, const float* __restrict__ in,
                                              float* __restrict__ out, size_t n) {
    float w[kMlpWeights];
#pragma unroll
    for (int e = 0; e < kMlpWeights / 4; ++e) {
        float4 v = weights[e];
        w[4 * e] = v.x; w[4 * e + 1] = v.y; w[4 * e + 2] = v.z; w[4 * e + 3] = v.w;
    }
#pragma unroll 1
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = mlp_eval(in[i], [&](int e) { return w[e]; });
}
extern "C" __global__ void mlp_registers_fast(const float4* __restrict__ weights, const float* __restrict__ in,
                                              float* __restrict__ out, size_t n) {
    (void)weights;  // the same values, copied to c_mlp_weights before the launches
#pragma unroll 1
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = mlp_eval(in[i], [](int e) { return c_mlp_weights[e]; });
}

// ---------------------------------------------------------------- grid-too-small (one block per row, few rows)
// Row centering, out = x - mean(row), over 64 rows of 512 K floats (128 MB): a pass that sums the
// row, a block-wide sum, and a pass that re-reads the row and writes it centred. The slow kernel gives
// each row one 256-thread block: 64 blocks, so 68 of the 132 SMs idle and 64 x 256 threads carry the
// whole stream. The fast one splits each row over a cluster of 4 blocks (256 blocks, about 2 per SM),
// which add their quarter sums through distributed shared memory (two cluster barriers and four DSMEM
// loads per block, once); per thread the same loops (a quarter of the trip count, unrolled by 4 alike),
// the same float4 loads and stores. The inputs are multiples of 1/16 in [-1, 1], so every partial sum
// is exact (at most 2^23 sixteenths) and the two means, and outputs, are bitwise equal. Expected: the
// slow kernel keeps 4x fewer loads in flight (64 x 256 threads x 4 float4 = 1 MB against 4 MB), too
// few to cover DRAM's latency (~2 MB at 3.35 TB/s), while the fast one streams near the DRAM limit
// (384 MB moved: ~130 us): about 2x.
constexpr int kFewRows = 64, kRowFloat4 = 131072, kRowCluster = 4;
__device__ __forceinline__ float block_sum_256(float s) {
    __shared__ float warp_sums[kThreads / 32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
    return total;
}
__device__ __forceinline__ float span_sum(const float4* __restrict__ span, int count) {
    float s = 0.f;
#pragma unroll 4
    for (int c = threadIdx.x; c < count; c += kThreads) {
        float4 v = span[c];
        s += (v.x + v.y) + (v.z + v.w);
    }
    return s;
}
__device__ __forceinline__ void span_center(const float4* __restrict__ span, float4* __restrict__ dst, int count, float mean) {
#pragma unroll 4
    for (int c = threadIdx.x; c < count; c += kThreads) {
        float4 v = span[c];
        dst[c] = make_float4(v.x - mean, v.y - mean, v.z - mean, v.w - mean);
    }
}
extern "C" __global__ void few_rows_slow(const float4* __restrict__ in, float4* __restrict__ out) {
    size_t row = blockIdx.x;
    const float4* src = in + row * kRowFloat4;
    float total = block_sum_256(span_sum(src, kRowFloat4));
    span_center(src, out + row * kRowFloat4, kRowFloat4, total * (1.0f / (4 * kRowFloat4)));
}
extern "C" __global__ void __cluster_dims__(kRowCluster, 1, 1) few_rows_fast(const float4* __restrict__ in, float4* __restrict__ out) {
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    __shared__ float quarter_sum;
    unsigned rank = cluster.block_rank();
    size_t row = blockIdx.x / kRowCluster, first = row * kRowFloat4 + rank * (kRowFloat4 / kRowCluster);
    float quarter = block_sum_256(span_sum(in + first, kRowFloat4 / kRowCluster));
    if (threadIdx.x == 0) quarter_sum = quarter;
    cluster.sync();
    float total = 0.f;
#pragma unroll
    for (int r = 0; r < kRowCluster; ++r) total += *cluster.map_shared_rank(&quarter_sum, r);
    cluster.sync();  // no block leaves while another still reads its sum
    span_center(in + first, out + first, kRowFloat4 / kRowCluster, total * (1.0f / (4 * kRowFloat4)));
}
__global__ void round_to_sixteenths(float* p, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = rintf(p[i] * 16.0f) * 0.0625f;
}

// ---------------------------------------------------------------- constant-cache-serialization (per-channel taps on the lanes)
// A depthwise 9-tap filter along the positions of channels-last data (64 channels: element i is
// channel i % 64 of position i / 64, so a warp's 32 lanes are 32 channels of one position). Each channel
// has its own taps, stored [tap][channel]. The slow kernel keeps them in __constant__ memory: every
// LDC of a warp asks for 32 different words, which the constant cache serves one after another; the
// fast one reads the same array from global memory (one 128-byte L1 request per warp and tap). Same
// FFMAs, same order, identical outputs. Expected: 9 LDC x 32 addresses = 288 constant-cache requests
// per warp, at the ~1.5 a cycle per SM that set 7's cubic_lut implies (3.4x for ~100 a warp): ~0.4 ms for
// 512 K warps, against ~50 us for the fast kernel, which is bound by its 128 MB of DRAM traffic and
// ~18 L1 wavefronts a warp: several times slower.
constexpr int kTapChannels = 64, kChannelTaps = 9;
__constant__ float c_channel_taps[kChannelTaps * kTapChannels];
extern "C" __global__ void channel_taps_slow(const float* __restrict__ taps, const float* __restrict__ in, float* __restrict__ out) {
    (void)taps;  // the same values, copied to c_channel_taps before the launches
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int c = (int)(i % kTapChannels);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < kChannelTaps; ++k) s = fmaf(c_channel_taps[k * kTapChannels + c], in[i + (size_t)k * kTapChannels], s);
    out[i] = s;
}
extern "C" __global__ void channel_taps_fast(const float* __restrict__ taps, const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int c = (int)(i % kTapChannels);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < kChannelTaps; ++k) s = fmaf(taps[k * kTapChannels + c], in[i + (size_t)k * kTapChannels], s);
    out[i] = s;
}

// ---------------------------------------------------------------- fp64-arithmetic (a sum kept in double)
// The mean of u^2 over 2048 quasi-random points per thread (a Weyl sequence in 32-bit fixed point,
// its top 23 bits made a float in [0, 1)): a Monte Carlo estimate. The slow kernel keeps the sum in a
// double "for accuracy", so each point's float square is widened (F2F.F64.F32) and added on the FP64
// pipe (DADD); the fast one keeps it in a float (one FFMA). One load and one store per thread; the
// results differ by the float sum's rounding (checked to 1e-4). Expected: the slow kernel is bound by
// the conversions (the XU pipe, 16 lanes a cycle per SM: 2 cycles per warp and point) against ~4 issue
// slots per point on the fast side (1 cycle per warp and point on 4 schedulers): about 2x.
constexpr int kWeylPoints = 2048;
template <class Sum>
__device__ __forceinline__ float weyl_mean_square(unsigned h) {
    Sum sum = 0;
#pragma unroll 8
    for (int k = 0; k < kWeylPoints; ++k) {
        h += 0x9E3779B9u;
        float u = __uint_as_float((h >> 9) | 0x3f800000u) - 1.0f;
        sum += u * u;
    }
    return (float)sum * (1.0f / kWeylPoints);
}
extern "C" __global__ void double_sum_slow(const unsigned* __restrict__ seeds, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = weyl_mean_square<double>(seeds[i]);
}
extern "C" __global__ void double_sum_fast(const unsigned* __restrict__ seeds, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = weyl_mean_square<float>(seeds[i]);
}

// ---------------------------------------------------------------- memory-fences (sequentially consistent atomics)
// Cloud-in-cell deposition: 4 M particles at fixed-point positions (24.8 bits per axis) spread a unit
// charge over the 8 corners of their cell in a 128^3 grid of 32-bit fixed-point counters (8 MB,
// L2-resident; integer weights (256 - f) or f per axis, which sum to 2^24 exactly), through
// cuda::atomic_ref, in a persistent grid of one 256-thread block per SM on both sides. The slow kernel
// calls fetch_add with the default order, memory_order_seq_cst, which compiles to a fence before
// each of the 8 atomics (MEMBAR.SC.GPU, ERRBAR, and L1 invalidations, CCTL.IVALL, around the ATOM):
// each fence waits until the atomic before it has reached L2 and come back. The fast one asks for
// memory_order_relaxed, all a deposition needs (nobody reads the grid before the kernel ends). Same
// loads, same integer math, same ATOMs: identical counters. Expected: a slow thread spends a load
// latency and 8 atomic round trips to L2 per particle (~0.7 + 8 x 0.4 us; 124 particles a thread:
// ~0.5 ms, ~70 G atomics/s), the fast one a load latency per particle with its 8 atomics in flight at
// once, up to L2's atomic rate (32 M atomics at ~200 G/s: ~160 us): about 3x.
constexpr int kCicGrid = 128;
template <cuda::memory_order kOrder>
__device__ __forceinline__ void cic_deposit(const unsigned* __restrict__ px, const unsigned* __restrict__ py,
                                            const unsigned* __restrict__ pz, unsigned* cells, size_t n) {
    for (size_t p = (size_t)blockIdx.x * blockDim.x + threadIdx.x; p < n; p += (size_t)gridDim.x * blockDim.x) {
        unsigned x = px[p], y = py[p], z = pz[p];
        unsigned ix = x >> 8, iy = y >> 8, iz = z >> 8, fx = x & 255u, fy = y & 255u, fz = z & 255u;
#pragma unroll
        for (int corner = 0; corner < 8; ++corner) {
            unsigned dx = corner & 1, dy = (corner >> 1) & 1, dz = corner >> 2;
            unsigned weight = (dx ? fx : 256u - fx) * (dy ? fy : 256u - fy) * (dz ? fz : 256u - fz);
            size_t cell = ((size_t)(iz + dz) * kCicGrid + (iy + dy)) * kCicGrid + (ix + dx);
            cuda::atomic_ref<unsigned, cuda::thread_scope_device>(cells[cell]).fetch_add(weight, kOrder);
        }
    }
}
extern "C" __global__ void seq_cst_deposit_slow(const unsigned* __restrict__ px, const unsigned* __restrict__ py,
                                                const unsigned* __restrict__ pz, unsigned* cells, size_t n) {
    cic_deposit<cuda::memory_order_seq_cst>(px, py, pz, cells, n);
}
extern "C" __global__ void seq_cst_deposit_fast(const unsigned* __restrict__ px, const unsigned* __restrict__ py,
                                                const unsigned* __restrict__ pz, unsigned* cells, size_t n) {
    cic_deposit<cuda::memory_order_relaxed>(px, py, pz, cells, n);
}

// ---------------------------------------------------------------- none: 64 KB of unused shared memory, FMA-bound
// A Chebyshev series of 256 terms (Clenshaw's recurrence: an FADD and an FFMA a term) at 4 points per
// thread, its coefficients repeating every 16 terms (immediates in a 16-term loop body). The same
// kernel launched with 64 KB of dynamic shared memory it never touches (what a launch helper sized for
// a sibling variant asks for): 3 blocks of 256 fit an SM (24 warps) against 8 (64 warps). A term's
// FFMA waits ~4 cycles for the one before; 6 warps a scheduler with 4 independent recurrences each (24
// in flight) still issue an FP32 instruction every cycle, so both keep the FMA pipe busy (~2,080
// instructions a thread, 4 M threads: ~0.3 ms), and the last partial wave (41 waves against 15.5)
// still holds enough warps. Planted as taking the same time; a rule that reads the lower occupancy as
// the cause is a false alarm.
constexpr int kClenshawTerms = 256, kClenshawPeriod = 16, kClenshawPoints = 4, kUnusedSmem = 64 * 1024;
__device__ __forceinline__ constexpr float clenshaw_coefficient(int k) { return 1.0f / (float)(k % kClenshawPeriod + 2); }
__device__ __forceinline__ void clenshaw_points(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    float x2[kClenshawPoints], b1[kClenshawPoints], b2[kClenshawPoints];
#pragma unroll
    for (int p = 0; p < kClenshawPoints; ++p) { x2[p] = 2.0f * in[i + p * stride]; b1[p] = 0.f; b2[p] = 0.f; }
#pragma unroll 1
    for (int k0 = kClenshawTerms - kClenshawPeriod; k0 >= 0; k0 -= kClenshawPeriod) {
#pragma unroll
        for (int k = kClenshawPeriod - 1; k >= 0; --k) {
#pragma unroll
            for (int p = 0; p < kClenshawPoints; ++p) {
                float b = fmaf(x2[p], b1[p], clenshaw_coefficient(k) - b2[p]);
                b2[p] = b1[p];
                b1[p] = b;
            }
        }
    }
#pragma unroll
    for (int p = 0; p < kClenshawPoints; ++p) out[i + p * stride] = fmaf(0.5f * x2[p], b1[p], -b2[p]);
}
extern "C" __global__ void same_smem_64k_slow(const float* __restrict__ in, float* __restrict__ out) { clenshaw_points(in, out); }
extern "C" __global__ void same_smem_64k_fast(const float* __restrict__ in, float* __restrict__ out) { clenshaw_points(in, out); }

// ---------------------------------------------------------------- the pairs
static void add_set11_pairs(std::vector<Pair>& pairs) {
    auto none = [] {};
    {   // weights cached in registers
        size_t n = (size_t)32 << 20;
        int blocks = g_sms * 8;
        float *weights = random_floats(kMlpWeights, 141, -0.5f, 0.5f), *in = random_floats(n, 142, -2, 2);
        float *a = dev<float>(n), *b = dev<float>(n);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpyToSymbol(c_mlp_weights, weights, kMlpWeights * sizeof(float), 0, cudaMemcpyDeviceToDevice));
        pairs.push_back({"mlp_registers", none,
            [=] { mlp_registers_slow<<<blocks, kThreads>>>((const float4*)weights, in, a, n); },
            [=] { mlp_registers_fast<<<blocks, kThreads>>>((const float4*)weights, in, b, n); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // one block per row on few rows
        size_t n4 = (size_t)kFewRows * kRowFloat4;
        float* in = random_floats(n4 * 4, 143, -1, 1);
        round_to_sixteenths<<<g_sms * 8, kThreads>>>(in, n4 * 4);
        CHECK(cudaGetLastError());
        float4 *a = dev<float4>(n4), *b = dev<float4>(n4);
        pairs.push_back({"few_rows", none,
            [=] { few_rows_slow<<<kFewRows, kThreads>>>((const float4*)in, a); },
            [=] { few_rows_fast<<<kFewRows * kRowCluster, kThreads>>>((const float4*)in, b); },
            [=](std::string& w) { return compare_floats((float*)a, (float*)b, n4 * 4, 0, w); }});
    }
    {   // per-channel taps in constant memory
        size_t positions = (size_t)256 << 10, n = positions * kTapChannels;
        float *taps = random_floats(kChannelTaps * kTapChannels, 144, -1, 1);
        float *in = random_floats(n + (kChannelTaps - 1) * kTapChannels, 145, -1, 1);  // padded: no bounds checks
        float *a = dev<float>(n), *b = dev<float>(n);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpyToSymbol(c_channel_taps, taps, kChannelTaps * kTapChannels * sizeof(float), 0, cudaMemcpyDeviceToDevice));
        pairs.push_back({"channel_taps", none,
            [=] { channel_taps_slow<<<n / kThreads, kThreads>>>(taps, in, a); },
            [=] { channel_taps_fast<<<n / kThreads, kThreads>>>(taps, in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // a sum kept in double
        size_t n = (size_t)g_sms * 16 * kThreads;  // two full waves of 8 blocks per SM
        unsigned* seeds = (unsigned*)random_floats(n, 146, 0, 1);  // any bits will do
        float *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"double_sum", none,
            [=] { double_sum_slow<<<n / kThreads, kThreads>>>(seeds, a); },
            [=] { double_sum_fast<<<n / kThreads, kThreads>>>(seeds, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 1e-4, w); }});
    }
    {   // sequentially consistent atomics
        size_t n = (size_t)4 << 20, cells = (size_t)kCicGrid * kCicGrid * kCicGrid;
        unsigned range = (kCicGrid - 1) << 8;  // a cell and its upper neighbours stay inside the grid
        unsigned *px = dev<unsigned>(n), *py = dev<unsigned>(n), *pz = dev<unsigned>(n);
        random_indices<<<g_sms * 8, kThreads>>>(px, n, range, 147);
        random_indices<<<g_sms * 8, kThreads>>>(py, n, range, 148);
        random_indices<<<g_sms * 8, kThreads>>>(pz, n, range, 149);
        CHECK(cudaGetLastError());
        unsigned *a = dev<unsigned>(cells), *b = dev<unsigned>(cells);
        pairs.push_back({"seq_cst_deposit",
            [=] { CHECK(cudaMemset(a, 0, cells * 4)); CHECK(cudaMemset(b, 0, cells * 4)); },
            [=] { seq_cst_deposit_slow<<<g_sms, kThreads>>>(px, py, pz, a, n); },
            [=] { seq_cst_deposit_fast<<<g_sms, kThreads>>>(px, py, pz, b, n); },
            [=](std::string& w) { return compare_bytes(a, b, cells * 4, w); }});
    }
    {   // 64 KB of unused shared memory (the same time)
        size_t threads = (size_t)4 << 20, n = threads * kClenshawPoints;
        float *in = random_floats(n, 150, -1, 1), *a = dev<float>(n), *b = dev<float>(n);
        CHECK(cudaFuncSetAttribute(same_smem_64k_slow, cudaFuncAttributeMaxDynamicSharedMemorySize, kUnusedSmem));
        pairs.push_back({"same_smem_64k", none,
            [=] { same_smem_64k_slow<<<threads / kThreads, kThreads, kUnusedSmem>>>(in, a); },
            [=] { same_smem_64k_fast<<<threads / kThreads, kThreads>>>(in, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
}
