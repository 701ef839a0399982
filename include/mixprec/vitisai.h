// The VitisAI side of a deployment (../shared/VITIS.md): the VAIML compiler options a quantized
// model needs, the vitisai_config.json the VitisAI provider reads (its `config_file` option),
// and --edge-quant-auto's probe of edge quantization in the runtime.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mixprec/analysis.h"
#include "mixprec/formats.h"
#include "mixprec/macs.h"
#include "mixprec/runtime.h"

namespace mixprec {

// What the compiler is told about a model (vaiml_config). Derived from the final model:
// - integer only (every compute node quantized): no conversion, no flag;
// - integer and float compute: float ops converted (BF16, or FP16 when the model's float
//   compute is FP16, ve2's) and match-power-of-two-quant-kernel=1, so the Q/DQ at island
//   boundaries become matched kernels;
// - float only: the conversion alone;
// - block formats (BFP/MX): the conversion (their quantize-dequantize leaves float arithmetic),
//   match-power-of-two-quant-kernel=1 when integer formats are used too; their own flags come
//   from the plugin that supplies them (a note says so; its manifest's compiler_flags).
// Edge (de)quantization in the runtime adds input-quantization-in-rt=1,
// output-dequantization-in-rt=1, or edge-quantization-in-rt=1 for both.
struct CompilerOptions {
  bool f32_to_bf16 = false;         // enable_f32_to_bf16_conversion
  bool f32_to_f16 = false;          // enable_f32_to_f16_conversion
  bool match_power_of_two = false;  // match-power-of-two-quant-kernel=1
  bool input_in_runtime = false, output_in_runtime = false;
  std::vector<std::string> extra_flags;  // a plugin manifest's compiler_flags, appended as given
  std::string model_kind;           // "integer only", "integer and float islands", "float only"
  std::vector<std::string> notes;
  std::string fe_args() const;      // space separated, "" when no flag
};

CompilerOptions derive_compiler_options(const ModelAnalysis& model, const std::vector<FormatId>& formats);

// The fe_args flag for runtime edge quantization of the inputs, the outputs or both ("" for neither).
std::string edge_flag(bool inputs, bool outputs);

// vitisai_config.json: the provider's pass list with one vaiml_partition pass carrying `options`
// for `device` ("stx", "ve2").
nlohmann::ordered_json vitisai_config_json(const CompilerOptions& options, const std::string& device);

// --- --edge-quant-auto ---------------------------------------------------------------------

// A Q on a graph input or a DQ on a graph output, and the parameters the runtime applies when it
// takes the (de)quantization over.
struct EdgeBoundary {
  bool input = true;
  std::string tensor, node;
  std::string codes;               // "uint8", "int8", ...
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
  int64_t axis = -1;               // -1: per tensor
  std::string excluded;            // why the runtime cannot take it over; empty: standalone
};

// One build of the model on the provider.
struct EdgeBuild {
  std::string configuration;       // "edge Q/DQ as kernels" / "edge-quantization-in-rt=1"
  int64_t kernels = 0;             // nodes of the optimized graph
  int64_t edge_kernels = 0;        // of them, Q on graph inputs and DQ on graph outputs
  int64_t runtime_edges = 0;       // edges the runtime (de)quantizes
  PartitionReport partition;
  // Compute nodes in float in this build that are integer kernels in the other one (the NPU
  // compiler's "CpuBecause" fallbacks have no equivalent here; these are what shows).
  std::vector<std::string> fallbacks;
  std::string optimized_model_path;
};

enum class EdgeAdvice { kNotApplicable, kEnable, kDisable, kNoChange };
const char* to_string(EdgeAdvice advice);  // "does not apply", "enable", "disable", "no change"

struct EdgeProbe {
  std::vector<EdgeBoundary> boundaries;
  std::vector<EdgeBuild> builds;   // [0] without the flag, [1] with it; empty when nothing applies
  EdgeAdvice advice = EdgeAdvice::kNotApplicable;
  std::string reason;
  std::string flag;                // the flag to enable (for the standalone edges found)
  bool inputs = false, outputs = false;  // which edges the flag covers
  std::string counted_by;          // what the counts are: the provider and whether they are the NPU compiler's
};

struct EdgeProbeParams {
  std::string model_path;          // the quantized model
  const MacEstimate* macs = nullptr;  // of the float model (node names are kept)
  // The two builds' session options. With the VitisAI provider they differ in the config file
  // (`with` carries the flag); elsewhere they are the same and the runtime's part is emulated:
  // the standalone edge Q/DQ leave the graph (rewrite::strip_edge_qdq), as the runtime would
  // take them over.
  SessionOptions without, with;
  bool emulate = true;
  std::string work_dir;            // edge_probe.onnx, edge_probe.{without,with}.optimized.onnx
};

// Step 4 on the probe's two builds ([0] without the flag, [1] with it): each build's fallbacks
// (float compute nodes that are integer kernels in the other), then disable when the flag makes
// a node fall back, enable when the kernel count falls, no change otherwise; with the reason.
void decide_edge_advice(EdgeProbe& probe);

// Steps 1-4 of ../shared/VITIS.md's --edge-quant-auto. A model without edge Q/DQ (or with none
// the runtime can take over) is kNotApplicable without building anything.
EdgeProbe probe_edge_quantization(const EdgeProbeParams& params);

}  // namespace mixprec
