// A JSON Schema validator for the schemas the project ships (schemas/*.schema.json), written
// for the subset of draft 2020-12 they use:
//   type (a name or a list), enum, const, properties, required, additionalProperties (boolean
//   or schema), items, minItems, maxItems, minimum, maximum, minLength, pattern (RE2 syntax,
//   searched), $ref to "#/$defs/<name>", and the annotations $schema, $id, title, description,
//   $comment, $defs, default, examples.
//
// Contract: validate_json() returns every violation found, each as "<JSON pointer>: <what is
// wrong>" ("/calibration/method: \"Foo\" is not one of ...", "(root): ..." for the document
// itself); empty when the document is valid. A schema using any other keyword, or a $ref it
// cannot resolve, throws Error kInternal: the shipped schema is code, and a keyword silently
// ignored would make validation pass when it should not.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mixprec {

std::vector<std::string> validate_json(const nlohmann::ordered_json& schema, const nlohmann::ordered_json& document);

}  // namespace mixprec
