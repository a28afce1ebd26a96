#include "json.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace stepcast::cal::json {

std::string string(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          // RFC 8259 section 7: control characters U+0000..U+001F must be escaped.
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out.push_back(c);  // UTF-8 bytes pass through unchanged
        }
    }
  }
  out.push_back('"');
  return out;
}

std::string number(double value) {
  if (!std::isfinite(value)) return "null";
  // 15 significant digits read back exactly for most values and stay readable; 17 always
  // round-trip an IEEE double (std::numeric_limits<double>::max_digits10). snprintf rather than
  // std::to_chars, which older standard libraries lack for floating point.
  char text[64];
  std::snprintf(text, sizeof text, "%.15g", value);
  if (std::strtod(text, nullptr) != value) std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::string integer(std::int64_t value) { return std::to_string(value); }

Object& Object::value(std::string_view key, std::string rendered) {
  fields_.emplace_back(string(key), std::move(rendered));
  return *this;
}

std::string Object::render() const {
  std::string out = "{";
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    if (i > 0) out += ", ";
    out += fields_[i].first;
    out += ": ";
    out += fields_[i].second;
  }
  out += "}";
  return out;
}

std::string array(const std::vector<std::string>& items, int indent) {
  if (items.empty()) return "[]";
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  const std::string close_pad(static_cast<std::size_t>(indent >= 2 ? indent - 2 : 0), ' ');
  std::string out = "[\n";
  for (std::size_t i = 0; i < items.size(); ++i) {
    out += pad;
    out += items[i];
    out += i + 1 < items.size() ? ",\n" : "\n";
  }
  out += close_pad;
  out += "]";
  return out;
}

}  // namespace stepcast::cal::json
