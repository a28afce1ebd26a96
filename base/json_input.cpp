#include "base/json_input.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace stepcast {

namespace {

/// Escapes a key for a JSON pointer (RFC 6901: `~` -> `~0`, `/` -> `~1`).
std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string describe(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    out += '"' + names[i] + '"';
  }
  return out;
}

}  // namespace

InputError::InputError(std::string file, std::string json_path, const std::string& what_expected)
    : std::runtime_error(file + ": " + (json_path.empty() ? std::string() : json_path + ": ") + what_expected),
      file_(std::move(file)),
      json_path_(std::move(json_path)) {}

JsonDoc::JsonDoc(std::unique_ptr<nlohmann::json> root, std::string file)
    : root_(std::move(root)), file_(std::move(file)) {}
JsonDoc::~JsonDoc() = default;
JsonDoc::JsonDoc(JsonDoc&&) noexcept = default;
JsonDoc& JsonDoc::operator=(JsonDoc&&) noexcept = default;

JsonDoc JsonDoc::load(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path.string(), "", "cannot open the file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse(buffer.str(), path.string());
}

JsonDoc JsonDoc::parse(const std::string& text, const std::string& name) {
  try {
    return JsonDoc(std::make_unique<nlohmann::json>(nlohmann::json::parse(text)), name);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(name, "", std::string("malformed JSON (") + e.what() + ")");
  }
}

JsonObject::JsonObject(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value), file_(std::move(file)), path_(std::move(path)) {
  if (!value.is_object())
    throw InputError(file_, path_, "expected an object, got " + describe(value));
}

std::string JsonObject::path_of(const std::string& key) const {
  return path_ + "/" + pointer_token(key);
}

InputError JsonObject::error(const std::string& key, const std::string& what_expected) const {
  return InputError(file_, key.empty() ? path_ : path_of(key), what_expected);
}

bool JsonObject::has(const std::string& key) const { return value_->contains(key); }

void JsonObject::ignore(const std::string& key) { read_.insert(key); }

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
  read_.insert(key);
  const auto& v = at(key, "a number");
  if (!v.is_number()) throw error(key, "expected a number, got " + describe(v));
  double d = v.get<double>();
  if (!std::isfinite(d)) throw error(key, "expected a finite number, got " + describe(v));
  return d;
}

double JsonObject::positive(const std::string& key) {
  double d = number(key);
  if (!(d > 0)) throw error(key, "expected a number > 0, got " + describe((*value_)[key]));
  return d;
}

std::optional<double> JsonObject::optional_positive(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return positive(key);
}

double JsonObject::non_negative(const std::string& key) {
  double d = number(key);
  if (d < 0) throw error(key, "expected a number >= 0, got " + describe((*value_)[key]));
  return d;
}

std::optional<double> JsonObject::optional_non_negative(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return non_negative(key);
}

std::int64_t JsonObject::integer(const std::string& key, std::int64_t min) {
  read_.insert(key);
  const auto& v = at(key, "an integer");
  if (!v.is_number_integer())
    throw error(key, "expected an integer >= " + std::to_string(min) + ", got " + describe(v));
  std::int64_t i = v.get<std::int64_t>();
  if (i < min)
    throw error(key, "expected an integer >= " + std::to_string(min) + ", got " + describe(v));
  return i;
}

std::optional<std::int64_t> JsonObject::optional_integer(const std::string& key, std::int64_t min) {
  if (!has(key)) return std::nullopt;
  return integer(key, min);
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
  std::vector<std::string> known(read_.begin(), read_.end());
  for (auto it = value_->begin(); it != value_->end(); ++it)
    if (!read_.count(it.key()))
      throw error(it.key(), "unknown key (known keys here: " + join_names(known) + ")");
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

double JsonArray::positive(std::size_t i) const {
  const auto& v = (*value_)[i];
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
    throw error(i, "expected a number > 0, got " + describe(v));
  return v.get<double>();
}

std::int64_t JsonArray::integer(std::size_t i, std::int64_t min) const {
  const auto& v = (*value_)[i];
  if (!v.is_number_integer() || v.get<std::int64_t>() < min)
    throw error(i, "expected an integer >= " + std::to_string(min) + ", got " + describe(v));
  return v.get<std::int64_t>();
}

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("STEPCAST_DATA_DIR"); env && *env) return env;
  return STEPCAST_DATA_DIR;
}

}  // namespace stepcast
