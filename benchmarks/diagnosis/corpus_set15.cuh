// The fifteenth set of planted pairs of corpus.cu, held out like sets 3-14: written and labelled before
// its first GPU run and before any rule changed for it, by an author who had not read the rules. Causes
// behind CUDA idioms that application code uses: a per-channel colour correction of a batch of RGBA
// frames indexed in planar (NCHW) order over interleaved (NHWC) pixels; the QK^T scores of a long-context
// decode step streamed through a two-buffer cp.async pipeline that still waits for every copy; Lennard-
// Jones pair forces over a half neighbour list (Newton's third law) accumulated in 64-bit fixed point, the
// warp's own atom updated by every lane; a Monte-Carlo option pricer launched on a fixed <<<64, 256>>>
// grid; AES-128 CTR keystream through one shared T-table; the shading stage of a wavefront path tracer
// fed hits in generation order rather than sorted by material; and an ensemble of Duffing oscillators
// integrated one oscillator after another; and one pair that should take the same time (a DRAM-bound
// multi-tensor squared L2 norm accumulated per thread in double against float).
#pragma once
#include <cuda_bf16.h>
#include <algorithm>
#include <numeric>
#include <vector>
#include "harness.cuh"

// ---------------------------------------------------------------- uncoalesced-access (planar indexing over interleaved RGBA frames)
// White balance and black level on a batch of 128 RGBA float frames of 256 x 256 pixels stored
// interleaved (NHWC, channels_last: pixel p's 4 channels in 16 consecutive bytes): out = clamp(x *
// gain[c] + bias[c], 0, 1), a thread per value. The slow kernel decomposes its flat index in NCHW order
// (frame, channel, pixel; the pixel fastest), as a kernel written for planar tensors does, then
// addresses the NHWC storage: the 32 lanes of a warp read one channel of 32 consecutive pixels, 16 bytes
// apart, so every 4-byte load and store touches 16 sectors (512 bytes) for 128 useful bytes; the fast
// one decomposes the same index in storage order (frame, pixel, channel), so a warp reads 128
// consecutive bytes (4 sectors). Same loads, FFMA, clamps and stores; identical outputs. The 4 channel
// planes of a frame are 256 blocks apart, all resident together, so the other 3 channels of a sector
// come from L2 and DRAM traffic stays 128 + 128 MB on both sides. Expected: the fast kernel moves its
// 256 MB at the DRAM rate (~65 us at ~4 TB/s); the slow one moves 4x the sectors between L1 and L2 (512
// MB of load sectors and 512 MB of partial store sectors, 32 M requests of 16 sectors), L2-bound at
// roughly twice the DRAM rate: ~140 us, ~2.2x.
constexpr unsigned kRgbaFrames = 128, kRgbaPixels = 256 * 256, kRgbaChannels = 4;
constexpr size_t kRgbaValues = (size_t)kRgbaFrames * kRgbaPixels * kRgbaChannels;
__device__ __forceinline__ float white_balance(float x, float gain, float bias) {
    return fminf(fmaxf(fmaf(x, gain, bias), 0.f), 1.f);
}
extern "C" __global__ void rgba_planar_slow(const float* __restrict__ in, const float* __restrict__ gain,
                                            const float* __restrict__ bias, float* __restrict__ out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;  // NCHW order: the pixel fastest
    unsigned p = i % kRgbaPixels, c = (i / kRgbaPixels) % kRgbaChannels, f = i / (kRgbaPixels * kRgbaChannels);
    unsigned a = (f * kRgbaPixels + p) * kRgbaChannels + c;  // the NHWC storage
    out[a] = white_balance(in[a], gain[c], bias[c]);
}
extern "C" __global__ void rgba_planar_fast(const float* __restrict__ in, const float* __restrict__ gain,
                                            const float* __restrict__ bias, float* __restrict__ out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;  // NHWC order: the channel fastest
    unsigned c = i % kRgbaChannels, p = (i / kRgbaChannels) % kRgbaPixels, f = i / (kRgbaPixels * kRgbaChannels);
    unsigned a = (f * kRgbaPixels + p) * kRgbaChannels + c;
    out[a] = white_balance(in[a], gain[c], bias[c]);
}

// ---------------------------------------------------------------- exposed-latency (a two-buffer cp.async pipeline that waits for every copy)
// The scores q . k / sqrt(128) of one decode step against a 540,672-key bf16 K cache (head dim 128, 256
// bytes a key, 138 MB), split over the SMs as flash-decoding does: a persistent grid of one 256-thread
// block per SM, each block streaming its 4,096 keys through shared memory in 256 tiles of 16 keys (4 KB:
// one 16-byte cp.async.cg a thread), two tile buffers. Warp w scores keys 2w and 2w + 1 of a tile (an
// 8-byte LDS a lane, 4 bf16 unpacked, 4 FFMA against q held in registers, a 5-step shuffle sum, lane 0
// stores); two barriers a tile on both sides. The fast kernel asks for tile k + 1 before it waits for
// tile k (cp.async.wait_group 1: one copy always in flight under the wait and the arithmetic); the slow
// one has the same two buffers but asks for tile k only at the top of iteration k and waits for it
// (wait_group 0), so each tile pays a full DRAM round trip with nothing else in flight. Same copies,
// LDS, FFMA, shuffles and stores; identical outputs. Expected: 4 KB in flight an SM (528 KB over the
// GPU) is far below what the DRAM needs; a tile costs the slow block one round trip L (~1,000 cycles
// loaded) plus ~100 cycles of arithmetic and barriers, the fast one (L + 100) / 2 in steady state: ~2x
// (~160 us against ~85 us).
constexpr int kKvDim = 128, kKvTileKeys = 16, kKvTilesPerBlock = 256;
constexpr int kKvKeysPerBlock = kKvTileKeys * kKvTilesPerBlock;
constexpr float kKvScale = 0.08838834764831845f;  // 1 / sqrt(128)
static_assert(kKvTileKeys * kKvDim * 2 == kThreads * 16, "a tile is one 16-byte copy a thread");
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory"); }
__device__ __forceinline__ float bf16_lo(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(unsigned w) { return __uint_as_float(w & 0xffff0000u); }
template <bool kOneTileAhead>
__device__ __forceinline__ void kv_tile_scores(const uint4* __restrict__ keys, const float4* __restrict__ q, float* __restrict__ scores) {
    __shared__ __align__(16) uint4 tile[2][kThreads];
    int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const uint4* src = keys + (size_t)blockIdx.x * kKvTilesPerBlock * kThreads;
    float* dst = scores + (size_t)blockIdx.x * kKvKeysPerBlock;
    float4 qv = q[lane];  // dims 4 lane .. 4 lane + 3
    if (kOneTileAhead) {
        cp_async_16(&tile[0][t], &src[t]);
        cp_async_commit();
    }
    for (int k = 0; k < kKvTilesPerBlock; ++k) {
        int b = k & 1;
        if (kOneTileAhead) {
            if (k + 1 < kKvTilesPerBlock) cp_async_16(&tile[b ^ 1][t], &src[(size_t)(k + 1) * kThreads + t]);
            cp_async_commit();
            cp_async_wait<1>();  // tile k has landed; tile k + 1 stays in flight
        } else {
            cp_async_16(&tile[b][t], &src[(size_t)k * kThreads + t]);
            cp_async_commit();
            cp_async_wait<0>();
        }
        __syncthreads();
        const uint2* keys8 = reinterpret_cast<const uint2*>(&tile[b][0]);  // key j: 32 uint2 at 32 j
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            int key = 2 * warp + h;
            uint2 raw = keys8[key * 32 + lane];
            float s = fmaf(bf16_lo(raw.x), qv.x, fmaf(bf16_hi(raw.x), qv.y, fmaf(bf16_lo(raw.y), qv.z, bf16_hi(raw.y) * qv.w)));
#pragma unroll
            for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
            if (lane == 0) dst[k * kKvTileKeys + key] = s * kKvScale;
        }
        __syncthreads();  // the buffer just read is the next copy's target
    }
}
extern "C" __global__ void __launch_bounds__(kThreads) kv_pipeline_slow(const uint4* __restrict__ keys, const float4* __restrict__ q,
                                                                        float* __restrict__ scores) {
    kv_tile_scores<false>(keys, q, scores);
}
extern "C" __global__ void __launch_bounds__(kThreads) kv_pipeline_fast(const uint4* __restrict__ keys, const float4* __restrict__ q,
                                                                        float* __restrict__ scores) {
    kv_tile_scores<true>(keys, q, scores);
}
// bf16 values in [-1, 1), two a word, from a hash of the word index.
__global__ void kv_random_bf16(unsigned* __restrict__ p, size_t words) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ 0x1b873593u;
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        float lo = (float)(h & 0xffffu) * (2.0f / 65536.0f) - 1.0f, hi = (float)(h >> 16) * (2.0f / 65536.0f) - 1.0f;
        p[i] = (__float_as_uint(lo) >> 16) | (__float_as_uint(hi) & 0xffff0000u);
    }
}

// ---------------------------------------------------------------- atomic-contention (Newton's third law: every lane adds to the warp's own atom)
// Lennard-Jones forces (epsilon = sigma = 1, cut at 2.5) on 131,072 atoms of a jittered 64 x 64 x 32
// lattice (spacing 1.12, periodic, minimum image), over a half neighbour list (each pair once: 32
// forward neighbours an atom), accumulated in 64-bit fixed point (2^32 units, as AMBER's SPFP does, so
// sums are exact and order-free). One warp an atom i, lane l its neighbour j: load j and its position,
// the pair force f (~30 FP32 instructions, one MUFU.RCP; straight-line, the cutoff a multiply by 0 or
// 1), converted to fixed point (F2I.S64); j receives -f with 3 RED.E.ADD.64 on both sides (32 distinct
// atoms a warp). The slow kernel also adds +f to i with 3
// RED.64 a lane, as a scalar loop body ported to one-thread-a-pair does: every lane of the warp updates
// the same 3 words, so each RED carries 32 updates of one address, which its L2 slice applies one after
// another; the fast one first sums the 32 lanes' i-forces with a 5-step 64-bit shuffle sum and lane 0
// adds them (3 RED a warp). Same loads, pair arithmetic and j-updates; identical (integer) sums.
// Expected: 4.2 M pairs; the fast kernel issues 12.6 M + 0.4 M 64-bit atomic updates, the slow one 25.2
// M, half of them 32 to an address; both bound by the L2 atomic units (~100 updates a cycle over the
// GPU at best: ~75 us against ~145 us), the slow one further by the same-address serialization: ~2x.
constexpr int kMdX = 64, kMdY = 64, kMdZ = 32, kMdAtoms = kMdX * kMdY * kMdZ, kMdNeighbours = 32;
constexpr float kMdSpacing = 1.12f, kMdCut2 = 6.25f, kMdFixedScale = 4294967296.0f;
constexpr float kMdBoxX = kMdX * kMdSpacing, kMdBoxY = kMdY * kMdSpacing, kMdBoxZ = kMdZ * kMdSpacing;
__device__ __forceinline__ float minimum_image(float d, float box) { return fmaf(-box, rintf(d * (1.0f / box)), d); }
template <bool kWarpSumOwnAtom>
__device__ __forceinline__ void lj_half_list(const float4* __restrict__ pos, const int* __restrict__ nbr, unsigned long long* __restrict__ force) {
    int lane = threadIdx.x % 32;
    int i = (int)(((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32);
    int j = nbr[(size_t)i * kMdNeighbours + lane];
    float4 pi = pos[i], pj = pos[j];
    float dx = minimum_image(pi.x - pj.x, kMdBoxX), dy = minimum_image(pi.y - pj.y, kMdBoxY), dz = minimum_image(pi.z - pj.z, kMdBoxZ);
    float r2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
    float inv2 = __fdividef(1.0f, r2), inv6 = inv2 * inv2 * inv2;
    float in_range = r2 < kMdCut2 ? 1.0f : 0.0f;  // the 4 neighbours at distance sqrt(6) lie beyond the cutoff
    float fscal = 24.0f * inv2 * inv6 * fmaf(2.0f, inv6, -1.0f) * in_range;
    long long fx = __float2ll_rn(fscal * dx * kMdFixedScale), fy = __float2ll_rn(fscal * dy * kMdFixedScale),
              fz = __float2ll_rn(fscal * dz * kMdFixedScale);
    unsigned long long *force_x = force, *force_y = force + kMdAtoms, *force_z = force + 2 * kMdAtoms;
    atomicAdd(&force_x[j], (unsigned long long)-fx);
    atomicAdd(&force_y[j], (unsigned long long)-fy);
    atomicAdd(&force_z[j], (unsigned long long)-fz);
    if (kWarpSumOwnAtom) {
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) {
            fx += __shfl_xor_sync(0xffffffffu, fx, offset);
            fy += __shfl_xor_sync(0xffffffffu, fy, offset);
            fz += __shfl_xor_sync(0xffffffffu, fz, offset);
        }
        if (lane == 0) {
            atomicAdd(&force_x[i], (unsigned long long)fx);
            atomicAdd(&force_y[i], (unsigned long long)fy);
            atomicAdd(&force_z[i], (unsigned long long)fz);
        }
    } else {
        atomicAdd(&force_x[i], (unsigned long long)fx);
        atomicAdd(&force_y[i], (unsigned long long)fy);
        atomicAdd(&force_z[i], (unsigned long long)fz);
    }
}
extern "C" __global__ void __launch_bounds__(kThreads) lj_newton3_slow(const float4* __restrict__ pos, const int* __restrict__ nbr,
                                                                       unsigned long long* __restrict__ force) {
    lj_half_list<false>(pos, nbr, force);
}
extern "C" __global__ void __launch_bounds__(kThreads) lj_newton3_fast(const float4* __restrict__ pos, const int* __restrict__ nbr,
                                                                       unsigned long long* __restrict__ force) {
    lj_half_list<true>(pos, nbr, force);
}

// ---------------------------------------------------------------- grid-too-small (a Monte-Carlo pricer on a fixed <<<64, 256>>> grid)
// A European call priced by Monte Carlo under geometric Brownian motion: 3,244,032 paths of 64 steps,
// each step's increment an approximately normal variate from a counter-based hash of (path, step)
// (the sum of its 4 bytes: one IDP.4A, converted by the exponent trick), log S += drift + vol z; the
// kernel writes each path's payoff max(S_T - K, 0) (a reduction follows elsewhere). A grid-stride loop
// over paths, ~16 instructions a step (~1,030 a path; ~9 of them LOP3, SHF and VIADD on the 16-lane
// integer pipe, which bounds it: ~150 cycles a warp per 8 steps), no memory to wait for. The same kernel on
// both sides; the slow launch is the fixed <<<64, 256>>> that tutorials and "portable" defaults use, so
// 64 SMs hold one block each and 68 idle; the fast launch has 4 blocks an SM (528 of 256). Identical
// outputs (each path is computed alone by whichever thread owns it). Expected: both bound by the integer
// pipe of the SMs they occupy (the step's hash chains are independent across steps, so 2 warps a
// scheduler already keep it busy): 101 K warp-paths over 528 schedulers x 8 x ~150 cycles ~ 230 K
// cycles (~130 us) fast; the slow one runs the same instructions on 64 SMs: ~2.1x (~270 us).
constexpr int kMcSteps = 64;
constexpr size_t kMcPaths = (size_t)132 * 256 * 96;  // 24 paths a thread on the fast grid, 198 on the slow
constexpr float kMcSpot = 100.0f, kMcStrike = 105.0f;
// sigma 0.2, rate 0.03, one year in 64 steps: drift (r - sigma^2 / 2) dt, vol sigma sqrt(dt); the byte sum
// has mean 510 and standard deviation 147.8.
constexpr float kMcDrift = (0.03f - 0.02f) / 64.0f, kMcVol = 0.2f * 0.125f, kMcZScale = 1.0f / 147.8f;
__device__ __forceinline__ unsigned mc_hash(unsigned path, unsigned step) {
    unsigned h = path * 0x9e3779b1u ^ step * 0x85ebca77u;
    h ^= h >> 15; h *= 0x2c1b3c6du; h ^= h >> 12; h *= 0x297a2d39u; h ^= h >> 15;
    return h;
}
__device__ __forceinline__ float gbm_call_payoff(unsigned path) {
    float log_s = 0.f;
#pragma unroll 8
    for (int k = 0; k < kMcSteps; ++k) {
        unsigned bytes = __dp4a(mc_hash(path, k), 0x01010101u, 0u);              // 0 .. 1020
        float z = __uint_as_float(0x4b000000u | bytes) - 8389118.0f;             // bytes - 510, exact
        log_s = fmaf(z, kMcVol * kMcZScale, log_s + kMcDrift);
    }
    return fmaxf(kMcSpot * __expf(log_s) - kMcStrike, 0.f);
}
__device__ __forceinline__ void gbm_paths(float* __restrict__ payoff, size_t paths) {
    for (size_t p = (size_t)blockIdx.x * blockDim.x + threadIdx.x; p < paths; p += (size_t)gridDim.x * blockDim.x)
        payoff[p] = gbm_call_payoff((unsigned)p);
}
extern "C" __global__ void __launch_bounds__(kThreads) mc_fixed_grid_slow(float* __restrict__ payoff, size_t paths) { gbm_paths(payoff, paths); }
extern "C" __global__ void __launch_bounds__(kThreads) mc_fixed_grid_fast(float* __restrict__ payoff, size_t paths) { gbm_paths(payoff, paths); }

// ---------------------------------------------------------------- bank-conflicts (AES-128 CTR through one shared T-table)
// AES-128 in counter mode (keystream for 4,325,376 counter blocks, 69 MB), the classic GPU table
// implementation: one 256-word T-table (Te0) in shared memory, Te1-Te3 as its byte rotations (SHF.L.W),
// the round keys in the kernel's parameters; 9 full rounds (16 lookups, 12 rotations, XORs) and a final
// round (16 lookups masked to the S-box byte), a persistent grid of 4 blocks an SM, 32 counters a thread.
// The slow kernel keeps the one 1 KB table, so the 32 lanes' lookups, at data-dependent (pseudo-random)
// indices, fall on the 8 words of a bank at random: ~3.15 wavefronts an LDS on average (32 random
// indices into 256 words; the first round, where 3 of the 4 state words are the nonce, is uniform); the
// fast one keeps 32 copies of it interleaved, word (entry, lane) at entry * 32 + lane (32 KB a block), so
// lane l always reads bank l: one wavefront an LDS. Same lookups, rotations, XORs and stores (and the
// same address arithmetic: a shift and a LOP3 a lookup on both sides); identical keystream. Expected:
// 160 LDS and ~760 instructions a block of 16 bytes, ~480 of them LOP3 and SHF on the 16-lane integer
// pipe; the fast kernel is bound by that pipe (~250 SM-cycles a warp's 32 blocks), the slow one by
// shared memory (16 wavefronts for the first round + 144 x ~3.15 for the rest: ~470): ~1.85x (~150
// against ~280 us for 1,024 warp-blocks an SM).
struct AesRoundKeys { unsigned w[44]; };
__host__ __device__ __forceinline__ unsigned ror8(unsigned x) { return x >> 8 | x << 24; }
__host__ __device__ __forceinline__ unsigned ror16(unsigned x) { return x >> 16 | x << 16; }
__host__ __device__ __forceinline__ unsigned ror24(unsigned x) { return x >> 24 | x << 8; }
// te0(s, p): Te0 at the byte of s at bit p (24, 16, 8 or 0).
template <class Te0>
__host__ __device__ __forceinline__ uint4 aes128_encrypt(unsigned s0, unsigned s1, unsigned s2, unsigned s3, const AesRoundKeys& rk, Te0 te0) {
    s0 ^= rk.w[0]; s1 ^= rk.w[1]; s2 ^= rk.w[2]; s3 ^= rk.w[3];
#pragma unroll
    for (int r = 1; r < 10; ++r) {
        unsigned t0 = te0(s0, 24) ^ ror8(te0(s1, 16)) ^ ror16(te0(s2, 8)) ^ ror24(te0(s3, 0)) ^ rk.w[4 * r];
        unsigned t1 = te0(s1, 24) ^ ror8(te0(s2, 16)) ^ ror16(te0(s3, 8)) ^ ror24(te0(s0, 0)) ^ rk.w[4 * r + 1];
        unsigned t2 = te0(s2, 24) ^ ror8(te0(s3, 16)) ^ ror16(te0(s0, 8)) ^ ror24(te0(s1, 0)) ^ rk.w[4 * r + 2];
        unsigned t3 = te0(s3, 24) ^ ror8(te0(s0, 16)) ^ ror16(te0(s1, 8)) ^ ror24(te0(s2, 0)) ^ rk.w[4 * r + 3];
        s0 = t0; s1 = t1; s2 = t2; s3 = t3;
    }
    // The last round: SubBytes and ShiftRows only; S[x] is each rotation's byte where Te0 holds S[x] once.
    unsigned o0 = (ror16(te0(s0, 24)) & 0xff000000u) ^ (ror24(te0(s1, 16)) & 0x00ff0000u) ^ (te0(s2, 8) & 0x0000ff00u) ^
                  (ror8(te0(s3, 0)) & 0x000000ffu) ^ rk.w[40];
    unsigned o1 = (ror16(te0(s1, 24)) & 0xff000000u) ^ (ror24(te0(s2, 16)) & 0x00ff0000u) ^ (te0(s3, 8) & 0x0000ff00u) ^
                  (ror8(te0(s0, 0)) & 0x000000ffu) ^ rk.w[41];
    unsigned o2 = (ror16(te0(s2, 24)) & 0xff000000u) ^ (ror24(te0(s3, 16)) & 0x00ff0000u) ^ (te0(s0, 8) & 0x0000ff00u) ^
                  (ror8(te0(s1, 0)) & 0x000000ffu) ^ rk.w[42];
    unsigned o3 = (ror16(te0(s3, 24)) & 0xff000000u) ^ (ror24(te0(s0, 16)) & 0x00ff0000u) ^ (te0(s1, 8) & 0x0000ff00u) ^
                  (ror8(te0(s2, 0)) & 0x000000ffu) ^ rk.w[43];
    return make_uint4(o0, o1, o2, o3);
}
constexpr int kAesCountersPerThread = 32, kAesBlocksPerSm = 4, kAesLaneCopies = 32;
constexpr unsigned kAesNonce0 = 0xf0f1f2f3u, kAesNonce1 = 0xf4f5f6f7u, kAesNonce2 = 0xf8f9fafbu;
template <bool kCopyPerLane>
__device__ __forceinline__ void aes_ctr_keystream(const unsigned* __restrict__ te0_global, AesRoundKeys rk, uint4* __restrict__ out, size_t blocks) {
    constexpr int kWords = kCopyPerLane ? 256 * kAesLaneCopies : 256;
    __shared__ unsigned te0[kWords];
    for (int w = threadIdx.x; w < kWords; w += blockDim.x) te0[w] = te0_global[kCopyPerLane ? w / kAesLaneCopies : w];
    __syncthreads();
    // The copy-per-lane table is read at byte offset x * 128 + lane * 4: the byte shifted straight to its
    // place, masked and or-ed with the lane's offset (a shift and a LOP3, as the single table's x * 4).
    const char* bytes = reinterpret_cast<const char*>(te0);
    unsigned lane4 = threadIdx.x % 32 * 4;
    auto lookup = [bytes, lane4](unsigned s, int p) {
        if (!kCopyPerLane) return reinterpret_cast<const unsigned*>(bytes)[(s >> p) & 255];
        unsigned offset = ((p >= 7 ? s >> (p - 7) : s << (7 - p)) & 0x7f80u) | lane4;
        return *reinterpret_cast<const unsigned*>(bytes + offset);
    };
    for (size_t ctr = (size_t)blockIdx.x * blockDim.x + threadIdx.x; ctr < blocks; ctr += (size_t)gridDim.x * blockDim.x)
        out[ctr] = aes128_encrypt(kAesNonce0, kAesNonce1, kAesNonce2, (unsigned)ctr, rk, lookup);
}
extern "C" __global__ void __launch_bounds__(kThreads) aes_ttable_slow(const unsigned* __restrict__ te0, AesRoundKeys rk,
                                                                       uint4* __restrict__ out, size_t blocks) {
    aes_ctr_keystream<false>(te0, rk, out, blocks);
}
extern "C" __global__ void __launch_bounds__(kThreads) aes_ttable_fast(const unsigned* __restrict__ te0, AesRoundKeys rk,
                                                                       uint4* __restrict__ out, size_t blocks) {
    aes_ctr_keystream<true>(te0, rk, out, blocks);
}
// Host side: the S-box from the GF(2^8) inverse and the affine map, Te0, and the AES-128 key expansion.
static unsigned gf256_mul(unsigned a, unsigned b) {
    unsigned p = 0;
    for (; b; b >>= 1) {
        if (b & 1) p ^= a;
        a <<= 1;
        if (a & 0x100) a ^= 0x11b;
    }
    return p;
}
static void aes_tables(unsigned te0[256], unsigned char sbox[256]) {
    for (unsigned x = 0; x < 256; ++x) {
        unsigned inv = 0;
        for (unsigned y = 1; x && y < 256; ++y)
            if (gf256_mul(x, y) == 1) { inv = y; break; }
        unsigned s = inv;
        for (int k = 1; k <= 4; ++k) s ^= ((inv << k) | (inv >> (8 - k))) & 0xff;
        s ^= 0x63;
        sbox[x] = (unsigned char)s;
        te0[x] = gf256_mul(s, 2) << 24 | s << 16 | s << 8 | gf256_mul(s, 3);
    }
}
static AesRoundKeys aes128_expand(const unsigned char key[16], const unsigned char sbox[256]) {
    AesRoundKeys rk;
    for (int i = 0; i < 4; ++i) rk.w[i] = (unsigned)key[4 * i] << 24 | (unsigned)key[4 * i + 1] << 16 | (unsigned)key[4 * i + 2] << 8 | key[4 * i + 3];
    unsigned rcon = 1;
    for (int i = 4; i < 44; ++i) {
        unsigned t = rk.w[i - 1];
        if (i % 4 == 0) {
            t = (t << 8) | (t >> 24);
            t = (unsigned)sbox[t >> 24] << 24 | (unsigned)sbox[(t >> 16) & 255] << 16 | (unsigned)sbox[(t >> 8) & 255] << 8 | sbox[t & 255];
            t ^= rcon << 24;
            rcon = gf256_mul(rcon, 2);
        }
        rk.w[i] = rk.w[i - 4] ^ t;
    }
    return rk;
}

// ---------------------------------------------------------------- divergence (path-tracer hits shaded in generation order, not sorted by material)
// The shading stage of a wavefront path tracer: 4 M hit records (position, and the material id in the
// fourth word), each shaded by its material's BSDF evaluation: material 0 a procedural marble (32 octaves
// of hashed value noise: integer hashing, ~24 instructions an octave, ~780 a hit), material 1 a rough
// conductor (a 32-bounce energy-compensation series: Schlick Fresnel, a Smith-like term, ~11 FP32
// instructions a bounce, ~360 a hit); half the hits each, at random. The same kernel on both sides (a thread per hit, a branch on
// the material around two loops); the slow side is fed the hits as the rays produced them, so every warp
// holds both materials and runs both loops with about half its lanes; the fast side is fed the same
// records sorted by material (what a wavefront renderer's material sort/compaction does), so every warp
// but the one at the boundary runs one loop with all 32 lanes. Outputs equal through the permutation.
// Expected: issue-bound (64 MB in, 16 MB out against ~570 instructions a hit on average; the marble's
// integer pipe and the conductor's FP32 pipe overlap across warps); the slow warps issue both paths,
// ~1,140 instructions a warp against ~570: ~2x (~160 against ~80 us).
constexpr int kShadeHits = 1 << 22, kShadeIters = 32;
__device__ __forceinline__ float shade_marble(float4 h) {
    unsigned ix = __float_as_uint(h.x), iy = __float_as_uint(h.y), iz = __float_as_uint(h.z);
    float acc = 0.f, amp = 0.5f;
    for (int o = 0; o < kShadeIters; ++o) {
        unsigned k = ix * 0x8da6b343u ^ iy * 0xd8163841u ^ iz * 0xcb1ab31fu ^ (unsigned)o * 0x165667b1u;
        k ^= k >> 13; k *= 0x5bd1e995u; k ^= k >> 15;
        float n = __uint_as_float(0x3f800000u | (k >> 9)) - 1.0f;  // [0, 1)
        acc = fmaf(amp, n, acc);
        amp *= 0.71f;
        ix = (ix >> 1) ^ (ix << 5); iy = (iy >> 1) ^ (iy << 5); iz = (iz >> 1) ^ (iz << 5);  // the next octave's lattice
    }
    return acc;
}
__device__ __forceinline__ float shade_conductor(float4 h) {
    float rough = h.x * h.x, f0 = fmaf(0.9f, h.y, 0.04f), mu = fmaf(0.98f, h.z, 0.01f);
    float e = 0.f, t = 1.f;
    for (int k = 0; k < kShadeIters; ++k) {
        float m = 1.0f - mu, m2 = m * m;
        float fresnel = fmaf(1.0f - f0, m2 * m2 * m, f0);
        float smith = fmaf(rough, mu, 1.0f - rough);
        t *= fresnel * smith;
        e = fmaf(t, 0.5f * mu, e);
        mu = fmaf(mu, 0.8f, 0.2f * rough);
    }
    return e;
}
__device__ __forceinline__ void shade_hits(const float4* __restrict__ hits, float* __restrict__ radiance) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float4 h = hits[i];
    radiance[i] = __float_as_int(h.w) == 0 ? shade_marble(h) : shade_conductor(h);
}
extern "C" __global__ void __launch_bounds__(kThreads) material_sort_slow(const float4* __restrict__ hits, float* __restrict__ radiance) {
    shade_hits(hits, radiance);
}
extern "C" __global__ void __launch_bounds__(kThreads) material_sort_fast(const float4* __restrict__ hits, float* __restrict__ radiance) {
    shade_hits(hits, radiance);
}

// ---------------------------------------------------------------- dependent-arithmetic (Duffing oscillators integrated one after another)
// A parameter sweep over 135,168 damped Duffing oscillators, x'' = -k x - b x^3 - c v, 4,096 steps of
// semi-implicit Euler (dt 0.01), 4 oscillators a thread (coalesced: oscillator t + j T), 132 blocks of
// 256 threads (2 warps a scheduler). A step is 6 FP32 instructions whose loop-carried path x -> x^2 ->
// -(k + b x^2) -> a -> v -> x is 5 dependent FMUL/FFMA (~20 cycles). The slow kernel integrates the
// thread's 4 oscillators one after another (4 loops in a row: one chain in flight a warp); the fast one
// steps the 4 together (4 independent chains interleaved). Same instructions per oscillator in the same
// order (explicit fmaf and __fmul_rn), same registers and grid; identical outputs. Expected: slow, 2
// warps x 6 instructions per ~20 cycles, the schedulers ~60% busy; fast, 8 chains a scheduler fill every
// issue slot: 4 x 4,096 x 20 cycles (~190 us) against 2 x 4 x 4,096 x 6 (~115 us): ~1.65x.
constexpr int kDuffingPerThread = 4, kDuffingSteps = 4096, kDuffingThreads = 132 * 256;
constexpr int kDuffingOscillators = kDuffingThreads * kDuffingPerThread;
constexpr float kDuffingDt = 0.01f;
__device__ __forceinline__ void duffing_step(float& x, float& v, float nk, float nb, float nc) {
    float x2 = __fmul_rn(x, x);
    float q = fmaf(x2, nb, nk);             // -(k + b x^2)
    float a = fmaf(q, x, __fmul_rn(nc, v));  // -(k + b x^2) x - c v
    v = fmaf(a, kDuffingDt, v);
    x = fmaf(v, kDuffingDt, x);
}
template <bool kInterleave>
__device__ __forceinline__ void duffing_sweep(const float4* __restrict__ params, float2* __restrict__ state) {
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    float x[kDuffingPerThread], v[kDuffingPerThread], nk[kDuffingPerThread], nb[kDuffingPerThread], nc[kDuffingPerThread];
#pragma unroll
    for (int j = 0; j < kDuffingPerThread; ++j) {
        float4 p = params[t + j * stride];  // (k, b, c, x0)
        nk[j] = -p.x; nb[j] = -p.y; nc[j] = -p.z; x[j] = p.w; v[j] = 0.f;
    }
    if (kInterleave) {
#pragma unroll 4
        for (int s = 0; s < kDuffingSteps; ++s) {
#pragma unroll
            for (int j = 0; j < kDuffingPerThread; ++j) duffing_step(x[j], v[j], nk[j], nb[j], nc[j]);
        }
    } else {
#pragma unroll
        for (int j = 0; j < kDuffingPerThread; ++j) {
#pragma unroll 16
            for (int s = 0; s < kDuffingSteps; ++s) duffing_step(x[j], v[j], nk[j], nb[j], nc[j]);
        }
    }
#pragma unroll
    for (int j = 0; j < kDuffingPerThread; ++j) state[t + j * stride] = make_float2(x[j], v[j]);
}
extern "C" __global__ void __launch_bounds__(kThreads) duffing_chains_slow(const float4* __restrict__ params, float2* __restrict__ state) {
    duffing_sweep<false>(params, state);
}
extern "C" __global__ void __launch_bounds__(kThreads) duffing_chains_fast(const float4* __restrict__ params, float2* __restrict__ state) {
    duffing_sweep<true>(params, state);
}
// (k, b, c, x0) in [0.5, 2] x [0.1, 1] x [0.01, 0.1] x [-1, 1], from a hash of the oscillator.
__global__ void duffing_params(float4* __restrict__ p, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ 0x68e31da4u;
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        float u0 = (h & 255) * (1.0f / 255.0f), u1 = ((h >> 8) & 255) * (1.0f / 255.0f);
        float u2 = ((h >> 16) & 255) * (1.0f / 255.0f), u3 = (h >> 24) * (1.0f / 255.0f);
        p[i] = make_float4(0.5f + 1.5f * u0, 0.1f + 0.9f * u1, 0.01f + 0.09f * u2, 2.0f * u3 - 1.0f);
    }
}

// ---------------------------------------------------------------- none: a multi-tensor squared L2 norm accumulated in double or in float
// The squared L2 norms of 2,048 chunks of 32,768 floats (256 MB: the per-chunk pass of a multi-tensor
// gradient-norm for clipping), one 256-thread block a chunk (two waves of 8 blocks an SM, 4 float4 loads
// in flight a thread), each thread summing the squares of its 32 float4, then a shuffle sum per warp and
// one barrier for the 8 warp sums. The "slow" kernel keeps each thread's running sum in double, as one
// does for accuracy (an F2F.F64.F32 and a DADD a float4 instead of an FADD); the fast one in float.
// Both are bound by DRAM: the SM needs ~0.9 float4 a cycle from it, against an FP64 add rate of 64 and
// a conversion rate of 16 a cycle (~6% busy). Sums within 1e-5 (positive terms). Planted as taking the
// same time (~65 us at ~4 TB/s); double-precision arithmetic named as the cause is a false alarm.
constexpr int kNormChunks = 2048, kNormChunk = 32768, kNormBatch = 4;
template <class Acc>
__device__ __forceinline__ void chunk_sum_squares(const float4* __restrict__ in, float* __restrict__ out) {
    __shared__ float warp_sums[kThreads / 32];
    const float4* src = in + (size_t)blockIdx.x * (kNormChunk / 4);
    Acc acc = 0;
#pragma unroll 1
    for (int c0 = 0; c0 < kNormChunk / 4; c0 += kThreads * kNormBatch) {  // the same loop on both sides
        float4 v[kNormBatch];
#pragma unroll
        for (int u = 0; u < kNormBatch; ++u) v[u] = src[c0 + u * kThreads + threadIdx.x];
#pragma unroll
        for (int u = 0; u < kNormBatch; ++u) acc += (Acc)(fmaf(v[u].x, v[u].x, v[u].y * v[u].y) + fmaf(v[u].z, v[u].z, v[u].w * v[u].w));
    }
    float s = (float)acc;
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.f;
#pragma unroll
        for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
        out[blockIdx.x] = total;
    }
}
extern "C" __global__ void __launch_bounds__(kThreads, 8) same_double_norm_slow(const float4* __restrict__ in, float* __restrict__ out) {
    chunk_sum_squares<double>(in, out);
}
extern "C" __global__ void __launch_bounds__(kThreads, 8) same_double_norm_fast(const float4* __restrict__ in, float* __restrict__ out) {
    chunk_sum_squares<float>(in, out);
}

// ---------------------------------------------------------------- the pairs
static void add_set15_pairs(std::vector<Pair>& pairs) {
    auto none = [] {};
    {   // planar indexing over interleaved RGBA frames
        size_t n = kRgbaValues;
        float *in = random_floats(n, 181, 0, 1), *gain = random_floats(kRgbaChannels, 182, 0.8f, 1.6f);
        float *bias = random_floats(kRgbaChannels, 183, -0.1f, 0.f), *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"rgba_planar", none,
            [=] { rgba_planar_slow<<<n / kThreads, kThreads>>>(in, gain, bias, a); },
            [=] { rgba_planar_fast<<<n / kThreads, kThreads>>>(in, gain, bias, b); },
            [=](std::string& w) { return compare_floats(a, b, n, 0, w); }});
    }
    {   // a two-buffer cp.async pipeline that waits for every copy
        int blocks = g_sms;
        size_t keys = (size_t)blocks * kKvKeysPerBlock, words = keys * kKvDim / 2;
        unsigned* cache = dev<unsigned>(words);
        kv_random_bf16<<<g_sms * 8, kThreads>>>(cache, words);
        CHECK(cudaGetLastError());
        float *q = random_floats(kKvDim, 184, -1, 1), *a = dev<float>(keys), *b = dev<float>(keys);
        pairs.push_back({"kv_pipeline", none,
            [=] { kv_pipeline_slow<<<blocks, kThreads>>>((const uint4*)cache, (const float4*)q, a); },
            [=] { kv_pipeline_fast<<<blocks, kThreads>>>((const uint4*)cache, (const float4*)q, b); },
            [=](std::string& w) { return compare_floats(a, b, keys, 0, w); }});
    }
    {   // Newton's third law: every lane adds to the warp's own atom
        std::vector<float4> pos(kMdAtoms);
        std::vector<int> nbr((size_t)kMdAtoms * kMdNeighbours);
        std::vector<int> offsets;  // the 32 nearest forward lattice offsets (each pair once)
        for (int dz = -2; dz <= 2; ++dz)
            for (int dy = -2; dy <= 2; ++dy)
                for (int dx = -2; dx <= 2; ++dx)
                    if (dz > 0 || (dz == 0 && (dy > 0 || (dy == 0 && dx > 0)))) offsets.push_back((dz + 2) * 25 + (dy + 2) * 5 + dx + 2);
        auto norm2 = [](int o) { int dx = o % 5 - 2, dy = o / 5 % 5 - 2, dz = o / 25 - 2; return dx * dx + dy * dy + dz * dz; };
        std::stable_sort(offsets.begin(), offsets.end(), [&](int p, int q) { return norm2(p) < norm2(q); });
        for (int a = 0; a < kMdAtoms; ++a) {
            int x = a % kMdX, y = a / kMdX % kMdY, z = a / (kMdX * kMdY);
            unsigned h = (unsigned)a * 2654435761u ^ 0x3c6ef372u;
            h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
            auto jitter = [](unsigned bits) { return ((bits & 255) / 255.0f - 0.5f) * 0.1f; };
            pos[a] = make_float4((x + jitter(h)) * kMdSpacing, (y + jitter(h >> 8)) * kMdSpacing, (z + jitter(h >> 16)) * kMdSpacing, 1.0f);
            for (int k = 0; k < kMdNeighbours; ++k) {
                int o = offsets[k], nx = (x + o % 5 - 2 + kMdX) % kMdX, ny = (y + o / 5 % 5 - 2 + kMdY) % kMdY, nz = (z + o / 25 - 2 + kMdZ) % kMdZ;
                nbr[(size_t)a * kMdNeighbours + k] = (nz * kMdY + ny) * kMdX + nx;
            }
        }
        float4* d_pos = dev<float4>(kMdAtoms);
        int* d_nbr = dev<int>(nbr.size());
        CHECK(cudaMemcpy(d_pos, pos.data(), pos.size() * sizeof(float4), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d_nbr, nbr.data(), nbr.size() * sizeof(int), cudaMemcpyHostToDevice));
        size_t words = (size_t)3 * kMdAtoms;
        unsigned long long *a = dev<unsigned long long>(words), *b = dev<unsigned long long>(words);
        int blocks = kMdAtoms * 32 / kThreads;
        pairs.push_back({"lj_newton3",
            [=] { CHECK(cudaMemset(a, 0, words * 8)); CHECK(cudaMemset(b, 0, words * 8)); },
            [=] { lj_newton3_slow<<<blocks, kThreads>>>(d_pos, d_nbr, a); },
            [=] { lj_newton3_fast<<<blocks, kThreads>>>(d_pos, d_nbr, b); },
            [=](std::string& w) { return compare_bytes(a, b, words * 8, w); }});
    }
    {   // a Monte-Carlo pricer on a fixed <<<64, 256>>> grid
        size_t paths = kMcPaths;
        float *a = dev<float>(paths), *b = dev<float>(paths);
        pairs.push_back({"mc_fixed_grid", none,
            [=] { mc_fixed_grid_slow<<<64, kThreads>>>(a, paths); },
            [=] { mc_fixed_grid_fast<<<g_sms * 4, kThreads>>>(b, paths); },
            [=](std::string& w) { return compare_floats(a, b, paths, 0, w); }});
    }
    {   // AES-128 CTR through one shared T-table
        unsigned te0[256];
        unsigned char sbox[256];
        aes_tables(te0, sbox);
        const unsigned char key[16] = {0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c};
        AesRoundKeys rk = aes128_expand(key, sbox);
        unsigned* d_te0 = dev<unsigned>(256);
        CHECK(cudaMemcpy(d_te0, te0, sizeof te0, cudaMemcpyHostToDevice));
        int blocks = g_sms * kAesBlocksPerSm;
        size_t counters = (size_t)blocks * kThreads * kAesCountersPerThread;
        uint4 *a = dev<uint4>(counters), *b = dev<uint4>(counters);
        CHECK(cudaFuncSetAttribute(aes_ttable_fast, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
        CHECK(cudaFuncSetAttribute(aes_ttable_slow, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
        pairs.push_back({"aes_ttable", none,
            [=] { aes_ttable_slow<<<blocks, kThreads>>>(d_te0, rk, a, counters); },
            [=] { aes_ttable_fast<<<blocks, kThreads>>>(d_te0, rk, b, counters); },
            [=](std::string& w) { return compare_bytes(a, b, counters * sizeof(uint4), w); }});
    }
    {   // path-tracer hits shaded in generation order, not sorted by material
        size_t n = kShadeHits;
        std::vector<float4> hits(n), sorted(n);
        std::vector<size_t> order(n);
        for (size_t i = 0; i < n; ++i) {
            unsigned h = (unsigned)i * 2654435761u ^ 0x510e527fu;
            h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
            unsigned g = h * 0x9e3779b1u + 0x7f4a7c15u;
            g ^= g >> 15; g *= 0x2c1b3c6du; g ^= g >> 12;
            hits[i] = make_float4((h & 1023) / 1024.0f, ((h >> 10) & 1023) / 1024.0f, ((h >> 20) & 1023) / 1024.0f, 0.f);
            int material = (int)(g >> 31);
            memcpy(&hits[i].w, &material, sizeof material);
        }
        std::iota(order.begin(), order.end(), (size_t)0);
        auto material_of = [&](size_t i) { int m; memcpy(&m, &hits[i].w, sizeof m); return m; };
        std::stable_sort(order.begin(), order.end(), [&](size_t p, size_t q) { return material_of(p) < material_of(q); });
        for (size_t j = 0; j < n; ++j) sorted[j] = hits[order[j]];
        float4 *d_hits = dev<float4>(n), *d_sorted = dev<float4>(n);
        CHECK(cudaMemcpy(d_hits, hits.data(), n * sizeof(float4), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d_sorted, sorted.data(), n * sizeof(float4), cudaMemcpyHostToDevice));
        float *a = dev<float>(n), *b = dev<float>(n);
        pairs.push_back({"material_sort", none,
            [=] { material_sort_slow<<<n / kThreads, kThreads>>>(d_hits, a); },
            [=] { material_sort_fast<<<n / kThreads, kThreads>>>(d_sorted, b); },
            [=](std::string& w) { return compare_through_permutation(a, b, order, w); }});
    }
    {   // Duffing oscillators integrated one after another
        float4* params = dev<float4>(kDuffingOscillators);
        duffing_params<<<g_sms * 8, kThreads>>>(params, kDuffingOscillators);
        CHECK(cudaGetLastError());
        float2 *a = dev<float2>(kDuffingOscillators), *b = dev<float2>(kDuffingOscillators);
        int blocks = kDuffingThreads / kThreads;
        pairs.push_back({"duffing_chains", none,
            [=] { duffing_chains_slow<<<blocks, kThreads>>>(params, a); },
            [=] { duffing_chains_fast<<<blocks, kThreads>>>(params, b); },
            [=](std::string& w) { return compare_floats((float*)a, (float*)b, 2 * (size_t)kDuffingOscillators, 0, w); }});
    }
    {   // a multi-tensor squared L2 norm accumulated in double or in float (the same time)
        size_t n = (size_t)kNormChunks * kNormChunk;
        float *in = random_floats(n, 185, -1, 1), *a = dev<float>(kNormChunks), *b = dev<float>(kNormChunks);
        pairs.push_back({"same_double_norm", none,
            [=] { same_double_norm_slow<<<kNormChunks, kThreads>>>((const float4*)in, a); },
            [=] { same_double_norm_fast<<<kNormChunks, kThreads>>>((const float4*)in, b); },
            [=](std::string& w) { return compare_floats(a, b, kNormChunks, 1e-5, w); }});
    }
}
