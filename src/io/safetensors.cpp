// safetensors: a strict, memory-mapped reader and an atomic writer (shared/FORMATS.md).
// The reader follows the reference implementation's rules: header length <= 100,000,000 and
// inside the file, well-formed JSON object of objects, known dtypes, non-negative shapes,
// end - begin == numel * size, no duplicate names, tensors sorted by offset covering the data
// exactly (no gap, no overlap, the last ends at the file end). Every error names the file,
// the tensor and the rule.
#include "w4a16/io/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "w4a16/core/error.hpp"

namespace w4a16::io {

namespace {
using json = nlohmann::json;
constexpr std::uint64_t kMaxHeader = 100'000'000;  // the reference reader's limit (safetensors MAX_HEADER_SIZE)

struct Tag { const char* tag; DType dtype; };
constexpr Tag kTags[] = {{"F16", DType::f16}, {"BF16", DType::bf16}, {"F32", DType::f32}, {"F64", DType::f64},
                         {"I32", DType::i32}, {"I64", DType::i64}, {"I16", DType::i16}, {"I8", DType::i8},
                         {"U8", DType::u8},   {"BOOL", DType::bool_}};

[[noreturn]] void bad(const std::string& where, const std::string& rule, const std::string& expected,
                      const std::string& got) {
  fail(ErrorCode::format_error, where + ": " + rule + ": expected " + expected + ", got " + got);
}

std::string os_error() { return std::strerror(errno); }

// Rejects duplicate keys at any depth (nlohmann keeps the last one silently).
json parse_strict(const std::string& text, const std::string& where) {
  std::vector<std::set<std::string>> keys;
  std::string dup;
  auto cb = [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) keys.emplace_back();
    else if (ev == json::parse_event_t::object_end) { if (!keys.empty()) keys.pop_back(); }
    else if (ev == json::parse_event_t::key && !keys.empty() && dup.empty()) {
      const auto& k = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(k).second) dup = k;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text, cb);
  } catch (const json::exception& e) {
    bad(where, "header JSON", "well-formed UTF-8 JSON", std::string("a parse error: ") + e.what());
  }
  if (!dup.empty()) bad(where, "header JSON", "no duplicate names", "'" + dup + "' twice");
  return j;
}

bool as_u64(const json& v, std::uint64_t& out) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned()) { out = v.get<std::uint64_t>(); return true; }
  auto s = v.get<std::int64_t>();
  if (s < 0) return false;
  out = static_cast<std::uint64_t>(s);
  return true;
}
}  // namespace

std::optional<DType> dtype_from_safetensors(std::string_view tag) {
  for (const auto& t : kTags)
    if (tag == t.tag) return t.dtype;
  return std::nullopt;
}

std::string_view dtype_to_safetensors(DType t) {
  for (const auto& e : kTags)
    if (e.dtype == t) return e.tag;
  return "?";
}

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    ErrorCode c = errno == ENOENT ? ErrorCode::not_found : ErrorCode::io_error;
    fail(c, path + ": cannot open: " + os_error());
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    std::string e = os_error();
    ::close(fd);
    fail(ErrorCode::io_error, path + ": fstat: " + e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorCode::io_error, path + ": not a regular file");
  }
  f->size_ = static_cast<std::size_t>(st.st_size);
  if (f->size_ > 0) {
    void* m = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      std::string e = os_error();
      ::close(fd);
      fail(ErrorCode::io_error, path + ": mmap: " + e);
    }
    f->map_ = m;
  }
  ::close(fd);  // the mapping keeps the file alive

  const auto* bytes = static_cast<const unsigned char*>(f->map_);
  const std::uint64_t size = f->size_;
  if (size < 8) bad(path, "header length", "an 8-byte little-endian length", "a file of " + std::to_string(size) + " bytes");
  std::uint64_t h = 0;
  for (int i = 7; i >= 0; --i) h = (h << 8) | bytes[i];
  if (h > kMaxHeader) bad(path, "header length", "<= 100000000 bytes", std::to_string(h));
  if (h > size - 8)
    bad(path, "header length", "<= " + std::to_string(size - 8) + " (the bytes after the length field)",
        std::to_string(h) + " (truncated file?)");
  f->data_start_ = 8 + static_cast<std::size_t>(h);
  const std::uint64_t data_size = size - f->data_start_;

  json j = parse_strict(std::string(reinterpret_cast<const char*>(bytes + 8), static_cast<std::size_t>(h)), path);
  if (!j.is_object()) bad(path, "header JSON", "an object {name: {dtype, shape, data_offsets}}", std::string(j.type_name()));

  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      if (v.is_null()) continue;
      if (!v.is_object()) bad(path, "__metadata__", "an object of strings", std::string(v.type_name()));
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          bad(path + ": __metadata__ '" + m.key() + "'", "metadata value", "a string", std::string(m.value().type_name()));
        f->metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = path + ": tensor '" + name + "'";
    if (!v.is_object()) bad(where, "entry", "an object {dtype, shape, data_offsets}", std::string(v.type_name()));
    TensorInfo t;
    t.name = name;
    auto dt = v.find("dtype");
    if (dt == v.end() || !dt->is_string()) bad(where, "dtype", "a dtype string", dt == v.end() ? "none" : dt->dump());
    t.dtype_tag = dt->get<std::string>();
    auto parsed = dtype_from_safetensors(t.dtype_tag);
    if (!parsed)
      bad(where, "dtype", "one of F16, BF16, F32, F64, I32, I64, I16, I8, U8, BOOL", "'" + t.dtype_tag + "' (unsupported)");
    t.dtype = *parsed;
    auto sh = v.find("shape");
    if (sh == v.end() || !sh->is_array()) bad(where, "shape", "an array of non-negative integers", sh == v.end() ? "none" : sh->dump());
    std::uint64_t numel = 1;
    bool overflow = false;
    for (const auto& d : *sh) {
      std::uint64_t e = 0;
      if (!as_u64(d, e) || e > static_cast<std::uint64_t>(INT64_MAX))
        bad(where, "shape", "an array of non-negative integers", sh->dump());
      t.shape.push_back(static_cast<std::int64_t>(e));
      if (__builtin_mul_overflow(numel, e, &numel)) overflow = true;
    }
    std::uint64_t nbytes = 0;
    if (overflow || __builtin_mul_overflow(numel, static_cast<std::uint64_t>(dtype_size(t.dtype)), &nbytes))
      bad(where, "shape", "a size that fits in 64 bits", sh->dump());
    auto off = v.find("data_offsets");
    if (off == v.end() || !off->is_array() || off->size() != 2 || !as_u64((*off)[0], t.begin) || !as_u64((*off)[1], t.end))
      bad(where, "data_offsets", "[begin, end] of two non-negative integers", off == v.end() ? "none" : off->dump());
    if (t.end < t.begin) bad(where, "data_offsets", "begin <= end", off->dump());
    if (t.end > data_size)
      bad(where, "data_offsets", "end <= " + std::to_string(data_size) + " (the data section's size)",
          off->dump() + " (truncated file?)");
    if (t.end - t.begin != nbytes)
      bad(where, "size", "end - begin = numel * size(" + t.dtype_tag + ") = " + std::to_string(nbytes) + " bytes",
          std::to_string(t.end - t.begin) + " bytes for shape " + sh->dump());
    f->tensors_.push_back(std::move(t));
  }

  std::stable_sort(f->tensors_.begin(), f->tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t expected = 0;
  const TensorInfo* prev = nullptr;
  for (const auto& t : f->tensors_) {
    const std::string where = path + ": tensor '" + t.name + "'";
    if (t.begin < expected)
      bad(where, "overlap", "begin >= " + std::to_string(expected) + " (the end of '" + prev->name + "')",
          "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]");
    if (t.begin > expected)
      bad(where, "gap", "begin = " + std::to_string(expected) + (prev ? " (the end of '" + prev->name + "')" : " (the data start)"),
          "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "], " +
              std::to_string(t.begin - expected) + " bytes not covered");
    expected = t.end;
    prev = &t;
  }
  if (expected != data_size)
    bad(path, "coverage", "tensors covering the data section of " + std::to_string(data_size) + " bytes up to the file end",
        "the last tensor ending at " + std::to_string(expected) + " (" + std::to_string(data_size - expected) +
            " trailing bytes)");
  for (std::size_t i = 0; i < f->tensors_.size(); ++i) f->index_[f->tensors_[i].name] = i;
  return f;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, size_);
}

bool SafetensorsFile::contains(const std::string& name) const { return index_.count(name) != 0; }

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) fail(ErrorCode::not_found, path_ + ": no tensor '" + name + "'");
  return tensors_[it->second];
}

TensorView SafetensorsFile::view(const std::string& name) const {
  const TensorInfo& t = info(name);
  if (t.shape.size() > static_cast<std::size_t>(kMaxRank))
    fail(ErrorCode::unsupported, path_ + ": tensor '" + name + "'", "rank <= 4", "rank " + std::to_string(t.shape.size()));
  auto* base = static_cast<unsigned char*>(map_) + data_start_ + t.begin;
  return TensorView(static_cast<void*>(base), t.dtype, t.shape);
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, TensorView>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::set<std::string> names;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const std::string arg = "write_safetensors '" + name + "'";
    if (name.empty() || name == "__metadata__") fail(ErrorCode::invalid_argument, arg, "a tensor name", "'" + name + "'");
    if (!names.insert(name).second) fail(ErrorCode::invalid_argument, arg, "unique names", "a second '" + name + "'");
    if (t.device != Device::cpu) fail(ErrorCode::invalid_argument, arg, "a host tensor", describe(t));
    if (!t.is_contiguous()) fail(ErrorCode::layout_mismatch, arg, "a contiguous row-major tensor", describe(t));
    if (t.data == nullptr && t.numel() > 0) fail(ErrorCode::invalid_argument, arg, "tensor data", "a null pointer");
    for (int d = 0; d < t.rank; ++d)
      if (t.shape[static_cast<std::size_t>(d)] < 0) fail(ErrorCode::shape_mismatch, arg, "non-negative extents", describe(t));
    nlohmann::ordered_json e;
    e["dtype"] = std::string(dtype_to_safetensors(t.dtype));
    e["shape"] = t.shape_vec();
    e["data_offsets"] = {offset, offset + t.nbytes()};
    header[name] = std::move(e);
    offset += t.nbytes();
  }
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = std::move(m);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // writers pad to 8 so data starts aligned
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>((static_cast<std::uint64_t>(text.size()) >> (8 * i)) & 0xff);

  // Atomic: write a temporary file in the same folder, then rename over the target.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* fp = std::fopen(tmp.c_str(), "wb");
  if (!fp) fail(ErrorCode::io_error, tmp + ": cannot create: " + os_error());
  bool ok = std::fwrite(len, 1, 8, fp) == 8 && std::fwrite(text.data(), 1, text.size(), fp) == text.size();
  for (const auto& [name, t] : tensors)
    if (ok && t.nbytes()) ok = std::fwrite(t.data, 1, t.nbytes(), fp) == t.nbytes();
  ok = std::fflush(fp) == 0 && ok;
  ok = ::fsync(::fileno(fp)) == 0 && ok;
  std::string e = ok ? "" : os_error();
  ok = std::fclose(fp) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    if (e.empty()) e = os_error();
    std::remove(tmp.c_str());
    fail(ErrorCode::io_error, path + ": write failed: " + e);
  }
}

}  // namespace w4a16::io
