// JSON Schema to GBNF (gbnf.h), for OpenAI's response_format: json_object (any JSON object) and
// json_schema. The supported keywords are listed in docs/structured-output.md; any other keyword
// (other than annotations such as title and description) is refused, naming it, rather than
// silently producing output the schema would reject.
//
// The grammar admits a subset of the documents the schema accepts, every one of which validates:
// properties come in the schema's order, an object with `properties` gets no others, whitespace
// between tokens is bounded, and numbers have at most 16 integer, 16 fraction and 2 exponent
// digits (every number fits a double, and a model cannot spin forever inside a number or between
// tokens).
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace ember::llm::grammar {

// A schema the compiler refuses: `keyword` is the offending keyword (or "schema"), `path` where
// in the schema it sits (a JSON pointer such as /properties/name/format).
class SchemaError : public std::runtime_error {
 public:
  SchemaError(const std::string& message, std::string keyword, std::string path)
      : std::runtime_error(message), keyword_(std::move(keyword)), path_(std::move(path)) {}
  const std::string& keyword() const { return keyword_; }
  const std::string& path() const { return path_; }

 private:
  std::string keyword_, path_;
};

// Properties come in the order `schema` lists them (hence ordered_json).
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);
// Any JSON object (response_format json_object).
std::string json_object_gbnf();
// Any JSON value (a json_schema without a schema).
std::string json_value_gbnf();

}  // namespace ember::llm::grammar
