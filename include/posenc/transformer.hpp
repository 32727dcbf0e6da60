// The umbrella header: #include <posenc/transformer.hpp> brings in all of posenc.
#pragma once

#include "posenc/config.hpp"
#include "posenc/random.hpp"
#include "posenc/tensor.hpp"
#include "posenc/threads.hpp"

#include "posenc/kernels/adamw.hpp"
#include "posenc/kernels/attention.hpp"
#include "posenc/kernels/cross_entropy.hpp"
#include "posenc/kernels/embedding.hpp"
#include "posenc/kernels/gelu.hpp"
#include "posenc/kernels/gemm.hpp"
#include "posenc/kernels/layernorm.hpp"
#include "posenc/kernels/linear.hpp"

#include "posenc/encodings/alibi.hpp"
#include "posenc/encodings/concept.hpp"
#include "posenc/encodings/fire.hpp"
#include "posenc/encodings/kerple.hpp"
#include "posenc/encodings/learned.hpp"
#include "posenc/encodings/nope.hpp"
#include "posenc/encodings/rope.hpp"
#include "posenc/encodings/sinusoidal.hpp"
#include "posenc/encodings/t5_bias.hpp"
#include "posenc/encodings/xpos.hpp"

#include "posenc/model/aliases.hpp"
#include "posenc/model/char_transformer.hpp"
#include "posenc/model/decoder_block.hpp"
#include "posenc/model/generation.hpp"
#include "posenc/model/kv_cache.hpp"
#include "posenc/model/parameters.hpp"

#include "posenc/data/dataset.hpp"
#include "posenc/data/tokenizer.hpp"

#include "posenc/io/atomic_file.hpp"
#include "posenc/io/checkpoint.hpp"
#include "posenc/io/safetensors.hpp"

#include "posenc/train/adamw.hpp"
#include "posenc/train/evaluation.hpp"
#include "posenc/train/statistics.hpp"
#include "posenc/train/study.hpp"
#include "posenc/train/trainer.hpp"
#include "posenc/train/training_run.hpp"

#include "posenc/dispatch.hpp"
