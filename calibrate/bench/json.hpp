// A tiny JSON writer: enough for the raw calibration file, with no third-party library (the
// calibration machine may have none of the model's dependencies installed).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stepcast::cal::json {

// A JSON string literal, quotes included, with '"', '\\' and control characters escaped.
std::string string(std::string_view text);

// The shortest decimal that reads back as the same double; NaN and infinities, which JSON
// cannot represent, become null.
std::string number(double value);

std::string integer(std::int64_t value);

// An object whose fields keep their insertion order, rendered on one line. Two names on
// purpose: text() quotes, value() takes JSON already rendered (number(), integer(), ...), so a
// std::string can never slip in unquoted by overload resolution.
class Object {
 public:
  Object& value(std::string_view key, std::string rendered);
  Object& text(std::string_view key, std::string_view text) { return value(key, string(text)); }
  std::string render() const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// A JSON array of already rendered items, one item per line, each line indented by `indent`
// spaces and the closing bracket by `indent - 2`.
std::string array(const std::vector<std::string>& items, int indent);

}  // namespace stepcast::cal::json
