// gemm(): row-major C = alpha·op(A)·op(B) + beta·C over raw buffers, through xtensor-blas's cxxblas (OpenBLAS).
#pragma once

#include <concepts>
#include <cstddef>

#include <xtensor-blas/xblas.hpp>

namespace posenc {

// a (M,K) or (K,M) if trans_a, b (K,N) or (N,K) if trans_b, c (M,N); lda/ldb/ldc are row strides,
// so a head's slice of a wider row (a q inside qkv) is used in place, without a copy.
template <std::floating_point S>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, S alpha,
          const S* a, std::size_t lda, const S* b, std::size_t ldb, S beta, S* c, std::size_t ldc) {
  using index = xt::blas_index_t;
  if (m == 0 || n == 0) return;
  cxxblas::gemm<index>(cxxblas::StorageOrder::RowMajor,
                       trans_a ? cxxblas::Transpose::Trans : cxxblas::Transpose::NoTrans,
                       trans_b ? cxxblas::Transpose::Trans : cxxblas::Transpose::NoTrans,
                       static_cast<index>(m), static_cast<index>(n), static_cast<index>(k), alpha, a,
                       static_cast<index>(lda), b, static_cast<index>(ldb), beta, c,
                       static_cast<index>(ldc));
}

}  // namespace posenc
