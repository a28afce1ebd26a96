/// \file
/// The scenario schema, declared once: every key a scenario file may hold, with its type,
/// its range or vocabulary, whether it is required or else its default and why, and one line
/// of help. The reader takes each object's keys, each number's range and each name's
/// vocabulary from it (scenario.cpp); `--help`, `init`'s notes, `stepcast schema` and
/// docs/scenario.md's key table are rendered from it. Keys read by the catalog readers (an
/// inline model, box, GPU, link or network, in the catalog's own format) are named by
/// their object and documented with the catalogs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stepcast {

/// What a key's value is.
enum class KeyType {
  string,  ///< any string (a name, a path)
  boolean,
  integer,  ///< within [min, max]
  number,   ///< finite, within [min, max] or (min, max] when min_open
  choice,   ///< one string of the vocabulary
  object,
  array,
  name_or_object,  ///< a catalog name, or an object (inline or detailed form)
};
std::string_view name(KeyType);

/// One key of the schema.
struct SchemaKey {
  std::string path;  ///< JSON pointer; "*" stands for an array's elements: "/hardware/stragglers/*/nodes"
  KeyType type = KeyType::string;
  double min = 0;  ///< integer and number keys
  double max = 0;
  bool min_open = false;                ///< number keys: min excluded ("> 0")
  std::vector<std::string> vocabulary;  ///< choice keys (and the names a name_or_object takes, when few)
  bool required = false;
  std::string default_text;  ///< what an absent key means, and why; "" for a required key
  std::string help;          ///< one line

  /// The key's own name, the last segment of its path ("micro_batch").
  std::string name() const;
  /// The allowed values in words: "1..1048576", "> 0", "1..64", "ddp, zero1, ...", or "".
  std::string values() const;
};

/// The keys of one input format, in a fixed order (objects before their keys).
class Schema {
 public:
  explicit Schema(std::vector<SchemaKey> keys);
  const std::vector<SchemaKey>& keys() const { return keys_; }
  /// The key at `path` (array indices as "*"); std::logic_error for a path not declared,
  /// a bug of the reader, never of the input.
  const SchemaKey& key(std::string_view path) const;
  SchemaKey& key(std::string_view path);
  /// The names of the keys directly under `object_path` ("" for the top level), in order.
  std::vector<std::string> children(std::string_view object_path) const;

 private:
  std::vector<SchemaKey> keys_;
};

/// A JSON pointer with its array indices as "*" ("/hardware/stragglers/0/nodes" ->
/// "/hardware/stragglers/*/nodes"): the schema path of a value the reader is at.
std::string schema_path(std::string_view json_pointer);

/// The scenario schema (built once, on first use).
const Schema& scenario_schema();

/// `stepcast schema`'s list of keys: one entry per key (its dotted path, type, values, default
/// or "required", and meaning), wrapped to `width` columns.
std::string schema_help(const Schema& schema, std::size_t width = 100);

/// docs/scenario.md's key table (Markdown): key, type, values, default, meaning.
std::string schema_markdown(const Schema& schema);

/// `init`'s notes: what every key left out of a starter becomes (each optional key's default).
std::vector<std::string> schema_default_notes(const Schema& schema);

}  // namespace stepcast
