// The harness of corpus.cu: device buffers, output checks, CUDA-event timing, and the run over
// all pairs (checks, then timing or one profiled launch of each kernel).
#pragma once
#include <cuda_runtime.h>
#include <cuda_profiler_api.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));   \
            exit(3);                                                                       \
        }                                                                                  \
    } while (0)

constexpr int kThreads = 256;

// ---------------------------------------------------------------- a kernel body pairs share
// One element per thread, one load in flight per warp: out[i] = in[i] * 1.5 - 0.25. The occupancy
// pairs run it unchanged on both sides, so their throughput comes from the resident warps alone.
__device__ __forceinline__ float stream_op(float x) { return x * 1.5f - 0.25f; }
__device__ __forceinline__ void stream_element(const float* __restrict__ in, float* __restrict__ out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = stream_op(in[i]);
}

// ---------------------------------------------------------------- harness
__global__ void fill_random(float* p, size_t n, unsigned seed, float lo, float hi) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        p[i] = lo + (hi - lo) * (h >> 8) * (1.0f / 16777216.0f);
    }
}

struct Pair {
    std::string name;
    std::function<void()> prepare;          // before every launch of either kernel (not timed)
    std::function<void()> slow, fast;       // one launch each; each writes its own output
    std::function<bool(std::string&)> check;  // compares the two outputs
};

inline int g_sms = 132;
inline std::vector<void*> g_allocs;
template <class T> T* dev(size_t n) {
    void* p; CHECK(cudaMalloc(&p, n * sizeof(T))); CHECK(cudaMemset(p, 0, n * sizeof(T)));
    g_allocs.push_back(p); return (T*)p;
}
inline float* random_floats(size_t n, unsigned seed, float lo, float hi) {
    float* p = dev<float>(n);
    fill_random<<<g_sms * 8, kThreads>>>(p, n, seed, lo, hi);
    CHECK(cudaGetLastError());
    return p;
}

// Max |a-b| / (|b| + atol) over the outputs; rtol 0 demands bitwise-equal floats.
inline bool compare_floats(const float* a_dev, const float* b_dev, size_t n, double rtol, std::string& why) {
    std::vector<float> a(n), b(n);
    CHECK(cudaMemcpy(a.data(), a_dev, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(b.data(), b_dev, n * sizeof(float), cudaMemcpyDeviceToHost));
    double worst = 0; size_t at = 0, nonzero = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(a[i]) || !std::isfinite(b[i])) { why = "non-finite at " + std::to_string(i); return false; }
        nonzero += b[i] != 0.f;
        double err = rtol == 0 ? (a[i] != b[i]) : std::fabs((double)a[i] - b[i]) / (std::fabs((double)b[i]) + 1e-6);
        if (err > worst) { worst = err; at = i; }
    }
    char buf[160];
    snprintf(buf, sizeof buf, "max rel err %.2e at %zu (%g vs %g), %zu/%zu nonzero", worst, at, a[at], b[at], nonzero, n);
    why = buf;
    return nonzero > 0 && (rtol == 0 ? worst == 0 : worst <= rtol);
}
// Outputs of two runs over the same elements in different orders: run b's j-th result is run a's
// order[j]-th (a permuted copy of the inputs on the host). Bitwise equality through the permutation.
inline bool compare_through_permutation(const float* a_dev, const float* b_dev, const std::vector<size_t>& order,
                                        std::string& why) {
    size_t n = order.size();
    std::vector<float> ra(n), rb(n);
    CHECK(cudaMemcpy(ra.data(), a_dev, n * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(rb.data(), b_dev, n * 4, cudaMemcpyDeviceToHost));
    size_t diff = 0;
    for (size_t j = 0; j < n; ++j) diff += ra[order[j]] != rb[j];
    why = std::to_string(diff) + " of " + std::to_string(n) + " results differ through the permutation";
    return diff == 0;
}
inline bool compare_bytes(const void* a_dev, const void* b_dev, size_t n, std::string& why) {
    std::vector<uint8_t> a(n), b(n);
    CHECK(cudaMemcpy(a.data(), a_dev, n, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(b.data(), b_dev, n, cudaMemcpyDeviceToHost));
    size_t diff = 0, nonzero = 0;
    for (size_t i = 0; i < n; ++i) { diff += a[i] != b[i]; nonzero += b[i] != 0; }
    why = std::to_string(diff) + " of " + std::to_string(n) + " bytes differ";
    return diff == 0 && nonzero > 0;
}

inline double median_us(const Pair& p, const std::function<void()>& launch) {
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start)); CHECK(cudaEventCreate(&stop));
    std::vector<float> ms;
    for (int rep = 0; rep < 23; ++rep) {
        p.prepare();
        CHECK(cudaEventRecord(start));
        launch();
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float t; CHECK(cudaEventElapsedTime(&t, start, stop));
        if (rep >= 3) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    CHECK(cudaEventDestroy(start)); CHECK(cudaEventDestroy(stop));
    return ms[ms.size() / 2] * 1000.0;
}

// corpus [--profile] [PAIR ...]: every pair, or only the named ones.
inline int run_corpus(int argc, char** argv, std::vector<Pair> (*build_pairs)()) {
    bool profile = argc > 1 && !strcmp(argv[1], "--profile");
    std::vector<std::string> only(argv + 1 + profile, argv + argc);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    g_sms = prop.multiProcessorCount;
    std::vector<Pair> pairs = build_pairs();
    for (const std::string& name : only) {
        if (std::none_of(pairs.begin(), pairs.end(), [&](const Pair& p) { return p.name == name; })) {
            fprintf(stderr, "no pair named %s\n", name.c_str());
            return 2;
        }
    }
    CHECK(cudaDeviceSynchronize());
    int failed = 0;
    printf("%s, %d SMs\n", prop.name, g_sms);
    for (const Pair& p : pairs) {
        if (!only.empty() && std::find(only.begin(), only.end(), p.name) == only.end()) continue;
        p.prepare();
        if (profile) CHECK(cudaProfilerStart());
        p.slow();
        p.fast();
        if (profile) CHECK(cudaProfilerStop());
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        std::string why;
        bool ok = p.check(why);
        failed += !ok;
        if (profile) {
            printf("%-24s %s  %s\n", p.name.c_str(), ok ? "ok  " : "FAIL", why.c_str());
            continue;
        }
        double slow = median_us(p, p.slow), fast = median_us(p, p.fast);
        printf("%-24s %s  slow %8.1f us  fast %8.1f us  gap %5.2fx  %s\n", p.name.c_str(), ok ? "ok  " : "FAIL",
               slow, fast, slow / fast, why.c_str());
    }
    for (void* ptr : g_allocs) CHECK(cudaFree(ptr));
    if (failed) fprintf(stderr, "%d pair(s) disagree\n", failed);
    return failed ? 1 : 0;
}
