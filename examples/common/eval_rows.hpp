// length_rows, copy_probe_rows, task_rows: shakespeare eval's measurements as JSON rows, for the program and Python.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <posenc/transformer.hpp>

namespace examples {

// Called with each row as it is measured (a program prints it); may be empty.
using RowCallback = std::function<void(const nlohmann::json&)>;

// The validation loss at each length L, non-overlapping and in sliding windows of stride `stride`
// (0: L/2), each also in bits per byte, with the mean loss by position in `bins` ranges (0: none);
// a length the model cannot take is a row with a note, never clipped (posenc::evaluate_at_length).
inline nlohmann::json length_rows(posenc::AnyModel& model, const posenc::TextDataset& data,
                                  const std::vector<std::size_t>& lengths, std::size_t stride, std::size_t bins,
                                  const RowCallback& on_row = {}) {
  const double val_bytes = data.bytes_per_target(posenc::Split::validation);
  nlohmann::json rows = nlohmann::json::array();
  for (const std::size_t L : lengths) {
    const std::size_t step = stride != 0 ? std::min(stride, L) : std::max<std::size_t>(1, L / 2);
    nlohmann::json row = posenc::evaluate_at_length(model, data.val(), L, step, bins);
    for (const std::string key : {"non_overlapping", "sliding"})
      if (row.contains(key) && row[key].is_number())
        row[key + "_bits_per_byte"] = posenc::bits_per_byte(row[key].get<double>(), val_bytes);
    if (on_row) on_row(row);
    rows.push_back(std::move(row));
  }
  return rows;
}

// Throws posenc::Error unless the validation split holds `segments` segments of every distance the
// model takes, naming the first that fails as `option` (--copy-probe) writes it.
inline void check_copy_probe_distances(const posenc::AnyModel& model, const posenc::TextDataset& data,
                                       const std::vector<std::size_t>& distances, std::size_t segments,
                                       const std::string& option) {
  for (const std::size_t n : distances)
    if (2 * n <= model.max_context()) {  // else its row says the model cannot take it
      try {
        posenc::check_copy_probe_split(data.val().size(), n, segments);
      } catch (const posenc::Error& e) {
        posenc::fail(option, " ", n, ": ", e.what());
      }
    }
}

// The copy probe (posenc::copy_probe_at) on the validation split at each distance, `segments`
// segments each; every distance is checked (check_copy_probe_distances) before the first is probed.
inline nlohmann::json copy_probe_rows(posenc::AnyModel& model, const posenc::TextDataset& data,
                                      const std::vector<std::size_t>& distances, std::size_t segments,
                                      const std::string& option, const RowCallback& on_row = {}) {
  check_copy_probe_distances(model, data, distances, segments, option);
  nlohmann::json rows = nlohmann::json::array();
  for (const std::size_t n : distances) {
    nlohmann::json row = posenc::copy_probe_at(model, data.val(), n, segments);
    if (on_row) on_row(row);
    rows.push_back(std::move(row));
  }
  return rows;
}

// A task's exact-match accuracy, character accuracy and answer loss at each of `lengths`
// (posenc::evaluate_task), `examples` examples a length from `seed`, checked first against the task
// and the model's vocabulary. A length past what the model accepts is a row with a note.
inline nlohmann::json task_rows(posenc::AnyModel& model, const posenc::Tokenizer& tokenizer, const posenc::Task& task,
                                const posenc::TaskLengths& lengths, std::size_t examples, std::uint64_t seed,
                                const RowCallback& on_row = {}) {
  task.check(lengths);
  task.check_vocabulary(tokenizer);
  nlohmann::json rows = nlohmann::json::array();
  for (const posenc::TaskScore& s : model.evaluate_task(task, tokenizer, lengths, examples, seed)) {
    nlohmann::json row = posenc::to_json(s, model.max_context());
    if (on_row) on_row(row);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace examples
