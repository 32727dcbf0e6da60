// Tests of io/safetensors.hpp: round trips, the exact byte layout, and every malformed input the parser refuses.
#include <catch2/catch.hpp>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <posenc/io/safetensors.hpp>

#if defined(_WIN32)
#include <process.h>
#define POSENC_TEST_GETPID _getpid
#else
#include <unistd.h>
#define POSENC_TEST_GETPID getpid
#endif

using namespace posenc;
using Catch::Contains;

namespace {

// A unique path under the temporary directory, removed (with any leftover) when it goes out of scope.
struct TempPath {
  std::filesystem::path path;
  explicit TempPath(const std::string& tag) {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("posenc-test-safetensors-" + std::to_string(POSENC_TEST_GETPID()) + "-" +
            std::to_string(counter++) + "-" + tag);
    std::filesystem::remove_all(path);
  }
  ~TempPath() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string str() const { return path.string(); }
};

// The 8-byte little-endian length, the header as given (no padding) and the data.
std::string framed(const std::string& header, const std::string& data = "",
                   std::uint64_t length_override = std::numeric_limits<std::uint64_t>::max()) {
  const std::uint64_t n =
      length_override == std::numeric_limits<std::uint64_t>::max() ? header.size() : length_override;
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + header + data;
}

std::string le_floats(const std::vector<float>& values) {
  std::string out;
  for (float v : values) {
    const auto bits = std::bit_cast<std::uint32_t>(v);
    for (int i = 0; i < 4; ++i) out += static_cast<char>((bits >> (8 * i)) & 0xFF);
  }
  return out;
}

std::uint64_t header_length(const std::string& bytes) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  return n;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// How many of write()'s temporaries for target (target + ".tmp.*") are left beside it.
std::size_t leftover_temporaries(const std::filesystem::path& target) {
  std::size_t n = 0;
  for (const auto& item : std::filesystem::directory_iterator(target.parent_path()))
    if (item.path().filename().string().starts_with(target.filename().string() + ".tmp")) ++n;
  return n;
}

SafetensorsFile parse(const std::string& bytes) { return parse_safetensors(bytes, "bad.safetensors"); }

// A one-tensor header with the given entry JSON, with data of data_bytes bytes.
std::string one_tensor(const std::string& entry, std::size_t data_bytes = 8) {
  return framed("{\"t\":" + entry + "}", std::string(data_bytes, '\x01'));
}

}  // namespace

// Every parse failure names the source and the problem.
#define CHECK_PARSE_FAILS(bytes, problem) \
  CHECK_THROWS_WITH(parse(bytes), Contains("safetensors file 'bad.safetensors'") && Contains(problem))

TEST_CASE("safetensors: a written file reads back with the same tensors, bytes, order and metadata") {
  const std::vector<float> w = {1.5f, -0.0f, std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::denorm_min(), 3.0e38f,
                                std::bit_cast<float>(0x7fc01234u)};  // a NaN with a payload
  const std::vector<float> b = {0.25f, -7.0f, 1e-20f};
  const float scalar = 42.0f;

  SafetensorsWriter writer;
  writer.add_metadata("format", "pt");
  writer.add_metadata("note", "quotes \" and \\ and \xc3\xa9");
  writer.add_tensor("z.weight", {2, 3}, w.data());  // not in name order: file order must survive
  writer.add_tensor("empty", {0, 4}, static_cast<const float*>(nullptr));
  writer.add_tensor("a.bias", {3}, b.data());
  writer.add_tensor("scalar", {}, &scalar);

  const TempPath path("roundtrip.safetensors");
  writer.write(path.str());
  const SafetensorsFile file = read_safetensors(path.str());

  CHECK(file.source() == path.str());
  CHECK(file.metadata() ==
        std::map<std::string, std::string>{{"format", "pt"}, {"note", "quotes \" and \\ and \xc3\xa9"}});
  REQUIRE(file.entries().size() == 4);
  const std::vector<std::string> order = {"z.weight", "empty", "a.bias", "scalar"};
  for (std::size_t i = 0; i < order.size(); ++i) {
    CHECK(file.entries()[i].name == order[i]);
    CHECK(file.entries()[i].dtype == "F32");
  }
  CHECK(file.find("z.weight").shape == std::vector<std::size_t>{2, 3});
  CHECK(file.find("empty").shape == std::vector<std::size_t>{0, 4});
  CHECK(file.find("a.bias").shape == std::vector<std::size_t>{3});
  CHECK(file.find("scalar").shape.empty());
  CHECK(file.data_size() == (6 + 3 + 1) * 4);

  CHECK(file.raw("z.weight") == le_floats(w));  // bit-exact, NaN payload and -0 included
  CHECK(file.raw("a.bias") == le_floats(b));
  CHECK(file.raw("empty").empty());

  std::vector<float> w_back(6, 0.0f);
  file.read_into("z.weight", {2, 3}, w_back.data());
  CHECK(std::memcmp(w_back.data(), w.data(), sizeof(float) * 6) == 0);
  std::vector<double> b_back(3);
  file.read_into("a.bias", {3}, b_back.data());
  CHECK(b_back == std::vector<double>{0.25, -7.0, static_cast<double>(1e-20f)});
  CHECK(file.read_floats("scalar") == std::vector<float>{42.0f});
  CHECK(file.read_floats("empty").empty());
  file.read_into("empty", {0, 4}, static_cast<float*>(nullptr));  // nothing to copy

  // The file on disk is exactly serialize(), and nothing but it was left in the directory.
  CHECK(slurp(path.str()) == writer.serialize());
  CHECK(leftover_temporaries(path.path) == 0);
}

TEST_CASE("safetensors: the double overload stores F32") {
  const std::vector<double> values = {0.1, -2.5, 1e300};
  SafetensorsWriter writer;
  writer.add_tensor("d", {3}, values.data());
  const SafetensorsFile file = parse_safetensors(writer.serialize(), "memory");
  CHECK(file.find("d").dtype == "F32");
  const std::vector<float> back = file.read_floats("d");
  CHECK(back[0] == 0.1f);
  CHECK(back[1] == -2.5f);
  CHECK(std::isinf(back[2]));
}

TEST_CASE("safetensors: the header is padded with spaces to a multiple of 8 bytes") {
  for (std::size_t len = 0; len < 12; ++len) {
    SafetensorsWriter writer;
    const float x = 1.0f;
    writer.add_tensor(std::string(len, 'n'), {1}, &x);
    if (len % 3 == 0) writer.add_metadata("k", std::string(len, 'v'));
    const std::string bytes = writer.serialize();
    const std::uint64_t n = header_length(bytes);
    CHECK(n % 8 == 0);
    REQUIRE(bytes.size() == 8 + n + 4);
    const std::string header = bytes.substr(8, n);
    const std::size_t close = header.rfind('}');
    CHECK(header.find_first_not_of(' ', close + 1) == std::string::npos);
    CHECK(n - (close + 1) < 8);
    CHECK(parse_safetensors(bytes, "padded").read_floats(std::string(len, 'n')) ==
          std::vector<float>{1.0f});
  }
  SafetensorsWriter empty;
  CHECK(empty.serialize() == framed("{}      "));
  CHECK(parse_safetensors(empty.serialize(), "empty").entries().empty());
}

TEST_CASE("safetensors: the exact bytes of a tiny file") {
  const std::vector<float> t = {1.0f, -2.0f};
  SafetensorsWriter writer;
  writer.add_tensor("t", {2}, t.data());
  const std::string bytes = writer.serialize();
  const std::string json = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";  // 54 bytes
  REQUIRE(json.size() == 54);
  const std::string expected = std::string("\x38\0\0\0\0\0\0\0", 8) + json + "  " +
                               std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8);
  CHECK(bytes == expected);
  CHECK(header_length(bytes) == 56);
  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, 56));
  CHECK(header["t"]["dtype"] == "F32");
  CHECK(header["t"]["shape"] == nlohmann::json::array({2}));
  CHECK(header["t"]["data_offsets"] == nlohmann::json::array({0, 8}));
}

TEST_CASE("safetensors: a hand-built file with metadata, other dtypes and unaligned data parses") {
  // A header of odd length without padding: readers must not rely on the writer's padding.
  const std::string header =
      R"({"__metadata__":{"step":"7"},"x":{"dtype":"F64","shape":[1,2],"data_offsets":[0,16]},)"
      R"("h":{"dtype":"BF16","shape":[2],"data_offsets":[16,20]},)"
      R"("y":{"dtype":"F32","shape":[],"data_offsets":[20,24],"extra":"ignored"}})";
  std::string data(24, '\0');
  const double xs[2] = {0.5, -3.25};
  std::memcpy(data.data(), xs, 16);  // the test host is little-endian, as safetensors is
  const float y = 9.0f;
  std::memcpy(data.data() + 20, &y, 4);
  const std::string bytes = framed(header + (header.size() % 2 == 0 ? " " : ""), data);
  REQUIRE((bytes.size() - data.size()) % 2 == 1);

  const SafetensorsFile file = parse_safetensors(bytes, "hand.safetensors");
  CHECK(file.metadata().at("step") == "7");
  REQUIRE(file.entries().size() == 3);
  CHECK(file.entries()[0].name == "x");  // data order, not the header's sorted order
  CHECK(file.entries()[1].name == "h");
  CHECK(file.entries()[2].name == "y");
  CHECK(file.contains("h"));
  CHECK_FALSE(file.contains("q"));

  double x_back[2] = {0, 0};
  file.read_into("x", {1, 2}, x_back);
  CHECK(x_back[0] == 0.5);
  CHECK(x_back[1] == -3.25);
  CHECK(file.read_floats("x") == std::vector<float>{0.5f, -3.25f});
  float y_back = 0;
  file.read_into("y", {}, &y_back);
  CHECK(y_back == 9.0f);

  CHECK_THROWS_WITH(file.find("q"), Contains("safetensors file 'hand.safetensors' has no tensor named 'q'"));
  CHECK_THROWS_WITH(file.read_into("x", {2, 1}, x_back),
                    Contains("tensor 'x' has shape [1, 2], expected [2, 1]") && Contains("hand.safetensors"));
  CHECK_THROWS_WITH(file.read_floats("h"), Contains("tensor 'h' has dtype BF16, expected F32 or F64"));
  CHECK_THROWS_WITH(file.read_into("y", {}, static_cast<float*>(nullptr)), Contains("null pointer"));
}

TEST_CASE("safetensors: the length field and the JSON header are checked") {
  CHECK_THROWS_WITH(parse(""), Contains("is 0 bytes long, shorter than the 8-byte header length"));
  CHECK_THROWS_WITH(parse(std::string("\x02\0\0", 3)), Contains("is 3 bytes long"));
  CHECK_PARSE_FAILS(framed("{}", "", 100'000'001), "header length 100000001 exceeds the limit");
  CHECK_PARSE_FAILS(framed("{}", "", 0xFFFFFFFFFFFFFFF0ull), "exceeds the limit");
  CHECK_PARSE_FAILS(framed("{}", "", 3), "header length 3 runs past the end of the file (2 bytes");
  CHECK_PARSE_FAILS(framed(""), "malformed JSON header");
  CHECK_PARSE_FAILS(framed(R"({"t":)"), "malformed JSON header");
  CHECK_PARSE_FAILS(framed(R"({"t":{}} trailing)"), "malformed JSON header");
  CHECK_PARSE_FAILS(framed("{} // comment"), "malformed JSON header");
  CHECK_PARSE_FAILS(framed("{\"\xff\":1}"), "malformed JSON header");  // not UTF-8
  CHECK_PARSE_FAILS(framed(std::string("{\"a\0\":1}", 8)), "malformed JSON header");
  CHECK_PARSE_FAILS(framed(std::string(100000, '[')), "nested deeper than 16 levels");
  CHECK_PARSE_FAILS(framed(R"({"t":)" + std::string(20, '[')), "nested deeper than 16 levels");
  CHECK_PARSE_FAILS(framed("[1, 2]"), "the JSON header is not an object (it is array)");
  CHECK_PARSE_FAILS(framed("\"text\""), "the JSON header is not an object (it is string)");
}

TEST_CASE("safetensors: metadata must be an object of strings") {
  CHECK_PARSE_FAILS(framed(R"({"__metadata__":[1]})"), "\"__metadata__\" is not an object (it is array)");
  CHECK_PARSE_FAILS(framed(R"({"__metadata__":{"a":"x","epoch":3}})"),
                    "metadata value for key 'epoch' is not a string (it is number)");
  CHECK_PARSE_FAILS(framed(R"({"__metadata__":{"a":null}})"), "key 'a' is not a string (it is null)");
  CHECK(parse(framed(R"({"__metadata__":{}})")).metadata().empty());
}

TEST_CASE("safetensors: every field of a tensor entry is checked") {
  const std::string shape = R"("shape":[2],)";
  const std::string offsets = R"("data_offsets":[0,8])";
  const std::string f32 = R"("dtype":"F32",)";
  // The well-formed entry these variations break.
  CHECK(parse(one_tensor("{" + f32 + shape + offsets + "}")).read_floats("t").size() == 2);

  CHECK_PARSE_FAILS(one_tensor("[1]"), "tensor 't' is not described by a JSON object (it is array)");
  CHECK_PARSE_FAILS(one_tensor("\"F32\""), "tensor 't' is not described by a JSON object (it is string)");
  CHECK_PARSE_FAILS(one_tensor("{" + shape + offsets + "}"), "tensor 't' has no \"dtype\" string");
  CHECK_PARSE_FAILS(one_tensor(R"({"dtype":4,)" + shape + offsets + "}"), "tensor 't' has no \"dtype\" string");
  CHECK_PARSE_FAILS(one_tensor(R"({"dtype":"F33",)" + shape + offsets + "}"), "tensor 't' has unknown dtype 'F33'");
  CHECK_PARSE_FAILS(one_tensor(R"({"dtype":"f32",)" + shape + offsets + "}"), "unknown dtype 'f32'");

  CHECK_PARSE_FAILS(one_tensor("{" + f32 + offsets + "}"), "tensor 't' has no \"shape\" array");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + R"("shape":2,)" + offsets + "}"), "tensor 't' has no \"shape\" array");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + R"("shape":[-2],)" + offsets + "}"),
                    "tensor 't' has a \"shape\" entry -2; expected a non-negative integer");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + R"("shape":[2.0],)" + offsets + "}"), "\"shape\" entry 2.0;");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + R"("shape":["2"],)" + offsets + "}"), "\"shape\" entry \"2\";");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + R"("shape":[[2]],)" + offsets + "}"), "\"shape\" entry [2];");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + R"("shape":[18446744073709551616],)" + offsets + "}"),
                    "expected a non-negative integer");  // 2^64 parses as a float
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + R"("shape":[4294967296,4294967296],)" + offsets + "}"),
                    "tensor 't' has a shape whose element count overflows 64 bits");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + R"("shape":[4611686018427387904],)" + offsets + "}"),
                    "tensor 't' has a shape whose byte count overflows 64 bits");  // 2^62 * 4

  CHECK_PARSE_FAILS(one_tensor("{" + f32 + R"("shape":[2]})"), "tensor 't' has no \"data_offsets\" pair");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + shape + R"("data_offsets":[0]})"), "no \"data_offsets\" pair");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + shape + R"("data_offsets":[0,8,8]})"), "no \"data_offsets\" pair");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + shape + R"("data_offsets":[-1,8]})"), "no \"data_offsets\" pair");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + shape + R"("data_offsets":{"0":8}})"), "no \"data_offsets\" pair");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + shape + R"("data_offsets":[8,0]})"),
                    "tensor 't' has data_offsets [8, 0] with end before begin");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + shape + R"("data_offsets":[4,12]})"),
                    "tensor 't' has data_offsets [4, 12] outside the data buffer of 8 bytes");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + shape + R"("data_offsets":[0,18446744073709551615]})"),
                    "outside the data buffer of 8 bytes");
  CHECK_PARSE_FAILS(one_tensor("{" + f32 + shape + R"("data_offsets":[0,4]})"),
                    "tensor 't' has data_offsets [0, 4] spanning 4 bytes, but shape [2] of F32 needs 8 bytes");
  CHECK_PARSE_FAILS(one_tensor(R"({"dtype":"F64",)" + shape + offsets + "}"),
                    "spanning 8 bytes, but shape [2] of F64 needs 16 bytes");
}

TEST_CASE("safetensors: the tensors must tile the data buffer exactly") {
  const auto entry = [](const char* name, int begin, int end) {  // streamed: GCC 12 -O3 warns on "..." + string
    std::ostringstream json;
    json << '"' << name << R"(":{"dtype":"U8","shape":[)" << end - begin << R"(],"data_offsets":[)" << begin << ','
         << end << "]}";
    return json.str();
  };
  const std::string data(6, 'd');
  CHECK(parse(framed("{" + entry("a", 0, 2) + "," + entry("b", 2, 6) + "}", data)).entries().size() == 2);
  CHECK_PARSE_FAILS(framed("{" + entry("a", 0, 2) + "," + entry("b", 1, 6) + "}", data),
                    "tensor 'b' at data_offsets [1, 6] overlaps tensor 'a', which ends at 2");
  CHECK_PARSE_FAILS(framed("{" + entry("a", 0, 2) + "," + entry("b", 3, 6) + "}", data),
                    "tensor 'b' at data_offsets [3, 6] leaves a gap of 1 bytes before it");
  CHECK_PARSE_FAILS(framed("{" + entry("a", 1, 2) + "," + entry("b", 2, 6) + "}", data),
                    "tensor 'a' at data_offsets [1, 2] leaves a gap of 1 bytes");
  CHECK_PARSE_FAILS(framed("{" + entry("a", 0, 2) + "," + entry("b", 2, 5) + "}", data),
                    "the data buffer has 1 bytes after the last tensor");
  CHECK_PARSE_FAILS(framed("{}", "x"), "the data buffer has 1 bytes after the last tensor");
}

TEST_CASE("safetensors: every truncation and every one-byte corruption throws posenc::Error or parses") {
  const std::vector<float> v = {1.0f, 2.0f, 3.0f};
  SafetensorsWriter writer;
  writer.add_metadata("m", "v");
  writer.add_tensor("a", {3}, v.data());
  writer.add_tensor("b", {1, 1}, v.data());
  const std::string bytes = writer.serialize();
  REQUIRE_NOTHROW(parse(bytes));

  for (std::size_t n = 0; n < bytes.size(); ++n) {
    INFO("prefix of " << n << " bytes");
    CHECK_THROWS_AS(parse(bytes.substr(0, n)), Error);
  }

  // Corruptions must never escape as anything but posenc::Error; whatever parses must be usable.
  const unsigned char replacements[] = {0x00, 0x01, 0x22, 0x2c, 0x30, 0x39, 0x5b, 0x7b, 0x7d, 0x80, 0xff};
  std::size_t parsed = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    for (unsigned char r : replacements) {
      std::string corrupt = bytes;
      corrupt[i] = static_cast<char>(r);
      INFO("byte " << i << " set to " << static_cast<int>(r));
      try {
        const SafetensorsFile file = parse(corrupt);
        for (const SafetensorsEntry& e : file.entries())
          if (e.dtype == "F32" || e.dtype == "F64") CHECK(file.read_floats(e.name).size() == e.numel());
        ++parsed;
      } catch (const Error&) {
      }
    }
  }
  CHECK(parsed > 0);  // changes inside the data, for one, still parse
}

TEST_CASE("safetensors: reading and writing name the path they cannot use") {
  const TempPath missing("missing.safetensors");
  CHECK_THROWS_WITH(read_safetensors(missing.str()),
                    Contains("cannot open safetensors file '" + missing.str() + "' for reading"));

  const TempPath dir("dir");
  std::filesystem::create_directory(dir.path);
  CHECK_THROWS_WITH(read_safetensors(dir.str()), Contains("safetensors file '" + dir.str() + "'"));

  const TempPath garbage("garbage.safetensors");
  std::ofstream(garbage.str(), std::ios::binary) << "not a safetensors file at all";
  CHECK_THROWS_WITH(read_safetensors(garbage.str()),
                    Contains("safetensors file '" + garbage.str() + "'") && Contains("header length"));

  SafetensorsWriter writer;
  const float x = 1.0f;
  writer.add_tensor("x", {1}, &x);
  const std::string nowhere = (missing.path / "sub" / "model.safetensors").string();
  CHECK_THROWS_WITH(writer.write(nowhere), Contains("cannot save safetensors file '" + nowhere + "'"));
  CHECK_THROWS_WITH(writer.write(dir.str()), Contains("cannot save safetensors file '" + dir.str() + "'"));
  CHECK(std::filesystem::is_empty(dir.path));
  CHECK(leftover_temporaries(dir.path) == 0);  // the failed rename left no temporary behind
}

TEST_CASE("safetensors: write replaces an existing file") {
  const TempPath path("replace.safetensors");
  std::ofstream(path.str(), std::ios::binary) << "old contents";
  SafetensorsWriter writer;
  const float x = 2.0f;
  writer.add_tensor("x", {1}, &x);
  writer.write(path.str());
  CHECK(read_safetensors(path.str()).read_floats("x") == std::vector<float>{2.0f});
}

TEST_CASE("safetensors: the writer refuses what it cannot write") {
  SafetensorsWriter writer;
  const float x[2] = {1.0f, 2.0f};
  writer.add_tensor("x", {2}, x);
  CHECK_THROWS_WITH(writer.add_tensor("x", {1}, x), Contains("tensor name 'x' is given twice"));
  CHECK_THROWS_WITH(writer.add_tensor("__metadata__", {1}, x), Contains("'__metadata__' is reserved"));
  CHECK_THROWS_WITH(writer.add_tensor("bad\xff", {1}, x), Contains("is not valid UTF-8"));
  CHECK_THROWS_WITH(writer.add_tensor("y", {2}, static_cast<const float*>(nullptr)),
                    Contains("tensor 'y' has no data (null pointer)"));
  CHECK_THROWS_WITH(writer.add_tensor("huge", {1ull << 40, 1ull << 40}, x),
                    Contains("tensor 'huge' of shape [1099511627776, 1099511627776] is too large"));
  writer.add_metadata("k", "v");
  CHECK_THROWS_WITH(writer.add_metadata("k", "w"), Contains("metadata key 'k' is given twice"));
  CHECK_THROWS_WITH(writer.add_metadata("k2", "\xc3"), Contains("is not valid UTF-8"));
  // The refused calls left the writer as it was.
  const SafetensorsFile file = parse_safetensors(writer.serialize(), "memory");
  REQUIRE(file.entries().size() == 1);
  CHECK(file.metadata().size() == 1);
  CHECK(file.read_floats("x") == std::vector<float>{1.0f, 2.0f});
}
