// The configuration example of SPEC.md, verbatim: it must load as written (config tests, fuzz seeds).
#pragma once

namespace mixprec::testing {

// SPEC.md, section "Configuration files".
inline constexpr char kSpecExample[] = R"json(
{ "global_config": { "input_tensors": {"spec": "XInt8Spec", "params": {}},
                     "weight": {"spec": "XInt8Spec", "params": {}},
                     "bias":   {"spec": "XInt8Spec", "params": {}} },
  "specific_layer_config": [
    { "target_node_names": ["^/model/head/.*", "/conv1/Conv"],
      "layer_config": { "input_tensors": {"spec": "BFloat16Spec", "params": {}},
                        "weight": {"spec": "BFloat16Spec", "params": {}},
                        "bias":   {"spec": "BFloat16Spec", "params": {}} } } ],
  "exclude": { "node_names": ["^(/Gather|/Shape_.*)$"], "subgraphs": [] },
  "extra_options": { "OpTypesToQuantize": ["Conv", "Mul"], "ActivationSymmetric": true,
                     "UseRandomData": false, "ConvertBNToConv": true, "BF16QDQToCast": true } }
)json";

}  // namespace mixprec::testing
