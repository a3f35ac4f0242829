// safetensors reader (mmap, strict validation of shared/FORMATS.md) and writer; sharded index.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "w4a16/core/tensor.hpp"

namespace w4a16::io {

struct TensorInfo {
  std::string name;
  DType dtype;
  std::string dtype_tag;  // as in the file: "F16", "I32", ...
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // relative to the first data byte
};

std::optional<DType> dtype_from_safetensors(std::string_view tag);
std::string_view dtype_to_safetensors(DType t);

// A validated, memory-mapped safetensors file. Views stay valid while the file object lives.
class SafetensorsFile {
 public:
  static std::shared_ptr<SafetensorsFile> open(const std::string& path);  // throws format_error / io_error
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in file (offset) order
  bool contains(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;  // not_found if absent
  TensorView view(const std::string& name) const;         // read-only data, do not write through it
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  std::size_t file_size() const { return size_; }

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;
  std::size_t size_ = 0;
  std::size_t data_start_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Writes tensors (contiguous host views) in the given order, header padded with spaces to 8 bytes.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, TensorView>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// A folder's tensors: model.safetensors, or model.safetensors.index.json and its shards.
class TensorStore {
 public:
  static TensorStore open_dir(const std::string& dir);
  std::vector<std::string> names() const;  // sorted
  bool contains(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;
  TensorView view(const std::string& name) const;  // from the shard holding it (all shards are
                                                   // opened and checked against the index in open_dir)
  std::string file_of(const std::string& name) const;

 private:
  std::string dir_;
  std::map<std::string, std::string> weight_map_;  // tensor -> file name
  mutable std::map<std::string, std::shared_ptr<SafetensorsFile>> files_;
  std::shared_ptr<SafetensorsFile> file(const std::string& fname) const;
};

}  // namespace w4a16::io
