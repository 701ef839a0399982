// upgrade_opset: raises a model's default-domain opset so our formats can be expressed (Cast
// to bfloat16 and per-channel DequantizeLinear need opset 13, 16-bit QuantizeLinear opset 21),
// rewriting every node whose operator changed meaning between the model's opset and the target.
//
// Contract:
// - `target` at or below the model's opset: nothing changes (the opset is never lowered) and
//   the result has from == to == the model's opset.
// - Otherwise the default-domain ("" or "ai.onnx") opset import becomes `target`, ir_version is
//   raised to at least the IR version `target` needs, and every default-domain node of the main
//   graph and of every subgraph (If/Loop/Scan bodies) is rewritten to keep its meaning. New
//   initializers get names not used anywhere in the model and live in the graph that owns the
//   rewritten node. Nodes of other domains and other opset imports are left alone.
// - Errors leave `model` untouched. mixprec::Error naming `label`:
//     kUnsupported: the model's opset is below kOldestUpgradableOpset; `target` is above
//       kNewestUpgradeTarget; the model has model-local functions; or a node's operator
//       changed in a way the upgrader cannot rewrite (the message names the node and says
//       "op X changed meaning in opset N; re-export the model at opset >= N"). Softmax,
//       LogSoftmax and Hardmax below opset 13 need the rank of their input: `rank_of` is
//       asked first, then the shapes the model declares; unknown → kUnsupported.
//     kBadInput: no (or several) default-domain opset imports, an invalid graph (see
//       ir::GraphView), or a node missing an attribute its old opset requires.
// - `adapted` lists every rewrite, one line per node and opset step, e.g.
//   "Clip 'clip_0': min/max attributes -> inputs".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace mixprec {

// ONNX Runtime's oldest supported opset; older models use experimental and long-gone ops.
inline constexpr int64_t kOldestUpgradableOpset = 7;
// The newest opset whose operator changes the upgrader's table has been checked against.
inline constexpr int64_t kNewestUpgradeTarget = 21;

struct OpsetUpgradeResult {
  int64_t from = 0;
  int64_t to = 0;
  std::vector<std::string> adapted;
};

// The rank of the value named by the argument, or nullopt when unknown.
using RankLookup = std::function<std::optional<int64_t>(const std::string&)>;

OpsetUpgradeResult upgrade_opset(onnx::ModelProto& model, int64_t target, const std::string& label,
                                 const RankLookup& rank_of = {});

// The main-graph tensors whose rank an upgrade to `target` would ask `rank_of` for (the inputs
// of Softmax, LogSoftmax and Hardmax below opset 13), so calibration can record them.
std::vector<std::string> tensors_needing_rank(const onnx::ModelProto& model, int64_t target, const std::string& label);

}  // namespace mixprec
