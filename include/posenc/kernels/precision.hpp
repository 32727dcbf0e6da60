// Precision: what the training GEMMs round their operands to (fp32, or bf16 with float accumulation).
#pragma once

#include <string_view>

#include "posenc/config.hpp"

namespace posenc {

// What a float GEMM's inputs are rounded to. bf16: A and B rounded to bfloat16 (8 bits of
// mantissa) and multiplied with float accumulation into a float C, as PyTorch's CPU autocast does;
// the operands stay float in memory (master weights, activations), only the product sees bf16.
enum class Precision { fp32, bf16 };

inline constexpr const char* precision_name(Precision p) { return p == Precision::bf16 ? "bf16" : "fp32"; }

inline Precision parse_precision(std::string_view text) {
  if (text == "fp32") return Precision::fp32;
  if (text == "bf16") return Precision::bf16;
  fail("precision '", text, "' is not one of fp32, bf16");
}

}  // namespace posenc
