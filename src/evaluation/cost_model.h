// The search's objective (SPEC "The search's objective"): the expected compute time of an
// assignment on the device, not its layer count.
//
//   time = sum over nodes of MACs / relative_speed(device, node's format)
//        + boundary_cost(device) x elements of every tensor crossing an INT8 <-> float boundary
//
// in BF16-MAC equivalents. A node's side is integer when the config gives it integer
// activations (or weights), float otherwise; layout-only nodes (Reshape, Transpose, ...) take
// the side of what they read, so moving a tensor never counts as a boundary. A boundary is a
// tensor whose producer and reader are on different sides: there the device converts the whole
// tensor. The model's inputs and outputs are converted from and to the host's float32 in every
// assignment (to int8 or to bf16 alike), so they are not counted.
// Element counts are per sample, from the calibration statistics (value count / samples).
// Nodes of If/Loop/Scan bodies count like main-graph nodes (named by path); a body's values
// read from an enclosing graph count as inputs from outside, so no boundary is charged there,
// and a body counts once whatever the branch taken or the number of iterations.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "mixprec/calibration.h"
#include "mixprec/devices.h"
#include "mixprec/formats.h"
#include "mixprec/macs.h"

namespace mixprec {

struct AssignmentCost {
  double compute = 0;       // MAC time, BF16-MAC equivalents
  double boundary = 0;      // conversion time at the boundaries, same unit
  size_t transitions = 0;   // boundary tensors
  double total() const { return compute + boundary; }
};

class CostModel {
 public:
  // `prepared`: the graph the formats refer to (node names); `macs`: per node; `stats`: element
  // counts of the tensors.
  CostModel(const onnx::ModelProto& prepared, const MacEstimate& macs, const CalibrationStats& stats,
            const DeviceProfile& device);

  // `formats`: each node's MAC-rate format (Workbench::node_formats); absent nodes are float32.
  AssignmentCost cost(const std::map<std::string, FormatId>& formats) const;

  // Contiguous runs of nodes on one side: the islands of the assignment, each the set of
  // `members` (node names among `candidates`) it holds, for island-aware moves.
  std::vector<std::set<std::string>> islands(const std::map<std::string, FormatId>& formats,
                                             const std::set<std::string>& candidates) const;

  // The candidates in linear chains, in data-flow order: a candidate links to the next one when
  // its output has that one reader (directly or through layout-only nodes) and that reader reads
  // nothing else. Chains of one candidate are left out.
  std::vector<std::vector<std::string>> chains(const std::set<std::string>& candidates) const;

 private:
  struct Node {
    std::string name;
    double macs = 0;
    bool layout_only = false;
    std::vector<int> inputs;  // producer node index per non-initializer input; -1: a graph input
    std::vector<double> input_elements;
  };
  std::vector<bool> sides(const std::map<std::string, FormatId>& formats) const;  // true: integer

  const DeviceProfile& device_;
  std::vector<Node> nodes_;                          // topological order
  std::vector<int> next_;                            // the only reader of a node's output when it reads only that; -1
};

}  // namespace mixprec
