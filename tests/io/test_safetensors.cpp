// safetensors writer -> reader round trips, the reader's strict rules on hand-made bad files,
// and the sharded TensorStore.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "io_testutil.hpp"
#include "testutil.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/io/safetensors.hpp"

using namespace w4a16;
using test::expect_error;

namespace {
HostTensor random_tensor(DType dt, std::vector<std::int64_t> shape) {
  HostTensor t(dt, std::move(shape));
  auto* p = static_cast<unsigned char*>(t.data());
  std::uniform_int_distribution<int> b(0, 255);
  for (std::size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<unsigned char>(b(test::rng()));
  if (dt == DType::bool_)
    for (std::size_t i = 0; i < t.nbytes(); ++i) p[i] &= 1;
  return t;
}
std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
// The header length a file's first 8 bytes give (little endian).
std::uint64_t header_len(const std::string& bytes) {
  std::uint64_t h = 0;
  for (int i = 7; i >= 0; --i) h = (h << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  return h;
}
// A good two-tensor file: a F32 [2] at [0, 8) and b I32 [3] at [8, 20).
const std::string kData(20, '\x01');
std::string two_tensors(const std::string& a_off = "[0,8]", const std::string& b_off = "[8,20]",
                        const std::string& b_dtype = "I32", const std::string& b_shape = "[3]") {
  return R"({"a":{"dtype":"F32","shape":[2],"data_offsets":)" + a_off + R"(},"b":{"dtype":")" + b_dtype +
         R"(","shape":)" + b_shape + R"(,"data_offsets":)" + b_off + "}}";
}
}  // namespace

TEST(Safetensors, WriterReaderRoundTrip) {
  test::TempDir dir;
  std::vector<std::pair<std::string, HostTensor>> ts;
  ts.emplace_back("w.f16", random_tensor(DType::f16, {3, 5}));
  ts.emplace_back("w.bf16", random_tensor(DType::bf16, {7}));
  ts.emplace_back("scalar", random_tensor(DType::f32, {}));  // 0-rank
  ts.emplace_back("empty", random_tensor(DType::f16, {0, 4}));  // zero-size
  ts.emplace_back("q", random_tensor(DType::i32, {2, 3, 4}));
  ts.emplace_back("d", random_tensor(DType::f64, {3}));
  ts.emplace_back("i64", random_tensor(DType::i64, {1, 2}));
  ts.emplace_back("i16", random_tensor(DType::i16, {5}));
  ts.emplace_back("i8", random_tensor(DType::i8, {3}));   // odd sizes: later tensors are unaligned
  ts.emplace_back("u8", random_tensor(DType::u8, {5}));
  ts.emplace_back("mask", random_tensor(DType::bool_, {2, 2}));
  std::vector<std::pair<std::string, TensorView>> views;
  for (auto& [n, t] : ts) views.emplace_back(n, t.view());
  // HostTensor of rank 0 has an empty shape vector, which is what a 0-rank view needs.
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "unit test"}};
  const std::string path = dir / "t.safetensors";
  io::write_safetensors(path, views, meta);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));

  std::string bytes = file_bytes(path);
  const std::uint64_t h = header_len(bytes);
  EXPECT_EQ(h % 8, 0u) << "header padded to a multiple of 8";
  EXPECT_EQ(bytes[8 + h - 1] == ' ' || bytes[8 + h - 1] == '}', true);

  auto f = io::SafetensorsFile::open(path);
  EXPECT_EQ(f->metadata(), meta);
  EXPECT_EQ(f->file_size(), bytes.size());
  ASSERT_EQ(f->tensors().size(), ts.size());
  std::uint64_t off = 0;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const auto& [name, t] = ts[i];
    SCOPED_TRACE(name);
    const io::TensorInfo& info = f->tensors()[i];  // offsets in the given order
    EXPECT_EQ(info.name, name);
    EXPECT_EQ(info.begin, off);
    off += t.nbytes();
    EXPECT_EQ(info.end, off);
    EXPECT_EQ(info.dtype, t.dtype());
    EXPECT_EQ(info.shape, t.shape());
    EXPECT_EQ(io::dtype_from_safetensors(info.dtype_tag), t.dtype());
    TensorView v = f->view(name);
    EXPECT_EQ(v.dtype, t.dtype());
    EXPECT_EQ(v.shape_vec(), t.shape());
    EXPECT_EQ(v.nbytes(), t.nbytes());
    if (t.nbytes()) { EXPECT_EQ(std::memcmp(v.data, t.data(), t.nbytes()), 0); }
  }
  EXPECT_EQ(off + 8 + h, bytes.size());
  EXPECT_EQ(io::dtype_to_safetensors(DType::bf16), "BF16");
  expect_error([&] { f->info("nope"); }, ErrorCode::not_found, {"nope", path});

  // Overwriting is atomic and replaces the content.
  HostTensor one = random_tensor(DType::u8, {1});
  io::write_safetensors(path, {{"only", one.view()}});
  auto f2 = io::SafetensorsFile::open(path);
  ASSERT_EQ(f2->tensors().size(), 1u);
  EXPECT_TRUE(f2->metadata().empty());
  EXPECT_EQ(*static_cast<unsigned char*>(f2->view("only").data), *static_cast<unsigned char*>(one.data()));
  EXPECT_TRUE(f->contains("w.f16"));  // the old mapping stays valid after the rename
}

TEST(Safetensors, ReadsHandWrittenUnpaddedFile) {
  test::TempDir dir;
  std::string data;
  std::uint16_t h0 = float_to_half(1.5f), h1 = float_to_bf16(-2.f);
  data.append(reinterpret_cast<char*>(&h0), 2).append(reinterpret_cast<char*>(&h1), 2);
  std::int32_t iv = 0x76543210;
  data.append(reinterpret_cast<char*>(&iv), 4);
  std::string hdr = R"({"__metadata__":{"k":"v"},"x":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},)"
                    R"("y":{"dtype":"BF16","shape":[],"data_offsets":[2,4]},"z":{"dtype":"I32","shape":[1,1],"data_offsets":[4,8]},)"
                    R"("e":{"dtype":"F32","shape":[3,0],"data_offsets":[8,8]}})";
  ASSERT_NE(hdr.size() % 8, 0u);  // the data starts unaligned
  test::write_file(dir / "h.safetensors", test::raw_safetensors(hdr, data));
  auto f = io::SafetensorsFile::open(dir / "h.safetensors");
  EXPECT_EQ(f->metadata().at("k"), "v");
  EXPECT_EQ(half_to_float(*static_cast<std::uint16_t*>(f->view("x").data)), 1.5f);
  TensorView y = f->view("y");
  EXPECT_EQ(y.rank, 0);
  EXPECT_EQ(y.numel(), 1);
  std::uint16_t yb;
  std::memcpy(&yb, y.data, 2);
  EXPECT_EQ(bf16_to_float(yb), -2.f);
  std::int32_t zv;
  std::memcpy(&zv, f->view("z").data, 4);
  EXPECT_EQ(zv, 0x76543210);
  EXPECT_EQ(f->view("e").numel(), 0);
}

TEST(Safetensors, RejectsBadFiles) {
  test::TempDir dir;
  const std::string p = dir / "bad.safetensors";
  auto open_raw = [&](const std::string& bytes) {
    test::write_file(p, bytes);
    return io::SafetensorsFile::open(p);
  };
  const ErrorCode F = ErrorCode::format_error;
  EXPECT_NO_THROW(open_raw(test::raw_safetensors(two_tensors(), kData)));

  // Truncated: the last tensor ends past the file.
  expect_error([&] { open_raw(test::raw_safetensors(two_tensors(), kData.substr(0, 19))); }, F, {p, "'b'", "truncated"});
  // A file shorter than the length field.
  expect_error([&] { open_raw("abc"); }, F, {p, "header length"});
  // Header length past the end of the file.
  expect_error([&] { open_raw(test::raw_safetensors(two_tensors(), kData, 100000)); }, F, {p, "header length", "truncated"});
  // Header length over the reference limit of 100,000,000.
  expect_error([&] { open_raw(test::raw_safetensors(two_tensors(), kData, 200000000)); }, F, {p, "100000000"});
  // Malformed JSON, and JSON that is not an object of objects.
  expect_error([&] { open_raw(test::raw_safetensors(R"({"a":{"dtype":"F32",)", kData)); }, F, {p, "JSON"});
  expect_error([&] { open_raw(test::raw_safetensors("[1,2]", "")); }, F, {p, "object"});
  expect_error([&] { open_raw(test::raw_safetensors(R"({"a":5})", "")); }, F, {p, "'a'", "entry"});
  // Invalid UTF-8 in the header.
  expect_error([&] { open_raw(test::raw_safetensors("{\"\xff\":{}}", "")); }, F, {p, "JSON"});
  // Duplicate names.
  expect_error([&] {
    open_raw(test::raw_safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                   R"("a":{"dtype":"I32","shape":[3],"data_offsets":[8,20]}})", kData));
  }, F, {p, "duplicate", "'a'"});
  // Unknown and unsupported dtype tags, by name.
  expect_error([&] { open_raw(test::raw_safetensors(two_tensors("[0,8]", "[8,20]", "Q4"), kData)); }, F, {p, "'b'", "dtype", "Q4"});
  expect_error([&] { open_raw(test::raw_safetensors(two_tensors("[0,8]", "[8,11]", "F8_E4M3"), kData.substr(0, 11))); }, F,
               {p, "'b'", "F8_E4M3"});
  // Size mismatch: I32 [3] needs 12 bytes, [8, 16) holds 8.
  expect_error([&] { open_raw(test::raw_safetensors(two_tensors("[0,8]", "[8,16]"), kData.substr(0, 16))); }, F,
               {p, "'b'", "size", "12"});
  // Overlap: b starts inside a.
  expect_error([&] { open_raw(test::raw_safetensors(two_tensors("[0,8]", "[4,16]"), kData.substr(0, 16))); }, F,
               {p, "'b'", "overlap", "'a'"});
  // Gap between the tensors.
  expect_error([&] { open_raw(test::raw_safetensors(two_tensors("[0,8]", "[12,24]"), kData + "0000")); }, F,
               {p, "'b'", "gap"});
  // A gap before the first tensor.
  expect_error([&] { open_raw(test::raw_safetensors(two_tensors("[4,12]", "[12,24]"), kData + "0000")); }, F,
               {p, "'a'", "gap"});
  // Trailing bytes after the last tensor.
  expect_error([&] { open_raw(test::raw_safetensors(two_tensors(), kData + "xyz")); }, F, {p, "trailing"});
  // Negative and non-integer shapes, reversed offsets, missing offsets.
  expect_error([&] { open_raw(test::raw_safetensors(two_tensors("[0,8]", "[8,20]", "I32", "[-3]"), kData)); }, F,
               {p, "'b'", "shape"});
  expect_error([&] { open_raw(test::raw_safetensors(two_tensors("[0,8]", "[8,20]", "I32", "[1.5]"), kData)); }, F,
               {p, "'b'", "shape"});
  expect_error([&] { open_raw(test::raw_safetensors(two_tensors("[8,0]", "[8,20]"), kData)); }, F, {p, "'a'", "begin <= end"});
  expect_error([&] { open_raw(test::raw_safetensors(R"({"a":{"dtype":"F32","shape":[2]}})", kData.substr(0, 8))); }, F,
               {p, "'a'", "data_offsets"});
  expect_error([&] { open_raw(test::raw_safetensors(two_tensors("[0,8]", "[8,-20]"), kData)); }, F, {p, "'b'", "data_offsets"});
  // A shape whose byte size overflows 64 bits.
  expect_error([&] {
    open_raw(test::raw_safetensors(two_tensors("[0,8]", "[8,20]", "I32", "[4294967296,4294967296]"), kData));
  }, F, {p, "'b'", "64 bits"});
  // Metadata values must be strings.
  expect_error([&] { open_raw(test::raw_safetensors(R"({"__metadata__":{"n":3}})", "")); }, F, {p, "__metadata__"});
  // Missing file.
  expect_error([&] { io::SafetensorsFile::open(dir / "none.safetensors"); }, ErrorCode::not_found, {"none.safetensors"});
  // An empty header is a valid empty file.
  EXPECT_TRUE(open_raw(test::raw_safetensors("{}", ""))->tensors().empty());
}

// Every prefix of a real file and random single-byte changes of its length field and header: each either opens
// with a table that stays inside the file (every tensor's bytes = numel x dtype size, within the data, views
// inside the mapping) or throws w4a16::Error (format_error); nothing else, nothing read past the file
// (scripts/sanitize runs this under AddressSanitizer).
TEST(Safetensors, MutatedFilesOpenConsistentlyOrFailWithAFormatError) {
  test::TempDir dir;
  std::vector<std::pair<std::string, HostTensor>> ts;
  ts.emplace_back("model.q", random_tensor(DType::i32, {3, 4}));
  ts.emplace_back("model.s", random_tensor(DType::f16, {2, 5}));
  ts.emplace_back("model.z", random_tensor(DType::u8, {0}));
  ts.emplace_back("model.b", random_tensor(DType::bf16, {7}));
  std::vector<std::pair<std::string, TensorView>> views;
  for (auto& [n, t] : ts) views.emplace_back(n, t.view());
  const std::string good = dir / "good.safetensors";
  io::write_safetensors(good, views, {{"format", "pt"}});
  const std::string bytes = file_bytes(good);
  const std::uint64_t h = header_len(bytes);
  ASSERT_LT(8 + h, bytes.size());

  const std::string p = dir / "m.safetensors";
  int opened = 0, refused = 0;
  auto check = [&](const std::string& b, const std::string& what) {
    SCOPED_TRACE(what);
    test::write_file(p, b);
    std::shared_ptr<io::SafetensorsFile> f;
    try {
      f = io::SafetensorsFile::open(p);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::format_error) << e.what();
      ++refused;
      return;
    }
    ++opened;
    const std::uint64_t hl = header_len(b);
    ASSERT_LE(8 + hl, b.size());
    const std::uint64_t data = b.size() - 8 - hl;
    for (const io::TensorInfo& t : f->tensors()) {
      std::uint64_t numel = 1;
      for (std::int64_t d : t.shape) {
        ASSERT_GE(d, 0) << t.name;
        numel *= static_cast<std::uint64_t>(d);
      }
      EXPECT_LE(t.begin, t.end) << t.name;
      EXPECT_LE(t.end, data) << t.name;
      EXPECT_EQ(t.end - t.begin, numel * dtype_size(t.dtype)) << t.name;
      const TensorView v = f->view(t.name);
      EXPECT_EQ(v.nbytes(), t.end - t.begin) << t.name;
      if (v.nbytes()) {  // touch the first and last byte: inside the mapping or AddressSanitizer says so
        const auto* d = static_cast<const unsigned char*>(v.data);
        EXPECT_EQ(d[0], static_cast<unsigned char>(b[8 + hl + t.begin])) << t.name;
        EXPECT_EQ(d[v.nbytes() - 1], static_cast<unsigned char>(b[8 + hl + t.end - 1])) << t.name;
      }
    }
  };
  check(bytes, "the file itself");
  ASSERT_EQ(opened, 1);
  // Every proper prefix: the last tensor (bf16 [7]) ends at the end of the file, so none is valid.
  for (std::size_t n = 0; n < bytes.size(); ++n) check(bytes.substr(0, n), "prefix of " + std::to_string(n) + " bytes");
  EXPECT_EQ(opened, 1) << "a truncated file opened";
  // Random single-byte changes: anywhere in the length field and the header (to any value, printable JSON
  // characters favoured so that more mutants parse), and random pairs of changes.
  const std::string alphabet = std::string("{}[],:\"0123456789-.eE abcdefghijklmnopqrstuvwxyzFIUB_\\") + '\0' + '\xff';
  std::uniform_int_distribution<std::size_t> pos(0, 8 + h - 1), pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255), coin(0, 1);
  for (int i = 0; i < 3000; ++i) {
    std::string b = bytes;
    const int changes = 1 + (i % 3 == 2);
    for (int c = 0; c < changes; ++c)
      b[pos(test::rng())] = coin(test::rng()) ? alphabet[pick(test::rng())] : static_cast<char>(byte(test::rng()));
    check(b, "mutant " + std::to_string(i));
  }
  EXPECT_GT(refused, 3000);  // most mutants are refused; some (a changed metadata letter, spacing) open
  EXPECT_GT(opened, 1);
}

TEST(Safetensors, WriterRejectsBadInput) {
  test::TempDir dir;
  HostTensor t = random_tensor(DType::f16, {4, 4});
  expect_error([&] { io::write_safetensors(dir / "x.safetensors", {{"a", t.view()}, {"a", t.view()}}); },
               ErrorCode::invalid_argument, {"'a'", "unique"});
  TensorView nc = t.view();
  nc.shape[1] = 2;  // a column slice: strides stay [4, 1]
  expect_error([&] { io::write_safetensors(dir / "x.safetensors", {{"a", nc}}); }, ErrorCode::layout_mismatch, {"'a'"});
  expect_error([&] { io::write_safetensors(dir / "x.safetensors", {{"__metadata__", t.view()}}); },
               ErrorCode::invalid_argument, {"__metadata__"});
  expect_error([&] { io::write_safetensors(dir / "missing-folder/x.safetensors", {{"a", t.view()}}); }, ErrorCode::io_error,
               {"x.safetensors"});
  EXPECT_FALSE(std::filesystem::exists(dir / "x.safetensors"));
}

TEST(TensorStore, SingleFileAndShardedIndex) {
  test::TempDir dir;
  HostTensor a = random_tensor(DType::f16, {4, 8}), b = random_tensor(DType::i32, {3}), c = random_tensor(DType::bf16, {2, 2});
  io::write_safetensors(dir / "model-00001-of-00002.safetensors", {{"layer.a", a.view()}, {"layer.b", b.view()}});
  io::write_safetensors(dir / "model-00002-of-00002.safetensors", {{"layer.c", c.view()}});
  const std::string index = R"({"metadata":{"total_size":100},"weight_map":{)"
                            R"("layer.a":"model-00001-of-00002.safetensors","layer.b":"model-00001-of-00002.safetensors",)"
                            R"("layer.c":"model-00002-of-00002.safetensors"}})";
  test::write_file(dir / "model.safetensors.index.json", index);
  io::TensorStore s = io::TensorStore::open_dir(dir.path.string());
  EXPECT_EQ(s.names(), (std::vector<std::string>{"layer.a", "layer.b", "layer.c"}));
  EXPECT_EQ(s.file_of("layer.c"), "model-00002-of-00002.safetensors");
  EXPECT_EQ(std::memcmp(s.view("layer.a").data, a.data(), a.nbytes()), 0);
  EXPECT_EQ(std::memcmp(s.view("layer.c").data, c.data(), c.nbytes()), 0);
  EXPECT_EQ(s.info("layer.b").shape, (std::vector<std::int64_t>{3}));
  EXPECT_FALSE(s.contains("layer.d"));
  expect_error([&] { s.view("layer.d"); }, ErrorCode::not_found, {"layer.d"});

  // An index naming a missing file.
  test::write_file(dir / "model.safetensors.index.json",
                   R"({"weight_map":{"layer.a":"model-00001-of-00002.safetensors","layer.x":"gone.safetensors"}})");
  expect_error([&] { io::TensorStore::open_dir(dir.path.string()); }, ErrorCode::not_found, {"gone.safetensors", "layer.x"});
  // An index naming a tensor its shard does not hold.
  test::write_file(dir / "model.safetensors.index.json", R"({"weight_map":{"layer.c":"model-00001-of-00002.safetensors"}})");
  expect_error([&] { io::TensorStore::open_dir(dir.path.string()); }, ErrorCode::format_error, {"layer.c", "no such tensor"});
  // A malformed index, and one without a weight_map.
  test::write_file(dir / "model.safetensors.index.json", R"({"weight_map":)");
  expect_error([&] { io::TensorStore::open_dir(dir.path.string()); }, ErrorCode::format_error, {"index.json"});
  test::write_file(dir / "model.safetensors.index.json", R"({"metadata":{}})");
  expect_error([&] { io::TensorStore::open_dir(dir.path.string()); }, ErrorCode::format_error, {"weight_map"});
  test::write_file(dir / "model.safetensors.index.json", R"({"weight_map":{"layer.a":"../model-00001-of-00002.safetensors"}})");
  expect_error([&] { io::TensorStore::open_dir(dir.path.string()); }, ErrorCode::format_error, {"layer.a"});

  // Without an index: several .safetensors files are ambiguous; model.safetensors alone is used.
  std::filesystem::remove(dir / "model.safetensors.index.json");
  expect_error([&] { io::TensorStore::open_dir(dir.path.string()); }, ErrorCode::format_error, {"index.json"});
  io::write_safetensors(dir / "model.safetensors", {{"only", b.view()}});
  EXPECT_EQ(io::TensorStore::open_dir(dir.path.string()).names(), std::vector<std::string>{"only"});
  test::TempDir empty;
  expect_error([&] { io::TensorStore::open_dir(empty.path.string()); }, ErrorCode::not_found, {"model.safetensors"});
}

// Random single- and double-character changes of a real sharded index: open_dir either gives a store whose every name
// reads a tensor of the shard the index names (the same bytes as that shard's own view) or throws a w4a16::Error
// (format_error, or not_found for a shard that does not exist) naming the index or the entry; nothing else.
TEST(TensorStore, MutatedIndexOpensConsistentlyOrFailsNamingIt) {
  test::TempDir dir;
  HostTensor a = random_tensor(DType::f16, {4, 8}), b = random_tensor(DType::i32, {3}), c = random_tensor(DType::bf16, {2, 2});
  const std::string s1 = "model-00001-of-00002.safetensors", s2 = "model-00002-of-00002.safetensors";
  io::write_safetensors(dir / s1, {{"layer.a", a.view()}, {"layer.b", b.view()}});
  io::write_safetensors(dir / s2, {{"layer.c", c.view()}});
  const std::string index = R"({"metadata":{"total_size":100},"weight_map":{"layer.a":")" + s1 + R"(","layer.b":")" + s1 +
                            R"(","layer.c":")" + s2 + R"("}})";
  const auto shard1 = io::SafetensorsFile::open(dir / s1), shard2 = io::SafetensorsFile::open(dir / s2);
  const std::string alphabet = "{}[],:\"0123456789-. abcdeflmnorstyz_./";
  std::uniform_int_distribution<std::size_t> pos(0, index.size() - 1), pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255), coin(0, 1);
  int opened = 0, refused = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string t = index;
    for (int c2 = 0; c2 < 1 + (i % 2); ++c2)
      t[pos(test::rng())] = coin(test::rng()) ? alphabet[pick(test::rng())] : static_cast<char>(byte(test::rng()));
    SCOPED_TRACE(t);
    test::write_file(dir / "model.safetensors.index.json", t);
    try {
      const io::TensorStore s = io::TensorStore::open_dir(dir.path.string());
      ++opened;
      for (const std::string& name : s.names()) {
        const std::string file = s.file_of(name);
        ASSERT_TRUE(file == s1 || file == s2) << name << " -> " << file;
        const auto& shard = file == s1 ? shard1 : shard2;
        ASSERT_TRUE(shard->contains(name)) << name;
        const TensorView v = s.view(name), w = shard->view(name);
        EXPECT_EQ(v.nbytes(), w.nbytes()) << name;
        if (v.nbytes()) { EXPECT_EQ(std::memcmp(v.data, w.data, v.nbytes()), 0) << name; }
      }
    } catch (const Error& e) {
      ++refused;
      EXPECT_TRUE(e.code() == ErrorCode::format_error || e.code() == ErrorCode::not_found) << e.what();
      const std::string msg = e.what();
      EXPECT_TRUE(msg.find("index.json") != std::string::npos || msg.find("layer.") != std::string::npos ||
                  msg.find(".safetensors") != std::string::npos)
          << msg;
    }
  }
  EXPECT_GT(refused, 500);
  EXPECT_GT(opened, 50);  // a changed metadata digit or a changed name still opens
}
