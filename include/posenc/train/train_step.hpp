// train_step(): one optimizer step on a batch — zero the gradients, loss and backward, AdamW.
#pragma once

#include "posenc/data/batches.hpp"
#include "posenc/kernels/profile.hpp"
#include "posenc/tensor.hpp"
#include "posenc/train/adamw.hpp"

namespace posenc {

// Returns the batch's mean loss before the step.
template <class Model>
typename Model::scalar_type train_step(Model& model, const Tokens& inputs, const Tokens& targets,
                                       AdamW<typename Model::scalar_type>& optimizer) {
  model.zero_grad();
  const auto loss = model.loss_and_backward(inputs, targets);
  POSENC_PROFILE_SCOPE("optimizer: adamw");
  optimizer.step(model.store());
  return loss;
}

// ... on a Batch (a corpus's windows or a task's examples): its mask, when it has one, chooses the
// targets the loss averages over.
template <class Model>
typename Model::scalar_type train_step(Model& model, const Batch& batch,
                                       AdamW<typename Model::scalar_type>& optimizer) {
  model.zero_grad();
  const auto loss = batch.mask ? model.loss_and_backward(batch.inputs, batch.targets, *batch.mask)
                               : model.loss_and_backward(batch.inputs, batch.targets);
  POSENC_PROFILE_SCOPE("optimizer: adamw");
  optimizer.step(model.store());
  return loss;
}

}  // namespace posenc
