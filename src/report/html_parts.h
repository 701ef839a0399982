// The pieces html_report.cpp builds its page from: escaping and fixed-format numbers (so the
// bytes depend only on the values), SVG charts (axes, markers, bars) and HTML tables and tiles,
// and the page's inline style and script. Internal to src/report. Every function returns
// well-formed markup; text arguments are escaped here unless a parameter says it is HTML.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mixprec::html {

// --- text and numbers ------------------------------------------------------------------------
std::string esc(std::string_view text);                // & < > " ' as entities
std::string fixed(double value, int digits = 2);       // "%.*f"; never "-0.00"; "inf", "-inf", "-" (NaN)
std::string general(double value);                     // "%.4g"
std::string percent(double fraction, int digits = 2);  // 0.9967 -> "99.67%"
std::string count(size_t n);
std::string counted(size_t n, const std::string& noun);  // "1 layer", "12 layers"
std::string macs_text(double macs);                      // "1.23 G", "45.6 M", "789.0 k", "12"
// At most `chars` UTF-8 code points, keeping the end (a node name's most specific part) after "…".
std::string keep_tail(const std::string& name, size_t chars);

// --- SVG -------------------------------------------------------------------------------------
// <svg id class="chart" role="img" ...> with its size and viewBox; `extra`: more attributes.
std::string svg_open(const std::string& id, const std::string& label, double width, double height,
                     const std::string& extra = "");
std::string svg_line(const std::string& css, double x1, double y1, double x2, double y2);
// `anchor`: "start", "middle" or "end".
std::string svg_text(const std::string& css, double x, double y, const std::string& anchor, const std::string& text);
// A filled rectangle with a hover title (none when empty); `css` adds a class (which may carry
// the fill instead).
std::string svg_rect(double x, double y, double width, double height, const std::string& fill, const std::string& title,
                     const std::string& css = "");

struct Range {
  double lo = 0, hi = 1;
};
// The values' range widened by `pad_fraction` of it on each side (a single value: +-5%, at least 0.5).
Range span_of(const std::vector<double>& values, double pad_fraction);
// About `wanted` round ticks (steps of 1, 2 or 5 x 10^k) inside the range.
std::vector<double> ticks(Range range, int wanted);

// A plot area inside an SVG of width x height, with room for the axes' labels around it.
class Plot {
 public:
  Plot(double width, double height, Range x, Range y) : width_(width), height_(height), x_(x), y_(y) {}

  double x(double v) const;
  double y(double v) const;
  std::string open(const std::string& id, const std::string& label) const;
  // Grid lines, ticks and the axis titles; `integer_x`: x ticks on whole numbers >= 1 (steps);
  // `x_suffix` follows every x tick ("x" for times).
  std::string axes(const std::string& x_label, const std::string& y_label, bool integer_x = false,
                   const std::string& x_suffix = "") const;
  // Dashed reference lines with a label; nothing when the value is outside the range.
  std::string hline(double value, const std::string& label, const std::string& css) const;
  std::string vline(double value, const std::string& label, const std::string& css) const;

 private:
  static constexpr double kLeft = 64, kRight = 24, kTop = 16, kBottom = 44;
  double left() const { return kLeft; }
  double right() const { return width_ - kRight; }
  double top() const { return kTop; }
  double bottom() const { return height_ - kBottom; }

  double width_, height_;
  Range x_, y_;
};

enum class MarkerShape { kDot, kRing, kCross, kStar };
// A data point with its hover title.
std::string marker(MarkerShape shape, double x, double y, const std::string& color, const std::string& title,
                   double r = 4.5);

// Labelled horizontal bars with their values ("0.79x"); the bar labelled `highlight` stands out.
std::string value_bars(const std::string& id, const std::vector<std::pair<std::string, double>>& bars,
                       const std::string& unit, int digits, const std::string& highlight);

// --- HTML ------------------------------------------------------------------------------------
// A legend entry: a swatch of `color` (its shape from `css`: "swatch", "swatch dot", ...) and a label.
std::string legend_item(const std::string& color, const std::string& label, const std::string& css = "swatch");
// Cells are HTML; headers are text. `numeric[i]` right-aligns column i; css "sortable" lets the
// page's script sort by a header click.
std::string table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows,
                  const std::string& css = "", const std::vector<bool>& numeric = {});
// Key (text) / value (HTML) rows.
std::string facts(const std::vector<std::pair<std::string, std::string>>& rows);
// A key figure: label, value and a line under it; css "pass" / "fail" colours the value.
std::string tile(const std::string& label, const std::string& value, const std::string& sub,
                 const std::string& css = "");
std::string verdict_badge(bool pass);
std::string note(const std::string& text);

// --- the page --------------------------------------------------------------------------------
const char* page_style();   // the CSS (map cell colours come from the report's format table)
const char* page_script();  // sorts tables and copies the config; the page reads without it

}  // namespace mixprec::html
