/// \file
/// Strict reading of JSON input files: every value is fetched by key with its expected
/// type and range, every error names the file and the JSON pointer of the offending value
/// (e.g. `scenarios/x.json: /training/micro_batch: expected an integer >= 1, got -1`), and
/// keys that nobody read are reported as unknown. Nothing is silently defaulted: optional
/// values are std::optional and the caller decides.
///
/// Hostile input is refused before it can hurt: only regular files up to
/// limits::kMaxDocumentBytes are read (no FIFO, device or directory), nesting deeper than
/// limits::kMaxJsonDepth, a key given twice in one object and a number beyond double range
/// are InputErrors with the file and JSON path, and every integer is checked against the
/// range of the type it lands in (`integer(key, min, max)`, `int32(key, min, max)`).
/// Error messages print a bounded summary of a value, never a recursive dump.
#pragma once

#include "base/limits.hpp"

#include <nlohmann/json_fwd.hpp>

#include <climits>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace stepcast {

/// One problem of an input: where (file, JSON pointer) and what was expected there.
struct InputProblem {
  std::string file;
  std::string json_path;  ///< "" for the file as a whole
  std::string message;    ///< what was expected, and what was found
  /// `file: /path: message` (the path left out when empty).
  std::string line() const;
};

/// Bad input: a file that cannot be read or parsed, or values of the wrong type, range or
/// name. It holds every problem found in one reading (at least one): what() is one line per
/// problem, `file: /json/path: what was expected`; file() and json_path() are the first
/// problem's. The command-line front end maps it to exit code 2.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string json_path, const std::string& what_expected);
  /// All of `problems` (not empty) as one error.
  explicit InputError(std::vector<InputProblem> problems);
  const std::string& file() const { return problems_.front().file; }
  const std::string& json_path() const { return problems_.front().json_path; }
  const std::vector<InputProblem>& problems() const { return problems_; }

 private:
  std::vector<InputProblem> problems_;
};

/// Collects the problems of one input so that a reader reports them all at once instead of
/// stopping at the first: each independent part is read inside attempt(), and raise()
/// throws one InputError with everything collected.
class InputErrors {
 public:
  /// Runs `read`; an InputError it throws is kept (all its problems) instead of escaping.
  /// Returns whether `read` finished.
  template <typename F>
  bool attempt(F&& read) {
    try {
      read();
      return true;
    } catch (const InputError& e) {
      add(e);
      return false;
    }
  }
  void add(const InputError& e);
  bool empty() const { return problems_.empty(); }
  std::size_t size() const { return problems_.size(); }
  /// Throws InputError with every problem collected; returns when there is none.
  void raise() const;

 private:
  std::vector<InputProblem> problems_;
};

/// The whole text of an input file. Refuses (InputError naming the file) anything that is
/// not a regular file (a directory, FIFO, device or socket), a file over `max_bytes`
/// (checked before reading and while reading), and read errors.
std::string read_input_file(const std::filesystem::path& path, std::int64_t max_bytes = limits::kMaxDocumentBytes);

/// A bounded, non-recursive summary of a value for error messages: scalars as JSON (cut to
/// 60 characters), arrays and objects by their type and size ("an array of 3 elements").
std::string summary(const nlohmann::json& value);

/// A parsed JSON document that owns its tree.
class JsonDoc {
 public:
  /// Reads (read_input_file) and parses `path`; throws InputError naming the file and the
  /// parse position or JSON path.
  static JsonDoc load(const std::filesystem::path& path);
  /// Parses `text` as if it came from a file named `name` (tests, inline specs, one line of
  /// a .jsonl file). Strict: a key given twice in one object, nesting deeper than
  /// limits::kMaxJsonDepth and a number beyond double range are InputErrors naming `name`
  /// and the JSON path; checked while parsing, so nothing recurses over a deep value.
  static JsonDoc parse(const std::string& text, const std::string& name);
  ~JsonDoc();
  JsonDoc(JsonDoc&&) noexcept;
  JsonDoc& operator=(JsonDoc&&) noexcept;

  const nlohmann::json& root() const { return *root_; }
  const std::string& file() const { return file_; }

 private:
  JsonDoc(std::unique_ptr<nlohmann::json> root, std::string file);
  std::unique_ptr<nlohmann::json> root_;
  std::string file_;
};

class JsonArray;

/// A JSON object being read. Each accessor marks its key as read, and each key asked about
/// (has(), the optional_* accessors, allow()) as allowed; `finish()` throws one InputError
/// for all keys that were never read (unknown keys), each listing every allowed key of the
/// object with a "did you mean" for a close one. Accessors throw InputError with the file
/// and JSON pointer when the value is missing or has the wrong type or range.
class JsonObject {
 public:
  JsonObject(const nlohmann::json& value, std::string file, std::string path);

  /// Whether `key` is present; `key` counts as allowed from then on.
  bool has(const std::string& key) const;
  /// Marks a key as known without reading it (e.g. documentation fields like "source").
  void ignore(const std::string& key);
  /// Names keys this object may hold, for the list an unknown key's error prints (keys the
  /// reader never reached, e.g. those of another branch).
  void allow(const std::vector<std::string>& keys);

  std::string string(const std::string& key);
  std::optional<std::string> optional_string(const std::string& key);
  /// A string that must be one of `allowed`; the error lists them.
  std::string choice(const std::string& key, const std::vector<std::string>& allowed);
  std::optional<std::string> optional_choice(const std::string& key, const std::vector<std::string>& allowed);
  bool boolean(const std::string& key);
  std::optional<bool> optional_boolean(const std::string& key);
  /// Any finite number.
  double number(const std::string& key);
  /// A finite number in [min, max] (a physical bound: name it in base/limits.hpp).
  double number(const std::string& key, double min, double max);
  std::optional<double> optional_number(const std::string& key, double min, double max);
  /// A finite number > 0.
  double positive(const std::string& key);
  std::optional<double> optional_positive(const std::string& key);
  /// A finite number in (0, max].
  double positive(const std::string& key, double max);
  std::optional<double> optional_positive(const std::string& key, double max);
  /// A finite number >= 0.
  double non_negative(const std::string& key);
  std::optional<double> optional_non_negative(const std::string& key);
  /// A finite number in [0, max].
  double non_negative(const std::string& key, double max);
  std::optional<double> optional_non_negative(const std::string& key, double max);

  /// An integer in [min, max]. Large JSON integers (stored unsigned) are compared, never
  /// wrapped: 2^64-1 is out of range, not -1.
  std::int64_t integer(const std::string& key, std::int64_t min, std::int64_t max);
  std::optional<std::int64_t> optional_integer(const std::string& key, std::int64_t min, std::int64_t max);
  /// An integer in [min, max] that lands in an `int` (so 2^32+2 can never become 2).
  int int32(const std::string& key, int min = 1, int max = INT_MAX);
  std::optional<int> optional_int32(const std::string& key, int min = 1, int max = INT_MAX);
  /// An integer >= `min` (up to INT64_MAX). Prefer the forms with an explicit max.
  std::int64_t integer(const std::string& key, std::int64_t min = 1);
  std::optional<std::int64_t> optional_integer(const std::string& key, std::int64_t min = 1);

  /// Present, and either null (-> nullopt) or a value in range (formats where every key is
  /// written and unknown values are null, e.g. measured-run records).
  std::optional<std::int64_t> nullable_integer(const std::string& key, std::int64_t min, std::int64_t max);
  std::optional<double> nullable_number(const std::string& key, double min, double max);
  std::optional<std::string> nullable_string(const std::string& key);

  JsonObject object(const std::string& key);
  std::optional<JsonObject> optional_object(const std::string& key);
  JsonArray array(const std::string& key);
  std::optional<JsonArray> optional_array(const std::string& key);
  /// The raw value, for fields whose type varies (a name or an inline object); marks it read.
  const nlohmann::json& raw(const std::string& key);
  std::vector<std::string> keys() const;

  /// Throws InputError naming every key that no accessor read.
  void finish() const;

  /// An InputError about this object (or one of its keys) with the file and path filled in.
  InputError error(const std::string& key, const std::string& what_expected) const;
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  std::string path_of(const std::string& key) const;

 private:
  /// A finite number in [min, max] (min_open: (min, max]), marked read.
  double ranged_number(const std::string& key, double min, double max, bool min_open);
  const nlohmann::json& at(const std::string& key, const char* what) const;
  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
  std::set<std::string> read_;
  mutable std::set<std::string> allowed_;  ///< asked about (has, optional_*) or allow()ed
};

/// A JSON array being read, element by element.
class JsonArray {
 public:
  JsonArray(const nlohmann::json& value, std::string file, std::string path);
  std::size_t size() const;
  JsonObject object(std::size_t i) const;
  std::string string(std::size_t i) const;
  /// A finite number > 0.
  double positive(std::size_t i) const;
  /// A finite number in (0, max].
  double positive(std::size_t i, double max) const;
  /// A finite number in [min, max].
  double number(std::size_t i, double min, double max) const;
  /// An integer in [min, max] (never wrapped; see JsonObject::integer).
  std::int64_t integer(std::size_t i, std::int64_t min, std::int64_t max) const;
  /// An integer in [min, max] that lands in an `int`.
  int int32(std::size_t i, int min = 1, int max = INT_MAX) const;
  /// An integer >= `min` (up to INT64_MAX). Prefer the forms with an explicit max.
  std::int64_t integer(std::size_t i, std::int64_t min = 1) const;
  InputError error(std::size_t i, const std::string& what_expected) const;
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

 private:
  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
};

/// The folder holding stepcast's data (catalogs, scenarios): $STEPCAST_DATA_DIR if set;
/// else share/stepcast of the prefix the binary (or Python module) was installed into; else,
/// for a binary inside its source or build tree, the source tree (base/data_dir.cpp). An
/// InputError when none holds the catalogs (an installed binary never reads its source tree).
std::filesystem::path data_dir();

}  // namespace stepcast
