// libFuzzer target for parse_safetensors and a checkpoint's metadata (its tokenizer above all): any bytes must parse
// or throw posenc::Error, and never crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/io/checkpoint.hpp>
#include <posenc/io/safetensors.hpp>

namespace {

// Stops the fuzzer with a crash it reports, for a broken property rather than a memory error.
void require(bool ok) {
  if (!ok) std::abort();
}

// A file of F32 tensors only must survive SafetensorsWriter byte-for-byte in its data.
void check_round_trip(const posenc::SafetensorsFile& file) {
  posenc::SafetensorsWriter writer;
  for (const auto& [key, value] : file.metadata()) writer.add_metadata(key, value);
  for (const posenc::SafetensorsEntry& e : file.entries()) {
    const std::vector<float> values = file.read_floats(e.name);
    writer.add_tensor(e.name, e.shape, values.data());
  }
  const posenc::SafetensorsFile again = posenc::parse_safetensors(writer.serialize(), "round trip");
  require(again.metadata() == file.metadata());
  require(again.entries().size() == file.entries().size());
  for (std::size_t i = 0; i < file.entries().size(); ++i) {
    const posenc::SafetensorsEntry& a = file.entries()[i];
    const posenc::SafetensorsEntry& b = again.entries()[i];
    require(a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.begin == b.begin &&
            a.end == b.end);
    require(file.raw(a.name) == again.raw(b.name));
  }
}

// Parses bytes; whatever parses must be readable, and an all-F32 file must round-trip.
void check(std::string_view bytes) {
  try {
    const posenc::SafetensorsFile file = posenc::parse_safetensors(bytes, "fuzz input");
    bool all_f32 = true;
    for (const posenc::SafetensorsEntry& e : file.entries()) {
      require(file.find(e.name).name == e.name);
      require(file.raw(e.name).size() == e.end - e.begin);
      if (e.dtype == "F32") {
        std::vector<float> out(e.numel());
        file.read_into(e.name, e.shape, out.data());
      } else if (e.dtype == "F64") {
        std::vector<double> out(e.numel());
        file.read_into(e.name, e.shape, out.data());
        all_f32 = false;
      } else {
        all_f32 = false;
      }
    }
    if (all_f32) check_round_trip(file);
    // a checkpoint's description: a tokenizer that reads back must round-trip text it can encode
    const posenc::CheckpointInfo info = posenc::read_checkpoint_info(file);
    const std::string text = "the king's café 1599\n";
    if (info.tokenizer.first_unencodable(text) == std::string::npos)
      require(info.tokenizer.decode(info.tokenizer.encode(text)) == text);
  } catch (const posenc::Error&) {
    // Refusing bad input is the expected outcome; any other exception escapes and crashes.
  }
}

}  // namespace

// Each input is parsed as given, and again with its length field set to end the header at the
// last '}', so that mutations of the JSON need not also fix the length to get past it.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check(bytes);
  const std::size_t close = bytes.rfind('}');
  if (size >= 8 && close != std::string_view::npos && close >= 8) {
    std::string fixed(bytes);
    std::uint64_t length = close - 7;
    for (std::size_t i = 0; i < 8; ++i, length >>= 8) fixed[i] = static_cast<char>(length & 0xFF);
    if (fixed != bytes) check(fixed);
  }
  return 0;
}
