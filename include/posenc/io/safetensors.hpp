// The safetensors format: SafetensorsFile (a parsed, validated file), its reader and SafetensorsWriter.
#pragma once

// Layout (https://github.com/huggingface/safetensors): an 8-byte little-endian header length N,
// N bytes of UTF-8 JSON mapping each tensor name to {"dtype", "shape", "data_offsets": [begin,
// end]} plus an optional "__metadata__" object of strings, then the little-endian data, offsets
// counted from the byte after the header. The parser accepts what the reference implementation
// accepts: the tensors must tile the data buffer exactly, with no gaps, overlaps or trailing bytes.
// It never reads outside the bytes it is given, whatever they hold.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/io/atomic_file.hpp"

namespace posenc {

static_assert(
    std::numeric_limits<float>::is_iec559 && std::numeric_limits<double>::is_iec559,
    "safetensors stores IEEE-754 floats: posenc's reader needs IEEE-754 float and double");

// The largest JSON header the parser accepts, as in the reference implementation.
inline constexpr std::uint64_t safetensors_max_header_bytes = 100'000'000;

// One tensor of a safetensors file: [begin, end) is its byte range in the data buffer.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;               // "F32", "BF16", ... as written in the file
  std::vector<std::size_t> shape;  // row-major; {} is a scalar
  std::size_t begin = 0;
  std::size_t end = 0;

  std::size_t numel() const {
    std::size_t n = 1;
    for (std::size_t extent : shape) n *= extent;  // cannot overflow: the parser checked it
    return n;
  }
};

namespace detail {

// Bytes per element of each dtype the format defines, or 0 for an unknown one.
inline std::size_t safetensors_dtype_size(std::string_view dtype) {
  static constexpr std::pair<std::string_view, std::size_t> sizes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
      {"U16", 2},  {"I16", 2}, {"F16", 2}, {"BF16", 2},    {"U32", 4},     {"I32", 4},
      {"F32", 4},  {"U64", 8}, {"I64", 8}, {"F64", 8},
  };
  for (const auto& [name, size] : sizes)
    if (name == dtype) return size;
  return 0;
}

// a * b, or false when it does not fit in a std::uint64_t.
inline bool checked_mul(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return false;
  out = a * b;
  return true;
}

inline std::string shape_string(const std::vector<std::size_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// Unsigned integers of Bytes bytes, stored little-endian whatever the host.
template <std::size_t Bytes>
using uint_of_size = std::conditional_t<Bytes == 4, std::uint32_t, std::uint64_t>;

template <class U>
U load_le(const char* p) {
  U v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i)
    v |= static_cast<U>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

template <class U>
void store_le(char* p, U v) {
  for (std::size_t i = 0; i < sizeof(U); ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xFFu);
}

// Converts n little-endian values of Src (float or double) at src into n values of Dst at dst.
template <class Src, class Dst>
void decode_le(const char* src, std::size_t n, Dst* dst) {
  if constexpr (std::is_same_v<Src, Dst> && std::endian::native == std::endian::little) {
    if (n > 0) std::memcpy(dst, src, n * sizeof(Src));  // src need not be aligned
  } else {
    using U = uint_of_size<sizeof(Src)>;
    for (std::size_t i = 0; i < n; ++i)
      dst[i] = static_cast<Dst>(std::bit_cast<Src>(load_le<U>(src + i * sizeof(Src))));
  }
}

// A JSON string literal for s, or fails naming what s is when it is not valid UTF-8.
inline std::string json_quote(const std::string& s, std::string_view what) {
  try {
    return nlohmann::json(s).dump();
  } catch (const nlohmann::json::exception&) {
    fail("safetensors writer: ", what, " is not valid UTF-8");
  }
}

}  // namespace detail

// A parsed safetensors file: its metadata, its tensors in data order, and their bytes.
class SafetensorsFile {
 public:
  // Parses and validates a whole file; source names it in every error (usually its path).
  static SafetensorsFile parse(std::string bytes, std::string source);

  const std::string& source() const { return source_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // In data order (by offsets); empty tensors sharing an offset are ordered by name.
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  std::size_t data_size() const { return data_.size(); }

  bool contains(std::string_view name) const { return index_.find(name) != index_.end(); }

  // The named tensor; fails naming it and the file when there is none.
  const SafetensorsEntry& find(std::string_view name) const {
    const auto it = index_.find(name);
    if (it == index_.end())
      fail("safetensors file '", source_, "' has no tensor named '", name, "' (it has ",
           entries_.size(), " tensors",
           entries_.empty() ? std::string() : ", e.g. '" + entries_.front().name + "'", ")");
    return entries_[it->second];
  }

  // The named tensor's bytes as stored (little-endian, any dtype).
  std::string_view raw(std::string_view name) const {
    const SafetensorsEntry& e = find(name);
    return std::string_view(data_).substr(e.begin, e.end - e.begin);
  }

  // Copies the named F32 or F64 tensor into dst, converting to S; fails unless its shape is
  // expected_shape. dst must hold product(expected_shape) values and needs no alignment beyond S's.
  template <class S>
  requires std::is_same_v<S, float> || std::is_same_v<S, double>
  void read_into(std::string_view name, const std::vector<std::size_t>& expected_shape,
                 S* dst) const {
    const SafetensorsEntry& e = find(name);
    if (e.shape != expected_shape)
      fail("safetensors file '", source_, "': tensor '", e.name, "' has shape ",
           detail::shape_string(e.shape), ", expected ", detail::shape_string(expected_shape));
    copy_out(e, dst);
  }

  // The named F32 or F64 tensor's values as floats, whatever its shape.
  std::vector<float> read_floats(std::string_view name) const {
    const SafetensorsEntry& e = find(name);
    std::vector<float> out(e.numel());
    copy_out(e, out.data());
    return out;
  }

 private:
  template <class S>
  void copy_out(const SafetensorsEntry& e, S* dst) const {
    const std::size_t n = e.numel();
    if (n > 0 && dst == nullptr)
      fail("safetensors file '", source_, "': tensor '", e.name, "' is read into a null pointer");
    const char* src = data_.data() + e.begin;
    if (e.dtype == "F32")
      detail::decode_le<float>(src, n, dst);
    else if (e.dtype == "F64")
      detail::decode_le<double>(src, n, dst);
    else
      fail("safetensors file '", source_, "': tensor '", e.name, "' has dtype ", e.dtype,
           ", expected F32 or F64");
  }

  std::string source_;
  std::string data_;  // the bytes after the header
  std::map<std::string, std::string> metadata_;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::size_t, std::less<>> index_;  // name -> position in entries_
};

inline SafetensorsFile SafetensorsFile::parse(std::string bytes, std::string source) {
  const std::string where = "safetensors file '" + source + "': ";
  if (bytes.size() < 8)
    fail("safetensors file '", source, "' is ", bytes.size(),
         " bytes long, shorter than the 8-byte header length");
  const std::uint64_t header_len = detail::load_le<std::uint64_t>(bytes.data());
  if (header_len > safetensors_max_header_bytes)
    fail(where, "header length ", header_len, " exceeds the limit of ",
         safetensors_max_header_bytes, " bytes");
  if (header_len > bytes.size() - 8)
    fail(where, "header length ", header_len, " runs past the end of the file (", bytes.size() - 8,
         " bytes follow the length field)");
  const auto header_end = static_cast<std::size_t>(8 + header_len);

  // A valid header nests three deep (header, entry, shape); refuse far deeper input before
  // building it, so a header of a million '[' costs neither stack nor gigabytes.
  constexpr int max_depth = 16;
  const nlohmann::json::parser_callback_t limit_depth =
      [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
        if (depth > max_depth && (event == nlohmann::json::parse_event_t::object_start ||
                                  event == nlohmann::json::parse_event_t::array_start))
          fail(where, "malformed JSON header: nested deeper than ", max_depth, " levels");
        return true;
      };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.data() + 8, bytes.data() + header_end, limit_depth);
  } catch (const nlohmann::json::exception& e) {
    fail(where, "malformed JSON header: ", e.what());
  }
  if (!header.is_object())
    fail(where, "the JSON header is not an object (it is ", header.type_name(), ")");

  SafetensorsFile file;
  const std::size_t data_size = bytes.size() - header_end;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object())
        fail(where, "\"__metadata__\" is not an object (it is ", value.type_name(), ")");
      for (const auto& [key, text] : value.items()) {
        if (!text.is_string())
          fail(where, "metadata value for key '", key, "' is not a string (it is ",
               text.type_name(), ")");
        file.metadata_.emplace(key, text.get<std::string>());
      }
      continue;
    }
    const std::string tensor = where + "tensor '" + name + "' ";
    if (!value.is_object())
      fail(tensor, "is not described by a JSON object (it is ", value.type_name(), ")");

    SafetensorsEntry entry;
    entry.name = name;
    const auto dtype = value.find("dtype");
    if (dtype == value.end() || !dtype->is_string()) fail(tensor, "has no \"dtype\" string");
    entry.dtype = dtype->get<std::string>();
    const std::size_t elem_size = detail::safetensors_dtype_size(entry.dtype);
    if (elem_size == 0) fail(tensor, "has unknown dtype '", entry.dtype, "'");

    const auto shape = value.find("shape");
    if (shape == value.end() || !shape->is_array())
      fail(tensor, "has no \"shape\" array of non-negative integers");
    std::uint64_t numel = 1;
    for (const nlohmann::json& extent : *shape) {
      if (!extent.is_number_unsigned())
        fail(tensor, "has a \"shape\" entry ", extent.dump(), "; expected a non-negative integer");
      const auto n = extent.get<std::uint64_t>();
      if (n > std::numeric_limits<std::size_t>::max() || !detail::checked_mul(numel, n, numel))
        fail(tensor, "has a shape whose element count overflows 64 bits");
      entry.shape.push_back(static_cast<std::size_t>(n));
    }
    std::uint64_t nbytes = 0;
    if (!detail::checked_mul(numel, elem_size, nbytes))
      fail(tensor, "has a shape whose byte count overflows 64 bits");

    const auto offsets = value.find("data_offsets");
    if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
      fail(tensor, "has no \"data_offsets\" pair of non-negative integers [begin, end]");
    const auto begin = (*offsets)[0].get<std::uint64_t>();
    const auto end = (*offsets)[1].get<std::uint64_t>();
    const std::string range = detail::concat("data_offsets [", begin, ", ", end, "]");
    if (end < begin) fail(tensor, "has ", range, " with end before begin");
    if (end > data_size)
      fail(tensor, "has ", range, " outside the data buffer of ", data_size, " bytes");
    if (end - begin != nbytes)
      fail(tensor, "has ", range, " spanning ", end - begin, " bytes, but shape ",
           detail::shape_string(entry.shape), " of ", entry.dtype, " needs ", nbytes, " bytes");
    entry.begin = static_cast<std::size_t>(begin);
    entry.end = static_cast<std::size_t>(end);
    file.entries_.push_back(std::move(entry));
  }

  // Like the reference implementation: in offset order the tensors must tile the data buffer.
  std::sort(file.entries_.begin(), file.entries_.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
            });
  std::size_t expected_begin = 0;
  for (std::size_t i = 0; i < file.entries_.size(); ++i) {
    const SafetensorsEntry& e = file.entries_[i];
    if (e.begin < expected_begin)
      fail(where, "tensor '", e.name, "' at data_offsets [", e.begin, ", ", e.end,
           "] overlaps tensor '", file.entries_[i - 1].name, "', which ends at ", expected_begin);
    if (e.begin > expected_begin)
      fail(where, "tensor '", e.name, "' at data_offsets [", e.begin, ", ", e.end,
           "] leaves a gap of ", e.begin - expected_begin,
           " bytes before it; expected the tensors to be contiguous");
    expected_begin = e.end;
    file.index_.emplace(e.name, i);
  }
  if (expected_begin != data_size)
    fail(where, "the data buffer has ", data_size - expected_begin,
         " bytes after the last tensor (", data_size, " bytes, tensors end at ", expected_begin,
         ")");

  bytes.erase(0, header_end);
  file.data_ = std::move(bytes);
  file.source_ = std::move(source);
  return file;
}

// Parses a safetensors file held in memory; source_name (usually the path) goes into every error.
inline SafetensorsFile parse_safetensors(std::string_view bytes, std::string_view source_name) {
  return SafetensorsFile::parse(std::string(bytes), std::string(source_name));
}

// Reads and parses a safetensors file; every error names the path.
inline SafetensorsFile read_safetensors(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail("cannot read safetensors file '", path, "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open safetensors file '", path, "' for reading");
  std::string bytes;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size <= bytes.max_size()) bytes.reserve(static_cast<std::size_t>(size));
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0)
    bytes.append(chunk, static_cast<std::size_t>(in.gcount()));
  if (in.bad()) fail("cannot read safetensors file '", path, "'");
  return SafetensorsFile::parse(std::move(bytes), path);
}

// Builds a safetensors file: F32 tensors laid out contiguously in the order they are added, the
// header padded with spaces to a multiple of 8 bytes as the reference implementation writes it.
class SafetensorsWriter {
 public:
  void add_metadata(std::string key, std::string value) {
    detail::json_quote(key, "metadata key '" + key + "'");
    detail::json_quote(value, "the metadata value for key '" + key + "'");
    if (metadata_.contains(key))
      fail("safetensors writer: metadata key '", key, "' is given twice");
    metadata_.emplace(std::move(key), std::move(value));
  }

  // Copies product(shape) floats from data.
  void add_tensor(std::string name, std::vector<std::size_t> shape, const float* data) {
    std::string quoted = check_tensor(name, shape, data != nullptr);
    const std::size_t n = numel_of(shape), at = data_.size();
    data_.resize(at + n * sizeof(float));
    if constexpr (std::endian::native == std::endian::little) {
      if (n > 0) std::memcpy(data_.data() + at, data, n * sizeof(float));
    } else {
      for (std::size_t i = 0; i < n; ++i)
        detail::store_le(data_.data() + at + i * 4, std::bit_cast<std::uint32_t>(data[i]));
    }
    record(std::move(name), std::move(quoted), std::move(shape), at);
  }

  // Converts product(shape) doubles from data to F32 (out-of-range values become infinities).
  void add_tensor(std::string name, std::vector<std::size_t> shape, const double* data) {
    std::string quoted = check_tensor(name, shape, data != nullptr);
    const std::size_t n = numel_of(shape), at = data_.size();
    data_.resize(at + n * sizeof(float));
    for (std::size_t i = 0; i < n; ++i)
      detail::store_le(data_.data() + at + i * 4,
                       std::bit_cast<std::uint32_t>(static_cast<float>(data[i])));
    record(std::move(name), std::move(quoted), std::move(shape), at);
  }

  // The whole file as bytes.
  std::string serialize() const {
    std::string out = framed_header();
    out += data_;
    return out;
  }

  // Writes to a temporary file beside path and renames it into place, so an interrupted save
  // leaves any previous file at path intact. Errors name the path.
  void write(const std::string& path) const {
    write_file_atomically(path, serialize(), "safetensors file");
  }

 private:
  struct Entry {
    std::string quoted_name;  // as a JSON string literal
    std::vector<std::size_t> shape;
    std::size_t begin = 0, end = 0;
  };

  // Checks a new tensor before anything changes; returns its name as a JSON string literal.
  std::string check_tensor(const std::string& name, const std::vector<std::size_t>& shape,
                           bool has_data) const {
    if (name == "__metadata__")
      fail("safetensors writer: '__metadata__' is reserved and cannot name a tensor");
    if (names_.contains(name)) fail("safetensors writer: tensor name '", name, "' is given twice");
    std::string quoted = detail::json_quote(name, "tensor name '" + name + "'");
    std::uint64_t n = 1;
    for (std::size_t extent : shape)
      if (!detail::checked_mul(n, extent, n) || n > std::numeric_limits<std::size_t>::max() / 8)
        fail("safetensors writer: tensor '", name, "' of shape ", detail::shape_string(shape),
             " is too large");
    if (n > 0 && !has_data)
      fail("safetensors writer: tensor '", name, "' has no data (null pointer)");
    return quoted;
  }

  static std::size_t numel_of(const std::vector<std::size_t>& shape) {
    std::size_t n = 1;
    for (std::size_t extent : shape) n *= extent;  // check_tensor ruled out overflow
    return n;
  }

  // Records a tensor whose bytes were appended at offset begin.
  void record(std::string name, std::string quoted, std::vector<std::size_t> shape,
              std::size_t begin) {
    names_.insert(std::move(name));
    entries_.push_back(Entry{std::move(quoted), std::move(shape), begin, data_.size()});
  }

  // The 8-byte length, then the JSON header padded with spaces to a multiple of 8 bytes.
  std::string framed_header() const {
    std::string json = "{";
    if (!metadata_.empty()) json += "\"__metadata__\":" + nlohmann::json(metadata_).dump();
    for (const Entry& e : entries_) {
      if (json.size() > 1) json += ',';
      json += e.quoted_name;
      json += ":{\"dtype\":\"F32\",\"shape\":[";
      // appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false positive) on "..." + string
      for (std::size_t i = 0; i < e.shape.size(); ++i) {
        if (i > 0) json += ',';
        json += std::to_string(e.shape[i]);
      }
      json += "],\"data_offsets\":[";
      json += std::to_string(e.begin);
      json += ',';
      json += std::to_string(e.end);
      json += "]}";
    }
    json += '}';
    json.append((8 - json.size() % 8) % 8, ' ');
    std::string out(8, '\0');
    detail::store_le<std::uint64_t>(out.data(), json.size());
    return out + json;
  }

  std::map<std::string, std::string> metadata_;
  std::vector<Entry> entries_;
  std::set<std::string> names_;
  std::string data_;
};

}  // namespace posenc
