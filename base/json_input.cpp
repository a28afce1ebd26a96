#include "base/json_input.hpp"

#include <nlohmann/json.hpp>

#include "base/limits.hpp"
#include "base/suggest.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <system_error>

namespace stepcast {

namespace {

/// Escapes a key for a JSON pointer (RFC 6901: `~` -> `~0`, `/` -> `~1`).
std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string describe(const nlohmann::json& v) { return summary(v); }

std::string range_text(std::int64_t min, std::int64_t max) {
  if (max == std::numeric_limits<std::int64_t>::max()) return ">= " + std::to_string(min);
  return "in " + std::to_string(min) + ".." + std::to_string(max);
}

std::string number_text(double d) { return fmt::format("{:g}", d); }

/// The integer `v` holds if it is one in [min, max]; JSON integers above INT64_MAX are
/// stored unsigned and compared as such, never wrapped.
std::optional<std::int64_t> integer_in(const nlohmann::json& v, std::int64_t min, std::int64_t max) {
  std::int64_t i = 0;
  if (v.is_number_unsigned()) {
    const std::uint64_t u = v.get<std::uint64_t>();
    if (max < 0 || u > static_cast<std::uint64_t>(max)) return std::nullopt;
    i = static_cast<std::int64_t>(u);
  } else if (v.is_number_integer()) {
    i = v.get<std::int64_t>();
  } else {
    return std::nullopt;
  }
  if (i < min || i > max) return std::nullopt;
  return i;
}

/// The finite number `v` holds if it is one in [min, max] (min_open: (min, max]).
std::optional<double> number_in(const nlohmann::json& v, double min, double max, bool min_open) {
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  if (!std::isfinite(d) || d > max || d < min || (min_open && d == min)) return std::nullopt;
  return d;
}

std::string number_range_text(double min, double max, bool min_open) {
  if (min_open && min == 0 && max == std::numeric_limits<double>::max()) return "> 0";
  if (!min_open && min == 0 && max == std::numeric_limits<double>::max()) return ">= 0";
  return std::string("in ") + (min_open ? "(" : "[") + number_text(min) + ", " + number_text(max) + "]";
}

/// Follows the parser's position (the JSON pointer of the value being read) and refuses,
/// while parsing, a key given twice in one object and nesting beyond limits::kMaxJsonDepth.
class StrictParse {
 public:
  explicit StrictParse(const std::string& file) : file_(file) {}

  bool operator()(int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        element_begins();
        if (depth + 1 > limits::kMaxJsonDepth)
          throw InputError(file_, container_path(),
                           fmt::format("nesting deeper than {} arrays and objects "
                                       "(limits::kMaxJsonDepth); no stepcast input nests so deep",
                                       limits::kMaxJsonDepth));
        frames_.push_back(Frame{event == E::array_start, {}, {}, 0});
        break;
      case E::key: {
        Frame& top = frames_.back();
        std::string key = parsed.get<std::string>();
        if (!top.keys.insert(key).second)
          throw InputError(file_, container_path() + "/" + pointer_token(key),
                           "key given twice in one object (JSON leaves the meaning open; "
                           "remove one)");
        top.key = std::move(key);
        break;
      }
      case E::value:
        element_begins();
        break;
      case E::object_end:
      case E::array_end:
        frames_.pop_back();
        break;
    }
    return true;
  }

  /// The pointer of the value being parsed when an error struck (best effort).
  std::string pending_path() const {
    if (frames_.empty()) return "";
    const Frame& top = frames_.back();
    return container_path() + "/" + (top.array ? std::to_string(top.count) : pointer_token(top.key));
  }

 private:
  struct Frame {
    bool array;
    std::set<std::string> keys;
    std::string key;
    std::size_t count;
  };

  void element_begins() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().count;
  }

  /// The pointer of the innermost open container.
  std::string container_path() const {
    std::string out;
    for (std::size_t i = 0; i + 1 < frames_.size(); ++i)
      out += "/" + (frames_[i].array ? std::to_string(frames_[i].count - 1) : pointer_token(frames_[i].key));
    return out;
  }

  const std::string& file_;
  std::vector<Frame> frames_;
};

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    out += '"' + names[i] + '"';
  }
  return out;
}

}  // namespace

std::string summary(const nlohmann::json& v) {
  if (v.is_array()) return fmt::format("an array of {} element{}", v.size(), v.size() == 1 ? "" : "s");
  if (v.is_object()) return fmt::format("an object with {} key{}", v.size(), v.size() == 1 ? "" : "s");
  // Scalars only from here: no recursion. A string cut inside a UTF-8 sequence is dumped
  // with the broken bytes replaced, never an exception while reporting an error.
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  if (v.is_string()) {
    const std::string& str = v.get_ref<const std::string&>();
    if (str.size() > 200) return nlohmann::json(str.substr(0, 57)).dump(-1, ' ', false, kReplace) + "...";
  }
  std::string s = v.dump(-1, ' ', false, kReplace);
  if (s.size() > 60) {
    std::size_t cut = 57;  // not inside a UTF-8 sequence (continuation bytes are 10xxxxxx)
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s = s.substr(0, cut) + "...";
  }
  return s;
}

std::string read_input_file(const std::filesystem::path& path, std::int64_t max_bytes) {
  namespace fs = std::filesystem;
  const std::string name = path.string();
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    throw InputError(name, "", "cannot open the file (" + (ec ? ec.message() : std::string("no such file")) + ")");
  if (fs::is_directory(st)) throw InputError(name, "", "is a directory; expected a JSON file");
  if (!fs::is_regular_file(st))
    throw InputError(name, "",
                     "is not a regular file (a FIFO, device or socket); expected a "
                     "JSON file");
  const std::uintmax_t size = fs::file_size(path, ec);
  const auto too_big = [&](std::uintmax_t bytes, const char* qualifier) {
    return InputError(name, "",
                      fmt::format("is {}{} bytes, over the {} bytes a file of this kind may "
                                  "have (base/limits.hpp)",
                                  qualifier, bytes, max_bytes));
  };
  if (ec) throw InputError(name, "", "cannot read the file's size (" + ec.message() + ")");
  if (size > static_cast<std::uintmax_t>(max_bytes)) throw too_big(size, "");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(
        name, "", std::string("cannot open the file") + (errno ? std::string(" (") + std::strerror(errno) + ")" : ""));
  std::string text;
  text.reserve(static_cast<std::size_t>(size));
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > static_cast<std::size_t>(max_bytes))
      throw too_big(text.size(), "at least ");  // it grew while being read
    if (!in) break;
  }
  if (in.bad()) throw InputError(name, "", "read error");
  return text;
}

std::string InputProblem::line() const {
  return file + ": " + (json_path.empty() ? std::string() : json_path + ": ") + message;
}

namespace {

std::string lines_of(const std::vector<InputProblem>& problems) {
  std::string out;
  for (const InputProblem& p : problems) {
    if (!out.empty()) out += '\n';
    out += p.line();
  }
  return out;
}

}  // namespace

InputError::InputError(std::string file, std::string json_path, const std::string& what_expected)
    : InputError(std::vector<InputProblem>{InputProblem{std::move(file), std::move(json_path), what_expected}}) {}

InputError::InputError(std::vector<InputProblem> problems)
    : std::runtime_error(lines_of(problems)), problems_(std::move(problems)) {
  if (problems_.empty()) throw std::logic_error("InputError without a problem");
}

void InputErrors::add(const InputError& e) {
  problems_.insert(problems_.end(), e.problems().begin(), e.problems().end());
}

void InputErrors::raise() const {
  if (!problems_.empty()) throw InputError(problems_);
}

JsonDoc::JsonDoc(std::unique_ptr<nlohmann::json> root, std::string file)
    : root_(std::move(root)), file_(std::move(file)) {}
JsonDoc::~JsonDoc() = default;
JsonDoc::JsonDoc(JsonDoc&&) noexcept = default;
JsonDoc& JsonDoc::operator=(JsonDoc&&) noexcept = default;

JsonDoc JsonDoc::load(const std::filesystem::path& path) { return parse(read_input_file(path), path.string()); }

JsonDoc JsonDoc::parse(const std::string& text, const std::string& name) {
  StrictParse strict(name);
  try {
    auto root = std::make_unique<nlohmann::json>(
        nlohmann::json::parse(text, [&strict](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
          return strict(depth, event, parsed);
        }));
    return JsonDoc(std::move(root), name);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(name, "", std::string("malformed JSON (") + e.what() + ")");
  } catch (const nlohmann::json::out_of_range& e) {
    // 406: a number beyond double range such as 1e309.
    throw InputError(name, strict.pending_path(),
                     std::string("number out of range: beyond what a double holds (") + e.what() + ")");
  } catch (const nlohmann::json::exception& e) {
    throw InputError(name, strict.pending_path(), std::string("unreadable JSON (") + e.what() + ")");
  }
}

JsonObject::JsonObject(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value), file_(std::move(file)), path_(std::move(path)) {
  if (!value.is_object()) throw InputError(file_, path_, "expected an object, got " + describe(value));
}

std::string JsonObject::path_of(const std::string& key) const { return path_ + "/" + pointer_token(key); }

InputError JsonObject::error(const std::string& key, const std::string& what_expected) const {
  return InputError(file_, key.empty() ? path_ : path_of(key), what_expected);
}

bool JsonObject::has(const std::string& key) const {
  allowed_.insert(key);
  return value_->contains(key);
}

void JsonObject::ignore(const std::string& key) { read_.insert(key); }

void JsonObject::allow(const std::vector<std::string>& keys) { allowed_.insert(keys.begin(), keys.end()); }

std::vector<std::string> JsonObject::keys() const {
  std::vector<std::string> out;
  for (auto it = value_->begin(); it != value_->end(); ++it) out.push_back(it.key());
  return out;
}

const nlohmann::json& JsonObject::at(const std::string& key, const char* what) const {
  auto it = value_->find(key);
  if (it == value_->end()) throw error(key, std::string("missing; expected ") + what);
  return *it;
}

const nlohmann::json& JsonObject::raw(const std::string& key) {
  read_.insert(key);
  return at(key, "a value");
}

std::string JsonObject::string(const std::string& key) {
  read_.insert(key);
  const auto& v = at(key, "a string");
  if (!v.is_string()) throw error(key, "expected a string, got " + describe(v));
  return v.get<std::string>();
}

std::optional<std::string> JsonObject::optional_string(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return string(key);
}

std::string JsonObject::choice(const std::string& key, const std::vector<std::string>& allowed) {
  std::string s = string(key);
  for (const auto& a : allowed)
    if (a == s) return s;
  throw error(key, "expected one of " + join_names(allowed) + ", got \"" + s + "\"");
}

std::optional<std::string> JsonObject::optional_choice(const std::string& key,
                                                       const std::vector<std::string>& allowed) {
  if (!has(key)) return std::nullopt;
  return choice(key, allowed);
}

bool JsonObject::boolean(const std::string& key) {
  read_.insert(key);
  const auto& v = at(key, "true or false");
  if (!v.is_boolean()) throw error(key, "expected true or false, got " + describe(v));
  return v.get<bool>();
}

std::optional<bool> JsonObject::optional_boolean(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return boolean(key);
}

double JsonObject::number(const std::string& key) {
  return number(key, std::numeric_limits<double>::lowest(), std::numeric_limits<double>::max());
}

double JsonObject::number(const std::string& key, double min, double max) {
  return ranged_number(key, min, max, false);
}

double JsonObject::ranged_number(const std::string& key, double min, double max, bool min_open) {
  read_.insert(key);
  const auto& v = at(key, "a number");
  if (!v.is_number()) throw error(key, "expected a number, got " + describe(v));
  const std::optional<double> d = number_in(v, min, max, min_open);
  if (!d) {
    if (min == std::numeric_limits<double>::lowest() && max == std::numeric_limits<double>::max())
      throw error(key, "expected a finite number, got " + describe(v));
    throw error(key, "expected a number " + number_range_text(min, max, min_open) + ", got " + describe(v));
  }
  return *d;
}

std::optional<double> JsonObject::optional_number(const std::string& key, double min, double max) {
  if (!has(key)) return std::nullopt;
  return number(key, min, max);
}

double JsonObject::positive(const std::string& key) { return positive(key, std::numeric_limits<double>::max()); }

double JsonObject::positive(const std::string& key, double max) { return ranged_number(key, 0, max, true); }

std::optional<double> JsonObject::optional_positive(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return positive(key);
}

std::optional<double> JsonObject::optional_positive(const std::string& key, double max) {
  if (!has(key)) return std::nullopt;
  return positive(key, max);
}

double JsonObject::non_negative(const std::string& key) {
  return non_negative(key, std::numeric_limits<double>::max());
}

double JsonObject::non_negative(const std::string& key, double max) { return ranged_number(key, 0, max, false); }

std::optional<double> JsonObject::optional_non_negative(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return non_negative(key);
}

std::optional<double> JsonObject::optional_non_negative(const std::string& key, double max) {
  if (!has(key)) return std::nullopt;
  return non_negative(key, max);
}

std::int64_t JsonObject::integer(const std::string& key, std::int64_t min, std::int64_t max) {
  read_.insert(key);
  const auto& v = at(key, "an integer");
  const std::optional<std::int64_t> i = integer_in(v, min, max);
  if (!i) throw error(key, "expected an integer " + range_text(min, max) + ", got " + describe(v));
  return *i;
}

std::optional<std::int64_t> JsonObject::optional_integer(const std::string& key, std::int64_t min, std::int64_t max) {
  if (!has(key)) return std::nullopt;
  return integer(key, min, max);
}

int JsonObject::int32(const std::string& key, int min, int max) { return static_cast<int>(integer(key, min, max)); }

std::optional<int> JsonObject::optional_int32(const std::string& key, int min, int max) {
  if (!has(key)) return std::nullopt;
  return int32(key, min, max);
}

std::int64_t JsonObject::integer(const std::string& key, std::int64_t min) {
  return integer(key, min, std::numeric_limits<std::int64_t>::max());
}

std::optional<std::int64_t> JsonObject::optional_integer(const std::string& key, std::int64_t min) {
  if (!has(key)) return std::nullopt;
  return integer(key, min);
}

std::optional<std::int64_t> JsonObject::nullable_integer(const std::string& key, std::int64_t min, std::int64_t max) {
  read_.insert(key);
  const auto& v = at(key, "an integer or null");
  if (v.is_null()) return std::nullopt;
  const std::optional<std::int64_t> i = integer_in(v, min, max);
  if (!i) throw error(key, "expected null or an integer " + range_text(min, max) + ", got " + describe(v));
  return i;
}

std::optional<double> JsonObject::nullable_number(const std::string& key, double min, double max) {
  read_.insert(key);
  const auto& v = at(key, "a number or null");
  if (v.is_null()) return std::nullopt;
  const std::optional<double> d = number_in(v, min, max, false);
  if (!d) throw error(key, "expected null or a number " + number_range_text(min, max, false) + ", got " + describe(v));
  return d;
}

std::optional<std::string> JsonObject::nullable_string(const std::string& key) {
  read_.insert(key);
  const auto& v = at(key, "a string or null");
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) throw error(key, "expected null or a string, got " + describe(v));
  return v.get<std::string>();
}

JsonObject JsonObject::object(const std::string& key) {
  read_.insert(key);
  return JsonObject(at(key, "an object"), file_, path_of(key));
}

std::optional<JsonObject> JsonObject::optional_object(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return object(key);
}

JsonArray JsonObject::array(const std::string& key) {
  read_.insert(key);
  return JsonArray(at(key, "an array"), file_, path_of(key));
}

std::optional<JsonArray> JsonObject::optional_array(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return array(key);
}

void JsonObject::finish() const {
  std::set<std::string> all = allowed_;
  all.insert(read_.begin(), read_.end());
  const std::vector<std::string> known(all.begin(), all.end());
  std::vector<InputProblem> unknown;
  for (auto it = value_->begin(); it != value_->end(); ++it)
    if (!read_.count(it.key()))
      unknown.push_back(InputProblem{
          file_, path_of(it.key()),
          "unknown key" + did_you_mean(it.key(), known) + " (allowed keys here: " + join_names(known) + ")"});
  if (!unknown.empty()) throw InputError(std::move(unknown));
}

JsonArray::JsonArray(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value), file_(std::move(file)), path_(std::move(path)) {
  if (!value.is_array()) throw InputError(file_, path_, "expected an array, got " + describe(value));
}

std::size_t JsonArray::size() const { return value_->size(); }

InputError JsonArray::error(std::size_t i, const std::string& what_expected) const {
  return InputError(file_, path_ + "/" + std::to_string(i), what_expected);
}

JsonObject JsonArray::object(std::size_t i) const {
  return JsonObject((*value_)[i], file_, path_ + "/" + std::to_string(i));
}

std::string JsonArray::string(std::size_t i) const {
  const auto& v = (*value_)[i];
  if (!v.is_string()) throw error(i, "expected a string, got " + describe(v));
  return v.get<std::string>();
}

double JsonArray::positive(std::size_t i) const { return positive(i, std::numeric_limits<double>::max()); }

double JsonArray::positive(std::size_t i, double max) const {
  const auto& v = (*value_)[i];
  const std::optional<double> d = number_in(v, 0, max, true);
  if (!d) throw error(i, "expected a number " + number_range_text(0, max, true) + ", got " + describe(v));
  return *d;
}

double JsonArray::number(std::size_t i, double min, double max) const {
  const auto& v = (*value_)[i];
  const std::optional<double> d = number_in(v, min, max, false);
  if (!d) throw error(i, "expected a number " + number_range_text(min, max, false) + ", got " + describe(v));
  return *d;
}

std::int64_t JsonArray::integer(std::size_t i, std::int64_t min, std::int64_t max) const {
  const auto& v = (*value_)[i];
  const std::optional<std::int64_t> n = integer_in(v, min, max);
  if (!n) throw error(i, "expected an integer " + range_text(min, max) + ", got " + describe(v));
  return *n;
}

int JsonArray::int32(std::size_t i, int min, int max) const { return static_cast<int>(integer(i, min, max)); }

std::int64_t JsonArray::integer(std::size_t i, std::int64_t min) const {
  return integer(i, min, std::numeric_limits<std::int64_t>::max());
}

}  // namespace stepcast
