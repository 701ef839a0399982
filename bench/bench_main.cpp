// mixprec_bench: the figures of the benchmark issue on the three real PP-OCR models, each a
// RATIO of two timings taken in the same run (the machines are shared and noisy), with min and
// median over repeats. Prints a table and writes JSON (bench/results.json from `make bench`).
//
//   mixprec_bench [--full] [--out FILE] [--repeats R] [--only FIGURE] [--micro]
//
// --full: 5 repeats, 256-sample memory runs, 50 latency runs, the measured ranking and the
// 1,000-sample explore memory run (tens of minutes).
// --only FIGURE: that figure alone (figure 5 calibrates on its own when figure 1 does not run).
// Figure 14 (the recovery recipes, tens of minutes) runs only with --only 14 or --full;
// --recipe-model NAME (cls, det, rec, det640) runs it on that model alone.
// --micro: run the Google Benchmark micro benchmarks instead (statistics binning throughput).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "mixprec/calibration.h"
#include "mixprec/explore.h"
#include "mixprec/macs.h"
#include "mixprec/model_io.h"
#include "mixprec/jobs.h"
#include "mixprec/rewrite.h"
#include "mixprec/runtime.h"
#include "evaluation/exposure.h"
#include "mixprec/tensor_proto.h"
#include "evaluation/workbench.h"

namespace mixprec::bench {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

struct ModelCase {
  const char* name;
  const char* file;
  const char* preprocess;
  int64_t height, width;
};
constexpr ModelCase kCases[] = {
    {"cls", "ppocr_cls.onnx", "ppocr_cls_rec", 48, 192},
    {"det", "ppocr_det.onnx", "ppocr_det", 320, 320},
    {"rec", "ppocr_rec.onnx", "ppocr_cls_rec", 48, 320},
};

struct Options {
  bool full = false;
  bool micro = false;
  int repeats = 3;  // --full: 5
  int only = 0;     // --only N: that figure alone (0: every figure)
  std::string recipe_model;  // --recipe-model NAME: figure 14 on that model alone (cls, det, rec, det640)
  std::string out = "bench/results.json";
};

struct Timing {
  double min = 0, median = 0;
};

Timing summarize(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  const size_t n = seconds.size();
  return {seconds.front(), n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2])};
}

Timing measure(int repeats, const std::function<void()>& work) {
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = Clock::now();
    work();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return summarize(std::move(seconds));
}

Json timing_json(const Timing& t) { return {{"min_s", t.min}, {"median_s", t.median}}; }

std::string fixed_text(double value, int digits = 2) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

// Samples decoded once and held in memory, so both sides of a ratio read the same tensors.
class MemorySource : public SampleSource {
 public:
  explicit MemorySource(std::vector<NamedTensors> samples) : samples_(std::move(samples)) {}
  size_t size() const override { return samples_.size(); }
  NamedTensors sample(size_t index) const override { return samples_.at(index); }
  std::string describe() const override { return std::to_string(samples_.size()) + " samples in memory"; }

 private:
  std::vector<NamedTensors> samples_;
};

DataSpec pictures(const ModelCase& c, const std::string& folder) {
  DataSpec spec;
  spec.data.files = {std::string(MIXPREC_DATA_DIR) + "/" + folder};
  spec.preprocess = c.preprocess;
  spec.image_height = c.height;
  spec.image_width = c.width;
  return spec;
}

std::vector<NamedTensors> load_samples(const DataSpec& spec, const Session& session, const std::string& path,
                                       size_t count) {
  const auto source = open_samples(spec, session.inputs(), path);
  std::vector<NamedTensors> samples;
  for (size_t i = 0; i < std::min(count, source->size()); ++i) samples.push_back(source->sample(i));
  return samples;
}

std::string model_path(const ModelCase& c) { return std::string(MIXPREC_MODELS_DIR) + "/" + c.file; }

// Peak resident memory (MiB) of a child process that does `work` (-1 when it fails).
double child_peak_rss_mib(const std::function<void()>& work) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    double mib = -1;
    try {
      work();
      rusage usage{};
      ::getrusage(RUSAGE_SELF, &usage);
      mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
    } catch (const std::exception& e) {
      std::cerr << "memory run failed: " << e.what() << "\n";
    }
    if (::write(fds[1], &mib, sizeof mib) != sizeof mib) ::_exit(1);
    ::_exit(0);
  }
  ::close(fds[1]);
  double mib = -1;
  if (::read(fds[0], &mib, sizeof mib) != sizeof mib) mib = -1;
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return mib;
}

// `count` seeded random samples of the model's input at HxW.
DataSpec random_data(const std::string& path, size_t count, uint64_t seed, int64_t height, int64_t width) {
  DataSpec spec;
  spec.data.random_samples = count;
  spec.data.seed = seed;
  spec.data.input_shapes[Session::from_file(path).inputs().at(0).name] = {1, 3, height, width};
  return spec;
}

// Peak resident memory (MiB) of a child process that calibrates on `count` random samples.
double calibration_peak_rss_mib(const ModelCase& c, size_t count) {
  return child_peak_rss_mib([&] {
    const std::string path = model_path(c);
    const onnx::ModelProto prepared = prepare_model(load_model(path), {.fold_batchnorm = true}, path);
    const Session probe = Session::from_model(prepared, path);
    const auto source = open_samples(random_data(path, count, 7, c.height, c.width), probe.inputs(), path);
    calibrate_model(prepared, path, *source, {.tensors = calibration_exposure(prepared, nullptr, path).tensors});
  });
}

// Single-core read bandwidth (bytes/s): the best of 5 passes over a 256 MiB buffer, XOR-reduced
// (a reduction the compiler vectorizes, so the loop is bound by memory, not by an add chain).
double bandwidth() {
  static const double measured = [] {
    std::vector<uint32_t> buffer(size_t{64} << 20);
    std::iota(buffer.begin(), buffer.end(), 0u);
    double best = 0;
    for (int r = 0; r < 5; ++r) {
      const auto t0 = Clock::now();
      uint32_t acc = 0;
      for (uint32_t v : buffer) acc ^= v;
      benchmark::DoNotOptimize(acc);
      const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      best = std::max(best, static_cast<double>(buffer.size() * sizeof(uint32_t)) / seconds);
    }
    return best;
  }();
  return measured;
}

struct Row {
  std::string figure, model, what;
  double value = 0;      // the ratio (or the figure's number)
  std::string target;    // "" when informative
  bool met = true;
};

class Bench {
 public:
  explicit Bench(const Options& options) : options_(options) {}

  int run() {
    constexpr size_t kCalibrationPictures = 32;  // every calibration picture of the set-up
    const auto wanted = [&](int figure) { return options_.only == 0 || options_.only == figure; };
    // Figures 3, 4 and 6 reuse figure 1's statistics.
    if (wanted(1) || wanted(3) || wanted(4) || wanted(6)) {
      for (const auto& c : kCases) calibration_figure(c, kCalibrationPictures);
    }
    if (wanted(2)) for (const auto& c : kCases) memory_figure(c);
    if (wanted(3)) step_overhead_figure(kCases[1]);
    if (wanted(4)) explore_figure(kCases[1]);
    if (wanted(5)) for (const auto& c : kCases) latency_figure(c);
    if (wanted(6)) rewrite_figure(kCases[1]);
    if (wanted(7)) explore_memory_figure(kCases[1]);
    if (wanted(8)) large_calibration_figure(kCases[1]);
    if (wanted(9)) large_memory_figure(kCases[1]);
    if (wanted(10)) optimization_level_figure(kCases[1]);
    if (wanted(11)) search_figure(kCases[1]);
    if (wanted(12)) boundary_figure();
    if (wanted(13)) ranking_figure(kCases[1]);
    if (options_.only == 14 || options_.full) recipe_figure();
    print();
    write_json();
    return 0;
  }

 private:
  void add(Row row) {
    std::printf("  %-26s %-4s %-44s %10.3f  %s\n", row.figure.c_str(), row.model.c_str(), row.what.c_str(), row.value,
                row.target.empty() ? "" : (row.met ? "met" : "MISSED"));
    std::fflush(stdout);
    rows_.push_back(std::move(row));
  }

  // 1. Calibration throughput / FP32 inference throughput over the same in-memory samples.
  void calibration_figure(const ModelCase& c, size_t count) {
    const std::string path = model_path(c);
    const onnx::ModelProto prepared = prepare_model(load_model(path), {.fold_batchnorm = true}, path);
    const Session session = Session::from_model(prepared, path);
    const MemorySource source(load_samples(pictures(c, "calib"), session, path, count));
    const Timing fp32 = measure(options_.repeats, [&] {
      for (size_t i = 0; i < source.size(); ++i) session.run(source.sample(i));
    });
    CalibrationStats stats;
    const std::vector<std::string> observed = calibration_exposure(prepared, nullptr, path).tensors;
    const Timing calib = measure(options_.repeats, [&] {
      stats = calibrate_model(prepared, path, source, {.tensors = observed});
    });
    stats_[c.name] = stats;
    const double ratio = fp32.median / calib.median;
    // Where the time goes: the run with every activation fetched, without any statistics.
    std::vector<std::string> names;
    for (const auto& node : prepared.graph().node()) names.insert(names.end(), node.output().begin(), node.output().end());
    const Session exposed = Session::from_model(expose_intermediates(prepared, names, path), path);
    const Timing fetch = measure(options_.repeats, [&] {
      for (size_t i = 0; i < source.size(); ++i) exposed.run(source.sample(i));
    });
    // The ceiling: even with free binning, every activation is written by the run and read once.
    double values = 0;
    for (const auto& [name, t] : stats.tensors) values += static_cast<double>(t.count);
    const double bytes_per_sample = 4 * values / static_cast<double>(stats.samples);
    const double read_seconds = bytes_per_sample * static_cast<double>(source.size()) / bandwidth();
    const double ceiling = fp32.median / (fp32.median + read_seconds);
    json_["calibration"][c.name] = {{"samples", source.size()},
                                    {"observed_tensors", observed.size()},
                                    {"graph_tensors", names.size()},
                                    {"input", std::to_string(c.height) + "x" + std::to_string(c.width)},
                                    {"fp32", timing_json(fp32)},
                                    {"calibration", timing_json(calib)},
                                    {"throughput_ratio_median", ratio},
                                    {"throughput_ratio_min", fp32.min / calib.min},
                                    {"exposed_run", timing_json(fetch)},
                                    {"activation_mib_per_sample", bytes_per_sample / (1 << 20)},
                                    {"read_bandwidth_gib_s", bandwidth() / (1 << 30)},
                                    {"ceiling_ratio", ceiling}};
    add({"1 calibration/FP32 thrpt", c.name,
         std::to_string(source.size()) + " pictures, median; " + std::to_string(observed.size()) + " of " +
             std::to_string(names.size()) + " tensors",
         ratio, ">= 0.9", ratio >= 0.9});
    add({"1 exposed run/FP32 thrpt", c.name, "every activation fetched, no statistics", fp32.median / fetch.median, "",
         true});
    add({"1 ceiling (one read/value)", c.name,
         std::to_string(static_cast<int>(bytes_per_sample / (1 << 20))) + " MiB activations/sample", ceiling, "", true});
  }

  // 2. Peak resident memory of calibration, few vs many samples (statistics stream).
  void memory_figure(const ModelCase& c) {
    const size_t few = 16, many = options_.full ? 256 : 64;
    const double small = calibration_peak_rss_mib(c, few);
    const double large = calibration_peak_rss_mib(c, many);
    const double ratio = large / small;
    json_["memory"][c.name] = {{"samples", {few, many}}, {"peak_rss_mib", {small, large}}, {"ratio", ratio}};
    add({"2 calib peak RSS ratio", c.name, std::to_string(many) + " vs " + std::to_string(few) + " samples", ratio,
         "<= 1.10", ratio <= 1.10});
  }

  // 3. One exploration step's overhead (rewrite + session build) / one evaluation pass, with
  // the 16 evaluation pictures and with SPEC's default evaluation size (100 samples).
  void step_overhead_figure(const ModelCase& c) {
    const std::string dir = (fs::temp_directory_path() / "mixprec_bench").string();
    fs::create_directories(dir);
    save_stats(stats_.at(c.name), dir + "/stats.json");
    DataSpec hundred;
    hundred.data.random_samples = 100;
    hundred.data.seed = 11;
    hundred.data.input_shapes[Session::from_file(model_path(c)).inputs().at(0).name] = {1, 3, c.height, c.width};
    for (const DataSpec& evaluation : {pictures(c, "eval"), hundred}) {
      Workbench bench({.model_path = model_path(c), .work_dir = dir, .calibration = pictures(c, "calib"), .evaluation = evaluation},
                      {});
      const QuantConfig config = *preset_config("XINT8");
      onnx::ModelProto built;
      const Timing rewrite = measure(options_.repeats, [&] { built = bench.build(config); });
      std::optional<Session> session;
      const Timing build = measure(options_.repeats, [&] { session.emplace(Session::from_model(built, c.file)); });
      const Timing pass = measure(options_.repeats, [&] {
        for (size_t i = 0; i < bench.samples(); ++i) session->run(bench.sample(i));
      });
      const double ratio = (rewrite.median + build.median) / pass.median;
      json_["step_overhead"][c.name][std::to_string(bench.samples()) + "_samples"] = {
          {"rewrite", timing_json(rewrite)},
          {"session_build", timing_json(build)},
          {"evaluation_pass", timing_json(pass)},
          {"ratio_median", ratio}};
      add({"3 step overhead/eval pass", c.name, std::to_string(bench.samples()) + " samples, XINT8", ratio, "<= 0.10",
           ratio <= 0.10});
    }
  }

  // 4. Evaluations and wall time of explore on the detector, per ranking (bisection to PSNR > 30 dB).
  void explore_figure(const ModelCase& c) {
    std::vector<Ranking> rankings = {Ranking::kLayerError, Ranking::kDynamicRange};
    if (options_.full) rankings.push_back(Ranking::kMeasured);
    for (Ranking ranking : rankings) {
      const std::string dir = (fs::temp_directory_path() / ("mixprec_bench_explore_" + std::string(to_string(ranking)))).string();
      fs::remove_all(dir);
      fs::create_directories(dir);
      save_stats(stats_.at(c.name), dir + "/stats.json");
      ExploreParams p;
      p.setup = {.model_path = model_path(c),
                 .work_dir = dir,
                 .calibration = pictures(c, "calib"),
                 .evaluation = pictures(c, "eval"),
                 .criterion = {.target = parse_target("psnr>30")}};
      p.search.ranking = ranking;
      p.search.search = SearchMode::kBisection;
      p.search.bf16_budget = 1.0;
      const ExploreResult r = explore(p);
      json_["explore"][to_string(ranking)] = {{"evaluations", r.evaluations},
                                              {"seconds", r.seconds},
                                              {"lifted_layers", r.lifted_layers.size()},
                                              {"candidates", r.compute_layers},
                                              {"pass", r.final_verdict.pass},
                                              {"stop_reason", r.stop_reason}};
      add({"4 explore evaluations", c.name, std::string(to_string(ranking)) + ", bisection, psnr>30",
           static_cast<double>(r.evaluations), "", true});
      add({"4 explore wall (s)", c.name, std::string(to_string(ranking)) + ", " + std::to_string(r.lifted_layers.size()) +
                                             " of " + std::to_string(r.compute_layers) + " lifted",
           r.seconds, "", true});
    }
  }

  // 5. Quantized latency / FP32 latency on ONNX Runtime CPU, every graph optimization on, for
  // the product presets. Each repeat interleaves the two sessions run by run (so load on the
  // shared machine hits both sides alike) and takes the ratio of their medians; the figure is
  // the median of those ratios. Beside it: the share of MACs ONNX Runtime runs in integer
  // kernels and the accuracy against FP32 on the evaluation pictures.
  void latency_figure(const ModelCase& c) {
    const std::string path = model_path(c);
    const std::string dir = (fs::temp_directory_path() / "mixprec_bench").string();
    fs::create_directories(dir);
    // One workbench per preparation the presets ask for (FoldConvAffine differs), as the product
    // prepares. Both read the statistics of the calibration graph (evaluation/stats_cache.h):
    // figure 1's when it ran, else the first workbench calibrates on the pictures and the second
    // reuses that (a file left by an earlier run may be of another build, so it is removed).
    const std::string stats_file = "stats_" + std::string(c.name) + ".json";
    if (stats_.contains(c.name)) {
      save_stats(stats_.at(c.name), dir + "/" + stats_file);
    } else {
      fs::remove(dir + "/" + stats_file);
    }
    std::map<bool, std::unique_ptr<Workbench>> benches;
    const auto bench_for = [&](const QuantConfig& config) -> Workbench& {
      const PrepareOptions prepare = prepare_options(config);
      auto& slot = benches[prepare.fold_affine];
      if (!slot) {
        slot = std::make_unique<Workbench>(
            EvaluationSetup{.model_path = path, .work_dir = dir, .calibration = pictures(c, "calib"), .evaluation = pictures(c, "eval")},
            DeploymentTarget{}, WorkbenchOptions{.prepare = prepare, .stats_file = stats_file});
      }
      return *slot;
    };
    const SessionOptions deploy{.optimization = GraphOptimization::kAll};
    const int runs = options_.full ? 50 : 20;
    const Session fp32 = Session::from_file(path, deploy);
    const NamedTensors& sample = bench_for(*preset_config("XINT8")).sample(0);
    Json j = {{"runs", runs}, {"repeats", options_.repeats}};
    // U8S8 is the ONNX Runtime CPU preset and carries the target; XINT8 (NPU, power-of-two
    // int8) and A8W8 (int8 activations, which ONNX Runtime's x86 integer convolution does not
    // take) are informative, as is BF16 (cast-pair emulation).
    for (const char* preset : {"U8S8", "XINT8", "A8W8", "BF16"}) {
      const QuantConfig config = *preset_config(preset);
      Workbench& bench = bench_for(config);
      const onnx::ModelProto model = bench.build(config);
      const std::string optimized_path = dir + "/" + c.name + "_" + preset + ".optimized.onnx";
      Session::from_model(model, path, {.optimization = GraphOptimization::kExtended, .optimized_model_path = optimized_path});
      const PartitionReport partition = partition_report(bench.macs(), load_model(optimized_path));
      const Evaluation accuracy = bench.evaluate(config);
      const Session quantized = Session::from_model(model, path, deploy);
      for (int i = 0; i < 3; ++i) {
        fp32.run(sample);
        quantized.run(sample);
      }
      std::vector<double> ratios, fp32_medians, quantized_medians;
      for (int r = 0; r < options_.repeats; ++r) {
        std::vector<double> a, b;
        for (int i = 0; i < runs; ++i) {
          a.push_back(measure(1, [&] { fp32.run(sample); }).median);
          b.push_back(measure(1, [&] { quantized.run(sample); }).median);
        }
        const double fp32_median = summarize(a).median, quantized_median = summarize(b).median;
        fp32_medians.push_back(fp32_median);
        quantized_medians.push_back(quantized_median);
        ratios.push_back(quantized_median / fp32_median);
      }
      const Timing ratio = summarize(ratios), fp32_t = summarize(fp32_medians), quantized_t = summarize(quantized_medians);
      // Top-1 agreement for the classifier (-1 when the task has none), PSNR otherwise.
      const double top1 = accuracy.metrics.empty() ? -1.0 : accuracy.metrics[0].top1_agreement.value_or(-1.0);
      const std::string accuracy_text = top1 >= 0
                                            ? "top-1 " + std::to_string(static_cast<int>(std::lround(100 * top1))) + "%"
                                            : std::to_string(accuracy.psnr_db).substr(0, 4) + " dB";
      j[preset] = {{"ratio_median", ratio.median},
                   {"ratio_min", ratio.min},
                   {"ratio_per_repeat", ratios},
                   {"fp32_median_s", fp32_t.median},
                   {"quantized_median_s", quantized_t.median},
                   {"integer_mac_share", partition.integer_share()},
                   {"quantize_linear_left", partition.quantize_linear},
                   {"dequantize_linear_left", partition.dequantize_linear},
                   {"psnr_db", accuracy.psnr_db},
                   {"pass_rate", accuracy.pass_rate},
                   {"verdict_pass", accuracy.verdict.pass},
                   {"top1_agreement", top1}};
      const bool judged = std::string(preset) == "U8S8" && std::string(c.name) != "rec";
      add({"5 latency/FP32", c.name,
           std::string(preset) + " (FP32 " + std::to_string(1000 * fp32_t.median).substr(0, 5) + " ms; " +
               std::to_string(static_cast<int>(std::lround(100 * partition.integer_share()))) + "% int MACs; " +
               accuracy_text + ")",
           ratio.median, judged ? "<= 0.67" : "", !judged || ratio.median <= 0.67});
    }
    json_["latency"][c.name] = j;
  }

  // 6. Load, rewrite (prepare + XINT8 from statistics) and save the detector.
  void rewrite_figure(const ModelCase& c) {
    const std::string path = model_path(c);
    const std::string out = (fs::temp_directory_path() / "mixprec_bench" / "det_xint8.onnx").string();
    const CalibrationStats& stats = stats_.at(c.name);
    const QuantConfig config = *preset_config("XINT8");
    const Timing t = measure(options_.repeats, [&] {
      const onnx::ModelProto prepared = prepare_model(load_model(path), {.fold_batchnorm = true}, path);
      QuantizeOptions options;
      options.calib_method = config.extra.calib_method;
      const RankLookup rank_of = [&](const std::string& name) -> std::optional<int64_t> {
        auto it = stats.ranks.find(name);
        return it == stats.ranks.end() ? std::nullopt : std::optional<int64_t>(it->second);
      };
      save_model(quantize_model(prepared, assign_layers(config, prepared, path), stats, options, path, rank_of), out);
    });
    json_["load_rewrite_save"][c.name] = timing_json(t);
    add({"6 load+rewrite+save (ms)", c.name, "XINT8 from saved statistics", 1000 * t.median, "", true});
  }

  // 7. Peak resident memory of explore on det at 640x640 with many evaluation samples (seeded
  // random data): the evaluation samples and FP32 references stay in memory up to
  // --eval-cache-mb (default 1 GiB), the rest is spilled to the work dir and streamed back.
  // Each run in a child process: 4 random calibration samples, dynamic-range ranking,
  // bisection, one step (full INT8, full BF16 and one step: three evaluation passes and the
  // reference pass).
  void explore_memory_figure(const ModelCase& c) {
    constexpr int64_t kSide = 640;
    constexpr size_t kSpilledBudget = size_t{64} << 20;
    const size_t default_budget = EvaluationSetup{}.eval_cache_bytes;
    struct Run {
      size_t samples, budget;
      const char* what;
    };
    std::vector<Run> runs = {{100, default_budget, "in memory (1 GiB budget)"}, {100, kSpilledBudget, "spilled (64 MiB budget)"}};
    if (options_.full) runs.push_back({1000, default_budget, "1 GiB budget, the rest spilled"});
    const std::string path = model_path(c);
    for (const Run& run : runs) {
      const std::string dir =
          (fs::temp_directory_path() / ("mixprec_bench_explore_memory_" + std::to_string(::getpid()))).string();
      fs::remove_all(dir);
      ExploreParams p;
      p.setup = {.model_path = path,
                 .work_dir = dir,
                 .calibration = random_data(path, 4, 3, kSide, kSide),
                 .evaluation = random_data(path, run.samples, 11, kSide, kSide),
                 .criterion = {.target = parse_target("psnr>30")},
                 .eval_cache_bytes = run.budget};
      p.search.ranking = Ranking::kDynamicRange;
      p.search.search = SearchMode::kBisection;
      p.search.bf16_budget = 1.0;
      p.search.max_iterations = 1;
      const auto t0 = Clock::now();
      const double mib = child_peak_rss_mib([&] { explore(p); });
      const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      fs::remove_all(dir);
      const std::string key = std::to_string(run.samples) + (run.budget == default_budget ? "_default" : "_spilled");
      json_["explore_memory"][c.name][key] = {{"samples", run.samples},
                                              {"input", "640x640"},
                                              {"eval_cache_bytes", run.budget},
                                              {"peak_rss_mib", mib},
                                              {"seconds", seconds}};
      add({"7 explore peak RSS (MiB)", c.name, "640x640, " + std::to_string(run.samples) + " samples, " + run.what, mib,
           "< 2048", mib > 0 && mib < 2048});
    }
  }

  // 8. Calibration wall time of det at 640x640 on 12 calibration pictures against one plain
  // FP32 pass over the same pictures (in memory), in one run; beside it, calibration observing
  // every tensor (what the exposure rule saves).
  void large_calibration_figure(const ModelCase& c) {
    constexpr size_t kPages = 12;
    ModelCase large = c;
    large.height = large.width = 640;
    const std::string path = model_path(c);
    const onnx::ModelProto prepared = prepare_model(load_model(path), {.fold_batchnorm = true}, path);
    const Session session = Session::from_model(prepared, path);
    const MemorySource source(load_samples(pictures(large, "calib"), session, path, kPages));
    const std::vector<std::string> observed = calibration_exposure(prepared, nullptr, path).tensors;
    Timing fp32, calib, every;
    std::vector<double> fp32_s, calib_s, every_s;
    // Interleaved repeats, so load on the shared machine hits every side alike.
    for (int r = 0; r < options_.repeats; ++r) {
      fp32_s.push_back(measure(1, [&] {
        for (size_t i = 0; i < source.size(); ++i) session.run(source.sample(i));
      }).median);
      calib_s.push_back(measure(1, [&] { calibrate_model(prepared, path, source, {.tensors = observed}); }).median);
      every_s.push_back(measure(1, [&] { calibrate_model(prepared, path, source); }).median);
    }
    fp32 = summarize(fp32_s);
    calib = summarize(calib_s);
    every = summarize(every_s);
    json_["calibration_640"][c.name] = {{"samples", source.size()},
                                        {"observed_tensors", observed.size()},
                                        {"fp32", timing_json(fp32)},
                                        {"calibration", timing_json(calib)},
                                        {"calibration_every_tensor", timing_json(every)},
                                        {"ratio_median", calib.median / fp32.median}};
    add({"8 calib wall/FP32 pass", c.name,
         "640x640, 12 pictures (" + fixed_text(calib.median) + " s vs " + fixed_text(fp32.median) + " s)",
         calib.median / fp32.median, "<= 2", calib.median / fp32.median <= 2.0});
    add({"8 calib wall/FP32 pass", c.name, "the same, every tensor observed (" + fixed_text(every.median) + " s)",
         every.median / fp32.median, "", true});
  }

  // 9. Peak resident memory at 640x640 in child processes: calibration (12 pictures, and 48
  // random samples: independent of the count), and a full explore (layer-error ranking,
  // bisection to PSNR > 30 dB, budget 100 %, the 16 evaluation pictures, calibration on 12).
  void large_memory_figure(const ModelCase& c) {
    constexpr int64_t kSide = 640;
    ModelCase large = c;
    large.height = large.width = kSide;
    const std::string path = model_path(c);
    const std::string pages = (fs::temp_directory_path() / ("mixprec_bench_pages_" + std::to_string(::getpid()))).string();
    fs::remove_all(pages);
    fs::create_directories(pages);
    std::vector<fs::path> pictures_found;
    for (const auto& entry : fs::directory_iterator(std::string(MIXPREC_DATA_DIR) + "/calib")) {
      pictures_found.push_back(entry.path());
    }
    std::sort(pictures_found.begin(), pictures_found.end());
    for (size_t i = 0; i < std::min<size_t>(12, pictures_found.size()); ++i) {
      fs::create_symlink(pictures_found[i], fs::path(pages) / pictures_found[i].filename());
    }
    DataSpec twelve = pictures(large, "calib");
    twelve.data.files = {pages};
    const auto calibration_rss = [&](const DataSpec& data) {
      return child_peak_rss_mib([&] {
        const onnx::ModelProto prepared = prepare_model(load_model(path), {.fold_batchnorm = true}, path);
        const Session probe = Session::from_model(prepared, path);
        const auto source = open_samples(data, probe.inputs(), path);
        calibrate_model(prepared, path, *source, {.tensors = calibration_exposure(prepared, nullptr, path).tensors});
      });
    };
    const double pages_mib = calibration_rss(twelve);
    const double random_mib = calibration_rss(random_data(path, 48, 5, kSide, kSide));
    add({"9 calib peak RSS (MiB)", c.name, "640x640, 12 pictures", pages_mib, "<= 512", pages_mib > 0 && pages_mib <= 512});
    add({"9 calib peak RSS (MiB)", c.name, "640x640, 48 random samples", random_mib, "<= 512",
         random_mib > 0 && random_mib <= 512});
    const std::string dir = (fs::temp_directory_path() / ("mixprec_bench_explore_640_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir);
    ExploreParams p;
    p.setup = {.model_path = path,
               .work_dir = dir,
               .calibration = twelve,
               .evaluation = pictures(large, "eval"),
               .criterion = {.target = parse_target("psnr>30")}};
    p.search.ranking = Ranking::kLayerError;
    p.search.search = SearchMode::kBisection;
    p.search.bf16_budget = 1.0;
    const auto t0 = Clock::now();
    const double explore_mib = child_peak_rss_mib([&] { explore(p); });
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    fs::remove_all(dir);
    fs::remove_all(pages);
    json_["memory_640"][c.name] = {{"calibration_12_pictures_mib", pages_mib},
                                   {"calibration_48_random_mib", random_mib},
                                   {"explore_mib", explore_mib},
                                   {"explore_seconds", seconds}};
    add({"9 explore peak RSS (MiB)", c.name, "640x640, 16 pictures, layer-error, bisection", explore_mib, "<= 1536",
         explore_mib > 0 && explore_mib <= 1536});
  }

  // 10. The session build of one exploration step per graph optimization level (XINT8 on det,
  // the 16 evaluation pictures at 320x320), the evaluation pass it buys, and the accuracy each
  // level measures against the level accuracy sessions use (basic).
  void optimization_level_figure(const ModelCase& c) {
    const std::string dir = (fs::temp_directory_path() / "mixprec_bench").string();
    fs::create_directories(dir);
    if (stats_.contains(c.name)) save_stats(stats_.at(c.name), dir + "/stats.json");
    Workbench bench({.model_path = model_path(c), .work_dir = dir, .calibration = pictures(c, "calib"), .evaluation = pictures(c, "eval")},
                    {});
    const onnx::ModelProto built = bench.build(*preset_config("XINT8"));
    const auto psnr_at = [&](const Session& session) {
      ModelComparer comparer;
      const Session reference = Session::from_model(bench.prepared(), c.file);
      for (size_t i = 0; i < bench.samples(); ++i) {
        const NamedTensors sample = bench.sample(i);
        comparer.add(reference.run(sample), session.run(sample));
      }
      double worst = kMaxDb;
      for (const auto& m : comparer.results()) worst = std::min(worst, m.psnr_db);
      return worst;
    };
    double basic_psnr = 0;
    for (GraphOptimization level :
         {GraphOptimization::kBasic, GraphOptimization::kDisabled, GraphOptimization::kExtended, GraphOptimization::kAll}) {
      std::optional<Session> session;
      const Timing build = measure(options_.repeats, [&] {
        session.emplace(Session::from_model(built, c.file, {.optimization = level}));
      });
      const Timing pass = measure(options_.repeats, [&] {
        for (size_t i = 0; i < bench.samples(); ++i) session->run(bench.sample(i));
      });
      const double psnr = psnr_at(*session);
      if (level == GraphOptimization::kBasic) basic_psnr = psnr;
      const char* name = level == GraphOptimization::kDisabled   ? "disabled"
                         : level == GraphOptimization::kBasic    ? "basic"
                         : level == GraphOptimization::kExtended ? "extended"
                                                                 : "all";
      json_["optimization_level"][c.name][name] = {{"session_build", timing_json(build)},
                                                   {"evaluation_pass", timing_json(pass)},
                                                   {"psnr_db", psnr},
                                                   {"psnr_vs_basic_db", psnr - basic_psnr}};
      add({"10 step build (ms)", c.name,
           std::string(name) + ": pass " + fixed_text(1000 * pass.median) + " ms, PSNR " + fixed_text(psnr, 3) + " dB (" +
               (psnr >= basic_psnr ? "+" : "") + fixed_text(psnr - basic_psnr, 3) + " vs basic)",
           1000 * build.median, "", true});
    }
  }

  // 11. The searches on the detector (PSNR > 30 dB, budget 1): SPEC's greedy over the
  // dynamic-range ranking, bisection over layer-error, and the cost search: layers lifted,
  // expected time vs full BF16 (the cost model: MACs plus INT8/float boundaries), boundaries,
  // evaluations. --full adds the detector at 640x640.
  void search_figure(const ModelCase& c) {
    std::vector<std::pair<int64_t, int64_t>> sizes = {{c.height, c.width}};
    if (options_.full) sizes.emplace_back(640, 640);
    struct Search {
      SearchMode mode;
      Ranking ranking;
    };
    for (const auto& [h, w] : sizes) {
      ModelCase sized = c;
      sized.height = h;
      sized.width = w;
      const std::string size = std::to_string(h) + "x" + std::to_string(w);
      for (const Search& search : {Search{SearchMode::kGreedy, Ranking::kDynamicRange},
                                   Search{SearchMode::kBisection, Ranking::kLayerError},
                                   Search{SearchMode::kCost, Ranking::kLayerError}}) {
        const std::string name = std::string(to_string(search.mode)) + " " + to_string(search.ranking);
        const std::string dir = (fs::temp_directory_path() / ("mixprec_bench_search_" + size + "_" +
                                                              std::string(to_string(search.mode))))
                                    .string();
        fs::remove_all(dir);
        ExploreParams p;
        p.setup = {.model_path = model_path(c),
                   .work_dir = dir,
                   .calibration = pictures(sized, "calib"),
                   .evaluation = pictures(sized, "eval"),
                   .criterion = {.target = parse_target("psnr>30")}};
        p.search.search = search.mode;
        p.search.ranking = search.ranking;
        p.search.bf16_budget = 1.0;
        p.search.calib_method = CalibMethod::kPowerOfTwoMinMse;
        const auto t0 = Clock::now();
        const ExploreResult r = explore(p);
        const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        json_["search"][size][name] = {{"lifted", r.lifted_layers.size()},      {"candidates", r.compute_layers},
                                       {"time_vs_bf16", r.final_time_vs_bf16},  {"int8_time_vs_bf16", r.int8_time_vs_bf16},
                                       {"transitions", r.final_transitions},    {"evaluations", r.evaluations},
                                       {"seconds", seconds},                    {"pass", r.final_verdict.pass},
                                       {"psnr_db", r.final_metrics.empty() ? 0.0 : r.final_metrics.front().psnr_db}};
        const std::string what = size + " " + name + ", " + std::to_string(r.lifted_layers.size()) + "/" +
                                 std::to_string(r.compute_layers) + (r.final_verdict.pass ? " meets" : " MISSES");
        add({"11 search time/full BF16", c.name, what, r.final_time_vs_bf16, "", true});
        add({"11 search evaluations", c.name, what, static_cast<double>(r.evaluations), "", true});
      }
    }
  }

  // 13. Ranking quality on the detector: the worst-output PSNR with the top k of each ranking
  // lifted to BF16, k = 10%, 25%, 50% of the candidates (XINT8 start). The demotion ranking is
  // the cost search's measurement (figure 11's work dir, when it ran).
  void ranking_figure(const ModelCase& c) {
    const std::string dir = (fs::temp_directory_path() / "mixprec_bench_rankings").string();
    fs::remove_all(dir);
    EvaluationSetup setup{.model_path = model_path(c),
                          .work_dir = dir,
                          .calibration = pictures(c, "calib"),
                          .evaluation = pictures(c, "eval"),
                          .criterion = {.target = parse_target("psnr>30")}};
    std::map<std::string, std::vector<std::string>> rankings;
    for (Ranking ranking : {Ranking::kDynamicRange, Ranking::kLayerError, Ranking::kInjectedNoise}) {
      ExploreParams p;
      p.setup = setup;
      p.search.ranking = ranking;
      p.search.max_iterations = 1;
      p.search.calib_method = CalibMethod::kPowerOfTwoMinMse;
      rankings[to_string(ranking)] = explore(p).ranking;
    }
    const std::string demotion = (fs::temp_directory_path() / "mixprec_bench_search_320x320_cost/sensitivity.json").string();
    if (fs::exists(demotion)) {
      const Json measured = Json::parse(read_file(demotion, "sensitivity"));
      for (const auto& row : measured["layers"]) rankings["demotion (cost search)"].push_back(row["layer"].get<std::string>());
    }
    QuantConfig base = *preset_config("XINT8");
    base.extra.calib_method = CalibMethod::kPowerOfTwoMinMse;
    Workbench bench(setup, DeploymentTarget{}, {.prepare = prepare_options(base)});
    const LayerConfig bf16 = preset_config("BF16")->global;
    for (const auto& [name, order] : rankings) {
      for (const double share : {0.10, 0.25, 0.50}) {
        const size_t k = static_cast<size_t>(share * static_cast<double>(order.size()));
        QuantConfig config = base;
        config.specific.push_back({.target_node_names = {order.begin(), order.begin() + static_cast<long>(k)},
                                   .layer_config = bf16});
        const Evaluation e = bench.evaluate(config);
        json_["rankings"][name][std::to_string(k)] = e.psnr_db;
        add({"13 top-k PSNR (dB)", c.name, name + ", top " + std::to_string(k) + " of " + std::to_string(order.size()),
             e.psnr_db, "", true});
      }
    }
  }

  // 14. The recovery recipes (issue 12's table): for each model, XINT8 (PowerOfTwo_MinMSE) and
  // A8W8 (MinMax), the worst-output PSNR, top-1 agreement (cls) and time of none / CLE /
  // CLE + bias correction (layer, model) / AdaRound / CLE + AdaRound, plus AdaQuant with
  // --full (3000 steps a layer) and the detector at 640x640. Two workbenches a model (with and
  // without CLE: CLE changes the statistics); the presets share each one's statistics. Targets:
  // det 640x640 XINT8 >= 24 dB at best, cls XINT8 16 of 16 pictures at best. Only with --only 14
  // or --full: AdaRound alone is minutes a model.
  void recipe_figure() {
    struct Recipe {
      const char* name;
      bool cle;
      std::vector<AlgorithmEntry> algorithms;
    };
    std::vector<Recipe> recipes = {
        {"none", false, {}},
        {"CLE", true, {}},
        {"CLE+BC layer", true, {{.name = "bias_correction", .mode = BiasCorrectionMode::kLayer}}},
        {"CLE+BC model", true, {{.name = "bias_correction", .mode = BiasCorrectionMode::kModel}}},
        {"AdaRound", false, {{.name = "adaround"}}},
        {"CLE+AdaRound", true, {{.name = "adaround"}}},
        {"CLE+AdaRound+BC model", true, {{.name = "adaround"}, {.name = "bias_correction", .mode = BiasCorrectionMode::kModel}}},
    };
    if (options_.full) recipes.push_back({"AdaQuant", false, {{.name = "adaquant"}}});
    std::vector<ModelCase> cases(std::begin(kCases), std::end(kCases));
    if (options_.full || options_.recipe_model == "det640") {
      ModelCase big = kCases[1];
      big.name = "det640";
      big.height = big.width = 640;
      cases.push_back(big);
    }
    for (const ModelCase& c : cases) {
      if (!options_.recipe_model.empty() && options_.recipe_model != c.name) continue;
      for (const bool cle : {false, true}) {
        const std::string dir = (fs::temp_directory_path() / ("mixprec_bench_recipes_" + std::string(c.name) +
                                                              (cle ? "_cle" : ""))).string();
        fs::remove_all(dir);
        QuantConfig prepare_config = *preset_config("XINT8");
        prepare_config.algorithms.clear();
        if (cle) prepare_config.algorithms.push_back({.name = "cle"});
        const EvaluationSetup setup{.model_path = model_path(c),
                                    .work_dir = dir,
                                    .calibration = pictures(c, "calib"),
                                    .evaluation = pictures(c, "eval"),
                                    .criterion = {.target = parse_target("psnr>99")}};
        Workbench bench(setup, DeploymentTarget{}, {.prepare = prepare_options(prepare_config)});
        for (const char* preset : {"XINT8", "A8W8"}) {
          for (const Recipe& recipe : recipes) {
            if (recipe.cle != cle) continue;
            QuantConfig config = *preset_config(preset);
            config.algorithms.clear();
            if (cle) config.algorithms.push_back({.name = "cle"});
            config.algorithms.insert(config.algorithms.end(), recipe.algorithms.begin(), recipe.algorithms.end());
            config.extra.calib_method = std::string(preset) == "XINT8" ? CalibMethod::kPowerOfTwoMinMse : CalibMethod::kMinMax;
            const auto t0 = Clock::now();
            const Evaluation e = bench.evaluate(config);
            const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
            std::optional<double> top1;
            for (const auto& m : e.metrics) {
              if (m.top1_agreement) top1 = std::min(top1.value_or(1.0), *m.top1_agreement);
            }
            json_["recipes"][c.name][preset][recipe.name] = {{"psnr_db", e.psnr_db},
                                                             {"top1", top1 ? Json(*top1) : Json()},
                                                             {"seconds", seconds},
                                                             {"learned_layers", e.learned_layers}};
            std::string what = std::string(preset) + " " + recipe.name + ", " + fixed_text(seconds, 0) + " s";
            if (top1) what += ", top-1 " + fixed_text(100 * *top1, 1) + "%";
            add({"14 recipe PSNR (dB)", c.name, what, e.psnr_db, "", true});
          }
        }
      }
    }
    // The targets, on the best recipe.
    const auto best_of = [&](const std::string& model, const char* key) {
      double best = -INFINITY;
      if (!json_["recipes"].contains(model)) return best;
      for (const auto& [name, row] : json_["recipes"][model]["XINT8"].items()) {
        if (!row[key].is_null()) best = std::max(best, row[key].get<double>());
      }
      return best;
    };
    if (json_["recipes"].contains("det640")) {
      const double det = best_of("det640", "psnr_db");
      add({"14 best XINT8 PSNR (dB)", "det", "640x640, best recipe", det, ">= 24", det >= 24});
    }
    const double cls = best_of("cls", "top1");
    if (json_["recipes"].contains("cls")) add({"14 best XINT8 top-1", "cls", "16 pictures, best recipe", cls, "= 1", cls >= 1});
  }

  // 12. The CPU row's boundary cost: a QuantizeLinear + DequantizeLinear pair over a
  // [1, 64, 80, 80] tensor against a 3x3 64->64 Conv on it, one thread each, interleaved:
  // (seconds per converted element) / (seconds per fp32 MAC) / 2, in BF16-MAC equivalents
  // (the CPU row runs bf16 at half its fp32 rate).
  void boundary_figure() {
    constexpr int64_t kChannels = 64, kSide = 80;
    const auto input = [](onnx::GraphProto& graph, const std::string& name) {
      auto* value = graph.add_input();
      value->set_name(name);
      auto* type = value->mutable_type()->mutable_tensor_type();
      type->set_elem_type(onnx::TensorProto::FLOAT);
      for (int64_t d : {int64_t{1}, kChannels, kSide, kSide}) type->mutable_shape()->add_dim()->set_dim_value(d);
    };
    const auto output = [](onnx::GraphProto& graph, const std::string& name) { graph.add_output()->set_name(name); };
    const auto model_with = [](const std::function<void(onnx::GraphProto&)>& build) {
      onnx::ModelProto model;
      model.set_ir_version(8);
      model.add_opset_import()->set_version(17);
      build(*model.mutable_graph());
      return model;
    };
    const onnx::ModelProto conv = model_with([&](onnx::GraphProto& g) {
      input(g, "x");
      Tensor w(DType::kFloat32, {kChannels, kChannels, 3, 3});
      std::fill(w.as<float>().begin(), w.as<float>().end(), 0.01f);
      *g.add_initializer() = tensor_to_proto(w, "w");
      onnx::NodeProto node;
      node.set_op_type("Conv");
      node.add_input("x");
      node.add_input("w");
      node.add_output("y");
      auto* pads = node.add_attribute();
      pads->set_name("pads");
      pads->set_type(onnx::AttributeProto::INTS);
      for (int i = 0; i < 4; ++i) pads->add_ints(1);
      *g.add_node() = node;
      output(g, "y");
    });
    const onnx::ModelProto qdq = model_with([&](onnx::GraphProto& g) {
      input(g, "x");
      *g.add_initializer() = tensor_to_proto(Tensor::from_floats(Shape{}, std::vector<float>{0.05f}), "s");
      Tensor zero(DType::kInt8, {});
      *g.add_initializer() = tensor_to_proto(zero, "z");
      for (const auto& [op, in, out] : {std::tuple{"QuantizeLinear", "x", "q"}, std::tuple{"DequantizeLinear", "q", "y"}}) {
        onnx::NodeProto node;
        node.set_op_type(op);
        node.add_input(in);
        node.add_input("s");
        node.add_input("z");
        node.add_output(out);
        *g.add_node() = node;
      }
      output(g, "y");
    });
    const SessionOptions one_thread{.intra_op_threads = 1, .optimization = GraphOptimization::kAll};
    const Session conv_session = Session::from_model(conv, "conv", one_thread);
    const Session qdq_session = Session::from_model(qdq, "qdq", one_thread);
    const NamedTensors x = {{"x", Tensor::from_floats({1, kChannels, kSide, kSide},
                                                      std::vector<float>(static_cast<size_t>(kChannels * kSide * kSide), 0.5f))}};
    const int runs = options_.full ? 50 : 20;
    std::vector<double> conv_s, qdq_s;
    for (int i = 0; i < runs + 2; ++i) {  // interleaved; the first two are warm-up
      auto t0 = Clock::now();
      conv_session.run(x);
      const double c_s = std::chrono::duration<double>(Clock::now() - t0).count();
      t0 = Clock::now();
      qdq_session.run(x);
      const double q_s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (i >= 2) {
        conv_s.push_back(c_s);
        qdq_s.push_back(q_s);
      }
    }
    const double elements = static_cast<double>(kChannels * kSide * kSide);
    const double macs = elements * static_cast<double>(kChannels * 9);
    const double per_element = summarize(qdq_s).median / elements;
    const double per_mac = summarize(conv_s).median / macs;
    const double bf16_macs = per_element / per_mac / 2;
    json_["boundary_cost"] = {{"conv_median_s", summarize(conv_s).median}, {"qdq_median_s", summarize(qdq_s).median},
                              {"bf16_mac_equivalents_per_element", bf16_macs}};
    add({"12 boundary cost (cpu)", "-", "Q+DQ per element / BF16 MAC (devices.cpp: cpu row)", bf16_macs, "", true});
  }

  void print() const {
    std::printf("\n%zu figures; JSON in %s\n", rows_.size(), options_.out.c_str());
  }

  void write_json() {
    Json rows = Json::array();
    for (const auto& r : rows_) {
      rows.push_back({{"figure", r.figure}, {"model", r.model}, {"what", r.what}, {"value", r.value},
                      {"target", r.target}, {"met", r.met}});
    }
    json_["table"] = rows;
    json_["repeats"] = options_.repeats;
    json_["full"] = options_.full;
    json_["runtime"] = runtime_version();
    fs::create_directories(fs::path(options_.out).parent_path().empty() ? "." : fs::path(options_.out).parent_path());
    write_file_atomically(options_.out, json_.dump(2));
  }

  Options options_;
  std::vector<Row> rows_;
  std::map<std::string, CalibrationStats> stats_;
  Json json_;
};

// Micro benchmark: values binned per second by one statistics collector (the calibration's
// per-value work), on activation-like data.
void BM_StatsCollectorUpdate(benchmark::State& state) {
  std::vector<float> values(static_cast<size_t>(state.range(0)));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (auto& v : values) v = normal(rng);
  for (auto _ : state) {
    StatsCollector collector;
    collector.update(values);
    benchmark::DoNotOptimize(collector);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_StatsCollectorUpdate)->Arg(1 << 20);

// Micro benchmark: values per second through the block formats' fake quantization (the
// com.amd.quark kernels' per-value work, one thread), on an NCHW activation blocked along its
// channels (strided blocks: the harder layout) and along its last axis.
void BM_BlockFakeQuantize(benchmark::State& state) {
  const std::vector<int64_t> shape = {1, 64, 80, 80};
  std::vector<float> values(64 * 80 * 80), out(values.size());
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (auto& v : values) v = normal(rng);
  const int64_t axis = state.range(1);
  const auto format = static_cast<FormatId>(state.range(0));
  const BlockFormat& block = *block_format(format);
  for (auto _ : state) {
    fake_quantize_blocks(block, values, shape, axis, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(std::string(format_traits(format).name) + " axis " + std::to_string(axis));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(values.size()));
}
BENCHMARK(BM_BlockFakeQuantize)
    ->Args({static_cast<int64_t>(FormatId::kBfp16), 1})
    ->Args({static_cast<int64_t>(FormatId::kBfp16), 3})
    ->Args({static_cast<int64_t>(FormatId::kMx9), 1})
    ->Args({static_cast<int64_t>(FormatId::kMxInt8), 1});

// Micro benchmark: weight values per second through choose_weight_params + quantize_tensor, the
// offline work of every weight a quantize or an exploration step writes, on a 1024x1024 MatMul
// weight: int8 per channel, FP8 E4M3 per channel (the saturating minifloat encode), INT4 in
// blocks of 32 along K (one scale per block).
void BM_WeightQuantize(benchmark::State& state) {
  constexpr int64_t kSide = 1024;
  std::vector<float> values(kSide * kSide);
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  for (auto& v : values) v = normal(rng);
  const Tensor weight = Tensor::from_floats({kSide, kSide}, values);
  const auto format = static_cast<FormatId>(state.range(0));
  const int64_t block = state.range(1);
  for (auto _ : state) {
    const QuantParams params = choose_weight_params(weight, format, block > 0 ? 0 : 1, {.block_size = block});
    Tensor codes = quantize_tensor(weight, params, format);
    benchmark::DoNotOptimize(codes);
  }
  state.SetLabel(std::string(format_traits(format).name) + (block > 0 ? " block " + std::to_string(block) : " per channel"));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(values.size()));
}
BENCHMARK(BM_WeightQuantize)
    ->Args({static_cast<int64_t>(FormatId::kInt8), 0})
    ->Args({static_cast<int64_t>(FormatId::kFp8E4M3), 0})
    ->Args({static_cast<int64_t>(FormatId::kInt4), 32});

}  // namespace
}  // namespace mixprec::bench

int main(int argc, char** argv) {
  mixprec::bench::Options options;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--full") {
      options.full = true;
      options.repeats = std::max(options.repeats, 5);
    } else if (arg == "--micro") {
      options.micro = true;
    } else if (arg == "--out" && i + 1 < argc) {
      options.out = argv[++i];
    } else if (arg == "--only" && i + 1 < argc) {
      options.only = std::atoi(argv[++i]);
    } else if (arg == "--recipe-model" && i + 1 < argc) {
      options.recipe_model = argv[++i];
    } else if (arg == "--repeats" && i + 1 < argc) {
      options.repeats = std::max(1, std::atoi(argv[++i]));
    } else {
      rest.push_back(argv[i]);
    }
  }
  try {
    if (options.micro) {
      int count = static_cast<int>(rest.size());
      benchmark::Initialize(&count, rest.data());
      benchmark::RunSpecifiedBenchmarks();
      return 0;
    }
    std::printf("  %-26s %-4s %-44s %10s  %s\n", "figure", "model", "what", "value", "target");
    return mixprec::bench::Bench(options).run();
  } catch (const std::exception& e) {
    std::cerr << "mixprec_bench: " << e.what() << "\n";
    return 1;
  }
}
