/// \file
/// Tests of the strict JSON reader against hostile input: keys given twice, deep nesting,
/// numbers beyond double range, integers that would wrap in the type they land in, files
/// that are not regular files or are too large, and error messages that stay bounded.
#include "base/json_input.hpp"

#include "base/limits.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

using namespace stepcast;

namespace {

/// The message of the InputError `f` throws; fails the test when it throws nothing.
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("expected an InputError");
  return "";
}

/// Parses `text` as "t.json" and reads key "v" of the root object with `read`.
template <class F>
auto read_v(const std::string& text, F&& read) {
  JsonDoc doc = JsonDoc::parse(text, "t.json");
  JsonObject root(doc.root(), doc.file(), "");
  return read(root);
}

std::string nested(int depth) {
  return std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']');
}

/// A scratch folder removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "json_input_test.XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("a key given twice in one object is an error naming the file and the key's path") {
  const std::string msg = input_error([] { JsonDoc::parse(R"({"a": {"b": 1, "b": 2}})", "dup.json"); });
  CHECK(msg.find("dup.json") != std::string::npos);
  CHECK(msg.find("/a/b") != std::string::npos);
  CHECK(msg.find("key given twice") != std::string::npos);
  // Inside arrays the path carries the element's index.
  const std::string in_array =
      input_error([] { JsonDoc::parse(R"({"x": [1, {"k": 1}, {"k": 1, "k": 1}]})", "d.json"); });
  CHECK(in_array.find("/x/2/k") != std::string::npos);
  // The same key in sibling objects is fine.
  CHECK_NOTHROW(JsonDoc::parse(R"({"a": {"k": 1}, "b": {"k": 1}, "c": [{"k": 1}, {"k": 2}]})", "ok.json"));
}

TEST_CASE("nesting up to kMaxJsonDepth is read; one level deeper is an error, not a crash") {
  CHECK_NOTHROW(JsonDoc::parse(nested(limits::kMaxJsonDepth), "deep.json"));
  const std::string msg = input_error([] { JsonDoc::parse(nested(limits::kMaxJsonDepth + 1), "deep.json"); });
  CHECK(msg.find("deep.json") != std::string::npos);
  CHECK(msg.find("nesting deeper than") != std::string::npos);
  // Far deeper than any stack could recurse over: refused while parsing.
  CHECK(input_error([] { JsonDoc::parse(nested(1'000'000), "huge.json"); }).find("nesting") != std::string::npos);
  CHECK(input_error([] { JsonDoc::parse(std::string(1'000'000, '['), "open.json"); }).find("nesting") !=
        std::string::npos);
}

TEST_CASE("a number beyond double range is an error naming the file and the path") {
  const std::string msg = input_error([] { JsonDoc::parse(R"({"a": {"x": 1e309}})", "big.json"); });
  CHECK(msg.find("big.json") != std::string::npos);
  CHECK(msg.find("/a/x") != std::string::npos);
  CHECK(msg.find("out of range") != std::string::npos);
  CHECK(input_error([] { JsonDoc::parse("[1, -1e400]", "neg.json"); }).find("/1") != std::string::npos);
  // Fuzz finding F1: any literal beyond +-1.8e308, anywhere in the document.
  for (const char* text : {"-21e308", "1e2147483648", "{\"a\": [{\"b\": 1e400}]}"})
    CHECK(input_error([&] { JsonDoc::parse(text, "f1.json"); }).find("out of range") != std::string::npos);
}

TEST_CASE("malformed JSON is an error naming the file") {
  CHECK(input_error([] { JsonDoc::parse("{\"a\": ", "broken.json"); }).find("broken.json: malformed JSON") !=
        std::string::npos);
}

TEST_CASE("integers are checked against the range of the type they land in, never wrapped") {
  const auto int32_of = [](const std::string& v) {
    return read_v("{\"v\": " + v + "}", [](JsonObject& o) { return o.int32("v", 1); });
  };
  CHECK(int32_of("2") == 2);
  CHECK(int32_of("2147483647") == INT_MAX);
  CHECK(input_error([&] { int32_of("4294967298"); }).find("/v: expected an integer in 1..2147483647") !=
        std::string::npos);  // 2^32+2 is not 2
  CHECK_THROWS_AS(int32_of("2147483648"), InputError);
  CHECK_THROWS_AS(int32_of("0"), InputError);
  CHECK_THROWS_AS(int32_of("2.0"), InputError);
  CHECK_THROWS_AS(int32_of("\"2\""), InputError);

  const auto int64_of = [](const std::string& v) {
    return read_v("{\"v\": " + v + "}", [](JsonObject& o) { return o.integer("v", 0, 100); });
  };
  CHECK(int64_of("0") == 0);
  CHECK(int64_of("100") == 100);
  CHECK_THROWS_AS(int64_of("101"), InputError);
  CHECK_THROWS_AS(int64_of("-1"), InputError);
  // Above INT64_MAX nlohmann stores integers unsigned: 2^64-1 must not read as -1.
  const auto any_of = [](const std::string& v) {
    return read_v("{\"v\": " + v + "}", [](JsonObject& o) { return o.integer("v", -5); });
  };
  CHECK(any_of("9223372036854775807") == INT64_MAX);
  CHECK_THROWS_AS(any_of("18446744073709551615"), InputError);
  CHECK_THROWS_AS(any_of("9223372036854775808"), InputError);
  CHECK_THROWS_AS(any_of("1e30"), InputError);
  // Beyond 2^64 a JSON integer literal is parsed as a double: still not an integer.
  CHECK_THROWS_AS(any_of("123456789012345678901234567890"), InputError);
  CHECK_THROWS_AS(any_of("-9223372036854775809"), InputError);
  CHECK(any_of("-5") == -5);
}

TEST_CASE("array integers are checked like object integers") {
  JsonDoc doc = JsonDoc::parse("[3, 4294967298, -1, 18446744073709551615]", "a.json");
  JsonArray a(doc.root(), doc.file(), "");
  CHECK(a.int32(0) == 3);
  CHECK(input_error([&] { a.int32(1); }).find("a.json: /1:") != std::string::npos);
  CHECK_THROWS_AS(a.integer(2, 0), InputError);
  CHECK_THROWS_AS(a.integer(3, 0), InputError);
  CHECK(a.integer(1, 0, INT64_MAX) == 4294967298LL);
}

TEST_CASE("bounded numbers: inside the bound is read, outside is an error with the bound") {
  const auto read = [](const std::string& v, auto&& f) { return read_v("{\"v\": " + v + "}", f); };
  const auto eff = [](JsonObject& o) { return o.positive("v", 1.0); };
  CHECK(read("1", eff) == 1.0);
  CHECK(read("1e-3", eff) == 1e-3);
  CHECK(input_error([&] { read("1.5", eff); }).find("expected a number in (0, 1]") != std::string::npos);
  CHECK_THROWS_AS(read("0", eff), InputError);
  CHECK_THROWS_AS(read("-1", eff), InputError);
  const auto span = [](JsonObject& o) { return o.number("v", 1e-6, 1e3); };
  CHECK(read("1e-6", span) == 1e-6);
  CHECK_THROWS_AS(read("1e-300", span), InputError);
  CHECK_THROWS_AS(read("1e300", span), InputError);
  const auto nn = [](JsonObject& o) { return o.non_negative("v", 10); };
  CHECK(read("0", nn) == 0.0);
  CHECK_THROWS_AS(read("10.5", nn), InputError);
}

TEST_CASE("nullable values: null is nullopt, a value is range-checked, absence is an error") {
  JsonDoc doc = JsonDoc::parse(R"({"a": null, "b": 7, "c": 0, "d": "x", "e": null})", "n.json");
  JsonObject o(doc.root(), doc.file(), "");
  CHECK_FALSE(o.nullable_integer("a", 1, 10).has_value());
  CHECK(o.nullable_integer("b", 1, 10) == 7);
  CHECK_THROWS_AS(o.nullable_integer("c", 1, 10), InputError);
  CHECK(o.nullable_string("d") == "x");
  CHECK_FALSE(o.nullable_number("e", 0, 1).has_value());
  CHECK_THROWS_AS(o.nullable_number("missing", 0, 1), InputError);
}

TEST_CASE("error messages summarise a deep or long value instead of dumping it") {
  std::string deep = "{\"v\": " + nested(limits::kMaxJsonDepth - 2) + "}";
  const std::string msg = input_error([&] { read_v(deep, [](JsonObject& o) { return o.string("v"); }); });
  CHECK(msg.find("got an array of 1 element") != std::string::npos);
  const std::string long_string = "{\"v\": \"" + std::string(100'000, 'x') + "\"}";
  const std::string msg2 =
      input_error([&] { read_v(long_string, [](JsonObject& o) { return o.integer("v", 0, 1); }); });
  CHECK(msg2.size() < 300);
  // Cut inside a multi-byte UTF-8 character: still a message, not an exception.
  std::string accents;
  for (int i = 0; i < 300; ++i) accents += "\xc3\xa9";  // é
  CHECK_NOTHROW(summary(nlohmann::json(accents)));
  CHECK_NOTHROW(summary(nlohmann::json(accents.substr(0, 99))));
  // The summary itself is valid UTF-8 (it may end up in JSON output).
  CHECK_NOTHROW(nlohmann::json(summary(nlohmann::json(accents.substr(0, 150)))).dump());
  std::string shifted = "x";  // the cut falls on the other byte of a character
  shifted.append(accents, 0, 150);
  CHECK_NOTHROW(nlohmann::json(summary(nlohmann::json(shifted))).dump());
  CHECK(summary(nlohmann::json::object()) == "an object with 0 keys");
  CHECK(summary(nlohmann::json(2)) == "2");
}

TEST_CASE("only regular files are read: a directory, a FIFO and a device are refused") {
  TempDir tmp;
  CHECK(input_error([&] { JsonDoc::load(tmp.path); }).find("is a directory") != std::string::npos);
  const auto fifo = tmp.path / "fifo.json";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(input_error([&] { JsonDoc::load(fifo); }).find("not a regular file") != std::string::npos);
  if (std::filesystem::exists("/dev/zero"))
    CHECK(input_error([] { JsonDoc::load("/dev/zero"); }).find("/dev/zero: is not a regular file") !=
          std::string::npos);
  CHECK(input_error([&] { JsonDoc::load(tmp.path / "absent.json"); }).find("cannot open the file") !=
        std::string::npos);
}

TEST_CASE("a JSON document over kMaxDocumentBytes is refused before it is read") {
  TempDir tmp;
  const auto big = tmp.path / "big.json";
  {
    std::ofstream out(big);
    out << "[]";
  }
  // A sparse file: the size is checked, the bytes are never read.
  std::filesystem::resize_file(big, static_cast<std::uintmax_t>(limits::kMaxDocumentBytes) + 1);
  CHECK(input_error([&] { JsonDoc::load(big); }).find("over the 16777216 bytes") != std::string::npos);
  std::filesystem::resize_file(big, 2);
  CHECK_NOTHROW(JsonDoc::load(big));
}

TEST_CASE("finish names every unknown key, each with all allowed keys, optional ones included") {
  const JsonDoc doc = JsonDoc::parse(R"({"a": 1, "colour": 2, "sizee": 3})", "f.json");
  JsonObject obj(doc.root(), doc.file(), "/x");
  (void)obj.integer("a", 0, 9);
  (void)obj.optional_integer("size", 0, 9);  // absent, asked about: allowed
  obj.allow({"weight"});                     // never reached: allowed
  try {
    obj.finish();
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    REQUIRE(e.problems().size() == 2);
    CHECK(e.problems()[0].line() == R"(f.json: /x/colour: unknown key (allowed keys here: "a", "size", "weight"))");
    CHECK(e.problems()[1].line() ==
          R"(f.json: /x/sizee: unknown key (did you mean "size"?) (allowed keys here: "a", "size", "weight"))");
    CHECK(e.json_path() == "/x/colour");  // the first problem's
    CHECK(std::string(e.what()) == e.problems()[0].line() + "\n" + e.problems()[1].line());
  }
}

TEST_CASE("InputErrors keeps every problem of the parts it attempts and raises them as one") {
  InputErrors errors;
  errors.raise();  // nothing collected: no throw
  CHECK(errors.attempt([] {}));
  CHECK_FALSE(errors.attempt([] { throw InputError("f.json", "/a", "one"); }));
  CHECK_FALSE(errors.attempt([] {
    throw InputError({InputProblem{"f.json", "/b", "two"}, InputProblem{"f.json", "", "three"}});
  }));
  CHECK(errors.size() == 3);
  try {
    errors.raise();
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "f.json: /a: one\nf.json: /b: two\nf.json: three");
  }
}
