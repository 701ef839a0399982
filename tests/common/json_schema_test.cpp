#include "mixprec/json_schema.h"

#include <gtest/gtest.h>

#include "mixprec/error.h"

namespace mixprec {
namespace {

using Json = nlohmann::ordered_json;

const Json kSchema = Json::parse(R"({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["name", "samples"],
  "additionalProperties": false,
  "properties": {
    "name": {"type": "string", "minLength": 1, "pattern": "^[a-z_]+$"},
    "samples": {"type": "integer", "minimum": 1, "maximum": 1000},
    "ratio": {"type": "number", "minimum": 0, "maximum": 1},
    "mode": {"enum": ["fast", "exact"]},
    "version": {"const": 1},
    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
    "risks": {"type": "array", "items": {"$ref": "#/$defs/risk"}},
    "note": {"type": ["string", "null"]}
  },
  "$defs": {
    "risk": {"type": "object", "required": ["severity"], "additionalProperties": false,
             "properties": {"severity": {"enum": ["low", "high"]}, "text": {"type": "string"}}}
  }
})");

TEST(JsonSchemaTest, AValidDocumentHasNoErrors) {
  const Json doc = Json::parse(R"({"name": "plan_a", "samples": 100, "ratio": 0.5, "mode": "fast", "version": 1,
                                   "tags": ["x"], "risks": [{"severity": "high", "text": "t"}], "note": null})");
  EXPECT_TRUE(validate_json(kSchema, doc).empty());
}

TEST(JsonSchemaTest, EveryViolationIsReportedWithItsPointer) {
  const Json doc = Json::parse(R"({"name": "Plan A", "samples": 0, "ratio": 1.5, "mode": "slow", "version": 2,
                                   "tags": [], "risks": [{"text": 3}], "note": 7, "extra": true})");
  const std::vector<std::string> errors = validate_json(kSchema, doc);
  const std::vector<std::string> expected = {
      "/name: \"Plan A\" does not match the pattern \"^[a-z_]+$\"",
      "/samples: 0 is less than the minimum 1",
      "/ratio: 1.5 is more than the maximum 1",
      "/mode: \"slow\" is not one of [\"fast\",\"exact\"]",
      "/version: 2 is not 1",
      "/tags: has 0 items, fewer than 1",
      "/risks/0: missing required key \"severity\"",
      "/risks/0/text: 3 is not of type \"string\"",
      "/note: 7 is not of type [\"string\",\"null\"]",
      "(root): unknown key \"extra\"",
  };
  EXPECT_EQ(errors, expected);
}

TEST(JsonSchemaTest, MissingKeysAndWrongRootType) {
  EXPECT_EQ(validate_json(kSchema, Json::parse(R"({"name": "a"})")),
            std::vector<std::string>{"(root): missing required key \"samples\""});
  EXPECT_EQ(validate_json(kSchema, Json::parse("[1]")), std::vector<std::string>{"(root): [1] is not of type \"object\""});
}

TEST(JsonSchemaTest, IntegerAcceptsWholeFloatsOnly) {
  EXPECT_TRUE(validate_json(kSchema, Json::parse(R"({"name": "a", "samples": 4.0})")).empty());
  EXPECT_EQ(validate_json(kSchema, Json::parse(R"({"name": "a", "samples": 4.5})")).size(), 1u);
}

TEST(JsonSchemaTest, AnUnsupportedKeywordOrUnresolvedRefIsAnInternalError) {
  EXPECT_THROW(validate_json(Json::parse(R"({"oneOf": [{"type": "string"}]})"), Json("x")), Error);
  EXPECT_THROW(validate_json(Json::parse(R"({"$ref": "#/$defs/missing"})"), Json("x")), Error);
}

}  // namespace
}  // namespace mixprec
