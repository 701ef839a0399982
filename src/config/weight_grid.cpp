#include "config/weight_grid.h"

#include <cmath>

#include "ir/op_traits.h"
#include "mixprec/error.h"

namespace mixprec::config {

WeightGrid weight_grid(const onnx::NodeProto& node, const TensorQuantSpec& spec, const Tensor& weight,
                       const std::string& label) {
  const FormatTraits& traits = format_traits(spec.format);
  WeightGrid grid;
  if (!traits.is_qdq) return grid;
  grid.symmetric = traits.power_of_two_scale || spec.symmetric.value_or(true);
  const ParamOptions options{.symmetric = grid.symmetric};
  const auto rank = static_cast<int64_t>(weight.shape().size());
  if (spec.group_size && traits.per_channel_allowed) {
    grid.axis = ir::weight_reduction_axis(node, rank);
    grid.params = choose_weight_params(weight, spec.format, grid.axis,
                                       {.symmetric = grid.symmetric, .block_size = *spec.group_size});
  } else if (spec.per_channel && traits.per_channel_allowed) {
    const int64_t axis = spec.ch_axis.value_or(ir::weight_channel_axis(ir::op_traits(node), node, static_cast<int>(rank)));
    if (axis < 0 || axis >= rank) {
      throw_bad_input(label, "node '" + node.name() + "': weight channel axis " + std::to_string(axis) +
                                 " is outside its shape " + shape_to_string(weight.shape()));
    }
    grid.axis = axis;
    grid.params = choose_weight_params(weight, spec.format, axis, options);
  } else {
    grid.params = choose_weight_params(weight, spec.format, -1, options);  // per tensor
  }
  if (spec.reduce_range && reduces_range(spec.format)) {
    // Half the levels: the scale grows by full / half and the zero point shrinks by as much, so
    // the codes of the weight's range land in [-63, 63] (symmetric), [-64, 63] or [0, 127].
    const double full = grid.symmetric ? static_cast<double>(symmetric_qmax(spec.format))
                                       : static_cast<double>(traits.qmax - traits.qmin);
    const double factor = full / std::floor(full / 2);
    for (float& scale : grid.params.scale) scale = static_cast<float>(scale * factor);
    for (int32_t& zero : grid.params.zero_point) zero = static_cast<int32_t>(std::nearbyint(zero / factor));
  }
  return grid;
}

bool reduces_range(FormatId format) { return format == FormatId::kInt8 || format == FormatId::kUInt8; }

}  // namespace mixprec::config
