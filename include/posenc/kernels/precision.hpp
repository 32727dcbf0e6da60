// Precision: what the training GEMMs round their operands to (fp32, or bf16 with float accumulation).
#pragma once

#include <string_view>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"

namespace posenc {

// What a float GEMM's inputs are rounded to. bf16: A and B rounded to bfloat16 (8 bits of
// mantissa) and multiplied with float accumulation into a float C, as PyTorch's CPU autocast does;
// the operands stay float in memory (master weights, activations), only the product sees bf16.
enum class Precision { fp32, bf16 };

inline constexpr EnumNames<Precision, 2> precisions{"precision",
                                                   {{{Precision::fp32, "fp32"}, {Precision::bf16, "bf16"}}}};
static_assert(precisions.in_order());

// A C string: its callers print it with %s.
inline constexpr const char* precision_name(Precision p) { return precisions.name(p).data(); }
inline Precision parse_precision(std::string_view text) { return precisions.parse(text); }

}  // namespace posenc
