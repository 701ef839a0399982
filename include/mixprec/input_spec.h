// Model inputs and the shapes they run with: dynamic dimensions are resolved from the user's
// --input-shape overrides, never guessed.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "mixprec/tensor.h"

namespace mixprec {

// One model input as the model declares it.
struct InputSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;                          // -1 marks a dynamic dimension
  std::vector<std::string> dim_params;  // dim i's symbolic name ("batch"), "" when unnamed
                                        // or static; may be shorter than shape
};

// The concrete shape to feed `input`. With an override for input.name: it must have the
// input's rank, equal every static dim, and give a positive size for every dynamic one.
// Without an override: the input's own shape, which must be fully static. Violations throw
// mixprec::Error kBadInput naming `model_path` and saying which --input-shape to give.
Shape resolve_shape(const InputSpec& input, const std::map<std::string, Shape>& overrides,
                    const std::string& model_path);

// Parses --input-shape values "NAME=D1xD2x..." (e.g. "x=1x3x48x192") into NAME -> shape. The
// name is everything before the last '=' (so it may itself contain '='); dims are positive
// decimal integers. Malformed or repeated entries throw mixprec::Error kBadInput quoting them.
std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs);

}  // namespace mixprec
