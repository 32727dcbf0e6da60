// gemm(): row-major C = alpha·op(A)·op(B) + beta·C over raw buffers, the one place posenc calls a GEMM library.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <xtensor-blas/xblas.hpp>

#include "posenc/config.hpp"
#include "posenc/kernels/precision.hpp"

#if defined(POSENC_GEMM_ONEDNN)
#include <pthread.h>

#include <csignal>

#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_debug.h>
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace posenc {

// A bfloat16 number as its 16 bits: the upper half of a float's.
using Bf16 = std::uint16_t;

// Which library computes float GEMMs, fixed when posenc is configured (CMake's
// POSENC_GEMM_BACKEND): oneDNN where it is installed, since its kernels are chosen from the CPU's
// instruction set at run time, OpenBLAS otherwise. Double GEMMs (the gradient checks) always use
// OpenBLAS, the one backend with a dgemm.
enum class GemmBackend { openblas, onednn };

#if defined(POSENC_GEMM_ONEDNN)
inline constexpr GemmBackend gemm_backend = GemmBackend::onednn;
#else
inline constexpr GemmBackend gemm_backend = GemmBackend::openblas;
#endif

inline constexpr const char* gemm_backend_name(GemmBackend backend) {
  return backend == GemmBackend::onednn ? "onednn" : "openblas";
}

// Why bf16 GEMMs cannot run in this build or on this CPU, or nothing when they can.
inline std::optional<std::string> bf16_unsupported_reason();

namespace gemm_backends {

// a (M,K) or (K,M) if trans_a, b (K,N) or (N,K) if trans_b, c (M,N); as posenc::gemm
template <std::floating_point S>
void openblas(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, S alpha,
              const S* a, std::size_t lda, const S* b, std::size_t ldb, S beta, S* c, std::size_t ldc) {
  using index = xt::blas_index_t;
  cxxblas::gemm<index>(cxxblas::StorageOrder::RowMajor,
                       trans_a ? cxxblas::Transpose::Trans : cxxblas::Transpose::NoTrans,
                       trans_b ? cxxblas::Transpose::Trans : cxxblas::Transpose::NoTrans,
                       static_cast<index>(m), static_cast<index>(n), static_cast<index>(k), alpha, a,
                       static_cast<index>(lda), b, static_cast<index>(ldb), beta, c,
                       static_cast<index>(ldc));
}

#if defined(POSENC_GEMM_ONEDNN)
namespace detail {
// One oneDNN call runs on the calling thread alone, as OpenBLAS's do (threads.hpp): posenc splits
// GEMMs over its threads itself (parallel.hpp). Inside those regions oneDNN's OpenMP runtime does
// not nest; outside them it would take OpenMP's thread count, which costs more than it gains on
// the small products posenc leaves unsplit. OpenMP's count is the calling thread's own setting,
// restored when this goes out of scope.
struct OneOpenMPThread {
#if defined(_OPENMP)
  int saved = omp_get_max_threads();
  OneOpenMPThread() {
    if (saved > 1) omp_set_num_threads(1);
  }
  ~OneOpenMPThread() {
    if (saved > 1) omp_set_num_threads(saved);
  }
#endif
};

// Holds this thread's asynchronous signals while oneDNN computes on it: the JIT f32 GEMM kernels of
// oneDNN before 3.11 (Debian 12 has 2.6) point rsp into a heap buffer, so the frame of a signal
// arriving meanwhile (Ctrl-C, a profiler's SIGPROF) is written into the heap and corrupts it
// (oneDNN issue 4845). Held signals are delivered when the outermost hold ends; faults still stop
// the thread. A hold inside another costs a counter, so a kernel making many small products holds
// once around them (GemmSignalHold) rather than paying two system calls per product.
struct SignalsHeldOnThisThread {
  sigset_t saved;
  SignalsHeldOnThisThread() {
    if (depth()++ > 0) return;
    sigset_t held;
    sigfillset(&held);
    for (const int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&held, fault);
    pthread_sigmask(SIG_BLOCK, &held, &saved);
  }
  ~SignalsHeldOnThisThread() {
    if (--depth() == 0) pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  }
  static int& depth() {
    thread_local int holds = 0;
    return holds;
  }
  SignalsHeldOnThisThread(const SignalsHeldOnThisThread&) = delete;
  SignalsHeldOnThisThread& operator=(const SignalsHeldOnThisThread&) = delete;
};

}  // namespace detail

// dnnl_sgemm is row-major, like posenc.
inline void onednn(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k,
                   float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                   float beta, float* c, std::size_t ldc) {
  const auto dim = [](std::size_t x) { return static_cast<dnnl_dim_t>(x); };
  [[maybe_unused]] const detail::OneOpenMPThread one_thread;
  [[maybe_unused]] const detail::SignalsHeldOnThisThread signals_held;
  const dnnl_status_t status =
      dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', dim(m), dim(n), dim(k), alpha, a,
                 dim(lda), b, dim(ldb), beta, c, dim(ldc));
  if (status != dnnl_success)
    fail("oneDNN's sgemm failed (status ", static_cast<int>(status), ") for M=", m, " N=", n,
         " K=", k, " lda=", lda, " ldb=", ldb, " ldc=", ldc);
}

namespace detail {

// oneDNN primitives for bf16 products, one per shape, built on first use in each thread (a
// primitive's creation costs far more than a small product; the model repeats a dozen shapes).
class Bf16Matmuls {
 public:
  static Bf16Matmuls& of_this_thread() {
    thread_local Bf16Matmuls matmuls;
    return matmuls;
  }

  // dst (rows, cols, row stride dst_ld) = the rows × cols float block at src (row stride ld) rounded
  // to bfloat16 by oneDNN's reorder (to nearest even, with the CPU's conversion instructions: 2.4×
  // the rate of a portable loop compiled for baseline x86-64, measured on an AMX Xeon)
  void round_to_bf16(Bf16* dst, const float* src, dnnl_dim_t rows, dnnl_dim_t cols, dnnl_dim_t ld,
                     dnnl_dim_t dst_ld) {
    using dnnl::memory;
    const memory::desc src_md({rows, cols}, memory::data_type::f32, memory::dims{ld, 1});
    const memory::desc dst_md({rows, cols}, memory::data_type::bf16, memory::dims{dst_ld, 1});
    const auto key = std::make_tuple(rows, cols, ld, dst_ld);
    auto it = reorders_.find(key);
    if (it == reorders_.end())
      it = reorders_.emplace(key, dnnl::reorder(dnnl::reorder::primitive_desc(engine_, src_md, engine_, dst_md))).first;
    memory src_mem(src_md, engine_, const_cast<float*>(src));  // read only
    memory dst_mem(dst_md, engine_, dst);
    it->second.execute(stream_, src_mem, dst_mem);
    stream_.wait();
  }

  // c (M,N) float [+]= op(a)·op(b) with a, b bfloat16 (a (M,K) or (K,M), b (K,N) or (N,K), row
  // strides lda, ldb)
  void run(bool trans_a, bool trans_b, dnnl_dim_t m, dnnl_dim_t n, dnnl_dim_t k, const Bf16* a, dnnl_dim_t lda,
           const Bf16* b, dnnl_dim_t ldb, bool accumulate, float* c, dnnl_dim_t ldc) {
    using dnnl::memory;
    const memory::desc a_md({m, k}, memory::data_type::bf16, trans_a ? memory::dims{1, lda} : memory::dims{lda, 1});
    const memory::desc b_md({k, n}, memory::data_type::bf16, trans_b ? memory::dims{1, ldb} : memory::dims{ldb, 1});
    const memory::desc c_md({m, n}, memory::data_type::f32, memory::dims{ldc, 1});
    const Key key{trans_a, trans_b, m, n, k, lda, ldb, ldc, accumulate};
    auto it = primitives_.find(key);
    if (it == primitives_.end()) {
      dnnl::primitive_attr attr;
      if (accumulate) {
        dnnl::post_ops ops;
        ops.append_sum(1.0f);
        attr.set_post_ops(ops);
      }
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, engine_);
      it = primitives_.emplace(key, dnnl::matmul(pd)).first;
    }
    // oneDNN's memory objects take non-const handles; the primitive only reads src and weights
    memory a_mem(a_md, engine_, const_cast<Bf16*>(a));
    memory b_mem(b_md, engine_, const_cast<Bf16*>(b));
    memory c_mem(c_md, engine_, c);
    it->second.execute(stream_, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    stream_.wait();
  }

  // dst packed (outer, inner, rows, cols) = src's blocks rounded to bfloat16: block (o, i) of
  // rows × cols floats at src + o·outer_stride + i·inner_stride, row stride ld (one reorder)
  void round_blocks_to_bf16(Bf16* dst, const float* src, dnnl_dim_t outer, dnnl_dim_t outer_stride, dnnl_dim_t inner,
                            dnnl_dim_t inner_stride, dnnl_dim_t rows, dnnl_dim_t cols, dnnl_dim_t ld) {
    using dnnl::memory;
    const memory::desc src_md({outer, inner, rows, cols}, memory::data_type::f32,
                              memory::dims{outer_stride, inner_stride, ld, 1});
    const memory::desc dst_md({outer, inner, rows, cols}, memory::data_type::bf16, memory::format_tag::abcd);
    const auto key = std::make_tuple(outer, outer_stride, inner, inner_stride, rows, cols, ld);
    auto it = block_reorders_.find(key);
    if (it == block_reorders_.end())
      it = block_reorders_
               .emplace(key, dnnl::reorder(dnnl::reorder::primitive_desc(engine_, src_md, engine_, dst_md)))
               .first;
    memory src_mem(src_md, engine_, const_cast<float*>(src));  // read only
    memory dst_mem(dst_md, engine_, dst);
    it->second.execute(stream_, src_mem, dst_mem);
    stream_.wait();
  }

  // c_i (m,n) float = alpha·op(a_i)·op(b_i) for i < batch, every operand packed, one after another
  // (a_i (m,k) or (k,m) if trans_a, b_i (k,n) or (n,k) if trans_b): one primitive for the batch
  void run_batched(dnnl_dim_t batch, bool trans_a, bool trans_b, dnnl_dim_t m, dnnl_dim_t n, dnnl_dim_t k,
                   float alpha, const Bf16* a, const Bf16* b, float* c) {
    using dnnl::memory;
    using tag = memory::format_tag;
    const memory::desc a_md({batch, m, k}, memory::data_type::bf16, trans_a ? tag::acb : tag::abc);
    const memory::desc b_md({batch, k, n}, memory::data_type::bf16, trans_b ? tag::acb : tag::abc);
    const memory::desc c_md({batch, m, n}, memory::data_type::f32, tag::abc);
    const BatchedKey key{batch, trans_a, trans_b, m, n, k, alpha};
    auto it = batched_.find(key);
    if (it == batched_.end()) {
      dnnl::primitive_attr attr;
      if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, engine_);
      it = batched_.emplace(key, dnnl::matmul(pd)).first;
    }
    memory a_mem(a_md, engine_, const_cast<Bf16*>(a));
    memory b_mem(b_md, engine_, const_cast<Bf16*>(b));
    memory c_mem(c_md, engine_, c);
    it->second.execute(stream_, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    stream_.wait();
  }

  std::vector<Bf16> a_bf16, b_bf16;  // this thread's rounded operands for onednn_bf16

 private:
  using Key = std::tuple<bool, bool, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, bool>;
  using BatchedKey = std::tuple<dnnl_dim_t, bool, bool, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, float>;
  using BlocksKey = std::tuple<dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t>;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  std::map<Key, dnnl::matmul> primitives_;
  std::map<BatchedKey, dnnl::matmul> batched_;
  std::map<std::tuple<dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t>, dnnl::reorder> reorders_;
  std::map<BlocksKey, dnnl::reorder> block_reorders_;
};

}  // namespace detail

// c = op(a)·op(b) + beta·c with a and b rounded to bfloat16 and float accumulation; beta 0 or 1.
inline void onednn_bf16(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k,
                        float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                        float beta, float* c, std::size_t ldc) {
  if (alpha != 1.0f || (beta != 0.0f && beta != 1.0f))
    fail("bf16 GEMM: alpha must be 1 and beta 0 or 1, got alpha ", alpha, ", beta ", beta);
  if (const auto reason = bf16_unsupported_reason()) fail(*reason);
  auto& matmuls = detail::Bf16Matmuls::of_this_thread();
  const auto dim = [](std::size_t x) { return static_cast<dnnl_dim_t>(x); };
  [[maybe_unused]] const detail::OneOpenMPThread one_thread;
  [[maybe_unused]] const detail::SignalsHeldOnThisThread signals_held;
  const std::size_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  const std::size_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  matmuls.a_bf16.resize(a_rows * a_cols);
  matmuls.b_bf16.resize(b_rows * b_cols);
  matmuls.round_to_bf16(matmuls.a_bf16.data(), a, dim(a_rows), dim(a_cols), dim(lda), dim(a_cols));
  matmuls.round_to_bf16(matmuls.b_bf16.data(), b, dim(b_rows), dim(b_cols), dim(ldb), dim(b_cols));
  matmuls.run(trans_a, trans_b, dim(m), dim(n), dim(k), matmuls.a_bf16.data(), dim(a_cols), matmuls.b_bf16.data(),
              dim(b_cols), beta != 0.0f, c, dim(ldc));
}
#endif

}  // namespace gemm_backends

// Holds the thread's asynchronous signals for a scope of many oneDNN products (see
// gemm_backends::detail::SignalsHeldOnThisThread); nothing with OpenBLAS. Construct it with {}.
#if defined(POSENC_GEMM_ONEDNN)
using GemmSignalHold = gemm_backends::detail::SignalsHeldOnThisThread;
#else
struct GemmSignalHold {};
#endif

inline std::optional<std::string> bf16_unsupported_reason() {
#if defined(POSENC_GEMM_ONEDNN)
  static const std::optional<std::string> reason = []() -> std::optional<std::string> {
    // oneDNN's ISA values are bit sets: AMX's holds avx512_core_bf16's bits, AVX2-VNNI's does not
    const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
    const auto bf16 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);
    if ((isa & bf16) == bf16) return std::nullopt;
    return std::string("bf16 needs a CPU with AVX512_BF16 or AMX (oneDNN sees '") +
           dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa()) + "'); use fp32";
  }();
  return reason;
#else
  return std::string(
      "bf16 needs posenc built with oneDNN (install libdnnl-dev and reconfigure); this build uses OpenBLAS");
#endif
}

// a (M,K) or (K,M) if trans_a, b (K,N) or (N,K) if trans_b, c (M,N); lda/ldb/ldc are row strides,
// so a head's slice of a wider row (a q inside qkv) is used in place, without a copy. bf16 takes
// float only, alpha 1 and beta 0 or 1 (what the linear layers need).
template <std::floating_point S>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, S alpha,
          const S* a, std::size_t lda, const S* b, std::size_t ldb, S beta, S* c, std::size_t ldc,
          Precision precision = Precision::fp32) {
  if (m == 0 || n == 0) return;
  if (precision == Precision::bf16) {
    if constexpr (!std::is_same_v<S, float>) {
      fail("bf16 GEMMs take float operands; this model computes in double");
    } else {
#if defined(POSENC_GEMM_ONEDNN)
      gemm_backends::onednn_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
#else
      fail(*bf16_unsupported_reason());
#endif
    }
  }
#if defined(POSENC_GEMM_ONEDNN)
  if constexpr (std::is_same_v<S, float>) {
    gemm_backends::onednn(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#endif
  gemm_backends::openblas<S>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// dst (rows, cols, row stride dst_ld) = src's rows × cols block (row stride ld), each rounded to
// bfloat16 (to nearest even; a subnormal float becomes zero, as AVX512-BF16's conversion takes it).
inline void round_to_bf16(Bf16* dst, const float* src, std::size_t rows, std::size_t cols, std::size_t ld,
                          std::size_t dst_ld) {
  if (rows == 0 || cols == 0) return;
  if (const auto reason = bf16_unsupported_reason()) fail(*reason);
#if defined(POSENC_GEMM_ONEDNN)
  const auto dim = [](std::size_t x) { return static_cast<dnnl_dim_t>(x); };
  [[maybe_unused]] const gemm_backends::detail::OneOpenMPThread one_thread;
  [[maybe_unused]] const gemm_backends::detail::SignalsHeldOnThisThread signals_held;
  gemm_backends::detail::Bf16Matmuls::of_this_thread().round_to_bf16(dst, src, dim(rows), dim(cols), dim(ld),
                                                                     dim(dst_ld));
#else
  static_cast<void>(dst), static_cast<void>(src), static_cast<void>(ld), static_cast<void>(dst_ld);
#endif
}

// round_to_bf16 into a packed dst (rows, cols): the operands of gemm_bf16.
inline void round_to_bf16(Bf16* dst, const float* src, std::size_t rows, std::size_t cols, std::size_t ld) {
  round_to_bf16(dst, src, rows, cols, ld, cols);
}

// round_to_bf16 of outer × inner blocks at once: dst packed (outer, inner, rows, cols) from the
// rows × cols float block at src + o·outer_stride + i·inner_stride (row stride ld) of each (o, i),
// as the heads of a few sequences inside (B, T, 3C) rows.
inline void round_blocks_to_bf16(Bf16* dst, const float* src, std::size_t outer, std::size_t outer_stride,
                                 std::size_t inner, std::size_t inner_stride, std::size_t rows, std::size_t cols,
                                 std::size_t ld) {
  if (outer == 0 || inner == 0 || rows == 0 || cols == 0) return;
  if (const auto reason = bf16_unsupported_reason()) fail(*reason);
#if defined(POSENC_GEMM_ONEDNN)
  const auto dim = [](std::size_t x) { return static_cast<dnnl_dim_t>(x); };
  [[maybe_unused]] const gemm_backends::detail::OneOpenMPThread one_thread;
  [[maybe_unused]] const gemm_backends::detail::SignalsHeldOnThisThread signals_held;
  gemm_backends::detail::Bf16Matmuls::of_this_thread().round_blocks_to_bf16(
      dst, src, dim(outer), dim(outer_stride), dim(inner), dim(inner_stride), dim(rows), dim(cols), dim(ld));
#else
  static_cast<void>(dst), static_cast<void>(src), static_cast<void>(outer_stride), static_cast<void>(inner_stride),
      static_cast<void>(ld);
#endif
}

// c_i (M,N) = alpha·op(a_i)·op(b_i) for i < batch, over packed operands rounded to bfloat16 (a_i at
// a + i·M·K, b_i at b + i·K·N, c_i at c + i·M·N, each packed as gemm()'s op describes), accumulated in
// float: many small products (attention's heads) as one oneDNN primitive, on the calling thread.
inline void batched_gemm_bf16(std::size_t batch, bool trans_a, bool trans_b, std::size_t m, std::size_t n,
                              std::size_t k, float alpha, const Bf16* a, const Bf16* b, float* c) {
  if (batch == 0 || m == 0 || n == 0) return;
  if (const auto reason = bf16_unsupported_reason()) fail(*reason);
#if defined(POSENC_GEMM_ONEDNN)
  const auto dim = [](std::size_t x) { return static_cast<dnnl_dim_t>(x); };
  [[maybe_unused]] const gemm_backends::detail::OneOpenMPThread one_thread;
  [[maybe_unused]] const gemm_backends::detail::SignalsHeldOnThisThread signals_held;
  gemm_backends::detail::Bf16Matmuls::of_this_thread().run_batched(dim(batch), trans_a, trans_b, dim(m), dim(n),
                                                                   dim(k), alpha, a, b, c);
#else
  static_cast<void>(trans_a), static_cast<void>(trans_b), static_cast<void>(k), static_cast<void>(alpha),
      static_cast<void>(a), static_cast<void>(b), static_cast<void>(c);
#endif
}

// c (M,N) = op(a)·op(b), plus c when accumulate, over operands already rounded to bfloat16
// (round_to_bf16) with gemm()'s shapes and strides, accumulated in float: for kernels that round an
// operand once and use it in several products, or in slices on several threads.
inline void gemm_bf16(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, const Bf16* a,
                      std::size_t lda, const Bf16* b, std::size_t ldb, bool accumulate, float* c, std::size_t ldc) {
  if (m == 0 || n == 0) return;
  if (const auto reason = bf16_unsupported_reason()) fail(*reason);
#if defined(POSENC_GEMM_ONEDNN)
  const auto dim = [](std::size_t x) { return static_cast<dnnl_dim_t>(x); };
  [[maybe_unused]] const gemm_backends::detail::OneOpenMPThread one_thread;
  [[maybe_unused]] const gemm_backends::detail::SignalsHeldOnThisThread signals_held;
  gemm_backends::detail::Bf16Matmuls::of_this_thread().run(trans_a, trans_b, dim(m), dim(n), dim(k), a, dim(lda), b,
                                                           dim(ldb), accumulate, c, dim(ldc));
#else
  static_cast<void>(trans_a), static_cast<void>(trans_b), static_cast<void>(k), static_cast<void>(a),
      static_cast<void>(lda), static_cast<void>(b), static_cast<void>(ldb), static_cast<void>(accumulate),
      static_cast<void>(c), static_cast<void>(ldc);
#endif
}

}  // namespace posenc
