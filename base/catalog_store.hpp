/// \file
/// How every catalog (GPUs, links, boxes, clusters) is held and grown: the built-in file
/// under data_dir() is read once; user catalog files handed in by the front end (`--catalog
/// DIR`, STEPCAST_CATALOG_PATH) and a scenario's inline entries are appended after it.
/// Entries live in a std::deque, so a pointer to one stays valid when others are added.
///
/// The rules, the same for every kind: a user catalog adds entries and never redefines one
/// (a name already in the catalog, case-insensitively, is an InputError naming the file and
/// the entry's JSON path), and a file is added all or nothing. An inline entry whose name
/// is taken is accepted only when it is equal to the entry of that name.
#pragma once

#include "base/json_input.hpp"

#include <algorithm>
#include <cctype>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

namespace stepcast::catalog_store {

inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// The entry named `name` (case-insensitive), or nullptr.
template <typename T>
const T* find(const std::deque<T>& store, const std::string& name) {
  const std::string key = lower(name);
  for (const T& item : store)
    if (lower(item.name) == key) return &item;
  return nullptr;
}

/// Reads `{list_key: [entry, ...]}` from `doc` with `parse` and appends the entries to
/// `store`; `kind` names them in errors ("GPU"). Throws InputError, appending nothing, on
/// the first entry that fails to parse or whose name is already in `store` or earlier in
/// the file.
template <typename T, typename Parse>
void append(const JsonDoc& doc, const char* list_key, Parse parse, std::deque<T>& store, const std::string& kind) {
  JsonObject top(doc.root(), doc.file(), "");
  JsonArray items = top.array(list_key);
  top.finish();
  std::deque<T> added;
  for (std::size_t i = 0; i < items.size(); ++i) {
    JsonObject o = items.object(i);
    T item = parse(o);
    if (find(store, item.name) || find(added, item.name))
      throw items.error(i, kind + " \"" + item.name +
                               "\" is already in the catalog; a catalog adds entries and "
                               "never redefines one (give this one another name)");
    added.push_back(std::move(item));
  }
  for (T& item : added) store.push_back(std::move(item));
}

/// Adds `item` given inline (a scenario's hardware) and returns the catalog's entry: the
/// existing one when an equal entry has that name, else the new one. Throws
/// std::invalid_argument when the name is taken by a different entry.
template <typename T>
const T& add_inline(std::deque<T>& store, const T& item, const std::string& kind) {
  if (const T* seen = find(store, item.name)) {
    if (*seen == item) return *seen;
    throw std::invalid_argument(kind + " \"" + item.name + "\" differs from the catalog's " + kind +
                                " of that name; give the inline one another name");
  }
  store.push_back(item);
  return store.back();
}

}  // namespace stepcast::catalog_store
