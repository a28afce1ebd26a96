/// \file
/// Where stepcast's data (catalogs, bundled scenarios) lives: $STEPCAST_DATA_DIR; else
/// share/stepcast of the prefix the running binary (or Python module) was installed into;
/// else, for a binary that runs inside its source or build tree, the source tree. An
/// installed binary never falls back to the source tree it was built from.
#include "base/json_input.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <system_error>

#ifndef STEPCAST_DATA_DIR
#error "STEPCAST_DATA_DIR (the source tree) must be defined by the build"
#endif
#ifndef STEPCAST_BUILD_DIR
#error "STEPCAST_BUILD_DIR (the build tree) must be defined by the build"
#endif

namespace stepcast {

namespace {

namespace fs = std::filesystem;

/// Whether `address` lies in a loaded segment of the main program (dl_iterate_phdr lists
/// the main program first).
bool in_main_program(const void* address) {
  struct Search {
    std::uintptr_t address;
    bool found = false;
  } search{reinterpret_cast<std::uintptr_t>(address)};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const std::uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && s->address >= begin && s->address < begin + ph.p_memsz) s->found = true;
        }
        return 1;  // the first object only
      },
      &search);
  return search.found;
}

/// The file of the image holding this code: the executable, or the shared object (the
/// Python module) it was linked into; empty when it cannot be told.
fs::path image_file() {
  std::error_code ec;
  static const char marker = 0;  // an address inside this image
  const void* self = &marker;
  Dl_info info{};
  if (!in_main_program(self) && dladdr(self, &info) != 0 && info.dli_fname && *info.dli_fname) {
    fs::path object = info.dli_fname;  // as it was loaded: relative to the directory then
    if (object.is_relative()) object = fs::current_path(ec) / object;
    object = fs::canonical(object, ec);
    if (!ec) return object;
  }
  const fs::path exe = fs::canonical("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

/// Whether `inner` is `outer` or lies under it (both canonical).
bool within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i)
    if (i == inner.end() || *i != *o) return false;
  return true;
}

bool holds_data(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "topologies" / "catalog" / "gpus.json", ec);
}

/// share/stepcast of the install prefix: beside bin/ (prefix/bin/stepcast) or three levels
/// above the Python module (prefix/lib/python3/dist-packages/stepcast*.so).
std::optional<fs::path> installed_data(const fs::path& image) {
  fs::path dir = image.parent_path();
  for (int up = 0; up <= 3 && !dir.empty(); ++up, dir = dir.parent_path()) {
    if (holds_data(dir / "share" / "stepcast")) return dir / "share" / "stepcast";
    if (dir == dir.root_path()) break;
  }
  return std::nullopt;
}

fs::path locate_data_dir() {
  const fs::path image = image_file();
  if (image.empty())
    throw InputError("/proc/self/exe", "", "cannot tell where stepcast runs from; set STEPCAST_DATA_DIR");
  if (std::optional<fs::path> installed = installed_data(image)) return *installed;
  std::error_code ec;
  for (const char* tree : {STEPCAST_DATA_DIR, STEPCAST_BUILD_DIR}) {
    const fs::path canonical_tree = fs::canonical(tree, ec);
    if (!ec && within(image, canonical_tree)) return STEPCAST_DATA_DIR;
  }
  throw InputError(image.string(), "",
                   "stepcast's data (catalogs) not found: expected share/stepcast in the prefix it was installed "
                   "into (e.g. " +
                       (image.parent_path().parent_path() / "share" / "stepcast").string() +
                       "); reinstall it, or set STEPCAST_DATA_DIR");
}

}  // namespace

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("STEPCAST_DATA_DIR"); env && *env) return env;
  static const fs::path dir = locate_data_dir();
  return dir;
}

}  // namespace stepcast
