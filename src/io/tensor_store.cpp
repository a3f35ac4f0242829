// A folder's tensors: model.safetensors, or model.safetensors.index.json and its shards
// (or, for old AutoGPTQ folders, the one *.safetensors file there is).
#include <filesystem>
#include <nlohmann/json.hpp>

#include "detail.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/io/safetensors.hpp"

namespace w4a16::io {

namespace fs = std::filesystem;

TensorStore TensorStore::open_dir(const std::string& dir) {
  TensorStore s;
  s.dir_ = dir;
  const fs::path d(dir);
  if (!fs::is_directory(d)) fail(ErrorCode::not_found, dir + ": not a folder");
  const fs::path index = d / "model.safetensors.index.json";
  if (fs::exists(index)) {
    const std::string where = index.string();
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(detail::read_text(index));
    } catch (const nlohmann::json::exception& e) {
      fail(ErrorCode::format_error, where + ": expected well-formed JSON, got a parse error: " + e.what());
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      fail(ErrorCode::format_error, where + ": expected an object with \"weight_map\": {tensor: file}, got " +
                                        (j.is_object() ? std::string("no weight_map object") : std::string(j.type_name())));
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string())
        fail(ErrorCode::format_error, where + ": weight_map '" + it.key() + "': expected a file name, got " + it.value().dump());
      const std::string f = it.value().get<std::string>();
      if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
        fail(ErrorCode::format_error, where + ": weight_map '" + it.key() + "': expected a file name in the folder, got '" + f + "'");
      s.weight_map_[it.key()] = f;
    }
    // Open every shard now (headers only; data pages are mapped lazily by the OS) so that an
    // index naming a missing file or a tensor absent from its shard fails here, not mid-load.
    for (const auto& [name, f] : s.weight_map_) {
      if (!fs::exists(d / f))
        fail(ErrorCode::not_found, where + ": weight_map '" + name + "' names '" + f + "', which does not exist");
      auto sf = s.file(f);
      if (!sf->contains(name))
        fail(ErrorCode::format_error, where + ": weight_map '" + name + "' names '" + f + "', which has no such tensor");
    }
    return s;
  }
  std::string single;
  if (fs::exists(d / "model.safetensors")) {
    single = "model.safetensors";
  } else {
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(d))
      if (e.is_regular_file() && e.path().extension() == ".safetensors") found.push_back(e.path().filename().string());
    if (found.size() == 1) {
      single = found[0];
    } else if (found.empty()) {
      fail(ErrorCode::not_found, dir + ": expected model.safetensors or model.safetensors.index.json, got neither");
    } else {
      std::string list;
      for (const auto& f : found) list += (list.empty() ? "" : ", ") + f;
      fail(ErrorCode::format_error, dir + ": expected model.safetensors.index.json for several .safetensors files, got none for " + list);
    }
  }
  auto sf = s.file(single);
  for (const auto& t : sf->tensors()) s.weight_map_[t.name] = single;
  return s;
}

std::shared_ptr<SafetensorsFile> TensorStore::file(const std::string& fname) const {
  auto it = files_.find(fname);
  if (it != files_.end()) return it->second;
  auto f = SafetensorsFile::open((fs::path(dir_) / fname).string());
  files_[fname] = f;
  return f;
}

std::vector<std::string> TensorStore::names() const {
  std::vector<std::string> v;
  v.reserve(weight_map_.size());
  for (const auto& [n, f] : weight_map_) v.push_back(n);
  return v;
}

bool TensorStore::contains(const std::string& name) const { return weight_map_.count(name) != 0; }

std::string TensorStore::file_of(const std::string& name) const {
  auto it = weight_map_.find(name);
  if (it == weight_map_.end()) fail(ErrorCode::not_found, dir_ + ": no tensor '" + name + "'");
  return it->second;
}

const TensorInfo& TensorStore::info(const std::string& name) const { return file(file_of(name))->info(name); }

TensorView TensorStore::view(const std::string& name) const { return file(file_of(name))->view(name); }

}  // namespace w4a16::io
