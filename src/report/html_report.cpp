// The HTML report of a work dir (mixprec/html_report.h), in two parts: reading what the work dir
// holds (Inputs: every file optional, every problem a note) and one function per section, each
// drawn with the pieces of report/html_parts.h (which escape every text and print every number
// in a fixed format, so the bytes depend only on the files).
#include "mixprec/html_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph_view.h"
#include "mixprec/analysis.h"
#include "mixprec/config.h"
#include "mixprec/error.h"
#include "mixprec/formats.h"
#include "mixprec/macs.h"
#include "mixprec/metrics.h"
#include "mixprec/model_io.h"
#include "common/text.h"
#include "report/html_parts.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
// The page's pieces (report/html_parts.h).
using html::count, html::counted, html::esc, html::facts, html::fixed, html::general, html::keep_tail,
    html::legend_item, html::macs_text, html::marker, html::MarkerShape, html::note, html::percent, html::Plot,
    html::span_of, html::svg_line, html::svg_open, html::svg_rect, html::svg_text, html::table, html::tile,
    html::value_bars, html::verdict_badge;

// --- JSON access that never throws -------------------------------------------------------------

const Json& field(const Json& j, const char* key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}
std::optional<double> number(const Json& j, const char* key) {
  const Json& v = field(j, key);
  return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
}
std::string text_of(const Json& j, const char* key) {
  const Json& v = field(j, key);
  return v.is_string() ? v.get<std::string>() : "";
}
std::optional<bool> flag(const Json& j, const char* key) {
  const Json& v = field(j, key);
  return v.is_boolean() ? std::optional<bool>(v.get<bool>()) : std::nullopt;
}
std::vector<std::string> strings(const Json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const auto& v : j) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}
const Json& items(const Json& j, const char* key) {
  static const Json kEmpty = Json::array();
  const Json& v = field(j, key);
  return v.is_array() ? v : kEmpty;
}

// --- what the work dir holds -------------------------------------------------------------------

struct LedgerStep {
  size_t index = 0;
  std::string layer, decision;
  size_t sweep = 1;
  double objective = 0, psnr_db = 0, pass_rate = 0, seconds = 0;
  bool meets = false;
  size_t lifted = 0;
  std::optional<double> time_vs_bf16;
  std::optional<double> transitions;
  Json outputs;
};

// One layer of the main graph the precision map shows.
struct Layer {
  std::string name, op_type, format;  // format: the format table's name ("xint8", "bf16", "fp32")
  size_t klass = 0;                   // row of kFormatClasses
  double macs = 0;
};

struct FormatClass {
  const char* name;  // css class suffix
  const char* label;
  const char* color;
};
// Colours: blue for integer, warm for the float formats a layer is lifted to, grey for float32.
constexpr FormatClass kFormatClasses[] = {
    {"int8", "INT8", "#2b6cb0"}, {"int16", "INT16", "#63b3ed"},         {"bf16", "BF16", "#ed8936"},
    {"fp16", "FP16", "#d53f8c"}, {"block", "block / other", "#805ad5"}, {"float", "float32", "#a0aec0"},
};
constexpr size_t kClassInt8 = 0, kClassInt16 = 1, kClassBf16 = 2, kClassFp16 = 3, kClassBlock = 4, kClassFloat = 5;

size_t format_class(FormatId id) {
  const FormatTraits& traits = format_traits(id);
  if (has_integer_codes(id)) {  // int4 shows with int8; FP8 with the other formats
    const size_t bytes = dtype_traits(traits.storage).size;
    return bytes == 1 ? kClassInt8 : bytes == 2 ? kClassInt16 : kClassBlock;
  }
  if (id == FormatId::kFloat32) return kClassFloat;
  if (traits.storage == DType::kBFloat16) return kClassBf16;
  if (traits.storage == DType::kFloat16) return kClassFp16;
  return kClassBlock;
}
bool is_integer_class(size_t klass) { return klass == kClassInt8 || klass == kClassInt16; }

struct Inputs {
  fs::path dir;
  std::string dir_text;            // as the run (command.json) or the caller named it
  std::vector<std::string> notes;  // problems with the work dir's files
  Json command, run, summary, sensitivity, dry_run, guide, pareto;
  std::vector<LedgerStep> ledger;
  std::string final_config_text;

  std::string model_path;  // the input model, as recorded
  std::string model_note;  // why the model section shows something else
  // The model analyzed: the input model (its nodes named as the workbench names them), or the
  // final model standing in for it.
  std::optional<onnx::ModelProto> model;
  bool model_is_input = false;
  MacEstimate macs;  // of `model`
  std::optional<ModelAnalysis> analysis;
  std::optional<ModelAnalysis> final_analysis;
  std::map<std::string, std::vector<int64_t>> input_shapes;  // what the run fed, where the work dir says
  std::string final_model_path, final_config_path;           // in the work dir, when present
  std::vector<Layer> layers;                                 // the precision map, topological order
  std::map<std::string, size_t> layer_index;
  size_t folded_layers = 0;  // layers of the input model the final model no longer has

  fs::path file(const std::string& name) const { return dir / name; }
  bool has(const std::string& name) const { return fs::exists(file(name)); }
  const Json* guide_phase(const std::string& name) const {
    for (const auto& phase : items(guide, "phases")) {
      if (text_of(phase, "name") == name) return &phase;
    }
    return nullptr;
  }
  const Json& guide_result(const std::string& name) const {
    static const Json kNull;
    const Json* phase = guide_phase(name);
    return phase ? field(*phase, "result") : kNull;
  }
  bool explored() const { return !ledger.empty() || !summary.is_null() || !sensitivity.is_null() || !run.is_null(); }
  // A search ranked or stepped (explore's early exits do neither).
  bool searched() const { return !ledger.empty() || !sensitivity.is_null(); }
};

Json read_json(Inputs& in, const std::string& name) {
  const fs::path path = in.file(name);
  if (!fs::exists(path)) return nullptr;
  try {
    return Json::parse(read_file(path.string(), name));
  } catch (const Json::exception& e) {
    in.notes.push_back(name + ": not valid JSON (" + e.what() + "); its sections are left out");
  } catch (const Error& e) {
    in.notes.push_back(e.what());
  }
  return nullptr;
}

LedgerStep step_of(const Json& line) {
  LedgerStep s;
  s.index = static_cast<size_t>(number(line, "step").value_or(0));
  s.layer = text_of(line, "layer");
  s.decision = text_of(line, "decision");
  s.sweep = static_cast<size_t>(number(line, "sweep").value_or(1));
  s.objective = number(line, "objective").value_or(0);
  s.psnr_db = number(line, "psnr_db").value_or(0);
  s.pass_rate = number(line, "pass_rate").value_or(0);
  s.seconds = number(line, "seconds").value_or(0);
  s.meets = flag(line, "meets_criterion").value_or(false);
  s.lifted = static_cast<size_t>(number(line, "lifted_layers").value_or(0));
  s.time_vs_bf16 = number(line, "time_vs_bf16");
  s.transitions = number(line, "transitions");
  s.outputs = field(line, "outputs");
  return s;
}

void read_ledger(Inputs& in) {
  const fs::path path = in.file("ledger.jsonl");
  if (!fs::exists(path)) return;
  std::istringstream lines;
  try {
    lines.str(read_file(path.string(), "ledger"));
  } catch (const Error& e) {
    in.notes.push_back(e.what());
    return;
  }
  std::string line;
  size_t number_of_line = 0;
  while (std::getline(lines, line)) {
    ++number_of_line;
    if (line.empty()) continue;
    try {
      const Json j = Json::parse(line);
      if (!j.is_object()) throw Json::other_error::create(501, "not an object", &j);
      in.ledger.push_back(step_of(j));
    } catch (const Json::exception&) {
      const bool last = lines.peek() == std::char_traits<char>::eof();
      in.notes.push_back(
          "ledger.jsonl line " + std::to_string(number_of_line) +
          (last ? ": incomplete (the run stopped while writing it), left out" : ": not valid JSON, left out"));
    }
  }
}

// A path a file records, found in the work dir by its name (the run may have named the work dir
// relative to another directory), else as recorded.
std::string in_work_dir(const Inputs& in, const std::string& recorded) {
  if (recorded.empty()) return "";
  const fs::path local = in.dir / fs::path(recorded).filename();
  if (fs::exists(local)) return local.string();
  return fs::exists(recorded) ? recorded : "";
}

// The shape of the pictures the run fed its model ("32 images as 1x3x320x320 BGR (stretched)",
// as the statistics, dry-run and guide record their data), for the MACs of a model with dynamic
// dims. Empty when no description says.
std::vector<int64_t> described_image_shape(const Inputs& in) {
  std::vector<std::string> descriptions = {text_of(in.dry_run, "data"), text_of(in.guide_result("calibrate"), "data"),
                                           text_of(in.guide_result("baseline"), "data")};
  if (in.has("stats.json")) {  // its head: the statistics themselves can be large
    std::ifstream stats(in.file("stats.json"));
    std::string head(4096, '\0');
    stats.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(stats.gcount()));
    static const std::regex kDescription("\"data_description\":\\s*\"([^\"]*)\"");
    std::smatch m;
    if (std::regex_search(head, m, kDescription)) descriptions.push_back(m[1]);
  }
  static const std::regex kShape("images? as ([0-9]+(x[0-9]+)+) ");
  for (const auto& d : descriptions) {
    std::smatch m;
    if (!std::regex_search(d, m, kShape)) continue;
    std::vector<int64_t> shape;
    std::stringstream dims(m[1]);
    for (std::string dim; std::getline(dims, dim, 'x');) shape.push_back(std::stoll(dim));
    return shape;
  }
  return {};
}

// The MACs of every node of `model`, at the run's input shape when the work dir records it.
MacEstimate node_macs(Inputs& in, const onnx::ModelProto& model, const std::string& label) {
  if (!in.input_shapes.empty()) {
    try {
      return estimate_node_macs(model, in.input_shapes, label);
    } catch (const Error& e) {
      in.notes.push_back(std::string("MACs at the run's input shape: ") + e.what() +
                         "; estimated from the declared shapes");
      in.input_shapes.clear();
    }
  }
  return estimate_node_macs(model, {}, label);
}

void find_model(Inputs& in, const HtmlReportOptions& options) {
  in.model_path = options.model_path;
  if (in.model_path.empty()) in.model_path = text_of(in.command, "model");
  if (in.model_path.empty()) in.model_path = text_of(in.summary, "model");
  if (in.model_path.empty()) in.model_path = text_of(field(in.guide_result("analyze"), "model"), "path");
  std::string analyzed = in.model_path;
  if (!analyzed.empty() && !fs::exists(analyzed)) {
    in.model_note = "the input model " + analyzed + " is not there any more";
    analyzed.clear();
  }
  if (analyzed.empty() && !in.final_model_path.empty()) {
    if (in.model_note.empty()) in.model_note = "the work dir does not record the input model";
    in.model_note +=
        ": the model section shows the final model (" + fs::path(in.final_model_path).filename().string() + ")";
    analyzed = in.final_model_path;
  }
  if (analyzed.empty()) return;
  try {
    onnx::ModelProto model = load_model(analyzed, {.load_external_data = false});
    ensure_node_names(model);  // a copy: the file is not touched
    in.analysis = analyze_model(model, analyzed);
    const std::vector<int64_t> shape = described_image_shape(in);
    if (in.analysis->inputs.size() == 1 && !shape.empty()) in.input_shapes[in.analysis->inputs[0].name] = shape;
    in.macs = node_macs(in, model, analyzed);
    in.model = std::move(model);
    in.model_is_input = analyzed == in.model_path;
  } catch (const Error& e) {
    in.notes.push_back(std::string("model section: ") + e.what());
  }
}

// The spec that gives a layer its format: its inputs', else its weight's, else its outputs'.
std::optional<TensorQuantSpec> layer_spec(const NodeAssignment& a) {
  if (a.excluded) return std::nullopt;
  if (a.config.input_tensors) return a.config.input_tensors;
  return a.config.weight ? a.config.weight : a.config.output_tensors;
}

// Every layer of the main graph as the final config assigns it, in topological order: compute
// nodes and the nodes the config puts in some format. Read from the input model (float, every
// weight an initializer: exact MACs), keeping only the nodes the final model still has (the
// preparation folds BatchNormalization, and some presets per-channel affine ops, into convs).
void build_map(Inputs& in) {
  if (in.final_config_path.empty() || !in.model) return;
  try {
    const QuantConfig config = load_config(in.final_config_path);
    std::set<std::string> kept;
    if (!in.final_model_path.empty()) {
      const onnx::ModelProto final_model = load_model(in.final_model_path, {.load_external_data = false});
      in.final_analysis = analyze_model(final_model, in.final_model_path);
      if (in.model_is_input) {
        for (const auto& node : final_model.graph().node()) kept.insert(node.name());
      }
    }
    const onnx::ModelProto& model = *in.model;
    const std::vector<NodeAssignment> assignments = assign_layers(config, model, in.final_config_path);
    std::map<std::string, const NodeAssignment*> by_name;
    for (const auto& a : assignments) by_name[a.node_name] = &a;
    const ir::GraphView view(model.graph(), in.model_path);
    for (size_t index : view.topological_order()) {
      const onnx::NodeProto& node = model.graph().node(static_cast<int>(index));
      const auto it = by_name.find(node.name());
      if (it == by_name.end()) continue;
      const std::optional<TensorQuantSpec> spec = layer_spec(*it->second);
      const bool assigned = spec && spec->format != FormatId::kFloat32;
      if (!assigned && !is_compute_op(node.domain(), node.op_type())) continue;
      if (!kept.empty() && !kept.count(node.name())) {
        ++in.folded_layers;
        continue;
      }
      Layer layer{.name = node.name(), .op_type = node.op_type()};
      const FormatId format = spec ? spec->format : FormatId::kFloat32;
      layer.format = format_traits(format).name;
      layer.klass = format_class(format);
      const auto m = in.macs.nodes.find(node.name());
      layer.macs = m == in.macs.nodes.end() ? 0 : m->second.macs;
      in.layer_index[layer.name] = in.layers.size();
      in.layers.push_back(std::move(layer));
    }
  } catch (const Error& e) {
    in.notes.push_back(std::string("precision map: ") + e.what());
  }
}

Inputs read_inputs(const std::string& work_dir, const HtmlReportOptions& options) {
  Inputs in;
  in.dir = work_dir;
  if (!fs::is_directory(in.dir)) throw_bad_input(work_dir, "not a directory (give the work dir of a run)");
  in.command = read_json(in, "command.json");
  in.run = read_json(in, "run.json");
  in.summary = read_json(in, "summary.json");
  in.sensitivity = read_json(in, "sensitivity.json");
  in.dry_run = read_json(in, "dry_run.json");
  in.guide = read_json(in, "guide.json");
  in.pareto = read_json(in, "pareto.json");
  read_ledger(in);
  const bool anything = !in.command.is_null() || !in.run.is_null() || !in.summary.is_null() ||
                        !in.sensitivity.is_null() || !in.dry_run.is_null() || !in.guide.is_null() ||
                        !in.ledger.empty() || in.has("ledger.jsonl");
  if (!anything) {
    throw_bad_input(work_dir,
                    "not a mixprec work dir: no command.json, summary.json, ledger.jsonl, guide.json or dry_run.json");
  }
  in.dir_text = text_of(in.command, "work_dir");
  if (in.dir_text.empty()) in.dir_text = work_dir;

  // The final model and config: explore's, else what guide reports as final.
  if (in.has("final_config.json")) {
    in.final_config_path = in.file("final_config.json").string();
    if (in.has("final.onnx")) in.final_model_path = in.file("final.onnx").string();
  } else {
    in.final_config_path = in_work_dir(in, text_of(in.guide, "final_config"));
    in.final_model_path = in_work_dir(in, text_of(in.guide, "final_model"));
  }
  if (!in.final_config_path.empty()) {
    try {
      in.final_config_text = read_file(in.final_config_path, "final config");
    } catch (const Error& e) {
      in.notes.push_back(e.what());
    }
    if (!Json::accept(in.final_config_text)) {  // a config cut by a crash: no map, no config section
      in.notes.push_back(fs::path(in.final_config_path).filename().string() + ": not valid JSON, left out");
      in.final_config_path.clear();
      in.final_config_text.clear();
    }
  }
  find_model(in, options);
  build_map(in);
  return in;
}

// --- the objective and its units -----------------------------------------------------------------

struct MetricView {
  std::string label = "worst-output PSNR";
  std::string unit = "dB";
  double scale = 1;      // 100 for fractions shown in percent
  bool negated = false;  // a "<" target: the search maximises -value
  int digits = 2;
  std::optional<double> threshold;  // in display units
  std::string target_text;          // "target psnr>30", or "criterion top1>=99.9%" (the task's default)

  double display(double objective) const { return (negated ? -objective : objective) * scale; }
  std::string text(double objective) const {
    return fixed(display(objective), digits) + (unit.empty() ? "" : " " + unit);
  }
  std::string axis_label() const { return label + (unit.empty() ? "" : " (" + unit + ")"); }
};

// The task the run judged the model by: summary.json's, else the model's analysis.
TaskType task_of(const Inputs& in) {
  const std::string recorded = text_of(in.summary, "task");
  for (TaskType t : {TaskType::kClassification, TaskType::kDetection, TaskType::kRegression, TaskType::kSequence}) {
    if (recorded == to_string(t)) return t;
  }
  return in.analysis ? in.analysis->task.type : TaskType::kUnknown;
}

// The search's objective as explore defines it: the target's metric, else top-1 for classes and
// sequences, else PSNR; its reference line is the target, else the task's default criterion on
// that metric (when it has one).
MetricView metric_view(const Inputs& in) {
  MetricView view;
  const std::string target = text_of(in.run, "target");
  std::optional<AccuracyTarget> parsed;
  if (!target.empty()) {
    try {
      parsed = parse_target(target);
    } catch (const Error&) {
      // The run parsed it; an edited run.json draws the task's metric without a target line.
    }
  }
  const TaskType task = task_of(in);
  AccuracyTarget::Metric metric = AccuracyTarget::kPsnr;
  if (parsed) {
    metric = parsed->metric;
  } else if (task == TaskType::kClassification || task == TaskType::kSequence) {
    metric = AccuracyTarget::kTop1;
  }
  const MetricTraits& traits = metric_traits(metric);
  view.label = std::string("worst-output ") + traits.label;
  view.unit = traits.unit;
  if (view.unit == "%") view.scale = 100;
  view.digits = metric == AccuracyTarget::kCosine ? 4 : 2;
  std::optional<AccuracyTarget> line = parsed;
  if (!line && target.empty()) {
    for (const auto& t : default_targets(task)) {
      if (t.metric == metric) line = t;
    }
  }
  if (line) {
    view.negated = line->op == AccuracyTarget::kLess;
    view.threshold = line->value * view.scale;
    view.target_text = (parsed ? "target " : "criterion ") + line->text;
  }
  return view;
}

struct DecisionStyle {
  const char* decision;  // as the ledger spells it
  const char* label;
  const char* color;
  MarkerShape shape;
};
constexpr DecisionStyle kDecisionStyles[] = {
    {"accepted", "accepted", "#2f855a", MarkerShape::kDot},
    {"skipped", "skipped (no gain)", "#718096", MarkerShape::kRing},
    {"rolled back", "rolled back (worse)", "#c53030", MarkerShape::kCross},
    {"meets", "meets the criterion", "#2f855a", MarkerShape::kDot},
    {"misses", "misses it", "#c53030", MarkerShape::kRing},
    {"measured", "measured (priced alone, or a point of the curve)", "#805ad5", MarkerShape::kRing},
};
const DecisionStyle& decision_style(const std::string& decision) {
  for (const auto& s : kDecisionStyles) {
    if (decision == s.decision) return s;
  }
  static constexpr DecisionStyle kOther{"", "other", "#4a5568", MarkerShape::kRing};
  return kOther;
}

std::string decision_legend(const std::vector<LedgerStep>& steps) {
  std::string out = "<p class=\"legend\">";
  for (const auto& s : kDecisionStyles) {
    const bool used =
        std::any_of(steps.begin(), steps.end(), [&](const LedgerStep& step) { return step.decision == s.decision; });
    if (!used) continue;
    const char* css = s.shape == MarkerShape::kDot    ? "swatch dot"
                      : s.shape == MarkerShape::kRing ? "swatch ring"
                                                      : "swatch cross";
    out += legend_item(s.color, s.label, css);
  }
  return out + "</p>\n";
}

// --- HTML pieces -----------------------------------------------------------------------------------

struct Section {
  std::string id, title, body;
};

// Per-output metrics (the ledger's compact keys or metrics_to_json's), one row per output.
std::string outputs_table(const std::vector<std::pair<std::string, const Json*>>& models) {
  bool top1 = false;
  for (const auto& [label, outputs] : models) {
    for (const auto& o : *outputs)
      top1 = top1 || number(o, "top1").has_value() || number(o, "top1_agreement").has_value();
  }
  std::vector<std::string> headers = {"model",     "output",        "PSNR (dB)", "SQNR (dB)",
                                      "pass rate", "max abs error", "cosine"};
  if (top1) headers.push_back("top-1 agreement");
  std::vector<std::vector<std::string>> rows;
  for (const auto& [label, outputs] : models) {
    bool first = true;
    for (const auto& o : *outputs) {
      const auto value = [&](const char* key, int digits) {
        const auto v = number(o, key);
        return v ? fixed(*v, digits) : std::string("-");
      };
      std::vector<std::string> row = {first ? esc(label) : "",
                                      esc(text_of(o, "name")),
                                      value("psnr_db", 2),
                                      value("sqnr_db", 2),
                                      number(o, "pass_rate") ? percent(*number(o, "pass_rate"), 3) : "-",
                                      number(o, "max_abs_error") ? general(*number(o, "max_abs_error")) : "-",
                                      value("cosine", 5)};
      if (top1) {
        const auto t = number(o, "top1") ? number(o, "top1") : number(o, "top1_agreement");
        row.push_back(t ? percent(*t, 2) : "-");
      }
      rows.push_back(std::move(row));
      first = false;
    }
  }
  return table(headers, rows, "sortable", {false, false, true, true, true, true, true, true});
}

// The worst of one metric over a row's outputs.
std::optional<double> worst(const Json& outputs, const char* key) {
  std::optional<double> w;
  for (const auto& o : outputs) {
    if (const auto v = number(o, key)) w = w ? std::min(*w, *v) : *v;
  }
  return w;
}

// --- the sections --------------------------------------------------------------------------------

// The run's state in one sentence when it did not end normally.
std::string status_banner(const Inputs& in) {
  const std::string status = text_of(in.command, "status");
  if (status == "error") {
    return "<div class=\"banner error\">The run stopped with an error: " + esc(text_of(in.command, "error")) +
           ". The report shows the state it left: the best assignment found so far.</div>\n";
  }
  if (status == "interrupted") {
    return "<div class=\"banner warn\">The run was interrupted (" + esc(text_of(in.command, "error")) +
           "). The report shows the state it left: the best assignment found so far.</div>\n";
  }
  if (status == "running" || (status.empty() && in.explored() && in.summary.is_null() && in.guide.is_null())) {
    return "<div class=\"banner warn\">The run did not finish (it was killed or crashed, or it is still going): the "
           "report shows what the work dir held, the best assignment found so far.</div>\n";
  }
  return "";
}

Section summary_section(const Inputs& in, const MetricView& metric) {
  std::string body;
  std::string tiles;
  const Json& verdict = field(in.summary, "verdict");
  if (!in.summary.is_null()) {
    const bool pass = flag(verdict, "pass").value_or(false);
    tiles += tile("verdict", pass ? "PASS" : "FAIL", text_of(verdict, "criterion"), pass ? "pass" : "fail");
    const std::string lift = text_of(in.summary, "lift");
    // A lift ladder's summary counts the layers at each rung.
    std::vector<std::string> per_rung;
    for (const auto& rung : items(in.summary, "rungs")) {
      const auto lifted = static_cast<size_t>(number(rung, "lifted").value_or(0));
      if (lifted > 0) per_rung.push_back(count(lifted) + " to " + text_of(rung, "lift"));
    }
    tiles += tile("layers lifted",
                  count(static_cast<size_t>(number(in.summary, "lifted_layer_count").value_or(0))) + " of " +
                      count(static_cast<size_t>(number(in.summary, "compute_layers").value_or(0))),
                  (per_rung.empty() ? "to " + (lift.empty() ? std::string("BF16") : lift) : text::join(per_rung)) +
                      ", the rest integer");
    const Json& outputs = field(in.summary, "final_metrics");
    if (const auto psnr = worst(outputs, "psnr_db")) {
      const auto pass_rate = worst(outputs, "pass_rate");
      tiles += tile("final model", fixed(*psnr) + " dB",
                    "worst-output PSNR; pass rate " + (pass_rate ? percent(*pass_rate, 3) : "-"));
    }
    const Json& time = field(in.summary, "expected_time_vs_full_bf16");
    if (const auto final_time = number(time, "final")) {
      std::string sub = "of full BF16 on " + text_of(in.summary, "device") + "; full INT8 " +
                        fixed(number(time, "full_int8").value_or(0)) + "x";
      if (const auto transitions = number(in.summary, "transitions")) {
        sub += "; " + counted(static_cast<size_t>(*transitions), "INT8/float transition");
      }
      tiles += tile("expected compute time", fixed(*final_time) + "x", sub);
    }
    tiles += tile("search", counted(static_cast<size_t>(number(in.summary, "evaluations").value_or(0)), "evaluation"),
                  text_of(in.summary, "search") + " over the " + text_of(in.summary, "ranking") + " ranking");
  } else if (!in.ledger.empty()) {
    // A run that did not finish: the best step so far.
    const LedgerStep* best = nullptr;
    for (const auto& s : in.ledger) {
      if (s.decision == "accepted" || (s.decision == "meets" && (!best || s.lifted <= best->lifted))) best = &s;
    }
    tiles += tile("steps so far", count(in.ledger.size()), "from ledger.jsonl");
    if (best) tiles += tile("best so far", metric.text(best->objective), counted(best->lifted, "layer") + " lifted");
  }
  if (!in.guide.is_null()) {
    const bool pass = flag(in.guide, "pass").value_or(false);
    const std::string mode = text_of(in.guide, "mode");
    if (mode != "dry-run" && !field(in.guide, "outcome").is_null()) {
      tiles += tile("guide", pass ? "PASS" : "FAIL", text_of(in.guide, "criterion"), pass ? "pass" : "fail");
    }
    if (const auto t = number(in.guide, "time_vs_bf16"); t && mode == "full") {
      tiles +=
          tile("expected compute time", fixed(*t) + "x", "of full BF16, final model on " + text_of(in.guide, "device"));
    }
  }
  if (!in.dry_run.is_null()) {
    const Json& rec = field(in.dry_run, "recommendation");
    tiles += tile("dry-run recommends", text_of(rec, "action"), text_of(in.dry_run, "data"));
  }
  if (!tiles.empty()) body += "<div class=\"tiles\">\n" + tiles + "</div>\n";

  std::vector<std::pair<std::string, std::string>> rows;
  if (!text_of(in.summary, "stop_reason").empty())
    rows.emplace_back("stopped", esc(text_of(in.summary, "stop_reason")));
  if (!text_of(verdict, "reason").empty())
    rows.emplace_back("verdict",
                      verdict_badge(flag(verdict, "pass").value_or(false)) + " " + esc(text_of(verdict, "reason")));
  if (!field(in.guide, "outcome").is_null() && !text_of(in.guide, "outcome").empty()) {
    rows.emplace_back("guide", esc(text_of(in.guide, "outcome")));
  }
  if (!in.dry_run.is_null()) {
    const Json& rec = field(in.dry_run, "recommendation");
    rows.emplace_back("recommendation",
                      "<strong>" + esc(text_of(rec, "action")) + "</strong>: " + esc(text_of(rec, "reason")));
  }
  const Json& runtime = field(in.summary, "runtime_check");
  if (runtime.is_object()) {
    rows.emplace_back("runtime check",
                      esc(text_of(runtime, "provider")) + ": " +
                          (flag(runtime, "ok").value_or(false) ? "loads the final model" : "FAILED, ") +
                          esc(flag(runtime, "ok").value_or(false) ? "" : text_of(runtime, "detail")));
  }
  if (!rows.empty()) body += facts(rows);
  return {"summary", "Summary", body};
}

Section model_section(const Inputs& in) {
  std::string body;
  if (!in.model_note.empty()) body += note(in.model_note);
  if (!in.analysis) {
    body += note(in.model_path.empty() ? "The work dir does not name the input model (give it with --model)."
                                       : "The model could not be analyzed (see Warnings).");
    return {"model", "Model", body};
  }
  const ModelAnalysis& a = *in.analysis;
  const std::string opsets =
      text::join_each(a.opsets, [](const auto& opset) { return opset.first + " " + std::to_string(opset.second); });
  std::string shape;
  for (const auto& [name, dims] : in.input_shapes) {
    for (int64_t d : dims) shape.append(shape.empty() ? "" : "x").append(std::to_string(d));
  }
  std::vector<std::pair<std::string, std::string>> rows = {
      {"file", esc(a.model_path)},
      {"task", "<strong>" + esc(to_string(a.task.type)) + "</strong>: " + esc(a.task.reason)},
      {"architecture", "<strong>" + esc(to_string(a.architecture.type)) + "</strong>: " + esc(a.architecture.reason)},
      {"nodes", count(static_cast<size_t>(a.node_count)) + " (" + count(static_cast<size_t>(a.coverage.compute_nodes)) +
                    " compute nodes)"},
      {"MACs", macs_text(in.macs.total) + " per inference" +
                   (shape.empty() ? "" : " at " + shape + ", the run's input") +
                   (in.macs.exact ? "" : " (partly estimated: some shapes are unknown)")},
      {"quantization", esc(to_string(a.quantization.state))},
      {"opsets", esc(opsets)}};
  if (!a.producer_name.empty()) rows.emplace_back("producer", esc(a.producer_name + " " + a.producer_version));
  body += facts(rows);
  std::vector<std::vector<std::string>> io;
  for (const auto& t : a.inputs) io.push_back({"input", esc(t.name), esc(t.dtype), esc(dims_to_string(t.shape))});
  for (const auto& t : a.outputs) io.push_back({"output", esc(t.name), esc(t.dtype), esc(dims_to_string(t.shape))});
  body += table({"", "name", "type", "shape"}, io);

  // The op histogram as bars: the most frequent ops, the rest in one line.
  constexpr size_t kOpsShown = 16;
  const size_t shown = std::min(kOpsShown, a.op_histogram.size());
  if (shown > 0) {
    const double row = 20, width = 720, label_width = 190, bar_width = width - label_width - 70;
    const double height = row * static_cast<double>(shown) + 8;
    const double most = static_cast<double>(a.op_histogram.front().count);
    body += "<h3>Op histogram</h3>\n" + svg_open("chart-ops", "op histogram", width, height);
    for (size_t i = 0; i < shown; ++i) {
      const OpCount& op = a.op_histogram[i];
      const double y = 4 + row * static_cast<double>(i);
      const double w = std::max(1.0, bar_width * static_cast<double>(op.count) / most);
      const bool compute = std::any_of(a.compute_ops.begin(), a.compute_ops.end(),
                                       [&](const ComputeOpCount& c) { return c.op_type == op.op_type; });
      body += svg_text("label", label_width - 8, y + 13, "end", op.op_type) +
              svg_rect(label_width, y + 2, w, 14, compute ? "#2b6cb0" : "#a0aec0",
                       op.op_type + ": " + std::to_string(op.count) + " nodes" + (compute ? " (compute)" : "")) +
              svg_text("value", label_width + w + 6, y + 13, "start", std::to_string(op.count)) + "\n";
    }
    body += "</svg>\n";
    body +=
        "<p class=\"legend\">" + legend_item("#2b6cb0", "compute op") + legend_item("#a0aec0", "other op") + "</p>\n";
    if (a.op_histogram.size() > shown) {
      int64_t rest = 0;
      for (size_t i = shown; i < a.op_histogram.size(); ++i) rest += a.op_histogram[i].count;
      body +=
          note(std::to_string(a.op_histogram.size() - shown) + " more op types, " + std::to_string(rest) + " nodes.");
    }
  }
  return {"model", "Model", body};
}

// One row per preset evaluated (dry-run rows, ladder rungs).
std::string preset_rows_table(const Json& rows) {
  std::vector<std::vector<std::string>> out;
  bool top1 = false;
  for (const auto& row : rows) top1 = top1 || worst(field(row, "outputs"), "top1_agreement").has_value();
  for (const auto& row : rows) {
    const Json& outputs = field(row, "outputs");
    const Json& verdict = field(row, "verdict");
    const auto w = [&](const char* key, int digits, bool as_percent) {
      const auto v = worst(outputs, key);
      return v ? (as_percent ? percent(*v, digits) : fixed(*v, digits)) : std::string("-");
    };
    std::vector<std::string> r = {
        esc(text_of(row, "label")),
        esc(text_of(row, "preset")),
        flag(row, "on_device").value_or(true) ? "yes" : "no: " + esc(text_of(row, "device_note")),
        verdict_badge(flag(verdict, "pass").value_or(false)),
        w("psnr_db", 2, false),
        w("pass_rate", 3, true),
        w("cosine", 5, false)};
    if (top1) r.push_back(w("top1_agreement", 2, true));
    r.push_back(esc(text_of(verdict, "reason")));
    out.push_back(std::move(r));
  }
  std::vector<std::string> headers = {"choice",          "preset",          "on device",   "verdict",
                                      "worst PSNR (dB)", "worst pass rate", "worst cosine"};
  std::vector<bool> numeric = {false, false, false, false, true, true, true};
  if (top1) {
    headers.push_back("worst top-1");
    numeric.push_back(true);
  }
  headers.push_back("why");
  return table(headers, out, "sortable", numeric);
}

std::string search_settings(const Json& run, const Json& summary) {
  std::vector<std::pair<std::string, std::string>> rows;
  const Json& base = field(run, "base");
  rows.emplace_back("start", base.is_string() ? esc(base.get<std::string>())
                                              : "the config in run.json (its integer layers are the candidates)");
  std::string ranking = esc(text_of(run, "ranking"));
  if (run.is_object() && run.value("adaptive", false)) {
    const auto reranks = number(summary, "reranks");
    ranking += ", adaptive (re-scored in the mixed state" +
               (reranks ? ": " + counted(static_cast<size_t>(*reranks), "re-ranking") : std::string()) + ")";
  }
  rows.emplace_back("ranking", ranking);
  rows.emplace_back("search", esc(text_of(run, "search")));
  rows.emplace_back("target", esc(text_of(run, "target").empty() ? "the task's criterion" : text_of(run, "target")));
  rows.emplace_back("tolerance", "atol " + general(number(run, "atol").value_or(0)) + ", rtol " +
                                     general(number(run, "rtol").value_or(0)));
  rows.emplace_back("lift to", esc(text_of(run, "lift")));
  rows.emplace_back("budget", percent(number(run, "bf16_budget").value_or(0), 0) + " of the candidates");
  if (const auto t = number(run, "time_budget")) {
    rows.emplace_back("time budget", *t > 0 ? fixed(*t) + "x full BF16 at most" : "none");
  }
  if (const std::string method = text_of(run, "calib_method"); !method.empty()) {
    const std::string kept = text_of(summary, "calib_method");
    rows.emplace_back("calibration", method != "auto" ? esc(method)
                                     : kept.empty()   ? "every method the device allows, the best kept"
                                                      : esc(kept) + " (the best of the methods the device allows)");
  }
  const auto iterations = number(run, "max_iterations").value_or(0);
  rows.emplace_back("max iterations", iterations > 0 ? fixed(iterations, 0) : "min(50, candidates)");
  const Json& data = field(run, "evaluation");
  const auto files = strings(field(data, "files"));
  std::string d = text::join_each(files, [](const std::string& f) { return esc(f); });
  if (files.empty())
    d = fixed(number(data, "random_samples").value_or(0), 0) + " seeded random samples (seed " +
        fixed(number(data, "seed").value_or(0), 0) + ")";
  if (!text_of(data, "preprocess").empty()) d += "; preprocess " + esc(text_of(data, "preprocess"));
  const Json& size = field(data, "image_size");
  if (size.is_array() && size.size() == 2 && size[0].is_number() && size[0].get<double>() > 0) {
    d += "; " + fixed(size[0].get<double>(), 0) + "x" + fixed(size[1].get<double>(), 0);
  }
  rows.emplace_back("evaluation data", d);
  return facts(rows);
}

std::optional<Section> recipe_section(const Inputs& in) {
  std::string body;
  const Json* dry = in.dry_run.is_null() ? &in.guide_result("dry-run") : &in.dry_run;
  if (!dry->is_null()) {
    body += "<h3>Dry run: every whole-model choice against FP32</h3>\n";
    body += "<p>" + esc(text_of(*dry, "data")) + ", device " + esc(text_of(*dry, "device")) + "</p>\n";
    body += preset_rows_table(items(*dry, "rows"));
    const Json& estimates = items(*dry, "explore_estimates");
    if (!estimates.empty()) {
      std::string list;
      for (const auto& e : estimates) {
        list += (list.empty() ? "" : ", ") + esc(text_of(e, "search")) + " at most " +
                counted(static_cast<size_t>(number(e, "evaluations").value_or(0)), "evaluation") + " (~" +
                fixed(number(e, "seconds").value_or(0), 0) + " s)";
      }
      body += "<p>An exploration from the INT8 row (" +
              counted(static_cast<size_t>(number(*dry, "candidates").value_or(0)), "candidate layer") + ", " +
              fixed(number(*dry, "seconds_per_evaluation").value_or(0)) + " s per evaluation): " + list + ".</p>\n";
    }
    const Json& rec = field(*dry, "recommendation");
    body += "<p class=\"callout\"><strong>Recommendation: " + esc(text_of(rec, "action")) + "</strong>. " +
            esc(text_of(rec, "reason")) + "</p>\n";
  }
  const Json& ladder = in.guide_result("ladder");
  if (!ladder.is_null()) {
    body += "<h3>Ladder: w8a8, then w8a16, else float</h3>\n" + preset_rows_table(items(ladder, "rungs"));
    body += "<p class=\"callout\"><strong>Chosen: " + esc(text_of(ladder, "chosen")) + "</strong>. " +
            esc(text_of(ladder, "follow_up")) + "</p>\n";
  }
  const Json& config = in.guide_result("config");
  const Json& plan = field(config, "plan");
  if (plan.is_object()) {
    body += "<h3>Recipe: the proposed config</h3>\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : items(plan, "decisions")) {
      rows.push_back({esc(text_of(d, "decision")), esc(text_of(d, "value")), esc(text_of(d, "reason"))});
    }
    body += table({"decision", "value", "reason"}, rows);
    for (const auto& r : items(plan, "risks"))
      body += note("risk (" + text_of(r, "severity") + "): " + text_of(r, "risk"));
  } else if (!text_of(config, "given").empty()) {
    body += "<h3>Recipe</h3>\n<p>The config given: " + esc(text_of(config, "given")) + "</p>\n";
  }
  const Json& quantize = in.guide_result("quantize");
  if (!items(quantize, "methods").empty()) {
    body += "<h4>Calibration methods on the same statistics</h4>\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& m : items(quantize, "methods")) {
      const bool kept = text_of(m, "method") == text_of(quantize, "kept");
      rows.push_back({esc(text_of(m, "method")) + (kept ? " <strong>(kept)</strong>" : ""),
                      fixed(number(m, "psnr_db").value_or(0)), verdict_badge(flag(m, "pass").value_or(false))});
    }
    body += table({"method", "worst PSNR (dB)", "verdict"}, rows, "", {false, true, false});
  }
  const Json& recover = in.guide_result("recover");
  if (items(recover, "trials").size() > 1) {
    body += "<h4>Recovery ladder on the same statistics</h4>\n";
    std::vector<std::vector<std::string>> rows;
    const Json& trials = items(recover, "trials");
    for (size_t i = 0; i < trials.size(); ++i) {
      const Json& t = trials[i];
      const std::vector<std::string> names = strings(field(t, "algorithms"));
      std::string label = names.empty() ? "no algorithm" : text::join(names, " + ");
      const bool kept = number(recover, "kept").value_or(0) == static_cast<double>(i);
      const auto top1 = number(t, "top1");
      const double learned = number(t, "learned_layers").value_or(0), reused = number(t, "reused_layers").value_or(0);
      const double biases = number(t, "corrected_biases").value_or(0);
      std::string work;
      if (learned + reused > 0) {
        work = count(static_cast<size_t>(learned)) + " learned, " + count(static_cast<size_t>(reused)) + " reused, " +
               fixed(number(t, "reconstruction_seconds").value_or(0)) + " s";
      }
      if (biases > 0) {
        work += (work.empty() ? "" : "; ") + count(static_cast<size_t>(biases)) + " biases corrected, " +
                fixed(number(t, "bias_correction_seconds").value_or(0)) + " s";
      }
      rows.push_back({esc(label) + (i == 0 ? " (quantize)" : "") + (kept ? " <strong>(kept)</strong>" : ""),
                      fixed(number(t, "psnr_db").value_or(0)), top1 ? percent(*top1) : "",
                      verdict_badge(flag(t, "pass").value_or(false)), fixed(number(t, "seconds").value_or(0)),
                      esc(work)});
    }
    body += table({"algorithms", "worst PSNR (dB)", "top-1", "verdict", "seconds", "layers"}, rows, "",
                  {false, true, true, false, true, false});
  }
  if (in.run.is_object()) body += "<h3>Search settings</h3>\n" + search_settings(in.run, in.summary);
  if (body.empty()) return std::nullopt;
  std::vector<std::string> parts;
  if (!dry->is_null()) parts.emplace_back("dry run");
  if (!ladder.is_null()) parts.emplace_back("ladder");
  if (plan.is_object() || !text_of(config, "given").empty() || in.run.is_object()) parts.emplace_back("recipe");
  std::string title;
  for (size_t i = 0; i < parts.size(); ++i) title += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  title[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(title[0])));
  return Section{"recipe", title, body};
}

std::optional<Section> guide_section(const Inputs& in) {
  if (in.guide.is_null()) return std::nullopt;
  std::vector<std::vector<std::string>> rows;
  for (const auto& phase : items(in.guide, "phases")) {
    const std::string status = text_of(phase, "status");
    std::string lines = "<ul class=\"lines\">";
    for (const auto& line : strings(field(phase, "lines"))) {
      lines +=
          std::string("<li") + (line.rfind("red flag", 0) == 0 ? " class=\"flag\"" : "") + ">" + esc(line) + "</li>";
    }
    lines += "</ul>";
    rows.push_back(
        {"<strong>" + esc(text_of(phase, "name")) + "</strong>",
         "<span class=\"status " + esc(status == "not run" ? "notrun" : status) + "\">" + esc(status) + "</span>",
         fixed(number(phase, "seconds").value_or(0)), lines});
  }
  std::string body =
      "<p>Mode " + esc(text_of(in.guide, "mode")) + ", device " + esc(text_of(in.guide, "device")) + ".</p>\n";
  body += table({"phase", "status", "seconds", "what it found"}, rows, "phases", {false, false, true, false});
  return Section{"guide", "Guide phases", body};
}

// Every candidate in ranking order: rank, name, op type, MACs and its score as a bar.
std::optional<Section> sensitivity_section(const Inputs& in) {
  if (!in.searched()) return std::nullopt;
  const Json& layers = items(in.sensitivity, "layers");
  if (layers.empty()) {
    return Section{"sensitivity", "Sensitivity ranking",
                   note("No ranking in this work dir: the search stopped before ranking (full INT8 already meets the "
                        "criterion, or full BF16 misses it too), or it has not ranked yet.")};
  }
  std::set<std::string> lifted;
  if (!in.layers.empty()) {
    for (const auto& l : in.layers) {
      if (!is_integer_class(l.klass)) lifted.insert(l.name);
    }
  } else {
    for (const auto& name : strings(field(in.summary, "lifted_layers"))) lifted.insert(name);
  }
  double lo = 0, hi = 0;
  for (const auto& l : layers) {
    const double s = number(l, "score").value_or(0);
    lo = std::min(lo, s);
    hi = std::max(hi, s);
  }
  if (hi - lo <= 0) hi = lo + 1;
  // Lifted bars take the colour of the format they were lifted to (the map's, else the lift's).
  const std::string lift = text_of(in.summary, "lift").empty() ? "BF16" : text_of(in.summary, "lift");
  const size_t lift_class = text::equal_ignoring_case(lift, "FP16") ? kClassFp16 : kClassBf16;
  const double row = 16, head = 22, width = 1100;
  const double bar_left = 560, bar_right = width - 70;
  const auto bar_x = [&](double s) { return bar_left + (s - lo) / (hi - lo) * (bar_right - bar_left); };
  const double height = head + row * static_cast<double>(layers.size()) + 6;
  std::string svg = svg_open("chart-ranking", "sensitivity ranking", width, height);
  svg += svg_text("head", 34, 14, "end", "#") + svg_text("head", 42, 14, "start", "layer") +
         svg_text("head", 380, 14, "start", "op") + svg_text("head", 540, 14, "end", "MACs") +
         svg_text("head", bar_left, 14, "start", "score") + "\n";
  size_t rank = 0;
  size_t top_lifted = 0;  // the lifted layers are exactly the top k (bisection): k
  bool prefix = true;
  for (const auto& l : layers) {
    ++rank;
    const std::string name = text_of(l, "layer");
    const double score = number(l, "score").value_or(0);
    const bool up = lifted.count(name) > 0;
    if (up && prefix) top_lifted = rank;
    if (!up) prefix = false;
    const auto it = in.layer_index.find(name);
    const Layer* layer = it == in.layer_index.end() ? nullptr : &in.layers[it->second];
    const double y = head + row * static_cast<double>(rank - 1);
    const double x0 = std::min(bar_x(0), bar_x(score)), x1 = std::max(bar_x(0), bar_x(score));
    std::string title = "#" + count(rank) + " " + name;
    if (layer) title += " (" + layer->op_type + ", " + macs_text(layer->macs) + " MACs)";
    title += ": score " + general(score) + (up ? ", lifted" : ", integer");
    svg += "<g class=\"row" + std::string(up ? " lifted" : "") + "\"><title>" + esc(title) + "</title>";
    if (rank % 2 == 0) svg += svg_rect(0, y, width, row, "", "", "stripe");
    svg += svg_text("rank", 34, y + 12, "end", count(rank)) +
           svg_text("name", 42, y + 12, "start", keep_tail(name, 50)) +
           svg_text("op", 380, y + 12, "start", layer ? keep_tail(layer->op_type, 20) : "") +
           svg_text("macs", 540, y + 12, "end", layer ? macs_text(layer->macs) : "") +
           svg_rect(x0, y + 3, std::max(x1 - x0, 1.0), 10,
                    kFormatClasses[layer ? layer->klass
                                   : up  ? lift_class
                                         : kClassInt8]
                        .color,
                    "") +
           svg_text("value", x1 + 4, y + 12, "start", general(score)) + "</g>\n";
  }
  svg += svg_line("zero", bar_x(0), head - 2, bar_x(0), height - 4) + "\n";
  if (top_lifted > 0 && top_lifted == lifted.size() && top_lifted < layers.size()) {
    const double y = head + row * static_cast<double>(top_lifted);
    svg += svg_line("cut", 0, y, width, y) +
           svg_text("ref-label", width - 4, y - 3, "end", "top " + count(top_lifted) + " lifted above this line") +
           "\n";
  }
  svg += "</svg>\n";
  std::string body = "<p>Ranking <strong>" + esc(text_of(in.sensitivity, "ranking")) +
                     "</strong>: " + esc(text_of(in.sensitivity, "score")) + ". " + count(layers.size()) +
                     " candidate layers, most sensitive first; " + count(lifted.size()) +
                     " lifted in the final assignment.</p>\n";
  body += "<p class=\"legend\">" + legend_item(kFormatClasses[lift_class].color, "lifted to " + lift) +
          legend_item(kFormatClasses[kClassInt8].color, "kept integer") + "</p>\n";
  body += "<div class=\"scroll\">\n" + svg + "</div>\n";
  return Section{"sensitivity", "Sensitivity ranking", body};
}

std::string step_title(const LedgerStep& s, const MetricView& metric) {
  std::string t = "step " + count(s.index) + ": " + s.layer + ", " + s.decision + (s.sweep > 1 ? " (retry)" : "") +
                  "; " + metric.text(s.objective) + ", pass rate " + percent(s.pass_rate, 3) + ", " + count(s.lifted) +
                  " lifted so far";
  if (s.time_vs_bf16) t += ", " + fixed(*s.time_vs_bf16) + "x full BF16";
  if (s.transitions) t += ", " + fixed(*s.transitions, 0) + " INT8/float transitions";
  return t;
}

std::optional<Section> trajectory_section(const Inputs& in, const MetricView& metric) {
  if (!in.searched()) return std::nullopt;
  if (in.ledger.empty()) {
    return Section{"trajectory", "Exploration trajectory",
                   note("No steps in the ledger: the search ended before its first step.")};
  }
  std::vector<double> xs, ys;
  for (const auto& s : in.ledger) {
    xs.push_back(static_cast<double>(s.index));
    ys.push_back(metric.display(s.objective));
  }
  if (metric.threshold) ys.push_back(*metric.threshold);
  const html::Range xr{0.5, static_cast<double>(in.ledger.back().index) + 0.5};
  const Plot plot(1100, 320, xr, span_of(ys, 0.08));
  std::string svg = plot.open("chart-trajectory", "metric by step") + plot.axes("step", metric.axis_label(), true);
  if (metric.threshold) svg += plot.hline(*metric.threshold, metric.target_text, "target");
  std::string path;
  for (const auto& s : in.ledger) {
    path += (path.empty() ? "M" : " L") + fixed(plot.x(static_cast<double>(s.index)), 1) + " " +
            fixed(plot.y(metric.display(s.objective)), 1);
  }
  svg += "<path class=\"trail\" d=\"" + path + "\"/>\n";
  // A few steps get their trial named beside the marker (bisection's "top k"); many would clutter.
  constexpr size_t kLabelledSteps = 16;
  for (const auto& s : in.ledger) {
    const DecisionStyle& style = decision_style(s.decision);
    const double x = plot.x(static_cast<double>(s.index)), y = plot.y(metric.display(s.objective));
    svg += marker(style.shape, x, y, style.color, step_title(s, metric));
    if (in.ledger.size() <= kLabelledSteps) {
      svg += svg_text("point-label", x, y - 9, "middle", keep_tail(s.layer, 24)) + "\n";
    }
  }
  svg += "</svg>\n";
  std::string body = "<p>" + esc(metric.label) + " after every step" +
                     (metric.threshold ? ", against the " + esc(metric.target_text) : "") + ".</p>\n";
  body += decision_legend(in.ledger) + svg;

  // The steps as a table, folded away.
  const bool times =
      std::any_of(in.ledger.begin(), in.ledger.end(), [](const LedgerStep& s) { return s.time_vs_bf16.has_value(); });
  const bool transitions =
      std::any_of(in.ledger.begin(), in.ledger.end(), [](const LedgerStep& s) { return s.transitions.has_value(); });
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : in.ledger) {
    std::vector<std::string> r = {count(s.index),
                                  esc(s.layer),
                                  esc(s.decision) + (s.sweep > 1 ? " (retry)" : ""),
                                  esc(metric.text(s.objective)),
                                  fixed(s.psnr_db),
                                  percent(s.pass_rate, 3),
                                  s.meets ? "yes" : "no",
                                  count(s.lifted)};
    if (times) r.push_back(s.time_vs_bf16 ? fixed(*s.time_vs_bf16) + "x" : "-");
    if (transitions) r.push_back(s.transitions ? fixed(*s.transitions, 0) : "-");
    r.push_back(fixed(s.seconds));
    rows.push_back(std::move(r));
  }
  std::vector<std::string> headers = {"step",      "trial",     "decision", "objective",
                                      "PSNR (dB)", "pass rate", "meets",    "lifted so far"};
  std::vector<bool> numeric = {true, false, false, true, true, true, false, true};
  if (times) {
    headers.push_back("time vs BF16");
    numeric.push_back(true);
  }
  if (transitions) {
    headers.push_back("transitions");
    numeric.push_back(true);
  }
  headers.push_back("seconds");
  numeric.push_back(true);
  body += "<details><summary>Every step (" + count(in.ledger.size()) + ")</summary>\n" +
          table(headers, rows, "sortable", numeric) + "</details>\n";
  return Section{"trajectory", "Exploration trajectory", body};
}

struct TradePoint {
  double time = 0, objective = 0;
  std::string label;
  bool meets = false;
  std::string config;
  size_t lifted = 0;
  std::optional<double> transitions;
};

// The accuracy the search saw against the expected compute time: every step that records its
// time, the non-dominated points of pareto.json joined as a curve, and the chosen assignment.
std::optional<Section> tradeoff_section(const Inputs& in, const MetricView& metric) {
  if (!in.searched()) return std::nullopt;
  std::vector<TradePoint> front;
  for (const auto& p : items(in.pareto, "points")) {
    const auto time = number(p, "time_vs_bf16");
    const auto objective = number(p, "objective");
    if (!time || !objective) continue;
    front.push_back({*time, *objective, text_of(p, "label"), flag(p, "meets").value_or(false), text_of(p, "config"),
                     static_cast<size_t>(number(p, "lifted").value_or(0)), number(p, "transitions")});
  }
  std::sort(front.begin(), front.end(), [](const TradePoint& a, const TradePoint& b) { return a.time < b.time; });
  std::vector<const LedgerStep*> timed;
  for (const auto& s : in.ledger) {
    if (s.time_vs_bf16) timed.push_back(&s);
  }
  if (front.empty() && timed.empty()) {
    return Section{"tradeoff", "Trade-off: accuracy vs expected compute time",
                   note("This work dir records no expected compute time per step (no time_vs_bf16 in the ledger, no "
                        "pareto.json): it was made by an older search. The final assignment's expected time is under "
                        "Compile and execution.")};
  }
  const Json& time = field(in.summary, "expected_time_vs_full_bf16");
  const auto final_time = number(time, "final");
  const auto int8_time = number(time, "full_int8");
  // The chosen point: the final assignment (summary.json), else the cheapest point that meets.
  std::optional<TradePoint> chosen;
  const LedgerStep* chosen_step = nullptr;
  if (final_time) {
    for (const auto* s : timed) {
      if ((s->decision == "accepted" || s->decision == "meets") && std::fabs(*s->time_vs_bf16 - *final_time) < 1e-9)
        chosen_step = s;
    }
    for (const auto& p : front) {
      if (std::fabs(p.time - *final_time) < 1e-9) chosen = p;
    }
    if (!chosen && chosen_step)
      chosen = TradePoint{*chosen_step->time_vs_bf16, chosen_step->objective, chosen_step->layer, chosen_step->meets};
  } else {
    for (const auto& p : front) {
      if (p.meets && (!chosen || p.time < chosen->time)) chosen = p;
    }
  }
  std::vector<double> xs = {1.0}, ys;
  if (int8_time) xs.push_back(*int8_time);
  for (const auto& p : front) {
    xs.push_back(p.time);
    ys.push_back(metric.display(p.objective));
  }
  for (const auto* s : timed) {
    xs.push_back(*s->time_vs_bf16);
    ys.push_back(metric.display(s->objective));
  }
  if (metric.threshold) ys.push_back(*metric.threshold);
  const Plot plot(1100, 380, span_of(xs, 0.06), span_of(ys, 0.08));
  std::string svg = plot.open("chart-tradeoff", "accuracy against expected compute time") +
                    plot.axes("expected compute time relative to full BF16 on " + (text_of(in.pareto, "device").empty()
                                                                                       ? text_of(in.summary, "device")
                                                                                       : text_of(in.pareto, "device")),
                              metric.axis_label(), false, "x");
  if (metric.threshold) svg += plot.hline(*metric.threshold, metric.target_text, "target");
  svg += plot.vline(1.0, "full BF16", "reference");
  if (int8_time) svg += plot.vline(*int8_time, "full INT8", "reference");
  for (const auto* s : timed) {
    const DecisionStyle& style = decision_style(s->decision);
    svg += "<g class=\"faint\">" +
           marker(style.shape, plot.x(*s->time_vs_bf16), plot.y(metric.display(s->objective)), style.color,
                  step_title(*s, metric), 3.5) +
           "</g>";
  }
  if (!front.empty()) {
    std::string path;
    for (const auto& p : front)
      path +=
          (path.empty() ? "M" : " L") + fixed(plot.x(p.time), 1) + " " + fixed(plot.y(metric.display(p.objective)), 1);
    svg += "<path class=\"front\" d=\"" + path + "\"/>\n";
    for (const auto& p : front) {
      svg += marker(p.meets ? MarkerShape::kDot : MarkerShape::kRing, plot.x(p.time),
                    plot.y(metric.display(p.objective)), "#2c5282",
                    p.label + ": " + fixed(p.time) + "x full BF16, " + metric.text(p.objective) + ", " +
                        count(p.lifted) + " lifted" + (p.meets ? ", meets" : ", misses"));
    }
  }
  if (chosen) {
    svg += marker(
        MarkerShape::kStar, plot.x(chosen->time), plot.y(metric.display(chosen->objective)), "#ecc94b",
        "chosen: " + chosen->label + ", " + fixed(chosen->time) + "x full BF16, " + metric.text(chosen->objective));
    svg += svg_text("ref-label strong", plot.x(chosen->time) + 12, plot.y(metric.display(chosen->objective)) + 16,
                    "start", "chosen: " + chosen->label) +
           "\n";
  }
  svg += "</svg>\n";
  std::string body = "<p>Each point is an assignment the search evaluated: its " + esc(metric.label) +
                     " against its expected compute time on the device (MAC-weighted nominal speeds, with a cost per "
                     "INT8/float transition), relative to full BF16. Up and to the left is better.</p>\n";
  body += "<p class=\"legend\">";
  if (!front.empty()) body += legend_item("#2c5282", "non-dominated (pareto.json)", "swatch dot");
  if (!timed.empty()) body += legend_item("#718096", "every step (faint)", "swatch ring");
  if (chosen) body += legend_item("#ecc94b", "chosen", "swatch star");
  body += "</p>\n" + svg;
  if (front.empty()) {
    body += note("No pareto.json in this work dir: the curve shows the steps only.");
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const auto& p : front) {
      const bool is_chosen = chosen && std::fabs(p.time - chosen->time) < 1e-12 && p.label == chosen->label;
      rows.push_back({esc(p.label) + (is_chosen ? " <strong>(chosen)</strong>" : ""), count(p.lifted),
                      fixed(p.time) + "x", esc(metric.text(p.objective)), p.meets ? "yes" : "no",
                      p.transitions ? fixed(*p.transitions, 0) : "-",
                      p.config.empty() ? "" : "<a href=\"" + esc(p.config) + "\">" + esc(p.config) + "</a>"});
    }
    body += "<details><summary>The curve's points (" + count(front.size()) + ")</summary>\n" +
            table({"point", "lifted", "time vs BF16", "objective", "meets", "transitions", "config"}, rows, "sortable",
                  {false, true, true, true, false, true, false}) +
            "</details>\n";
  }
  return Section{"tradeoff", "Trade-off: accuracy vs expected compute time", body};
}

// Rows of the map: runs of consecutive layers sharing a name prefix when the names have one
// ('/'-separated scopes, at the depth that gives a readable number of groups), else fixed chunks.
struct MapRow {
  std::string label;
  size_t first = 0, end = 0;  // [first, end) into the layers
};

std::vector<MapRow> map_rows(const std::vector<Layer>& layers, size_t per_row) {
  constexpr size_t kMaxGroups = 60;
  const auto prefix = [](const std::string& name, size_t depth) {
    size_t at = name.front() == '/' ? 1 : 0;
    for (size_t d = 0; d < depth; ++d) {
      const size_t next = name.find('/', at);
      if (next == std::string::npos) return name.substr(0, name.rfind('/') == std::string::npos ? 0 : name.rfind('/'));
      at = next + 1;
    }
    return name.substr(0, at - 1);
  };
  std::vector<MapRow> best;
  const bool scoped = std::count_if(layers.begin(), layers.end(), [](const Layer& l) {
                        return l.name.find('/') != std::string::npos;
                      }) > static_cast<long>(layers.size() / 2);
  for (size_t depth = 1; scoped && depth <= 6; ++depth) {
    std::vector<MapRow> rows;
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::string key = prefix(layers[i].name, depth);
      if (rows.empty() || rows.back().label != key) rows.push_back({key, i, i});
      rows.back().end = i + 1;
    }
    if (rows.size() > kMaxGroups) break;
    best = std::move(rows);
  }
  if (best.size() <= 1) best.clear();
  std::vector<MapRow> out;
  if (best.empty()) best.push_back({"", 0, layers.size()});
  for (const auto& group : best) {
    for (size_t first = group.first; first < group.end; first += per_row) {
      const size_t end = std::min(group.end, first + per_row);
      std::string label = group.label.empty() ? count(first + 1) + "\xE2\x80\x93" + count(end)
                                              : (first == group.first ? group.label : "");
      out.push_back({label, first, end});
    }
  }
  return out;
}

// A map cell: a rectangle filled by its format class's css rule, its title on hover.
std::string cell_rect(size_t klass, double x, double y, double width, double height, const std::string& title) {
  return svg_rect(x, y, width, height, "", title, std::string("cell ").append(kFormatClasses[klass].name));
}

std::optional<Section> map_section(const Inputs& in) {
  if (in.layers.empty()) {
    if (!in.explored() && in.guide.is_null()) return std::nullopt;
    return Section{"map", "Precision map",
                   note(in.final_config_path.empty() ? "No final config in this work dir yet: nothing to map."
                                                     : "The precision map could not be built (see Warnings).")};
  }
  constexpr size_t kPerRow = 80;
  constexpr double kCell = 11, kGap = 1, kRowPitch = 18, kLabelWidth = 150, kGroupLabel = 14;
  const std::vector<MapRow> rows = map_rows(in.layers, kPerRow);
  const bool grouped =
      std::any_of(rows.begin(), rows.end(), [](const MapRow& r) { return r.label.find('/') != std::string::npos; });
  double height = 6;
  for (const auto& r : rows) height += kRowPitch + (grouped && !r.label.empty() ? kGroupLabel : 0);
  const double width = grouped ? 16 + kPerRow * (kCell + kGap) : kLabelWidth + kPerRow * (kCell + kGap);
  std::string svg = svg_open("chart-map", "precision map", width, height, "shape-rendering=\"crispEdges\"");
  double y = 4;
  for (const auto& r : rows) {
    double x0 = kLabelWidth;
    if (grouped) {
      x0 = 16;
      if (!r.label.empty()) {
        svg += svg_text("group", 4, y + 11, "start", keep_tail(r.label, 150)) + "\n";
        y += kGroupLabel;
      }
    } else {
      svg += svg_text("label", kLabelWidth - 8, y + 10, "end", r.label) + "\n";
    }
    for (size_t i = r.first; i < r.end; ++i) {
      const Layer& l = in.layers[i];
      const double x = x0 + static_cast<double>(i - r.first) * (kCell + kGap);
      svg += cell_rect(l.klass, x, y, kCell, kCell + 2,
                       std::string("#").append(count(i + 1)) + " " + l.name + " (" + l.op_type + "): " + l.format +
                           ", " + macs_text(l.macs) + " MACs");
    }
    svg += "\n";
    y += kRowPitch;
  }
  svg += "</svg>\n";

  // Counts and MAC shares by format class.
  std::vector<size_t> nodes(std::size(kFormatClasses), 0);
  std::vector<double> macs(std::size(kFormatClasses), 0);
  double total = 0;
  for (const auto& l : in.layers) {
    ++nodes[l.klass];
    macs[l.klass] += l.macs;
    total += l.macs;
  }
  std::string legend = "<p class=\"legend\">";
  for (size_t k = 0; k < std::size(kFormatClasses); ++k) {
    if (nodes[k] == 0) continue;
    legend +=
        legend_item(kFormatClasses[k].color, std::string(kFormatClasses[k].label) + ": " + counted(nodes[k], "layer") +
                                                 (total > 0 ? ", " + percent(macs[k] / total, 1) + " of MACs" : ""));
  }
  legend += "</p>\n";
  // One stacked bar: the share of MACs in each format.
  std::string share;
  if (total > 0) {
    const double bar = 1000;
    share = svg_open("chart-mac-share", "MACs by format", bar + 8, 26, "shape-rendering=\"crispEdges\"");
    double x = 4;
    for (size_t k = 0; k < std::size(kFormatClasses); ++k) {
      if (macs[k] <= 0) continue;
      const double w = bar * macs[k] / total;
      share += cell_rect(k, x, 3, w, 20,
                         std::string(kFormatClasses[k].label) + ": " + percent(macs[k] / total, 1) + " of MACs (" +
                             macs_text(macs[k]) + ")");
      if (w > 90) {
        share += svg_text("on-bar", x + 6, 17, "start",
                          std::string(kFormatClasses[k].label) + " " + percent(macs[k] / total, 1));
      }
      x += w;
    }
    share += "</svg>\n";
  }
  std::string body =
      "<p>Every layer of the final model's main graph in topological order (" + count(in.layers.size()) +
      " layers: compute nodes and the arithmetic the config quantizes), coloured by the format its inputs "
      "take; a run of one colour is an island. " +
      std::string(grouped ? "Rows group layers by name scope. " : "Rows hold " + count(kPerRow) + " layers each. ") +
      "Hover a cell for the layer's name.</p>\n" + legend + "<div class=\"scroll wide\">\n" + svg + "</div>\n";
  if (!share.empty()) body += "<h3>Share of the MACs by format</h3>\n" + share;
  if (in.folded_layers > 0) {
    body += note(count(in.folded_layers) +
                 " layers of the input model are not in the final model (folded into the layer before "
                 "them while preparing) and are not shown.");
  }
  if (in.final_analysis) {
    const IslandSummary& s = in.final_analysis->islands;
    body += "<h3>Islands of the final model</h3>\n<p>" + count(s.islands.size()) +
            " islands (connected regions of compute nodes of "
            "one precision): " +
            std::to_string(s.quantized_islands) + " quantized, " + std::to_string(s.bf16_islands) + " bf16, " +
            std::to_string(s.fp16_islands) + " fp16, " + std::to_string(s.float_islands) + " float.</p>\n";
    std::vector<const Island*> largest;
    for (const auto& island : s.islands) largest.push_back(&island);
    std::stable_sort(largest.begin(), largest.end(),
                     [](const Island* a, const Island* b) { return a->node_count > b->node_count; });
    constexpr size_t kIslandsShown = 12;
    std::vector<std::vector<std::string>> rows_of_islands;
    for (size_t i = 0; i < std::min(kIslandsShown, largest.size()); ++i) {
      const Island& island = *largest[i];
      rows_of_islands.push_back({esc(to_string(island.precision)), std::to_string(island.node_count),
                                 esc(island.first_node), esc(island.last_node)});
    }
    body += "<details><summary>The " + count(std::min(kIslandsShown, largest.size())) + " largest islands</summary>\n" +
            table({"precision", "compute nodes", "first", "last"}, rows_of_islands, "sortable",
                  {false, true, false, false}) +
            "</details>\n";
  }
  return Section{"map", "Precision map", body};
}

std::optional<Section> metrics_section(const Inputs& in) {
  std::vector<std::pair<std::string, const Json*>> models;
  const Json& explore = field(in.guide_result("explore"), "result");
  if (!items(explore, "int8_outputs").empty()) models.emplace_back("full INT8", &items(explore, "int8_outputs"));
  if (!items(explore, "lifted_outputs").empty())
    models.emplace_back("every candidate lifted", &items(explore, "lifted_outputs"));
  std::string source;
  if (!items(in.summary, "final_metrics").empty()) {
    models.emplace_back("final", &items(in.summary, "final_metrics"));
  } else if (!items(explore, "final_outputs").empty()) {
    models.emplace_back("final", &items(explore, "final_outputs"));
  } else if (!items(in.guide_result("validate"), "outputs").empty()) {
    models.emplace_back("quantized", &items(in.guide_result("validate"), "outputs"));
  } else if (!in.ledger.empty()) {
    const LedgerStep* best = nullptr;
    for (const auto& s : in.ledger) {
      if (s.decision == "accepted" || (s.decision == "meets" && (!best || s.lifted <= best->lifted))) best = &s;
    }
    if (best && best->outputs.is_array()) {
      models.emplace_back("best so far (step " + count(best->index) + ")", &best->outputs);
      source = "The run did not finish: these are the best step's numbers from the ledger.";
    }
  }
  if (models.empty()) return std::nullopt;
  std::string body =
      "<p>Every output of the model against the FP32 reference on the evaluation samples (accuracy is "
      "measured on CPU).</p>\n";
  if (!source.empty()) body += note(source);
  body += outputs_table(models);
  return Section{"metrics", "Per-output metrics", body};
}

std::optional<Section> compile_section(const Inputs& in) {
  std::string body;
  const Json& compile = in.guide_result("compile");
  if (compile.is_object()) {
    const Json& p = field(compile, "partition");
    const Json& c = field(compile, "coverage");
    const Json& i = field(compile, "islands");
    std::string tiles = "<div class=\"tiles\">\n";
    tiles += tile("integer share of MACs", percent(number(p, "integer_share").value_or(0), 1),
                  "in integer kernels on " + text_of(compile, "provider"));
    tiles +=
        tile("islands", fixed(number(i, "total").value_or(0), 0),
             fixed(number(i, "quantized").value_or(0), 0) + " quantized, " + fixed(number(i, "bf16").value_or(0), 0) +
                 " bf16, " + fixed(number(i, "float").value_or(0), 0) + " float");
    tiles += tile("session build", fixed(number(compile, "session_ms").value_or(0), 1) + " ms",
                  "every graph optimization on");
    tiles += tile("expected compute time", fixed(number(compile, "time_vs_bf16").value_or(0)) + "x full BF16",
                  "starting config " + fixed(number(compile, "start_time_vs_bf16").value_or(0)) + "x, " +
                      macs_text(number(compile, "macs").value_or(0)) + " MACs");
    tiles += "</div>\n";
    body += "<h3>Compile</h3>\n" + tiles;
    std::string kernels;
    for (const auto& [op, n] : field(p, "integer_kernels").items()) {
      kernels += (kernels.empty() ? "" : ", ") + fixed(n.is_number() ? n.get<double>() : 0, 0) + " " + op;
    }
    const auto float_nodes = strings(field(p, "float_nodes"));
    body +=
        facts({{"integer kernels", esc(kernels.empty() ? "none" : kernels)},
               {"compute nodes", fixed(number(c, "quantized").value_or(0), 0) + " quantized, " +
                                     fixed(number(c, "bf16").value_or(0), 0) + " bf16, " +
                                     fixed(number(c, "fp16").value_or(0), 0) + " fp16, " +
                                     fixed(number(c, "float").value_or(0), 0) + " float32 of " +
                                     fixed(number(c, "compute_nodes").value_or(0), 0)},
               {"Q / DQ left", fixed(number(p, "quantize_linear").value_or(0), 0) + " / " +
                                   fixed(number(p, "dequantize_linear").value_or(0), 0)},
               {"edge quantization",
                esc(text_of(field(compile, "edges"), "requested")) +
                    (flag(field(compile, "edges"), "matches").value_or(true) ? "" : " <strong>(MISMATCH)</strong>")},
               {"optimized graph", esc(text_of(compile, "optimized_model"))}});
    if (!float_nodes.empty()) {
      std::string list;
      for (const auto& n : float_nodes) list += "<li>" + esc(n) + "</li>";
      body += "<details><summary>" + count(float_nodes.size()) +
              " compute nodes left in float</summary><ul class=\"lines\">" + list + "</ul></details>\n";
    }
  }
  const Json& exec = in.guide_result("exec");
  if (exec.is_object()) {
    std::vector<std::pair<std::string, double>> bars = {
        {"FP32", number(field(exec, "fp32"), "median_ms").value_or(0)},
        {"final model", number(field(exec, "final"), "median_ms").value_or(0)},
        {"full BF16", number(field(exec, "full_bf16"), "median_ms").value_or(0)}};
    if (field(exec, "full_int8").is_object())
      bars.emplace_back("full INT8", number(field(exec, "full_int8"), "median_ms").value_or(0));
    body += "<h3>Execution on " + esc(text_of(exec, "provider")) + "</h3>\n<p>Median latency of " +
            fixed(number(field(exec, "fp32"), "runs").value_or(0), 0) + " runs after a warm-up; speed-up " +
            fixed(number(exec, "speedup").value_or(0)) + "x over FP32.</p>\n" +
            value_bars("chart-latency", bars, " ms", 2, "final model");
  }
  if (const Json* phase = in.guide_phase("exec")) {
    for (const auto& line : strings(field(*phase, "lines"))) {
      if (line.rfind("red flag", 0) == 0) body += "<p class=\"callout flag\">" + esc(line) + "</p>\n";
    }
  }
  const Json& time = field(in.summary, "expected_time_vs_full_bf16");
  if (number(time, "final")) {
    body += "<h3>Expected compute time on " + esc(text_of(in.summary, "device")) + "</h3>\n<p>" +
            esc(text_of(time, "basis")) + ", relative to the whole model in BF16.</p>\n" +
            value_bars("chart-expected-time",
                       {{"full BF16", 1.0},
                        {"final assignment", *number(time, "final")},
                        {"full INT8", number(time, "full_int8").value_or(0)}},
                       "x", 2, "final assignment");
  }
  if (body.empty()) return std::nullopt;
  return Section{"compile", "Compile and execution", body};
}

std::optional<Section> config_section(const Inputs& in) {
  if (in.final_config_text.empty()) return std::nullopt;
  const std::string name = fs::path(in.final_config_path).filename().string();
  const fs::path config = fs::path(in.dir_text) / name;
  const fs::path stats = fs::path(in.dir_text) / "stats.json";
  std::string model = in.model_path.empty() ? "MODEL.onnx" : in.model_path;
  const std::string output = fs::path(model).stem().string() + ".mixed.onnx";
  std::string command = "mixprec quantize " + model + " --config " + config.string();
  if (in.has("stats.json")) command += " --stats " + stats.string();
  command += " -o " + output;
  std::string body = "<p>" + esc(name) +
                     " reproduces the final assignment: with the work dir's statistics, quantize "
                     "gives back the very same model.</p>\n";
  body += "<pre class=\"command\" id=\"reproduce-command\">" + esc(command) + "</pre>\n";
  body += "<p><button type=\"button\" class=\"copy\" data-copy=\"final-config\">Copy the config</button></p>\n";
  body += "<pre class=\"config\" id=\"final-config\">" + esc(in.final_config_text) + "</pre>\n";
  return Section{"config", "Reproducing config", body};
}

Section warnings_section(const Inputs& in) {
  std::vector<std::string> all;
  std::set<std::string> seen;
  const auto add = [&](const std::string& w) {
    if (!w.empty() && seen.insert(w).second) all.push_back(w);
  };
  for (const auto& w : strings(field(in.command, "warnings"))) add(w);
  for (const auto& w : strings(field(in.guide, "warnings"))) add(w);
  for (const auto& w : strings(field(in.dry_run, "warnings"))) add(w);
  for (const auto& w : in.notes) add("report: " + w);
  std::string body;
  if (all.empty()) {
    body = "<p>None recorded.</p>\n";
  } else {
    body = "<ul class=\"warnings\">\n";
    for (const auto& w : all) body += "<li>" + esc(w) + "</li>\n";
    body += "</ul>\n";
  }
  return {"warnings", "Warnings (" + count(all.size()) + ")", body};
}

struct KnownFile {
  const char* name;
  const char* what;
};
constexpr KnownFile kKnownFiles[] = {
    {"command.json", "how the command ran and ended, its warnings"},
    {"run.json", "the search's settings (checked by --resume)"},
    {"stats.json", "calibration statistics, shared by every preset and rerun"},
    {"sensitivity.json", "the ranking of the candidate layers"},
    {"ledger.jsonl", "one line per search step"},
    {"pareto.json", "the accuracy / expected-time curve the search saw"},
    {"final.onnx", "the best assignment's model"},
    {"final_config.json", "the config that reproduces it"},
    {"summary.json", "the search's outcome"},
    {"guide.json", "guide's phases"},
    {"dry_run.json", "the dry-run table"},
    {"quantized.onnx", "guide's quantized model"},
    {"quantized.config.json", "guide's config"},
    {"final.optimized.onnx", "the final model as ONNX Runtime optimizes it"},
    {"vitisai_config.json", "the VitisAI provider's config file: the compiler options"},
    {"deployment.json", "provider options, device, formats, edges and compiler options"},
    {"edge_probe.onnx", "--edge-quant-auto: the final model with the runtime doing its edge Q/DQ"},
};

Section files_section(const Inputs& in) {
  std::vector<std::pair<std::string, std::string>> entries;  // name, size
  for (const auto& entry : fs::directory_iterator(in.dir)) {
    const std::string name = entry.path().filename().string();
    // Hidden files (the work dir's lock) and temporaries are the tool's business, not results.
    if (name == "report.html" || name.starts_with('.') || name.find(".tmp-") != std::string::npos) continue;
    std::error_code ec;
    if (entry.is_directory(ec)) {
      size_t files = 0;
      for (const auto& sub : fs::recursive_directory_iterator(entry.path(), ec))
        files += sub.is_regular_file(ec) ? 1 : 0;
      entries.emplace_back(name + "/", count(files) + " files");
    } else {
      const auto size = entry.file_size(ec);
      entries.emplace_back(name, ec                ? "-"
                                 : size >= 1000000 ? fixed(static_cast<double>(size) / 1e6, 1) + " MB"
                                 : size >= 1000    ? fixed(static_cast<double>(size) / 1e3, 1) + " kB"
                                                   : std::to_string(size) + " B");
    }
  }
  std::sort(entries.begin(), entries.end());
  std::vector<std::vector<std::string>> rows;
  for (const auto& [name, size] : entries) {
    std::string what;
    for (const auto& k : kKnownFiles) {
      if (name == k.name) what = k.what;
    }
    if (what.empty() && name.rfind("dry_run_", 0) == 0) what = "a dry-run row's model";
    if (what.empty() && name.rfind("ladder_", 0) == 0) what = "a ladder rung's model or config";
    rows.push_back({"<a href=\"" + esc(name) + "\">" + esc(name) + "</a>", esc(size), esc(what)});
  }
  return {"files", "Files in the work dir",
          "<p>" + esc(in.dir_text) + "</p>\n" + table({"file", "size", "what"}, rows, "", {false, true, false})};
}

// --- the page --------------------------------------------------------------------------------------

// Colours of the map cells come from the one format table above.
std::string format_css() {
  std::string css;
  for (const auto& k : kFormatClasses) css += "svg .cell." + std::string(k.name) + "{fill:" + k.color + "}\n";
  return css;
}

std::string page(const Inputs& in, const std::vector<Section>& sections) {
  std::string kind = text_of(in.command, "command");
  if (kind.empty()) kind = !in.guide.is_null() ? "guide" : in.explored() ? "explore" : "dry-run";
  const std::string model =
      in.model_path.empty() ? fs::path(in.dir_text).filename().string() : fs::path(in.model_path).filename().string();
  std::string subtitle = kind;
  const std::string device = !text_of(in.summary, "device").empty() ? text_of(in.summary, "device")
                             : !text_of(in.guide, "device").empty() ? text_of(in.guide, "device")
                                                                    : text_of(in.dry_run, "device");
  if (!device.empty()) subtitle += " \xC2\xB7 device " + device;
  if (!text_of(in.run, "target").empty()) subtitle += " \xC2\xB7 target " + text_of(in.run, "target");
  subtitle += " \xC2\xB7 work dir " + in.dir_text;

  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>mixprec report: " +
      esc(model) + "</title>\n<style>" + html::page_style() + format_css() + "</style>\n</head>\n<body>\n";
  out += "<header><h1>mixprec report: " + esc(model) + "</h1><p>" + esc(subtitle) + "</p></header>\n<nav>";
  for (const auto& s : sections) out += "\n<a href=\"#" + s.id + "\">" + esc(s.title) + "</a>";
  out += "</nav>\n<main>\n" + status_banner(in);
  for (const auto& s : sections)
    out += "<section id=\"" + s.id + "\">\n<h2>" + esc(s.title) + "</h2>\n" + s.body + "</section>\n";
  out += "</main>\n<script>" + std::string(html::page_script()) + "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace

std::string html_report(const std::string& work_dir, const HtmlReportOptions& options) {
  const Inputs in = read_inputs(work_dir, options);
  const MetricView metric = metric_view(in);
  std::vector<Section> sections;
  sections.push_back(summary_section(in, metric));
  sections.push_back(model_section(in));
  for (auto section :
       {recipe_section(in), guide_section(in), sensitivity_section(in), trajectory_section(in, metric),
        tradeoff_section(in, metric), map_section(in), metrics_section(in), compile_section(in), config_section(in)}) {
    if (section) sections.push_back(std::move(*section));
  }
  sections.push_back(warnings_section(in));
  sections.push_back(files_section(in));
  return page(in, sections);
}

std::string write_html_report(const std::string& work_dir, const std::string& output_path,
                              const HtmlReportOptions& options) {
  const std::string path = output_path.empty() ? (fs::path(work_dir) / "report.html").string() : output_path;
  write_file_atomically(path, html_report(work_dir, options));
  return path;
}

}  // namespace mixprec
