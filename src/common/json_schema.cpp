#include "mixprec/json_schema.h"

#include <re2/re2.h>

#include <set>

#include "mixprec/error.h"

namespace mixprec {
namespace {

using Json = nlohmann::ordered_json;

const std::set<std::string> kKeywords = {
    "type",      "enum",     "const",   "properties", "required", "additionalProperties", "items",
    "minItems",  "maxItems", "minimum", "maximum",    "minLength", "pattern",             "$ref",
    "$schema",   "$id",      "title",   "description", "$comment", "$defs",               "default",
    "examples"};

std::string pointer_text(const std::string& pointer) { return pointer.empty() ? "(root)" : pointer; }

std::string escape_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

bool has_type(const Json& value, const std::string& type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  if (type == "number") return value.is_number();
  if (type == "integer") {
    if (value.is_number_integer()) return true;
    return value.is_number_float() && value.get<double>() == static_cast<double>(static_cast<int64_t>(value.get<double>()));
  }
  throw Error(ErrorKind::kInternal, "", "JSON schema: unknown type '" + type + "'");
}

std::string brief(const Json& value) {
  std::string text = value.dump();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

class Validator {
 public:
  explicit Validator(const Json& root) : root_(root) {}

  void check(const Json& schema, const Json& value, const std::string& pointer) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) fail(pointer, "no value is allowed here");
      return;
    }
    if (!schema.is_object()) throw Error(ErrorKind::kInternal, "", "JSON schema: a schema must be an object or a boolean");
    for (const auto& item : schema.items()) {
      if (!kKeywords.contains(item.key())) {
        throw Error(ErrorKind::kInternal, "", "JSON schema: keyword '" + item.key() + "' is not supported");
      }
    }
    if (schema.contains("$ref")) check(resolve(schema["$ref"].get<std::string>()), value, pointer);
    if (schema.contains("type") && !type_matches(schema["type"], value)) {
      fail(pointer, brief(value) + " is not of type " + schema["type"].dump());
      return;  // the other keywords would only repeat the mismatch
    }
    if (schema.contains("enum")) {
      bool found = false;
      for (const auto& option : schema["enum"]) found = found || option == value;
      if (!found) fail(pointer, brief(value) + " is not one of " + schema["enum"].dump());
    }
    if (schema.contains("const") && schema["const"] != value) {
      fail(pointer, brief(value) + " is not " + schema["const"].dump());
    }
    if (value.is_object()) check_object(schema, value, pointer);
    if (value.is_array()) check_array(schema, value, pointer);
    if (value.is_number()) {
      const double number = value.get<double>();
      if (schema.contains("minimum") && number < schema["minimum"].get<double>()) {
        fail(pointer, brief(value) + " is less than the minimum " + schema["minimum"].dump());
      }
      if (schema.contains("maximum") && number > schema["maximum"].get<double>()) {
        fail(pointer, brief(value) + " is more than the maximum " + schema["maximum"].dump());
      }
    }
    if (value.is_string()) {
      const std::string& text = value.get_ref<const std::string&>();
      if (schema.contains("minLength") && text.size() < schema["minLength"].get<size_t>()) {
        fail(pointer, "the string is shorter than " + schema["minLength"].dump() + " characters");
      }
      // RE2 (linear time, no recursion): the text is the user's and may be arbitrarily long.
      if (schema.contains("pattern") && !RE2::PartialMatch(text, RE2(schema["pattern"].get<std::string>()))) {
        fail(pointer, brief(value) + " does not match the pattern " + schema["pattern"].dump());
      }
    }
  }

  std::vector<std::string> errors;

 private:
  bool type_matches(const Json& type, const Json& value) const {
    if (type.is_string()) return has_type(value, type.get<std::string>());
    for (const auto& name : type) {
      if (has_type(value, name.get<std::string>())) return true;
    }
    return false;
  }

  void check_object(const Json& schema, const Json& value, const std::string& pointer) {
    if (schema.contains("required")) {
      for (const auto& key : schema["required"]) {
        if (!value.contains(key.get<std::string>())) fail(pointer, "missing required key \"" + key.get<std::string>() + "\"");
      }
    }
    const Json* properties = schema.contains("properties") ? &schema["properties"] : nullptr;
    for (const auto& item : value.items()) {
      const std::string child = pointer + "/" + escape_token(item.key());
      if (properties && properties->contains(item.key())) {
        check((*properties)[item.key()], item.value(), child);
      } else if (schema.contains("additionalProperties")) {
        const Json& extra = schema["additionalProperties"];
        if (extra.is_boolean() && !extra.get<bool>()) {
          fail(pointer, "unknown key \"" + item.key() + "\"");
        } else {
          check(extra, item.value(), child);
        }
      }
    }
  }

  void check_array(const Json& schema, const Json& value, const std::string& pointer) {
    if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>()) {
      fail(pointer, "has " + std::to_string(value.size()) + " items, fewer than " + schema["minItems"].dump());
    }
    if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>()) {
      fail(pointer, "has " + std::to_string(value.size()) + " items, more than " + schema["maxItems"].dump());
    }
    if (schema.contains("items")) {
      for (size_t i = 0; i < value.size(); ++i) check(schema["items"], value[i], pointer + "/" + std::to_string(i));
    }
  }

  const Json& resolve(const std::string& ref) const {
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0 || !root_.contains("$defs") || !root_["$defs"].contains(ref.substr(prefix.size()))) {
      throw Error(ErrorKind::kInternal, "", "JSON schema: cannot resolve $ref '" + ref + "'");
    }
    return root_["$defs"][ref.substr(prefix.size())];
  }

  void fail(const std::string& pointer, const std::string& what) { errors.push_back(pointer_text(pointer) + ": " + what); }

  const Json& root_;
};

}  // namespace

std::vector<std::string> validate_json(const Json& schema, const Json& document) {
  Validator validator(schema);
  validator.check(schema, document, "");
  return validator.errors;
}

}  // namespace mixprec
