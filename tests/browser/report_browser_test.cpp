// report.html in a real browser: Debian's chromium, headless (scripts/setup.sh installs it),
// renders the report of a tiny explore run. The screenshot must show the page (not blank, the
// format colours of the charts drawn) and the DOM chromium builds must hold every chart's SVG
// with all its elements, and show the inline script ran.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include "mixprec/explore.h"
#include "mixprec/html_report.h"
#include "mixprec/model_io.h"
#include "support/cli_runner.h"
#include "support/explore_models.h"
#include "support/html_check.h"
#include "support/temp_dir.h"
#include "tensor/image_decode.h"

namespace mixprec {
namespace {
namespace fs = std::filesystem;

constexpr int kWidth = 1280, kHeight = 2000;
// Share of the window a rendered report covers with something other than the page and card
// backgrounds: measured 15% for this report (21% for the PP-OCR det run's); the header and
// navigation bar alone cover about 5%, a blank page 0.
constexpr double kMinInkShare = 0.10;

std::string find_on_path(const std::vector<std::string>& names) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    for (const auto& name : names) {
      const fs::path candidate = fs::path(dir) / name;
      if (fs::exists(candidate)) return candidate.string();
    }
  }
  return "";
}

class ReportBrowserTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    chromium_ = find_on_path({"chromium", "chromium-browser"});
    timeout_ = find_on_path({"timeout"});
    ASSERT_FALSE(chromium_.empty()) << "chromium is not installed: run scripts/setup.sh";
    ASSERT_FALSE(timeout_.empty());
  }

  // chromium headless with a fresh profile and nothing that reaches the network.
  testing::CliResult chromium(const std::vector<std::string>& args) {
    static int profile = 0;
    std::vector<std::string> all = {"120",
                                    chromium_,
                                    "--headless",
                                    "--no-sandbox",
                                    "--disable-gpu",
                                    "--disable-quic",
                                    "--no-first-run",
                                    "--disable-background-networking",
                                    "--disable-component-update",
                                    "--disable-sync",
                                    "--hide-scrollbars",
                                    "--user-data-dir=" + path("profile_" + std::to_string(profile++))};
    all.insert(all.end(), args.begin(), args.end());
    return testing::run_cli_at(timeout_, all);
  }

  // The report of a greedy search on the two-branch model (two layers lifted).
  std::string report() {
    save_model(testing::two_sensitive_layers_model(), path("model.onnx"));
    ExploreParams p;
    p.setup = testing::test_setup(path("model.onnx"), path("work"));
    p.search.bf16_budget = 0.4;
    const ExploreResult r = explore(p);
    EXPECT_EQ(r.lifted_layers.size(), 2u) << r.stop_reason;
    return write_html_report(path("work"));
  }

  std::string chromium_, timeout_;
};

TEST_F(ReportBrowserTest, ScreenshotShowsTheChartsAndTheDomHoldsTheirSvg) {
  const std::string html_path = report();
  const std::string url = "file://" + fs::absolute(html_path).string();

  const testing::CliResult shot =
      chromium({"--screenshot=" + path("shot.png"),
                "--window-size=" + std::to_string(kWidth) + "," + std::to_string(kHeight), url});
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  ASSERT_TRUE(fs::exists(path("shot.png"))) << shot.err;
  const RgbImage image = decode_image_rgb(path("shot.png"));
  ASSERT_EQ(image.width, kWidth);
  ASSERT_EQ(image.height, kHeight);
  size_t ink = 0, int8_pixels = 0, bf16_pixels = 0, header_pixels = 0;
  std::set<uint32_t> colours;
  for (size_t i = 0; i + 2 < image.pixels.size(); i += 3) {
    const uint8_t r = image.pixels[i], g = image.pixels[i + 1], b = image.pixels[i + 2];
    const uint32_t rgb = uint32_t{r} << 16 | uint32_t{g} << 8 | b;
    colours.insert(rgb);
    if (rgb != 0xf4f6f9 && rgb != 0xffffff) ++ink;  // page background, card background
    int8_pixels += rgb == 0x2b6cb0 ? 1 : 0;         // INT8 / compute-op blue
    bf16_pixels += rgb == 0xed8936 ? 1 : 0;         // BF16 orange: the lifted layers' bars
    header_pixels += rgb == 0x1a365d ? 1 : 0;
  }
  const double share = static_cast<double>(ink) / (static_cast<double>(kWidth) * kHeight);
  std::cout << "screenshot: " << share << " of the window inked, " << colours.size() << " colours\n";
  EXPECT_GT(share, kMinInkShare) << "the page looks blank";
  EXPECT_GT(colours.size(), 50u) << "no text or charts drawn";
  EXPECT_GT(header_pixels, static_cast<size_t>(kWidth) * 40) << "the header is not drawn";
  EXPECT_GT(int8_pixels, 500u) << "no INT8-coloured bars";
  EXPECT_GT(bf16_pixels, 500u) << "no BF16-coloured bars (the lifted layers)";

  const testing::CliResult dom = chromium({"--dump-dom", url});
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  for (const char* id : {"chart-ops", "chart-ranking", "chart-trajectory", "chart-tradeoff", "chart-map",
                         "chart-mac-share", "chart-expected-time"}) {
    EXPECT_NE(dom.out.find("<svg id=\"" + std::string(id) + "\""), std::string::npos) << id;
  }
  // Every SVG element of the file made it into the browser's DOM.
  const auto in_file = testing::element_counts(read_file(html_path, "report"));
  const auto in_dom = testing::element_counts(dom.out);
  for (const char* element : {"svg", "rect", "circle", "text", "title", "section", "table"}) {
    EXPECT_EQ(in_dom.count(element) ? in_dom.at(element) : 0, in_file.at(element)) << element;
  }
  EXPECT_NE(dom.out.find("<html lang=\"en\" class=\"js\">"), std::string::npos) << "the inline script did not run";
}

}  // namespace
}  // namespace mixprec
