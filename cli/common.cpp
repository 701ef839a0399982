#include <filesystem>
#include "common.h"

#include <unistd.h>

#include <chrono>
#include <memory>
#include <cstdint>
#include <cstdio>

#include "mixprec/error.h"

namespace mixprec::cli {

void DataFlags::add_to(CLI::App& cmd, size_t default_random, const std::string& files_flag) {
  random = default_random;
  auto* data = cmd.add_option(files_flag, files,
                              ".npy/.npz files, pictures, or folders of them (npz keys = input names)");
  cmd.add_option("--random", random, "number of seeded random samples when no --data is given")
      ->excludes(data)
      ->capture_default_str();
  cmd.add_option("--seed", seed, "seed of the random samples")->capture_default_str();
  cmd.add_option("--input-shape", input_shapes, "pin a dynamic input shape: NAME=1x3x48x192 (repeatable)");
}

DataOptions DataFlags::resolve() const {
  DataOptions options;
  options.files = files;
  options.random_samples = random;
  options.seed = seed;
  options.input_shapes = parse_input_shapes(input_shapes);
  return options;
}

void DeploymentFlags::add_to(CLI::App& cmd, const std::string& provider_help, const std::string& device_help) {
  if (!device_help.empty()) cmd.add_option("--device", device, device_help)->capture_default_str();
  cmd.add_option("--ep", provider, provider_help)->capture_default_str();
  cmd.add_option("--ep-option", provider_options, "execution provider option KEY=VALUE (repeatable)");
  cmd.add_option("--threads", threads, "intra-op threads of every session (0: ONNX Runtime default)")
      ->capture_default_str();
}

DeploymentTarget DeploymentFlags::resolve() const {
  DeploymentTarget target;
  target.device = device;
  target.profile();  // an unknown device fails before any work
  target.provider = provider;
  target.threads = threads;
  for (const auto& kv : provider_options) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw_bad_input("", "--ep-option '" + kv + "' is not KEY=VALUE");
    target.provider_options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return target;
}

void SampleFlags::add_to(CLI::App& cmd, const std::string& files_flag, size_t default_random) {
  data.add_to(cmd, default_random, files_flag);
  cmd.add_option("--preprocess", preprocess,
                 "picture preprocessing preset: imagenet, ppocr_det, ppocr_cls_rec, raw (default imagenet)");
  cmd.add_option("--image-size", image_size, "resize pictures to HxW (default: the model input's size)");
}

DataSpec SampleFlags::resolve() const {
  DataSpec spec;
  spec.data = data.resolve();
  spec.preprocess = preprocess;
  if (!image_size.empty()) {
    const auto shapes = parse_input_shapes({"image=" + image_size});
    const Shape& hw = shapes.at("image");
    if (hw.size() != 2) throw_bad_input("", "--image-size '" + image_size + "' is not HxW");
    spec.image_height = hw[0];
    spec.image_width = hw[1];
  }
  return spec;
}

void CriterionFlags::add_to(CLI::App& cmd) {
  target_option = cmd.add_option("--target-accuracy", target,
                 "replace the task's criterion: psnr>30, sqnr>=25, cosine>0.999, top1>=99%, pass_rate>=99.9%");
  cmd.add_option("--atol", tolerance.atol, "absolute tolerance of the pass rate")->capture_default_str();
  cmd.add_option("--rtol", tolerance.rtol, "relative tolerance of the pass rate")->capture_default_str();
}

std::optional<AccuracyTarget> CriterionFlags::resolve_target() const {
  if (target.empty() && target_option != nullptr && target_option->count() > 0) {
    throw_bad_input("", "--target-accuracy is empty: give a criterion such as psnr>30 or top1>=99%");
  }
  if (target.empty()) return std::nullopt;
  return parse_target(target);
}

void SetupFlags::add_to(CLI::App& cmd, size_t default_random, const std::string& calibration_help) {
  cmd.add_option("--calibration-data", calibration, calibration_help);
  data.add_to(cmd, "--data", default_random);
  criterion.add_to(cmd);
  cmd.add_option("--eval-cache-mb", eval_cache_mb,
                 "MiB of evaluation samples and FP32 references held in memory; the rest is spilled to a file in "
                 "the work dir and streamed back (same results)")
      ->capture_default_str();
}

EvaluationSetup SetupFlags::resolve(const std::string& model, const std::string& work_dir,
                                    const std::string& progress_label) const {
  EvaluationSetup setup;
  setup.model_path = model;
  setup.work_dir = work_dir;
  setup.evaluation = data.resolve();
  // Calibration files share the evaluation's preprocessing, sizes, pinned shapes and seed.
  setup.calibration = setup.evaluation;
  setup.calibration.data.files = calibration;
  setup.calibration.data.random_samples = 0;
  setup.criterion = {.tolerance = criterion.tolerance, .target = criterion.resolve_target()};
  setup.progress = progress_bar(progress_label);
  if (eval_cache_mb > (SIZE_MAX >> 20)) throw_bad_input("", "--eval-cache-mb " + std::to_string(eval_cache_mb) + " is too large");
  setup.eval_cache_bytes = eval_cache_mb << 20;
  return setup;
}

void SearchFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--ranking", ranking,
                 "exploration ranking: " + ranking_names().list() +
                     " (measured: one evaluation per layer; layer-error: two passes)")
      ->capture_default_str();
  cmd.add_option("--search", search,
                 "exploration search: greedy (one promotion per step, SPEC's guardrails), bisection (fewest "
                 "top-ranked layers, ~log2 steps) or cost (the cheapest assignment by expected time, ~G + 2 log2 G "
                 "evaluations)")
      ->capture_default_str();
  cmd.add_option("--lift", lift,
                 "precision of a promoted layer: BF16, FP16 where the device runs it, or a block format the device "
                 "runs (BFP16, MX9, MXINT8, ... on cpu); or a ladder, comma-separated (MX9,BF16): a layer goes to "
                 "MX9 first and to BF16 only where MX9 is not enough (rung 2 raises some of the layers rung 1 left "
                 "at MX9, and runs only when rung 1 misses the criterion)")
      ->capture_default_str();
  cmd.add_option("--bf16-budget", budget,
                 "largest share of candidate layers lifted (a ladder: by each rung; a later rung raises layers "
                 "already lifted, so the whole ladder stays within it unless a rung's full lift missed)")
      ->capture_default_str();
  cmd.add_option("--time-budget", time_budget,
                 "the answer's expected compute time at most this share of full BF16's (0: none; the cost search "
                 "honours it; a ladder's answer as a whole, each layer at its own rung's speed)")
      ->capture_default_str();
  cmd.add_option("--max-iters", max_iterations,
                 "most steps (0: min(50, candidate layers); cost search: G + 2 log2 G + 5; a ladder's rungs "
                 "together)")
      ->capture_default_str();
  cmd.add_option("--calib-method", calib_method,
                 "calibration method of the starting point (default: every method the device allows is tried on "
                 "the same statistics, the best kept)");
  cmd.add_flag("--pareto", pareto, "spend what --max-iters leaves on filling the trade-off curve (pareto.json)");
  auto* on = cmd.add_flag("--adaptive", adaptive,
                          "re-rank the candidates not yet decided in the current mixed state (one exposed pass) after "
                          "each bisection round that misses and each accepted greedy promotion (layer-error or "
                          "injected-noise; default: on for bisection)");
  cmd.add_flag("--no-adaptive", no_adaptive, "rank once, before the search (bisection's way before --adaptive)")->excludes(on);
  trim_option = cmd.add_option("--trim", trim,
                               "after a bisection or greedy that meets the criterion, up to N evaluations (within "
                               "--max-iters, one kept for the island fill) drop its layers back to INT8 where the "
                               "criterion still holds: the lowest-ranked whose drop misses is kept, the block ranked "
                               "above it dropped (sizes 1, 2, 4, ... then bisected), on up the order (0: off; default: " +
                                   std::to_string(kDefaultTrim) + " for a bisection without --pareto, off otherwise)");
}

SearchOptions SearchFlags::resolve() const {
  SearchOptions options;
  options.ranking = parse_choice(ranking_names(), "--ranking", ranking);
  options.search = parse_choice(search_mode_names(), "--search", search);
  options.lift = lift;
  options.bf16_budget = budget;
  options.time_budget = time_budget;
  options.max_iterations = max_iterations;
  if (!calib_method.empty()) options.calib_method = parse_calib_method(calib_method);
  options.pareto = pareto;
  if (adaptive || no_adaptive) options.adaptive = adaptive;
  if (trim_option && trim_option->count() > 0) options.trim = trim;
  if (time_budget < 0 || budget < 0) throw_bad_input("", "--bf16-budget and --time-budget must not be negative");
  return options;
}

std::string work_dir_or_default(const std::string& given, const std::string& model, const std::string& suffix) {
  return given.empty() ? std::filesystem::path(model).stem().string() + suffix : given;
}

ProgressFn progress_bar(const std::string& label) {
  if (!::isatty(STDERR_FILENO)) return {};
  const auto start = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  return [label, start](size_t done, size_t total) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
    const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
    constexpr size_t kWidth = 30;
    const size_t filled = total ? done * kWidth / total : kWidth;
    std::fprintf(stderr, "\r%s [%s%s] %zu/%zu  %.1f samples/s", label.c_str(), std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), done, total, rate);
    if (done == total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

std::string preset_list() {
  std::string list;
  for (const std::string& name : preset_names()) list += (list.empty() ? "" : ", ") + name;
  return list;
}

CalibMethod parse_calib_method(const std::string& name) {
  if (const auto method = calib_method_from_name(name)) return *method;
  std::string known;
  for (const auto& m : all_calib_methods()) known += (known.empty() ? "" : ", ") + std::string(m.name);
  throw_bad_input("", "unknown --calib-method '" + name + "' (known: " + known + "; a plugin's method needs --use-plugin)");
}

void ConfigFormatFlag::add_to(CLI::App& cmd, const std::string& written) {
  cmd.add_option("--config-format", format,
                 "shape of " + written + ": mixprec (SPEC's, default) or quark (Quark's QConfig.to_dict(), which "
                 "QConfig.from_dict() reads); --config reads either")
      ->capture_default_str();
}

ConfigShape ConfigFormatFlag::resolve() const { return parse_choice(config_shape_names(), "--config-format", format); }

}  // namespace mixprec::cli
