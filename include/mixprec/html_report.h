// The HTML report of a work dir (SPEC "Report"): one self-contained file a person opens in a
// browser and sends to a colleague. Inline CSS and SVG, no network fetch, no external script;
// everything reads without JavaScript (a few lines of inline script sort tables and copy the
// config).
//
// Contract:
// - It reads only the work dir (and the input model the work dir names), so it works on the
//   files a crashed or interrupted run left and on work dirs older than this report. Files it
//   reads, each optional:
//     command.json      the CLI's record: {command, model, work_dir, status, error, warnings}
//                       (status: "running", "done", "error", "interrupted")
//     run.json, summary.json, ledger.jsonl, sensitivity.json, final.onnx, final_config.json,
//     pareto.json (and the configs its points name)   explore's
//     guide.json        guide's phases so far (guide_report_to_json, mixprec/guide_report.h)
//     dry_run.json      dry_run_to_json (mixprec/workflow_report.h)
//   Optional ledger fields (time_vs_bf16, transitions) and pareto.json are drawn when present.
//   A missing section is left out or says why; a file that does not parse becomes a line under
//   Warnings and the rest of the report is still made. A ledger line cut by a crash is dropped.
// - Sections: summary, model (task, architecture, inputs/outputs, op histogram), the dry-run /
//   ladder / recipe tables, guide's phases, the sensitivity ranking (every candidate with its
//   score, op type and MACs), the exploration trajectory (metric vs step), the trade-off curve
//   (metric vs expected compute time, the chosen point marked), the precision map (every layer
//   of the main graph in topological order coloured by format, grouped in rows), per-output
//   metrics, compile/exec figures, the config that reproduces the result, warnings and the
//   work dir's files.
// - Deterministic: the same work dir gives the same bytes (no clock, no absolute paths beyond
//   the ones the files record).
// - kBadInput naming the dir when it is not a directory or holds none of the files above.
#pragma once

#include <string>

namespace mixprec {

struct HtmlReportOptions {
  // The input model: its analysis fills the model section and its layers the precision map.
  // Empty: the path the work dir records (command.json, summary.json, guide.json); when none is
  // found or readable, the final model stands in, with a note.
  std::string model_path;
};

std::string html_report(const std::string& work_dir, const HtmlReportOptions& options = {});

// html_report() written atomically to `output_path` (empty: WORK_DIR/report.html). Returns the
// path written.
std::string write_html_report(const std::string& work_dir, const std::string& output_path = "",
                              const HtmlReportOptions& options = {});

}  // namespace mixprec
