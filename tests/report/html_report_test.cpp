// The HTML report of work dirs made in the test: a tiny explore run (support/explore_models.h),
// the same run stopped half-way, one with the search's optional per-step times and pareto.json,
// and a dry run. Each report must hold its sections and every lifted layer, be well formed
// (support/html_check.h) and come out byte for byte the same from the same work dir.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "mixprec/config.h"
#include "mixprec/error.h"
#include "mixprec/explore.h"
#include "mixprec/html_report.h"
#include "mixprec/model_io.h"
#include "mixprec/workflow.h"
#include "mixprec/workflow_report.h"
#include "support/explore_models.h"
#include "mixprec/guide.h"
#include "mixprec/guide_report.h"
#include "support/html_check.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using testing::element_by_id;
using testing::html_problems;

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines, const std::string& tail = "") {
  std::ofstream out(path, std::ios::trunc);
  for (const auto& line : lines) out << line << '\n';
  out << tail;
}

class HtmlReportTest : public testing::TempDirTest {
 protected:
  // Greedy over the two-branch model: "mix_1" and "mix_2" must both be lifted for PSNR > 30 dB.
  ExploreResult explore_into(const std::string& work_dir) {
    save_model(testing::two_sensitive_layers_model(), path("model.onnx"));
    ExploreParams p;
    p.setup = testing::test_setup(path("model.onnx"), path(work_dir));
    p.search.bf16_budget = 0.4;
    p.search.ranking = Ranking::kDynamicRange;
    return explore(p);
  }
};

TEST(HtmlCheckTest, FindsWhatABrowserWouldRepair) {
  const std::string head = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>t</title></head><body>";
  EXPECT_TRUE(html_problems(head + "<p>a &amp; b</p><svg><rect x=\"1\"/></svg></body></html>").empty());
  EXPECT_FALSE(html_problems(head + "<div><p>unclosed</div></body></html>").empty());
  EXPECT_FALSE(html_problems(head + "<p>a & b</p></body></html>").empty());
  EXPECT_FALSE(html_problems(head + "<p id=\"x\"></p><p id=\"x\"></p></body></html>").empty());
  EXPECT_FALSE(html_problems(head + "<a href=\"#nowhere\">x</a></body></html>").empty());
  EXPECT_FALSE(html_problems(head + "<p class=x>unquoted</p></body></html>").empty());
  EXPECT_FALSE(html_problems(head + "<div/></body></html>").empty());
  EXPECT_FALSE(html_problems(head + "<p>\xC3</p></body></html>").empty());  // cut UTF-8
  EXPECT_FALSE(html_problems("<html><head><title>t</title></head><body></body></html>").empty());
}

TEST_F(HtmlReportTest, ExploreWorkDirHasEverySectionEveryLayerAndParses) {
  const ExploreResult r = explore_into("work");
  ASSERT_EQ(r.lifted_layers, (std::vector<std::string>{"mix_1", "mix_2"})) << r.stop_reason;
  const std::string html = html_report(path("work"));
  EXPECT_EQ(html_problems(html), std::vector<std::string>{});

  for (const char* id : {"summary", "model", "recipe", "sensitivity", "trajectory", "tradeoff", "map", "metrics",
                         "compile", "config", "warnings", "files"}) {
    EXPECT_NE(html.find("<section id=\"" + std::string(id) + "\">"), std::string::npos) << id;
    EXPECT_NE(html.find("<a href=\"#" + std::string(id) + "\">"), std::string::npos) << id;
  }
  // Every candidate is a row of the ranking chart, the lifted ones drawn as lifted.
  const std::string ranking = element_by_id(html, "chart-ranking");
  EXPECT_EQ(occurrences(ranking, "<g class=\"row"), r.ranking.size());
  EXPECT_EQ(occurrences(ranking, "<g class=\"row lifted\">"), r.lifted_layers.size());
  for (const auto& layer : r.ranking) EXPECT_NE(ranking.find(">" + layer + "</text>"), std::string::npos) << layer;
  // The map: every layer of the graph once, the lifted ones in BF16, the rest of the candidates in INT8.
  const std::string map = element_by_id(html, "chart-map");
  EXPECT_EQ(occurrences(map, "<rect class=\"cell bf16\""), 2u);
  EXPECT_EQ(occurrences(map, "<rect class=\"cell int8\""), r.compute_layers - 2);
  for (const auto& layer : r.lifted_layers)
    EXPECT_NE(map.find(" " + layer + " (MatMul): bf16"), std::string::npos) << layer;
  // One marker per ledger step, titled with its decision.
  const std::string trajectory = element_by_id(html, "chart-trajectory");
  EXPECT_EQ(occurrences(trajectory, "<title>step "), r.steps.size());
  EXPECT_NE(trajectory.find("target psnr&gt;30"), std::string::npos);
  // The model, its outputs and the config that reproduces the run, as written.
  EXPECT_NE(html.find("<title>mixprec report: model.onnx</title>"), std::string::npos);
  EXPECT_NE(html.find("<strong>regression</strong>"), std::string::npos);
  const std::string config = element_by_id(html, "final-config");
  EXPECT_NE(config.find("mix_1"), std::string::npos);
  EXPECT_NE(html.find("mixprec quantize "), std::string::npos);
  // The trade-off: every step at its expected time, the non-dominated points of pareto.json
  // joined, the final assignment marked, each point's config linked.
  ASSERT_FALSE(r.pareto.empty());
  const std::string tradeoff = element_by_id(html, "chart-tradeoff");
  EXPECT_EQ(occurrences(tradeoff, "<title>step "), r.steps.size());
  EXPECT_NE(tradeoff.find("<path class=\"front\""), std::string::npos);
  EXPECT_EQ(occurrences(tradeoff, "<title>chosen: "), 1u);
  EXPECT_NE(html.find("<a href=\"" + r.pareto.front().config_path + "\">"), std::string::npos);
  // Self-contained: no fetch of anything.
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

TEST_F(HtmlReportTest, SameWorkDirGivesTheSameBytes) {
  explore_into("work");
  const std::string first = html_report(path("work"));
  EXPECT_EQ(html_report(path("work")), first);
  const std::string written = write_html_report(path("work"));
  EXPECT_EQ(written, path("work/report.html"));
  EXPECT_EQ(read_file(written, "report"), first);
  EXPECT_EQ(html_report(path("work")), first);  // its own report.html is not part of it
}

TEST_F(HtmlReportTest, AStoppedRunStillGivesAReportOfItsBestState) {
  const ExploreResult r = explore_into("work");
  ASSERT_GE(r.steps.size(), 2u);
  // As a crash leaves it: no summary.json, the last ledger line cut half-way.
  fs::remove(path("work/summary.json"));
  auto lines = lines_of(path("work/ledger.jsonl"));
  const std::string cut = lines.back().substr(0, lines.back().size() / 2);
  lines.pop_back();
  write_lines(path("work/ledger.jsonl"), lines, cut);
  const std::string html = html_report(path("work"), {.model_path = path("model.onnx")});
  EXPECT_EQ(html_problems(html), std::vector<std::string>{});
  EXPECT_NE(html.find("did not finish"), std::string::npos);
  EXPECT_NE(html.find("incomplete (the run stopped while writing it)"), std::string::npos);
  EXPECT_EQ(occurrences(element_by_id(html, "chart-trajectory"), "<title>step "), r.steps.size() - 1);
  EXPECT_NE(html.find("best so far (step "), std::string::npos);
  EXPECT_NE(html.find("<section id=\"map\">"), std::string::npos);

  // A corrupt file costs its section, not the report.
  std::ofstream(path("work/sensitivity.json")) << "{\"ranking\": ";
  const std::string degraded = html_report(path("work"));
  EXPECT_EQ(html_problems(degraded), std::vector<std::string>{});
  EXPECT_NE(degraded.find("sensitivity.json: not valid JSON"), std::string::npos);
  EXPECT_EQ(degraded.find("id=\"chart-ranking\""), std::string::npos);
}

TEST_F(HtmlReportTest, AWorkDirFromBeforeTheCostModelHasNoTradeOffChartAndSaysWhy) {
  explore_into("work");
  // As a search before the cost model left it: no per-step time or transitions, no pareto.json.
  auto lines = lines_of(path("work/ledger.jsonl"));
  for (auto& line : lines) {
    Json j = Json::parse(line);
    j.erase("time_vs_bf16");
    j.erase("transitions");
    line = j.dump();
  }
  write_lines(path("work/ledger.jsonl"), lines);
  fs::remove(path("work/pareto.json"));
  fs::remove_all(path("work/pareto"));
  const std::string html = html_report(path("work"));
  EXPECT_EQ(html_problems(html), std::vector<std::string>{});
  EXPECT_EQ(html.find("id=\"chart-tradeoff\""), std::string::npos);
  EXPECT_NE(element_by_id(html, "tradeoff").find("older search"), std::string::npos);
  EXPECT_EQ(element_by_id(html, "trajectory").find(">transitions</th>"), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-trajectory\""), std::string::npos);
}

// Thousands of layers stay readable: rows grouped by the names' scopes, every layer a cell.
TEST_F(HtmlReportTest, AMapOfThousandsOfLayersGroupsThemByNameScope) {
  constexpr int kStages = 3, kPerStage = 1000;
  testing::ModelBuilder b;
  b.add_input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_output("y", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}})
      .add_initializer("w", {4, 4}, std::vector<float>(16, 0.25f));
  std::string previous = "x";
  for (int k = 0; k < kStages; ++k) {
    for (int i = 0; i < kPerStage; ++i) {
      const bool last = k == kStages - 1 && i == kPerStage - 1;
      // Appended, not "t" + std::string: GCC 12's -Wrestrict misfires on that inlined form.
      std::string out = "y";
      if (!last) out = std::string("t").append(std::to_string(k)).append("_").append(std::to_string(i));
      std::string name = "/stage";
      name.append(std::to_string(k)).append("/block").append(std::to_string(i / 10)).append("/mm").append(std::to_string(i));
      b.add_node("MatMul", {previous, "w"}, {out}, {}, name);
      previous = out;
    }
  }
  save_model(b.build(), path("big.onnx"));
  // A work dir as explore leaves it, for the map: the config (stage 1's first 100 layers lifted).
  QuantConfig config = *preset_config("XINT8");
  config.specific.push_back({.target_node_names = {"^/stage1/block[0-9]/.*"}, .layer_config = preset_config("BF16")->global});
  fs::create_directories(path("work"));
  save_config(config, path("work/final_config.json"));
  write_file_atomically(path("work/summary.json"), Json{{"model", path("big.onnx")}}.dump());

  const std::string html = html_report(path("work"));
  EXPECT_EQ(html_problems(html), std::vector<std::string>{});
  const std::string map = element_by_id(html, "chart-map");
  EXPECT_EQ(occurrences(map, "<rect class=\"cell "), size_t{kStages * kPerStage});
  EXPECT_EQ(occurrences(map, "<rect class=\"cell bf16\""), 100u);
  for (int k = 0; k < kStages; ++k) EXPECT_NE(map.find(">/stage" + std::to_string(k) + "</text>"), std::string::npos) << k;
  EXPECT_NE(map.find("<title>#1001 /stage1/block0/mm0 (MatMul): bf16, "), std::string::npos);
}

TEST_F(HtmlReportTest, DryRunWorkDirShowsItsTableAndRecommendation) {
  save_model(testing::one_sensitive_layer_model(), path("model.onnx"));
  DryRunParams p;
  p.setup = testing::test_setup(path("model.onnx"), path("dry"));
  p.setup.criterion.target.reset();  // the task's own criterion
  const DryRunReport r = dry_run(p);
  write_file_atomically(path("dry/dry_run.json"), dry_run_to_json(r).dump(2));
  const std::string html = html_report(path("dry"), {.model_path = path("model.onnx")});
  EXPECT_EQ(html_problems(html), std::vector<std::string>{});
  const std::string recipe = element_by_id(html, "recipe");
  for (const auto& row : r.rows) EXPECT_NE(recipe.find("<td>" + row.label + "</td>"), std::string::npos) << row.label;
  EXPECT_NE(recipe.find("Recommendation: " + r.recommendation.action), std::string::npos);
  EXPECT_EQ(html.find("<section id=\"sensitivity\">"), std::string::npos);  // nothing explored
  EXPECT_NE(html.find("<section id=\"model\">"), std::string::npos);
}

// guide's recovery ladder is a table in the recipe section: every rung measured, the kept one
// marked, AdaRound's learned layers counted.
TEST_F(HtmlReportTest, GuideWorkDirShowsItsRecoveryLadder) {
  save_model(testing::one_sensitive_layer_model(), path("model.onnx"));
  GuideParams p;
  p.setup = testing::test_setup(path("model.onnx"), path("guide"));
  const GuideReport r = guide(p);
  write_file_atomically(path("guide/guide.json"), guide_report_to_json(r).dump(2));
  const RecoverResult* recover = r.result<RecoverResult>();
  ASSERT_NE(recover, nullptr);
  ASSERT_EQ(recover->trials.size(), 2u);  // the quantize phase's config, then AdaRound on the two MatMuls
  const std::string html = html_report(path("guide"), {.model_path = path("model.onnx")});
  EXPECT_EQ(html_problems(html), std::vector<std::string>{});
  const std::string recipe = element_by_id(html, "recipe");
  EXPECT_NE(recipe.find("Recovery ladder on the same statistics"), std::string::npos);
  EXPECT_NE(recipe.find("<td>no algorithm (quantize)" + std::string(recover->kept == 0 ? " <strong>(kept)</strong>" : "") +
                        "</td>"),
            std::string::npos)
      << recipe;
  EXPECT_NE(recipe.find("<td>adaround" + std::string(recover->kept == 1 ? " <strong>(kept)</strong>" : "") + "</td>"),
            std::string::npos)
      << recipe;
  EXPECT_NE(recipe.find(std::to_string(recover->trials[1].learned_layers) + " learned, 0 reused"), std::string::npos);
}

TEST_F(HtmlReportTest, AFolderThatIsNoWorkDirIsBadInputNamingIt) {
  fs::create_directories(path("empty"));
  try {
    html_report(path("empty"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find(path("empty")), std::string::npos) << e.what();
  }
  EXPECT_THROW(html_report(path("missing")), Error);
}

}  // namespace
}  // namespace mixprec
