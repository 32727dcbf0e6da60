// Tests of kernels/gemm.hpp and gemm_report.hpp: every backend and precision against a direct sum, bf16 training.
#include <catch2/catch.hpp>

#include <pthread.h>

#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <csignal>
#include <thread>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <tuple>
#include <string>
#include <utility>
#include <vector>

#include <posenc/transformer.hpp>

#include "every_policy_attention.hpp"
#include "gradient_check.hpp"
#include "thread_counts.hpp"

using namespace posenc;

namespace {

// float → bfloat16 → float, rounded to nearest even: the rounding bf16 GEMMs must apply, written
// independently of oneDNN
float bf16_rounded(float x) {
  const auto bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  return std::bit_cast<float>(rounded);
}

// sums + the column sums of m (rows, cols) in add_row_block_column_sums' order, written out: each
// block of column_sum_block_rows rows summed in row order, then the blocks' sums in block order
std::vector<float> row_block_column_sums(std::vector<float> sums, const std::vector<float>& m, std::size_t rows,
                                         std::size_t cols) {
  for (std::size_t r0 = 0; r0 < rows; r0 += column_sum_block_rows) {
    std::vector<float> partial(m.begin() + static_cast<std::ptrdiff_t>(r0 * cols),
                               m.begin() + static_cast<std::ptrdiff_t>((r0 + 1) * cols));
    for (std::size_t r = r0 + 1; r < std::min(rows, r0 + column_sum_block_rows); ++r)
      for (std::size_t c = 0; c < cols; ++c) partial[c] += m[r * cols + c];
    for (std::size_t c = 0; c < cols; ++c) sums[c] += partial[c];
  }
  return sums;
}

struct Problem {
  std::size_t m, n, k;
  bool trans_a, trans_b;
  std::size_t lda, ldb, ldc;  // wider than the rows they stride over: slices of wider buffers
  std::vector<float> a, b, c0;
};

Problem make_problem(std::size_t m, std::size_t n, std::size_t k, bool ta, bool tb, std::uint64_t seed) {
  Problem p{m, n, k, ta, tb, (ta ? m : k) + 3, (tb ? k : n) + 5, n + 2, {}, {}, {}};
  const auto fill = [&](std::size_t count, std::uint64_t s) {
    const auto v = posenc_test::random_vector(count, s);
    return std::vector<float>(v.begin(), v.end());
  };
  p.a = fill((ta ? k : m) * p.lda, seed);
  p.b = fill((tb ? n : k) * p.ldb, seed + 1);
  p.c0 = fill(m * p.ldc, seed + 2);
  return p;
}

// alpha·op(A)·op(B) + beta·C in double, with the operands passed through `operand` first
template <class Round>
std::vector<double> direct(const Problem& p, float alpha, float beta, Round operand) {
  std::vector<double> c(p.m * p.ldc);
  for (std::size_t i = 0; i < p.m; ++i)
    for (std::size_t j = 0; j < p.n; ++j) {
      double sum = 0;
      for (std::size_t l = 0; l < p.k; ++l) {
        const float a = p.trans_a ? p.a[l * p.lda + i] : p.a[i * p.lda + l];
        const float b = p.trans_b ? p.b[j * p.ldb + l] : p.b[l * p.ldb + j];
        sum += static_cast<double>(operand(a)) * static_cast<double>(operand(b));
      }
      c[i * p.ldc + j] = alpha * sum + beta * static_cast<double>(p.c0[i * p.ldc + j]);
    }
  return c;
}

// max |got − expected| over the M×N block, relative to the block's largest |expected|; the
// padding between rows must be untouched
double block_error(const Problem& p, const std::vector<float>& got, const std::vector<double>& expected) {
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < p.m; ++i) {
    for (std::size_t j = 0; j < p.n; ++j) {
      err = std::max(err, std::abs(got[i * p.ldc + j] - expected[i * p.ldc + j]));
      scale = std::max(scale, std::abs(expected[i * p.ldc + j]));
    }
    for (std::size_t j = p.n; j < p.ldc; ++j) REQUIRE(got[i * p.ldc + j] == p.c0[i * p.ldc + j]);
  }
  return err / scale;
}

using GemmFn = void (*)(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t,
                        const float*, std::size_t, float, float*, std::size_t);

}  // namespace

TEST_CASE("every float GEMM backend matches a direct sum, with transposes, row strides, alpha and beta") {
  std::vector<std::pair<std::string, GemmFn>> backends{{"openblas", &gemm_backends::openblas<float>}};
#if defined(POSENC_GEMM_ONEDNN)
  backends.emplace_back("onednn", &gemm_backends::onednn);
#endif
  backends.emplace_back("gemm", [](bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float alpha,
                                   const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta,
                                   float* c, std::size_t ldc) {
    gemm<float>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  });
  for (const auto& [name, fn] : backends)
    for (const bool ta : {false, true})
      for (const bool tb : {false, true})
        for (const float beta : {0.0f, 1.0f, -0.5f}) {
          DYNAMIC_SECTION(name << " transA " << ta << " transB " << tb << " beta " << beta) {
            const Problem p = make_problem(37, 29, 53, ta, tb, 11);
            std::vector<float> c = p.c0;
            fn(ta, tb, p.m, p.n, p.k, 0.75f, p.a.data(), p.lda, p.b.data(), p.ldb, beta, c.data(), p.ldc);
            const auto expected = direct(p, 0.75f, beta, [](float x) { return x; });
            CHECK(block_error(p, c, expected) < 1e-5);
          }
        }
}

TEST_CASE("the configured backend is the one gemm() calls and the one reported") {
  const GemmReport report = describe_gemm();
  CHECK(report.backend == gemm_backend_name(gemm_backend));
  CHECK_FALSE(report.kernel.empty());
#if defined(POSENC_GEMM_ONEDNN)
  CHECK(gemm_backend == GemmBackend::onednn);
  CHECK_FALSE(report.slow_kernel_warning.has_value());  // OpenBLAS computes no float GEMM
#else
  CHECK(gemm_backend == GemmBackend::openblas);
#endif
}

TEST_CASE("a generic OpenBLAS kernel on a CPU with AVX2 or AVX-512 is reported with the fix") {
  CpuFeatures intel_avx512;
  intel_avx512.intel = intel_avx512.avx2 = intel_avx512.avx512 = true;
  CpuFeatures amd_avx512 = intel_avx512;
  amd_avx512.intel = false;
  amd_avx512.amd = true;
  CpuFeatures avx2_only;
  avx2_only.intel = avx2_only.avx2 = true;
  const CpuFeatures old_cpu;  // no AVX2: a generic kernel is all it can run

  const auto intel = slow_openblas_kernel_warning("Prescott", intel_avx512);
  REQUIRE(intel.has_value());
  CHECK_THAT(*intel, Catch::Contains("'Prescott'") && Catch::Contains("AVX-512") &&
                         Catch::Contains("OPENBLAS_CORETYPE=SkylakeX") && Catch::Contains("oneDNN"));
  const auto amd = slow_openblas_kernel_warning("Sandybridge", amd_avx512);
  REQUIRE(amd.has_value());
  CHECK_THAT(*amd, Catch::Contains("OPENBLAS_CORETYPE=Haswell"));
  const auto avx2 = slow_openblas_kernel_warning("Nehalem", avx2_only);
  REQUIRE(avx2.has_value());
  CHECK_THAT(*avx2, Catch::Contains("AVX2") && Catch::Contains("OPENBLAS_CORETYPE=Haswell"));

  for (const char* wide : {"Haswell", "Zen", "SkylakeX", "COOPERLAKE", "SapphireRapids"})
    CHECK_FALSE(slow_openblas_kernel_warning(wide, intel_avx512).has_value());
  CHECK_FALSE(slow_openblas_kernel_warning("Prescott", old_cpu).has_value());
}

TEST_CASE("bf16 GEMMs round both operands to bfloat16 and accumulate in float, or say why they cannot run") {
  const Problem p = make_problem(40, 33, 70, false, true, 21);
  std::vector<float> c = p.c0;
  const auto run = [&](float beta) {
    c = p.c0;
    gemm<float>(p.trans_a, p.trans_b, p.m, p.n, p.k, 1.0f, p.a.data(), p.lda, p.b.data(), p.ldb, beta, c.data(),
                p.ldc, Precision::bf16);
  };
  if (const auto reason = bf16_unsupported_reason()) {
    CHECK_THROWS_WITH(run(0.0f), Catch::Contains("bf16 needs"));
    return;
  }
  for (const bool ta : {false, true})
    for (const bool tb : {false, true})
      for (const float beta : {0.0f, 1.0f}) {
        DYNAMIC_SECTION("transA " << ta << " transB " << tb << " beta " << beta) {
          const Problem q = make_problem(40, 33, 70, ta, tb, 31);
          std::vector<float> got = q.c0;
          gemm<float>(ta, tb, q.m, q.n, q.k, 1.0f, q.a.data(), q.lda, q.b.data(), q.ldb, beta, got.data(), q.ldc,
                      Precision::bf16);
          const auto rounded = direct(q, 1.0f, beta, bf16_rounded);
          const auto exact = direct(q, 1.0f, beta, [](float x) { return x; });
          // float accumulation of exactly representable products: a few float ulps from the sum
          CHECK(block_error(q, got, rounded) < 1e-5);
          // and the rounding is real: 8 mantissa bits put the result ~1e-3 away from fp32's
          CHECK(block_error(q, got, exact) > 1e-4);
        }
      }
  SECTION("alpha other than 1 is refused, not silently ignored") {
    std::vector<float> out = p.c0;
    CHECK_THROWS_WITH(gemm<float>(false, true, p.m, p.n, p.k, 0.5f, p.a.data(), p.lda, p.b.data(), p.ldb, 0.0f,
                                  out.data(), p.ldc, Precision::bf16),
                      Catch::Contains("alpha must be 1"));
  }
}

TEST_CASE("a bf16 GEMM split over threads gives the products of the rounded operands") {
  if (bf16_unsupported_reason()) return;  // the test above checks the refusal
  const posenc_test::ThreadCounts restore;
  for (const int threads : {2, 3})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true})
        for (const auto& [m, n] : std::initializer_list<std::pair<std::size_t, std::size_t>>{{150, 40}, {40, 150}}) {
          DYNAMIC_SECTION(threads << " threads, transA " << ta << " transB " << tb << ", " << m << "×" << n) {
            set_num_threads(threads);
            // split by rows, then by columns; 2·m·n·k above parallel_gemm's serial size
            const Problem q = make_problem(m, n, 200, ta, tb, 41);
            std::vector<float> got = q.c0;
            parallel_gemm<float>(ta, tb, q.m, q.n, q.k, 1.0f, q.a.data(), q.lda, q.b.data(), q.ldb, 1.0f, got.data(),
                                 q.ldc, Precision::bf16);
            CHECK(block_error(q, got, direct(q, 1.0f, 1.0f, bf16_rounded)) < 1e-5);
            CHECK(block_error(q, got, direct(q, 1.0f, 1.0f, [](float x) { return x; })) > 1e-4);
          }
        }
}

TEST_CASE("a bf16 linear layer multiplies the rounded operands and sums its bias gradient in float, in order") {
  if (bf16_unsupported_reason()) return;  // the first bf16 test checks the refusal
  const posenc_test::ThreadCounts restore;
  const auto floats = [](std::size_t count, std::uint64_t seed) {
    const auto v = posenc_test::random_vector(count, seed);
    return std::vector<float>(v.begin(), v.end());
  };
  // (N, C, OC): products split by rows (and dout rounded in parallel), split by columns, and too
  // small to split (parallel.hpp's sizes)
  for (const auto& [N, C, OC] :
       std::initializer_list<std::array<std::size_t, 3>>{{288, 64, 256}, {40, 64, 512}, {5, 7, 3}})
    for (const int threads : {1, 2, 3})
      for (const bool with_bias : {true, false}) {
        DYNAMIC_SECTION(N << "×" << C << "→" << OC << ", " << threads << " threads, bias " << with_bias) {
          set_num_threads(threads);
          const auto x = floats(N * C, 1), w = floats(OC * C, 2), b = floats(OC, 3), dy = floats(N * OC, 4);
          const float* bias = with_bias ? b.data() : nullptr;
          const auto relative_error = [](const std::vector<float>& got, const std::vector<double>& want) {
            double err = 0, scale = 0;
            for (std::size_t i = 0; i < got.size(); ++i) {
              err = std::max(err, std::abs(got[i] - want[i]));
              scale = std::max(scale, std::abs(want[i]));
            }
            return err / scale;
          };
          // out = round(x)·round(w)ᵀ + bias, whatever out held before
          std::vector<float> out(N * OC, 7.0f);
          fast::linear_forward(out.data(), x.data(), w.data(), bias, N, C, OC, Precision::bf16);
          std::vector<double> want(N * OC), exact(N * OC);
          for (std::size_t n = 0; n < N; ++n)
            for (std::size_t o = 0; o < OC; ++o) {
              double sum = with_bias ? b[o] : 0.0, plain = sum;
              for (std::size_t c = 0; c < C; ++c) {
                sum += double(bf16_rounded(x[n * C + c])) * double(bf16_rounded(w[o * C + c]));
                plain += double(x[n * C + c]) * double(w[o * C + c]);
              }
              want[n * OC + o] = sum;
              exact[n * OC + o] = plain;
            }
          CHECK(relative_error(out, want) < 1e-5);
          CHECK(relative_error(out, exact) > 1e-4);  // the rounding is real

          // dx += round(dy)·round(w), dw += round(dy)ᵀ·round(x), db += Σ_n dy in float, in blocks of rows
          const auto dx0 = floats(N * C, 5), dw0 = floats(OC * C, 6), db0 = floats(OC, 7);
          std::vector<float> dx = dx0, dw = dw0, db = db0;
          fast::linear_backward(dx.data(), dw.data(), with_bias ? db.data() : nullptr, dy.data(), x.data(), w.data(),
                                N, C, OC, false, Precision::bf16);
          std::vector<double> want_dx(N * C), want_dw(OC * C);
          for (std::size_t n = 0; n < N; ++n)
            for (std::size_t c = 0; c < C; ++c) {
              double sum = dx0[n * C + c];
              for (std::size_t o = 0; o < OC; ++o)
                sum += double(bf16_rounded(dy[n * OC + o])) * double(bf16_rounded(w[o * C + c]));
              want_dx[n * C + c] = sum;
            }
          for (std::size_t o = 0; o < OC; ++o)
            for (std::size_t c = 0; c < C; ++c) {
              double sum = dw0[o * C + c];
              for (std::size_t n = 0; n < N; ++n)
                sum += double(bf16_rounded(dy[n * OC + o])) * double(bf16_rounded(x[n * C + c]));
              want_dw[o * C + c] = sum;
            }
          CHECK(relative_error(dx, want_dx) < 1e-5);
          CHECK(relative_error(dw, want_dw) < 1e-5);
          if (with_bias) {
            CHECK(db == row_block_column_sums(db0, dy, N, OC));
          } else {
            CHECK(db == db0);
          }
          // overwrite_dinp writes dx instead of adding into it; a null dx is skipped
          std::vector<float> fresh(N * C, 7.0f), dw_again = dw0;
          fast::linear_backward(fresh.data(), dw_again.data(), static_cast<float*>(nullptr), dy.data(), x.data(),
                                w.data(), N, C, OC, true, Precision::bf16);
          for (std::size_t i = 0; i < want_dx.size(); ++i) want_dx[i] -= dx0[i];
          CHECK(relative_error(fresh, want_dx) < 1e-5);
          std::vector<float> dw_only = dw0;
          fast::linear_backward(static_cast<float*>(nullptr), dw_only.data(), static_cast<float*>(nullptr), dy.data(),
                                x.data(), w.data(), N, C, OC, false, Precision::bf16);
          CHECK(dw_only == dw_again);
          // the forward's rounding of x, kept and given to the backward, is the rounding it would make
          std::vector<Bf16> x16(N * C);
          std::vector<float> out_kept(N * OC, 7.0f);
          fast::linear_forward(out_kept.data(), x.data(), w.data(), bias, N, C, OC, Precision::bf16, x16.data());
          CHECK(out_kept == out);
          for (std::size_t i = 0; i < x.size(); ++i)
            REQUIRE(std::bit_cast<float>(std::uint32_t{x16[i]} << 16) == bf16_rounded(x[i]));
          std::vector<float> dx_kept = dx0, dw_kept = dw0, db_kept = db0;
          fast::linear_backward(dx_kept.data(), dw_kept.data(), with_bias ? db_kept.data() : nullptr, dy.data(),
                                x.data(), w.data(), N, C, OC, false, Precision::bf16, x16.data());
          CHECK(dx_kept == dx);
          CHECK(dw_kept == dw);
          CHECK(db_kept == db);
          // an input already rounded, and dout's rounding given beside dout (which dbias still reads),
          // change nothing: the backward then needs no float input at all
          std::vector<float> out_rounded(N * OC, 7.0f);
          fast::linear_forward_rounded(out_rounded.data(), x16.data(), w.data(), bias, N, C, OC);
          CHECK(out_rounded == out);
          std::vector<Bf16> dy16(N * OC);
          round_to_bf16(dy16.data(), dy.data(), N, OC, OC);
          std::vector<float> dx_given = dx0, dw_given = dw0, db_given = db0;
          fast::linear_backward(dx_given.data(), dw_given.data(), with_bias ? db_given.data() : nullptr, dy.data(),
                                static_cast<const float*>(nullptr), w.data(), N, C, OC, false, Precision::bf16,
                                x16.data(), dy16.data());
          CHECK(dx_given == dx);
          CHECK(dw_given == dw);
          CHECK(db_given == db);
        }
      }
}

TEST_CASE("the GELU's bf16 passes write gelu's float results rounded, and the bias sums of the float gradient, "
          "at every thread count") {
  if (bf16_unsupported_reason()) return;
  const posenc_test::ThreadCounts restore;
  constexpr std::size_t tile = fast::detail::gelu_bf16_tile, block = column_sum_block_rows;
  // (rows, cols): shorter than a vector; a tail of columns; several blocks of rows and a short last
  // one, the forward's several tiles; a row wider than a tile
  const std::vector<std::pair<std::size_t, std::size_t>> shapes{{1, 3}, {10, 100}, {3 * block + 2, 700},
                                                                {3, tile + 40}};
  for (const auto& [rows, cols] : shapes)
    for (const int threads : {1, 2, 3}) {
      DYNAMIC_SECTION(rows << " × " << cols << ", " << threads << " threads") {
        set_num_threads(threads);
        const std::size_t N = rows * cols;
        const auto random = posenc_test::random_vector(N, 8), up = posenc_test::random_vector(N, 9);
        std::vector<float> x(N), dy(N);
        for (std::size_t i = 0; i < N; ++i) {
          x[i] = static_cast<float>(4 * random[i]);  // across GELU's bend, both tails
          dy[i] = static_cast<float>(up[i]);
        }
        const auto as_float = [](Bf16 b) { return std::bit_cast<float>(std::uint32_t{b} << 16); };
        std::vector<float> y(N), dx(N);
        fast::gelu_forward(y.data(), x.data(), N);
        fast::gelu_backward(dx.data(), x.data(), dy.data(), N, true);

        std::vector<Bf16> y16(N), dx16(N);
        fast::gelu_forward_bf16(y16.data(), x.data(), N);
        std::vector<float> dbias(cols);
        for (std::size_t c = 0; c < cols; ++c) dbias[c] = 0.25f * static_cast<float>(c % 7);
        const std::vector<float> expected_dbias = row_block_column_sums(dbias, dx, rows, cols);
        fast::gelu_backward_bf16(dx16.data(), dbias.data(), x.data(), dy.data(), rows, cols);
        CHECK(dbias == expected_dbias);
        std::vector<Bf16> dx16_without_bias(N);
        fast::gelu_backward_bf16(dx16_without_bias.data(), nullptr, x.data(), dy.data(), rows, cols);
        CHECK(dx16_without_bias == dx16);
        // the bits of the separate passes: the float results, then round_to_bf16
        std::vector<Bf16> y16_separate(N), dx16_separate(N);
        round_to_bf16(y16_separate.data(), y.data(), 1, N, N);
        round_to_bf16(dx16_separate.data(), dx.data(), 1, N, N);
        CHECK(y16 == y16_separate);
        CHECK(dx16 == dx16_separate);
        // which are the floats rounded to nearest even; a subnormal float (GELU's far left tail)
        // becomes zero, as the CPU's conversion (AVX512-BF16) treats subnormal inputs
        std::size_t rounded_away = 0;
        const auto rounded = [](float v) { return std::fpclassify(v) == FP_SUBNORMAL ? 0.0f : bf16_rounded(v); };
        for (std::size_t i = 0; i < N; ++i) {
          REQUIRE(as_float(y16[i]) == rounded(y[i]));
          REQUIRE(as_float(dx16[i]) == rounded(dx[i]));
          rounded_away += as_float(y16[i]) != y[i];
        }
        CHECK(rounded_away > N / 2);  // the rounding is real
      }
    }
}

TEMPLATE_LIST_TEST_CASE("a bf16 block that keeps only the GELU's rounding computes what the float GELU's rounding "
                        "gives",
                        "", AllPolicies) {
  if (bf16_unsupported_reason()) return;
  const posenc_test::ThreadCounts restore;
  constexpr std::size_t B = 3, T = 7, D = 16, H = 2, N = B * T;
  auto table = std::make_shared<ParameterTable>();
  DecoderBlock<TestType, D, H> block(*table, 0, T, true, Precision::bf16);
  ParameterStore<float> store(table);
  store.initialize(4);
  const auto inp64 = posenc_test::random_vector(N * D, 5), up64 = posenc_test::random_vector(N * D, 6);
  const std::vector<float> inp(inp64.begin(), inp64.end()), up(up64.begin(), up64.end());
  struct Pass {
    std::vector<float> out, dinp, grads;
  };
  // keep_rounded: the training pass's buffers (the GELU's output only rounded, the fused passes);
  // without: the GELU's output in float, each linear layer rounding its operands itself
  const auto pass = [&](bool keep_rounded) {
    BlockActivations<float> act;
    BlockScratch<float> scratch;
    act.resize(B, T, D, H, true, keep_rounded);
    scratch.resize(B, T, D);
    CHECK(act.fch_gelu.empty() == keep_rounded);
    Pass result{std::vector<float>(N * D), std::vector<float>(N * D, 0.0f), {}};
    store.grads.fill(0.0f);
    block.forward(result.out.data(), inp.data(), act, store, B, T);
    block.backward(result.dinp.data(), up.data(), inp.data(), act, scratch, store, B, T);
    result.grads.assign(store.grads.data(), store.grads.data() + store.grads.size());
    return result;
  };
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    INFO(TestType::name << ", " << threads << " threads");
    const Pass fused = pass(true), separate = pass(false);
    CHECK(fused.out == separate.out);
    CHECK(fused.dinp == separate.dinp);
    CHECK(fused.grads == separate.grads);
  }
}

namespace {

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  const auto v = posenc_test::random_vector(n, seed);
  return {v.begin(), v.end()};
}

// ‖a − b‖ / ‖b‖: one rounding that lands the other way moves it by far less than bf16's 2⁻⁹
double relative_error(const std::vector<float>& a, const std::vector<double>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  return std::sqrt(diff / norm);
}
double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  return relative_error(a, std::vector<double>(b.begin(), b.end()));
}

// One policy's bf16 attention (fast::attention_forward_bf16 / backward_bf16) against a direct
// computation in double from its operands rounded to bfloat16, and against the fp32 kernel.
template <class Hooks>
void check_bf16_attention(Hooks hooks, std::span<float> grads, std::size_t T, bool causal) {
  const std::size_t B = 3, H = 2, C = 8, hd = C / H, C3 = 3 * C;
  const double scale = 1 / std::sqrt(double(hd));
  const auto qkv = random_floats(B * T * C3, 50), dout = random_floats(B * T * C, 51);
  const auto dqkv_start = random_floats(B * T * C3, 52);
  const std::vector<float> grads_before(grads.begin(), grads.end());
  struct Result {
    std::vector<float> qkv, out, lse, att, dqkv, dbias;
  };
  const auto run = [&](bool bf16, const fast::AttentionDropout& dropout = {}) {
    Result r{qkv, std::vector<float>(B * T * C), std::vector<float>(B * H * T), std::vector<float>(B * H * T * T, -7),
             dqkv_start, {}};
    std::vector<float> scratch(fast::attention_scratch_size<Hooks, float>(T, C, H, max_parallel_threads(), true));
    std::copy(grads_before.begin(), grads_before.end(), grads.begin());
    if (bf16) {
      fast::attention_forward_bf16(r.out.data(), r.lse.data(), r.att.data(), r.qkv.data(), B, T, C, H, hooks, causal,
                                   dropout);
      fast::attention_backward_bf16(r.dqkv.data(), scratch.data(), dout.data(), r.qkv.data(), r.out.data(),
                                    r.att.data(), B, T, C, H, hooks, causal, false, dropout);
    } else {
      fast::attention_forward(r.out.data(), r.lse.data(), r.att.data(), r.qkv.data(), B, T, C, H, hooks, causal,
                              dropout);
      fast::attention_backward(r.dqkv.data(), scratch.data(), dout.data(), r.qkv.data(), r.out.data(), r.lse.data(),
                               r.att.data(), B, T, C, H, hooks, causal, false, dropout);
    }
    for (std::size_t i = 0; i < grads.size(); ++i) r.dbias.push_back(grads[i] - grads_before[i]);
    return r;
  };
  const Result fp32 = run(false), got = run(true);
  CHECK(got.qkv == fp32.qkv);  // q and k rotated in place alike, in float
  const auto at = [&](std::size_t b, std::size_t t, std::size_t col) { return (b * T + t) * C3 + col; };
  const auto r16 = [](float x) { return double(bf16_rounded(x)); };
  // the forward: probabilities from s = scale·r(q)·r(k) + bias, y = r(p)·r(v) from the kernel's p
  std::vector<double> att(got.att.size()), out(got.out.size()), lse(got.lse.size());
  std::vector<float> row(T);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < T; ++i) {
        const std::size_t n = causal ? i + 1 : T, e = ((b * H + h) * T + i) * T;
        for (std::size_t j = 0; j < n; ++j) {
          double sum = 0;
          for (std::size_t d = 0; d < hd; ++d)
            sum += r16(got.qkv[at(b, i, h * hd + d)]) * r16(got.qkv[at(b, j, C + h * hd + d)]);
          row[j] = float(scale * sum);
        }
        if constexpr (Hooks::biases_scores) hooks.add_bias(row.data(), h, i, 0, n);
        const double m = *std::max_element(row.begin(), row.begin() + std::ptrdiff_t(n));
        double z = 0;
        for (std::size_t j = 0; j < n; ++j) z += std::exp(row[j] - m);
        for (std::size_t j = 0; j < n; ++j) att[e + j] = std::exp(row[j] - m) / z;
        lse[(b * H + h) * T + i] = m + std::log(z);
        for (std::size_t d = 0; d < hd; ++d) {
          double y = 0;
          for (std::size_t j = 0; j < n; ++j) y += r16(got.att[e + j]) * r16(got.qkv[at(b, j, 2 * C + h * hd + d)]);
          out[(b * T + i) * C + h * hd + d] = y;
        }
      }
  CHECK(relative_error(got.att, att) < 1e-5);
  CHECK(relative_error(got.lse, lse) < 1e-6);
  CHECK(relative_error(got.out, out) < 1e-6);
  CHECK(relative_error(fp32.out, out) > 1e-4);  // the fp32 kernel's output is not this arithmetic
  // the backward from the kernel's p and y: dp = r(dy)·r(v), dv = r(p)ᵀ·r(dy), ds = p ⊙ (dp − dy·y),
  // dq = scale·r(ds)·r(k), dk = scale·r(ds)ᵀ·r(q), the last two turned back for rotations
  std::vector<float> dqkv = dqkv_start;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h) {
      std::vector<float> ds(T * T, 0.0f), gq(T * hd), gk(T * hd);
      for (std::size_t i = 0; i < T; ++i) {
        const std::size_t n = causal ? i + 1 : T, e = ((b * H + h) * T + i) * T;
        double dy_y = 0;
        for (std::size_t d = 0; d < hd; ++d)
          dy_y += double(dout[(b * T + i) * C + h * hd + d]) * got.out[(b * T + i) * C + h * hd + d];
        for (std::size_t j = 0; j < n; ++j) {
          double dp = 0;
          for (std::size_t d = 0; d < hd; ++d)
            dp += r16(dout[(b * T + i) * C + h * hd + d]) * r16(got.qkv[at(b, j, 2 * C + h * hd + d)]);
          ds[i * T + j] = float(got.att[e + j] * (dp - dy_y));
        }
      }
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t d = 0; d < hd; ++d) {
          double dv = 0, dq = 0, dk = 0;
          for (std::size_t u = 0; u < T; ++u) {
            dv += r16(got.att[((b * H + h) * T + u) * T + t]) * r16(dout[(b * T + u) * C + h * hd + d]);
            dq += r16(ds[t * T + u]) * r16(got.qkv[at(b, u, C + h * hd + d)]);
            dk += r16(ds[u * T + t]) * r16(got.qkv[at(b, u, h * hd + d)]);
          }
          dqkv[at(b, t, 2 * C + h * hd + d)] += float(dv);
          gq[t * hd + d] = float(scale * dq);
          gk[t * hd + d] = float(scale * dk);
        }
      float* dq = dqkv.data() + at(b, 0, h * hd);
      if constexpr (Hooks::rotates_qk) {
        add_unrotated_qk_gradients(hooks, dq, dq + C, C3, gq.data(), gk.data(), T, hd);
      } else {
        for (std::size_t t = 0; t < T; ++t)
          for (std::size_t d = 0; d < hd; ++d) {
            dq[t * C3 + d] += gq[t * hd + d];
            dq[t * C3 + C + d] += gk[t * hd + d];
          }
      }
    }
  // as gradients (less dqkv's start): near the direct sums, farther from the fp32 kernel's
  const auto less_start = [&](const std::vector<float>& d) {
    std::vector<float> g(d.size());
    for (std::size_t i = 0; i < d.size(); ++i) g[i] = d[i] - dqkv_start[i];
    return g;
  };
  const std::vector<float> expected = less_start(dqkv);
  CHECK(relative_error(less_start(got.dqkv), expected) < 1e-4);
  CHECK(relative_error(less_start(fp32.dqkv), expected) > 2e-4);
  CHECK(relative_error(less_start(fp32.dqkv), expected) < 3e-2);
  if constexpr (Hooks::has_bias_parameters) {  // reached, and near the fp32 kernel's sums
    CHECK(relative_error(got.dbias, fp32.dbias) < 3e-2);
    CHECK(std::any_of(got.dbias.begin(), got.dbias.end(), [](float g) { return std::abs(g) > 1e-3f; }));
  }
  // the same bits at every thread count (the bias parameters' sums group by thread: their rounding)
  for (const int threads : {2, 3}) {
    const posenc_test::ThreadCounts restore;
    set_num_threads(threads);
    const Result again = run(true);
    CHECK(again.out == got.out);
    CHECK(again.att == got.att);
    CHECK(again.dqkv == got.dqkv);
    if constexpr (Hooks::has_bias_parameters) CHECK(relative_error(again.dbias, got.dbias) < 1e-6);
  }
  // dropout drops what the fp32 kernel drops
  const fast::AttentionDropout dropout{DropoutMask{.key = 9, .p = 0.3}, 5};
  const Result dropped = run(true, dropout), dropped_fp32 = run(false, dropout);
  CHECK(relative_error(dropped.out, dropped_fp32.out) < 3e-2);
  CHECK(relative_error(less_start(dropped.dqkv), less_start(dropped_fp32.dqkv)) < 3e-2);
  CHECK(relative_error(dropped.out, got.out) > 0.1);
}

}  // namespace

TEST_CASE("bf16 attention computes its products from bfloat16 operands, for every policy") {
  if (bf16_unsupported_reason()) return;
  const posenc_test::ThreadCounts restore;
  set_num_threads(1);
  // T = 9: every sequence in one product; 130: one sequence a product (fast_attention_bf16.hpp)
  for (const std::size_t T : {std::size_t{9}, std::size_t{130}})
    for (const bool causal : {true, false}) {
      posenc_test::for_each_policy_attention<float>(T, [&](const std::string& name, auto hooks,
                                                           std::span<float> grads) {
        INFO(name << ", T " << T << ", causal " << causal);
        check_bf16_attention(hooks, grads, T, causal);
      });
    }
}

TEST_CASE("a bf16 model trains close to its fp32 twin, or refuses to be built with the reason") {
  const ModelConfig fp32{.vocab_size = 11, .context = 16, .seed = 5};
  ModelConfig bf16 = fp32;
  bf16.precision = Precision::bf16;
  using Model = CharTransformer<RoPE, 2, 32, 4>;
  if (const auto reason = bf16_unsupported_reason()) {
    CHECK_THROWS_WITH(Model(bf16), Catch::Contains("bf16 needs"));
    return;
  }
  Model a(fp32), b(bf16);
  CHECK(b.config().precision == Precision::bf16);
  auto opt_a = AdamW(a), opt_b = AdamW(b);
  Rng rng(3);
  Tokens x({4, 16}), y(x.shape());
  for (auto& t : x) t = static_cast<TokenId>(rng.uniform() * 11) % 11;
  for (auto& t : y) t = static_cast<TokenId>(rng.uniform() * 11) % 11;
  float first_a = 0, first_b = 0, last_a = 0, last_b = 0;
  for (int step = 0; step < 30; ++step) {
    last_a = train_step(a, x, y, opt_a);
    last_b = train_step(b, x, y, opt_b);
    if (step == 0) {
      first_a = last_a;
      first_b = last_b;
    }
  }
  // the same start to bf16's rounding, the same learning: both fit the fixed batch
  CHECK(std::abs(first_a - first_b) < 2e-3);
  CHECK(last_a < first_a - 0.5f);
  CHECK(std::abs(last_a - last_b) < 0.05f * std::abs(first_a - last_a));
  // and bf16 really ran: the losses are not fp32's to the last bit
  CHECK(first_a != first_b);
}

TEST_CASE("bf16 is refused for a double model") {
  ModelConfig c{.vocab_size = 7, .context = 8};
  c.precision = Precision::bf16;
  CHECK_THROWS_WITH((CharTransformer<NoPE, 1, 8, 2, double>(c)), Catch::Contains("bf16"));
}

TEST_CASE("precision names parse both ways and bad ones are refused") {
  for (const Precision p : {Precision::fp32, Precision::bf16}) CHECK(parse_precision(precision_name(p)) == p);
  CHECK_THROWS_WITH(parse_precision("fp16"), Catch::Contains("unknown precision 'fp16' (known: fp32, bf16)"));
}

#if defined(POSENC_GEMM_ONEDNN)
namespace {
std::atomic<long> signals_seen{0};
extern "C" void count_signal(int) { signals_seen.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

// oneDNN 2.6's JIT f32 GEMM kernels point rsp into a heap buffer, where the kernel writes the
// frame of a signal that arrives meanwhile: a Ctrl-C (or a profiler's SIGPROF) corrupted the heap
// or the product (oneDNN issue 4845, fixed in 3.11). gemm() holds signals until the product is done.
TEST_CASE("signals arriving during oneDNN's products wait for them and corrupt nothing") {
  struct sigaction action {}, previous {};
  action.sa_handler = count_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  REQUIRE(sigaction(SIGUSR1, &action, &previous) == 0);
  // the shapes of a small model's linear layers, forward (NN) and backward (NT, TN)
  const std::size_t m = 64;
  for (const std::size_t n : {64, 192, 256}) {
    for (const std::size_t k : {64, 256}) {
      for (const auto& [ta, tb] : {std::pair{false, false}, std::pair{false, true}, std::pair{true, false}}) {
        std::vector<float> a(m * k), b(k * n), reference(m * n), c(m * n);
        posenc::Rng rng(9);
        for (auto& x : a) x = static_cast<float>(rng.normal(0.0, 1.0));
        for (auto& x : b) x = static_cast<float>(rng.normal(0.0, 1.0));
        const std::size_t lda = ta ? m : k, ldb = tb ? k : n;
        posenc::gemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, reference.data(), n);
        std::atomic<bool> done{false};
        std::atomic<int> wrong_products{0};
        std::thread computing([&] {
          for (int i = 0; i < 2000; ++i) {
            posenc::gemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), n);
            if (c != reference) ++wrong_products;
          }
          done = true;
        });
        const pthread_t target = computing.native_handle();
        while (!done) {
          pthread_kill(target, SIGUSR1);
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
        computing.join();
        INFO("M " << m << " N " << n << " K " << k << (ta ? " Aᵀ" : "") << (tb ? " Bᵀ" : ""));
        CHECK(wrong_products.load() == 0);
      }
    }
  }
  sigaction(SIGUSR1, &previous, nullptr);
  CHECK(signals_seen.load() > 0);
}
#endif

#if defined(POSENC_GEMM_ONEDNN)
TEST_CASE("a signal hold inside another ends with the outer one, which restores the thread's mask") {
  sigset_t before, inside_outer, after;
  pthread_sigmask(SIG_BLOCK, nullptr, &before);
  REQUIRE(sigismember(&before, SIGINT) == 0);
  {
    const GemmSignalHold outer{};
    { const GemmSignalHold inner{}; }
    pthread_sigmask(SIG_BLOCK, nullptr, &inside_outer);
  }
  pthread_sigmask(SIG_BLOCK, nullptr, &after);
  CHECK(sigismember(&inside_outer, SIGINT) == 1);  // still held once the inner hold ended
  CHECK(sigismember(&inside_outer, SIGSEGV) == 0);  // faults are never held
  CHECK(sigismember(&after, SIGINT) == 0);
}
#endif
