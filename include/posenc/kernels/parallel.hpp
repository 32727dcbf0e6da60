// parallel_for_chunks and parallel_gemm: how posenc's kernels split their work over OpenMP threads.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <vector>

#include "posenc/kernels/fast_math.hpp"
#include "posenc/kernels/gemm.hpp"
#include "posenc/threads.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

// POSENC_OMP(...) places an OpenMP pragma when posenc is compiled with OpenMP and nothing otherwise.
#if defined(_OPENMP)
#define POSENC_OMP(...) _Pragma(#__VA_ARGS__)
#else
#define POSENC_OMP(...)
#endif

namespace posenc {

// The number of threads the next parallel region will have (1 without OpenMP): posenc's
// process-wide count, not OpenMP's per-thread default, so that kernels called from several
// std::threads at once (study --jobs) share the cores instead of each taking all of them.
inline std::size_t max_parallel_threads() {
#if defined(_OPENMP)
  return static_cast<std::size_t>(num_threads());
#else
  return 1;
#endif
}

inline std::size_t parallel_thread_index() {
#if defined(_OPENMP)
  return static_cast<std::size_t>(omp_get_thread_num());
#else
  return 0;
#endif
}

// The number of threads in the current parallel region (1 outside one).
inline std::size_t parallel_team_size() {
#if defined(_OPENMP)
  return static_cast<std::size_t>(omp_get_num_threads());
#else
  return 1;
#endif
}

// Calls f(begin, end) on contiguous chunks covering [0, n), one chunk per thread; each chunk is a
// multiple of `grain` long (but the last). Runs serially when the work is below `serial_below`.
// f must not throw: an exception cannot leave an OpenMP region.
template <class F>
void parallel_for_chunks(std::size_t n, F&& f, std::size_t grain = 1, std::size_t serial_below = 0) {
  const std::size_t threads = max_parallel_threads();
  if (threads <= 1 || n <= grain || n < serial_below) {
    if (n > 0) f(std::size_t{0}, n);
    return;
  }
  const std::size_t units = (n + grain - 1) / grain;
  const std::size_t parts = std::min(threads, units);
  POSENC_OMP(omp parallel num_threads(parts))
  {
    const std::size_t t = parallel_thread_index();
    const std::size_t nthreads = parallel_team_size();
    const std::size_t begin = std::min(n, units * t / nthreads * grain);
    const std::size_t end = std::min(n, units * (t + 1) / nthreads * grain);
    if (begin < end) f(begin, end);
  }
}

// Calls f(i) for i in [0, n), dynamically scheduled one item at a time (for unequal items, such
// as causal attention's (batch, head) pairs).
template <class F>
void parallel_for_each(std::size_t n, F&& f) {
  if (max_parallel_threads() <= 1 || n <= 1) {
    for (std::size_t i = 0; i < n; ++i) f(i);
    return;
  }
  const auto count = static_cast<long>(n);
  const auto threads = static_cast<int>(std::min(max_parallel_threads(), n));
  POSENC_OMP(omp parallel for num_threads(threads) schedule(dynamic, 1))
  for (long i = 0; i < count; ++i) f(static_cast<std::size_t>(i));
}

// Calls f(i) for i in [0, n), each thread taking one contiguous range of items in order: which
// items a thread gets depends only on n and the thread count, so sums a thread keeps of its items
// (and their sum over the threads, in thread order) are the same on every run.
template <class F>
void parallel_for_each_fixed(std::size_t n, F&& f) {
  parallel_for_chunks(n, [&](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) f(i);
  });
}

// Adds Σ_n term(n, c)[k] into sums[k][c] for every column c of [0, C) and k of [0, K): split over
// columns, each sum over n in order (as a plain loop, so the sums do not depend on the thread
// count), kept in a local block of 64 columns and stored once. Summed in place, every row stored
// them again (they may alias term's inputs) and two threads wrote one cache line at their chunks'
// border, which made layer norm's backward 2.5× slower on two threads than on one.
template <std::floating_point S, std::size_t K, class Term>
void add_column_sums(const std::array<S*, K>& sums, std::size_t N, std::size_t C, Term&& term) {
  parallel_for_chunks(C, [&](std::size_t c0, std::size_t c1) {
    constexpr std::size_t columns = 64;
    for (std::size_t b0 = c0; b0 < c1; b0 += columns) {
      const std::size_t b1 = std::min(c1, b0 + columns);
      S block[K][columns];
      for (std::size_t k = 0; k < K; ++k) std::copy(sums[k] + b0, sums[k] + b1, block[k]);
      for (std::size_t n = 0; n < N; ++n)
        for (std::size_t c = b0; c < b1; ++c) {
          const std::array<S, K> t = term(n, c);
          for (std::size_t k = 0; k < K; ++k) block[k][c - b0] += t[k];
        }
      for (std::size_t k = 0; k < K; ++k) std::copy(block[k], block[k] + (b1 - b0), sums[k] + b0);
    }
  }, 16, 64);
}

// The rows a block of add_row_block_column_sums holds: 32 rows of the study model's 768 columns are a
// 96 KB tile, which stays in a core's L2 between the pass that computes it and the one that sums it.
inline constexpr std::size_t column_sum_block_rows = 32;

// Calls f(r0, r1, b) for each block b of column_sum_block_rows rows [r0, r1) of N, the blocks split
// over the threads in contiguous runs. f must not throw.
template <class F>
void parallel_for_row_blocks(std::size_t N, F&& f) {
  const std::size_t blocks = (N + column_sum_block_rows - 1) / column_sum_block_rows;
  parallel_for_chunks(blocks, [&](std::size_t b0, std::size_t b1) {
    for (std::size_t b = b0; b < b1; ++b)
      f(b * column_sum_block_rows, std::min(N, (b + 1) * column_sum_block_rows), b);
  });
}

// partial (C) = the column sums of `rows` ≥ 1 packed rows of C floats, added in row order: a block's
// part of add_row_block_column_sums.
inline void sum_rows_in_order(float* partial, const float* first_row, std::size_t rows, std::size_t C) {
  std::copy(first_row, first_row + C, partial);
  for (std::size_t r = 1; r < rows; ++r)
    for (std::size_t c = 0; c < C; ++c) partial[c] += first_row[r * C + c];
}

// Adds the column sums of an (N,C) float matrix into sums (C), with the rows split over the threads
// for passes that compute the matrix as they go and read each row whole: block(r0, r1, partial)
// must write into partial (C) the column sums of rows [r0, r1) — one block of
// column_sum_block_rows — added in row order; the blocks' partials are then added into sums in
// block order. Both orders depend on N alone, so every thread count gives the same bits. block
// must not throw (it runs in an OpenMP region).
template <class Block>
void add_row_block_column_sums(float* sums, std::size_t N, std::size_t C, Block&& block) {
  const std::size_t blocks = (N + column_sum_block_rows - 1) / column_sum_block_rows;
  thread_local std::vector<float> partials;  // the caller's thread's: one set per call at a time
  partials.resize(blocks * C);
  float* partial = partials.data();
  parallel_for_row_blocks(N, [&](std::size_t r0, std::size_t r1, std::size_t b) { block(r0, r1, partial + b * C); });
  for (std::size_t b = 0; b < blocks; ++b)
    for (std::size_t c = 0; c < C; ++c) sums[c] += partial[b * C + c];
}

// Calls product(r0, r1, c0, c1) on blocks of an (M,N) GEMM output with inner size K, one block
// per thread: by rows when M is the larger side, by columns otherwise; one call over the whole
// output when the product is too small to share.
template <class Product>
void split_gemm_output(std::size_t m, std::size_t n, std::size_t k, Product&& product) {
  constexpr std::size_t serial_flops = 1u << 21;  // below ~2 MFLOP a second thread costs more than it saves
  if (max_parallel_threads() <= 1 || 2 * m * n * k < serial_flops) {
    product(std::size_t{0}, m, std::size_t{0}, n);
    return;
  }
  if (m >= n)
    parallel_for_chunks(m, [&](std::size_t r0, std::size_t r1) { product(r0, r1, std::size_t{0}, n); }, 16);
  else
    parallel_for_chunks(n, [&](std::size_t c0, std::size_t c1) { product(std::size_t{0}, m, c0, c1); }, 16);
}

// gemm() with its output split over the threads (split_gemm_output). Each thread's product is an
// ordinary single-threaded call (see threads.hpp), so every element is computed exactly as one
// gemm() call would.
template <std::floating_point S>
void parallel_gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, S alpha,
                   const S* a, std::size_t lda, const S* b, std::size_t ldb, S beta, S* c,
                   std::size_t ldc, Precision precision = Precision::fp32) {
  split_gemm_output(m, n, k, [&](std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) {
    const S* a0 = trans_a ? a + r0 : a + r0 * lda;  // rows of op(A) are columns of A when transposed
    const S* b0 = trans_b ? b + c0 * ldb : b + c0;
    gemm<S>(trans_a, trans_b, r1 - r0, c1 - c0, k, alpha, a0, lda, b0, ldb, beta, c + r0 * ldc + c0, ldc, precision);
  });
}

// gemm_bf16() (operands already rounded) with its output split over the threads.
inline void parallel_gemm_bf16(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k,
                               const Bf16* a, std::size_t lda, const Bf16* b, std::size_t ldb, bool accumulate,
                               float* c, std::size_t ldc) {
  split_gemm_output(m, n, k, [&](std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) {
    gemm_bf16(trans_a, trans_b, r1 - r0, c1 - c0, k, trans_a ? a + r0 : a + r0 * lda, lda,
              trans_b ? b + c0 * ldb : b + c0, ldb, accumulate, c + r0 * ldc + c0, ldc);
  });
}

// dst (rows, cols) = src (rows, cols), both packed, rounded to bfloat16 with the rows split over
// the threads (serially below 64k numbers).
inline void parallel_round_to_bf16(Bf16* dst, const float* src, std::size_t rows, std::size_t cols) {
  parallel_for_chunks(rows, [&](std::size_t r0, std::size_t r1) {
    round_to_bf16(dst + r0 * cols, src + r0 * cols, r1 - r0, cols, cols);
  }, 1, (std::size_t{1} << 16) / std::max<std::size_t>(1, cols));
}

}  // namespace posenc
