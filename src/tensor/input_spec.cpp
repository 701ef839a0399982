#include "mixprec/input_spec.h"

#include <charconv>
#include <string_view>

#include "mixprec/error.h"

namespace mixprec {
namespace {

// How messages name dim i: its symbolic name, else "dimI".
std::string dim_label(const InputSpec& input, size_t i) {
  if (i < input.dim_params.size() && !input.dim_params[i].empty()) return input.dim_params[i];
  return "dim" + std::to_string(i);
}

[[noreturn]] void throw_bad_spec(const std::string& spec, const std::string& problem) {
  throw_bad_input("", "--input-shape '" + spec + "': " + problem);
}

int64_t parse_positive_dim(std::string_view text, const std::string& spec) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value <= 0) {
    const std::string quoted(text);
    throw_bad_spec(spec, "'" + quoted + "' is not a positive integer");
  }
  return value;
}

}  // namespace

Shape resolve_shape(const InputSpec& input, const std::map<std::string, Shape>& overrides,
                    const std::string& model_path) {
  const std::string declared = shape_to_string(input.shape);
  const std::string subject = "input '" + input.name + "'";
  const auto found = overrides.find(input.name);
  if (found == overrides.end()) {
    std::string dynamic;
    std::string example;
    for (size_t i = 0; i < input.shape.size(); ++i) {
      if (i > 0) example += 'x';
      if (input.shape[i] >= 0) {
        example += std::to_string(input.shape[i]);
        continue;
      }
      const std::string label = dim_label(input, i);
      dynamic += dynamic.empty() ? label : ", " + label;
      example += "<" + label + ">";
    }
    if (dynamic.empty()) return input.shape;
    throw_bad_input(model_path, subject + " has dynamic dimension(s) " + dynamic + " in " + declared +
                                    "; give --input-shape " + input.name + "=" + example);
  }

  const Shape& given = found->second;
  const std::string flag = "--input-shape " + input.name + "=" + shape_to_string(given);
  if (given.size() != input.shape.size()) {
    throw_bad_input(model_path, subject + ": " + flag + " gives " + std::to_string(given.size()) +
                                    " dims, the model input has " + std::to_string(input.shape.size()) + " (" +
                                    declared + ")");
  }
  for (size_t i = 0; i < given.size(); ++i) {
    const std::string dim = "dim " + std::to_string(i) + " (" + dim_label(input, i) + ")";
    if (input.shape[i] >= 0 && given[i] != input.shape[i]) {
      throw_bad_input(model_path, subject + ": " + flag + " sets " + dim + " to " + std::to_string(given[i]) +
                                      ", the model fixes it at " + std::to_string(input.shape[i]) + " (" +
                                      declared + ")");
    }
    if (given[i] <= 0 && input.shape[i] < 0) {
      throw_bad_input(model_path, subject + ": " + flag + " must give " + dim + " a positive size");
    }
  }
  return given;
}

std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, Shape> shapes;
  for (const std::string& spec : specs) {
    const size_t equals = spec.rfind('=');
    if (equals == std::string::npos || equals == 0) throw_bad_spec(spec, "expected NAME=D1xD2x..., e.g. x=1x3x48x192");
    const std::string_view dims = std::string_view(spec).substr(equals + 1);
    if (dims.empty()) throw_bad_spec(spec, "no dimensions after '='");
    Shape shape;
    for (size_t start = 0;;) {
      const size_t end = dims.find('x', start);
      shape.push_back(parse_positive_dim(dims.substr(start, end == std::string_view::npos ? end : end - start), spec));
      if (end == std::string_view::npos) break;
      start = end + 1;
    }
    const std::string name = spec.substr(0, equals);
    if (!shapes.emplace(name, std::move(shape)).second) throw_bad_spec(spec, "input '" + name + "' is given twice");
  }
  return shapes;
}

}  // namespace mixprec
