// Readable aliases for the study's models: 3 layers, Dim 192, 4 heads, one per positional encoding.
#pragma once

#include "posenc/encodings/alibi.hpp"
#include "posenc/encodings/learned.hpp"
#include "posenc/encodings/nope.hpp"
#include "posenc/encodings/rope.hpp"
#include "posenc/encodings/sinusoidal.hpp"
#include "posenc/model/char_transformer.hpp"

namespace posenc {

inline constexpr std::size_t study_layers = 3;
inline constexpr std::size_t study_dim = 192;
inline constexpr std::size_t study_heads = 4;
inline constexpr std::size_t study_context = 128;

template <class PosEnc, std::floating_point S = float>
using StudyTransformer = CharTransformer<PosEnc, study_layers, study_dim, study_heads, S>;

// The study's four models …
using LearnedTransformer = StudyTransformer<Learned>;
using SinusoidalTransformer = StudyTransformer<Sinusoidal>;
using RoPETransformer = StudyTransformer<RoPE>;
using ALiBiSingleSlopeTransformer = StudyTransformer<ALiBiSingleSlope>;
// … and the control and Press et al.'s full ALiBi.
using NoPETransformer = StudyTransformer<NoPE>;
using ALiBiTransformer = StudyTransformer<ALiBi>;

}  // namespace posenc
