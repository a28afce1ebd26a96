#include "cli/user_catalog.hpp"

#include "base/json_input.hpp"
#include "base/suggest.hpp"
#include "model/transformer.hpp"
#include "topologies/gpu.hpp"
#include "topologies/link.hpp"
#include "topologies/topology.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <stdexcept>

namespace stepcast::cli {

namespace {

/// Environment variable naming catalog folders, ':'-separated like PATH.
constexpr const char* kCatalogPathVariable = "STEPCAST_CATALOG_PATH";

const std::vector<std::pair<std::string, std::function<void(const JsonDoc&)>>>& adders() {
  static const std::vector<std::pair<std::string, std::function<void(const JsonDoc&)>>> list{
      {"links.json", add_links},       {"gpus.json", add_gpus},     {"boxes.json", add_boxes},
      {"clusters.json", add_clusters}, {"models.json", add_models},
  };
  return list;
}

}  // namespace

const std::vector<std::string>& user_catalog_files() {
  static const std::vector<std::string> files = [] {
    std::vector<std::string> out;
    for (const auto& [file, add] : adders()) out.push_back(file);
    return out;
  }();
  return files;
}

std::vector<std::string> catalog_folders(const std::vector<std::string>& dirs) {
  std::vector<std::string> out;
  if (const char* path = std::getenv(kCatalogPathVariable)) {
    std::string rest = path;
    for (std::size_t start = 0; start <= rest.size();) {
      const std::size_t end = std::min(rest.find(':', start), rest.size());
      if (end > start) out.push_back(rest.substr(start, end - start));
      start = end + 1;
    }
  }
  out.insert(out.end(), dirs.begin(), dirs.end());
  return out;
}

void load_user_catalogs(const std::vector<std::string>& folders) {
  namespace fs = std::filesystem;
  const std::vector<std::string>& known = user_catalog_files();
  for (const std::string& folder : folders) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
      throw std::runtime_error("catalog folder " + folder + ": " +
                               (fs::exists(folder, ec) ? "not a folder" : "no such folder") + " (from --catalog or " +
                               kCatalogPathVariable + ")");
    bool any = false;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      const std::string file = entry.path().filename().string();
      if (entry.path().extension() != ".json") continue;
      if (std::find(known.begin(), known.end(), file) == known.end())
        throw std::runtime_error("catalog folder " + folder + ": unknown catalog file " + file +
                                 did_you_mean(file, known) + " (known: " +
                                 [&] {
                                   std::string all;
                                   for (const auto& k : known) all += (all.empty() ? "" : ", ") + k;
                                   return all;
                                 }() +
                                 ")");
    }
    for (const auto& [file, add] : adders()) {
      const fs::path path = fs::path(folder) / file;
      if (!fs::exists(path, ec)) continue;
      add(JsonDoc::load(path));
      any = true;
    }
    if (!any)
      throw std::runtime_error("catalog folder " + folder +
                               " holds none of links.json, gpus.json, boxes.json, "
                               "clusters.json, models.json");
  }
}

}  // namespace stepcast::cli
