#include "report/html_parts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>

namespace mixprec::html {
namespace {

int tick_digits(const std::vector<double>& t) {
  if (t.size() < 2) return 2;
  const double step = t[1] - t[0];
  return step >= 1 ? 0 : step >= 0.1 ? 1 : step >= 0.01 ? 2 : 3;
}

constexpr const char kStyle[] = R"CSS(
:root{--ink:#1a202c;--muted:#4a5568;--line:#e2e8f0;--card:#fff;--bg:#f4f6f9;--accent:#2b6cb0}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 "DejaVu Sans",system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
header{background:#1a365d;color:#fff;padding:18px 28px 14px}
header h1{margin:0;font-size:22px;font-weight:600}
header p{margin:4px 0 0;color:#cbd5e0}
nav{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid var(--line);padding:6px 28px;font-size:13px}
nav a{color:var(--accent);text-decoration:none;margin-right:16px;white-space:nowrap}
main{max-width:1180px;margin:0 auto;padding:14px 20px 40px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 20px 16px;margin:14px 0}
h2{font-size:18px;margin:0 0 8px}
h3{font-size:15px;margin:16px 0 6px}
h4{font-size:14px;margin:12px 0 4px}
p{margin:6px 0}
.note{color:var(--muted);font-style:italic}
.banner{padding:10px 16px;border-radius:6px;margin:14px 0 0;font-weight:600}
.banner.warn{background:#fefcbf;border:1px solid #ecc94b}
.banner.error{background:#fed7d7;border:1px solid #fc8181}
.tiles{display:flex;flex-wrap:wrap;gap:10px;margin:6px 0 10px}
.tile{flex:1 1 180px;border:1px solid var(--line);border-radius:6px;padding:8px 12px;background:#f8fafc}
.tile-label{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.03em}
.tile-value{font-size:22px;font-weight:600;margin:2px 0}
.tile-sub{font-size:12px;color:var(--muted)}
.tile.pass .tile-value{color:#276749}
.tile.fail .tile-value{color:#c53030}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:4px 10px;text-align:left;vertical-align:top}
thead th{background:#edf2f7;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
table.facts th{background:none;color:var(--muted);font-weight:normal;white-space:nowrap}
table.sortable thead th{cursor:pointer}
.badge{display:inline-block;padding:0 6px;border-radius:4px;font-size:12px;font-weight:700;color:#fff}
.badge.pass{background:#2f855a}.badge.fail{background:#c53030}
.status{font-weight:600}.status.pass,.status.done{color:#276749}.status.fail{color:#c53030}.status.skipped,.status.notrun{color:var(--muted)}
ul.lines{margin:0;padding-left:16px}
ul.lines li.flag,.callout.flag{color:#9b2c2c}
.callout{background:#ebf8ff;border-left:4px solid var(--accent);padding:8px 12px}
.legend{font-size:13px;color:var(--muted)}
.legend-item{margin-right:16px;white-space:nowrap}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.swatch.dot,.swatch.star{border-radius:50%}
.swatch.ring{border-radius:50%;background:#fff!important;border:2px solid #718096}
.swatch.cross{border-radius:0;width:10px;height:10px;transform:rotate(45deg)}
.scroll{max-height:560px;overflow:auto;border:1px solid var(--line);border-radius:4px}
.scroll.wide{max-height:720px}
details{margin:8px 0}
summary{cursor:pointer;color:var(--accent)}
pre{background:#f7fafc;border:1px solid var(--line);border-radius:4px;padding:8px 12px;overflow:auto;font-size:12px;max-height:420px}
pre.command{white-space:pre-wrap;word-break:break-all}
button.copy{display:none;font:inherit;padding:3px 10px;border:1px solid var(--accent);background:#fff;color:var(--accent);border-radius:4px;cursor:pointer}
.js button.copy{display:inline-block}
ul.warnings li{margin:3px 0}
svg.chart{display:block;max-width:100%;height:auto;font-size:11px}
svg text{fill:var(--ink)}
svg .tick,svg .value,svg .rank,svg .macs,svg .op{fill:var(--muted)}
svg .name,svg .rank,svg .macs,svg .op,svg .value{font-family:"DejaVu Sans Mono",ui-monospace,monospace;font-size:11px}
svg .head{font-weight:600;fill:var(--muted)}
svg .axis-title{font-size:12px;fill:var(--muted)}
svg .grid{stroke:#edf2f7;stroke-width:1}
svg .frame{fill:none;stroke:#cbd5e0}
svg .stripe{fill:#f7fafc}
svg .zero{stroke:#718096;stroke-width:1}
svg .cut{stroke:#dd6b20;stroke-width:1.5;stroke-dasharray:6 3}
svg .target{stroke:#c53030;stroke-width:1.5;stroke-dasharray:6 4}
svg .reference{stroke:#718096;stroke-width:1;stroke-dasharray:3 3}
svg .ref-label{font-size:11px;fill:var(--muted)}
svg .ref-label.strong{font-weight:600;fill:var(--ink)}
svg .trail{fill:none;stroke:#a0aec0;stroke-width:1.5}
svg .front{fill:none;stroke:#2c5282;stroke-width:2}
svg .faint{opacity:.45}
svg .group{font-size:11px;fill:var(--muted)}
svg g.row:hover .name{font-weight:700}
svg .point-label{font-size:10px;fill:var(--muted)}
svg text.on-bar{fill:#fff;font-size:12px;font-weight:600}
)CSS";

// Sorting by a header click (numbers as numbers) and copying the config.
constexpr const char kScript[] = R"JS(
document.documentElement.className = 'js';
function cellValue(row, i) {
  var t = row.cells[i] ? row.cells[i].textContent.trim() : '';
  var n = parseFloat(t.replace('%', '').replace('x', ''));
  return isNaN(n) ? t.toLowerCase() : n;
}
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('thead th').forEach(function (th, i) {
    th.addEventListener('click', function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var up = th.getAttribute('data-order') !== 'asc';
      rows.sort(function (a, b) {
        var x = cellValue(a, i), y = cellValue(b, i);
        if (x === y) return 0;
        return (x > y ? 1 : -1) * (up ? 1 : -1);
      });
      th.setAttribute('data-order', up ? 'asc' : 'desc');
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
document.querySelectorAll('button[data-copy]').forEach(function (button) {
  button.addEventListener('click', function () {
    var text = document.getElementById(button.getAttribute('data-copy')).textContent;
    if (navigator.clipboard) navigator.clipboard.writeText(text).then(function () { button.textContent = 'Copied'; });
  });
});
)JS";

}  // namespace

// --- text and numbers ------------------------------------------------------------------------

std::string esc(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string fixed(double value, int digits) {
  if (!std::isfinite(value)) return value > 0 ? "inf" : (value < 0 ? "-inf" : "-");
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  std::string s = text;
  if (s.find_first_not_of("-0.") == std::string::npos && s[0] == '-') s.erase(0, 1);  // no "-0.00"
  return s;
}

std::string general(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

std::string percent(double fraction, int digits) { return fixed(100 * fraction, digits) + "%"; }

std::string count(size_t n) { return std::to_string(n); }

std::string counted(size_t n, const std::string& noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

std::string macs_text(double macs) {
  if (macs >= 1e9) return fixed(macs / 1e9, 2) + " G";
  if (macs >= 1e6) return fixed(macs / 1e6, 1) + " M";
  if (macs >= 1e3) return fixed(macs / 1e3, 1) + " k";
  return fixed(macs, 0);
}

std::string keep_tail(const std::string& name, size_t chars) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < name.size(); ++i) {
    if ((static_cast<unsigned char>(name[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  if (starts.size() <= chars) return name;
  return "\xE2\x80\xA6" + name.substr(starts[starts.size() - (chars - 1)]);
}

// --- SVG -------------------------------------------------------------------------------------

std::string svg_open(const std::string& id, const std::string& label, double width, double height,
                     const std::string& extra) {
  return "<svg id=\"" + esc(id) + "\" class=\"chart\" role=\"img\" aria-label=\"" + esc(label) + "\" width=\"" +
         fixed(width, 0) + "\" height=\"" + fixed(height, 0) + "\" viewBox=\"0 0 " + fixed(width, 0) + " " +
         fixed(height, 0) + "\" xmlns=\"http://www.w3.org/2000/svg\"" + (extra.empty() ? "" : " " + extra) + ">\n";
}

std::string svg_line(const std::string& css, double x1, double y1, double x2, double y2) {
  return "<line class=\"" + css + "\" x1=\"" + fixed(x1, 1) + "\" y1=\"" + fixed(y1, 1) + "\" x2=\"" + fixed(x2, 1) +
         "\" y2=\"" + fixed(y2, 1) + "\"/>";
}

std::string svg_text(const std::string& css, double x, double y, const std::string& anchor, const std::string& text) {
  std::string out = "<text class=\"" + css + "\" x=\"" + fixed(x, 1) + "\" y=\"" + fixed(y, 1) + "\"";
  if (anchor != "start") out += " text-anchor=\"" + anchor + "\"";
  return out + ">" + esc(text) + "</text>";
}

std::string svg_rect(double x, double y, double width, double height, const std::string& fill, const std::string& title,
                     const std::string& css) {
  std::string out = "<rect";
  if (!css.empty()) out += " class=\"" + css + "\"";
  out += " x=\"" + fixed(x, 1) + "\" y=\"" + fixed(y, 1) + "\" width=\"" + fixed(width, 1) + "\" height=\"" +
         fixed(height, 1) + "\"";
  if (!fill.empty()) out += " fill=\"" + fill + "\"";
  return title.empty() ? out + "/>" : out + "><title>" + esc(title) + "</title></rect>";
}

Range span_of(const std::vector<double>& values, double pad_fraction) {
  Range r{values.empty() ? 0 : *std::min_element(values.begin(), values.end()),
          values.empty() ? 1 : *std::max_element(values.begin(), values.end())};
  double pad = (r.hi - r.lo) * pad_fraction;
  if (pad <= 0) pad = std::max(std::fabs(r.hi) * 0.05, 0.5);
  return {r.lo - pad, r.hi + pad};
}

std::vector<double> ticks(Range range, int wanted) {
  const double raw = (range.hi - range.lo) / std::max(wanted, 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  std::vector<double> out;
  for (double t = std::ceil(range.lo / step) * step; t <= range.hi + step * 1e-9; t += step) {
    out.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
  }
  return out;
}

double Plot::x(double v) const { return kLeft + (v - x_.lo) / (x_.hi - x_.lo) * (width_ - kLeft - kRight); }
double Plot::y(double v) const {
  return height_ - kBottom - (v - y_.lo) / (y_.hi - y_.lo) * (height_ - kTop - kBottom);
}

std::string Plot::open(const std::string& id, const std::string& label) const {
  return svg_open(id, label, width_, height_);
}

std::string Plot::axes(const std::string& x_label, const std::string& y_label, bool integer_x,
                       const std::string& x_suffix) const {
  std::string out = "<g class=\"axes\">\n";
  std::vector<double> xt = ticks(x_, integer_x ? 8 : 6);
  if (integer_x) {
    std::erase_if(xt, [](double t) { return std::fabs(t - std::round(t)) >= 1e-9 || t < 1; });
  }
  const int xd = integer_x ? 0 : tick_digits(xt);
  for (double t : xt) {
    out += svg_line("grid", x(t), top(), x(t), bottom()) +
           svg_text("tick", x(t), bottom() + 15, "middle", fixed(t, xd) + x_suffix) + "\n";
  }
  const std::vector<double> yt = ticks(y_, 5);
  const int yd = tick_digits(yt);
  for (double t : yt) {
    out += svg_line("grid", left(), y(t), right(), y(t)) + svg_text("tick", left() - 6, y(t) + 4, "end", fixed(t, yd)) +
           "\n";
  }
  out += "<rect class=\"frame\" x=\"" + fixed(left(), 1) + "\" y=\"" + fixed(top(), 1) + "\" width=\"" +
         fixed(right() - left(), 1) + "\" height=\"" + fixed(bottom() - top(), 1) + "\"/>\n";
  out += svg_text("axis-title", (left() + right()) / 2, height_ - 8, "middle", x_label) + "\n";
  out += "<text class=\"axis-title\" transform=\"translate(14 " + fixed((top() + bottom()) / 2, 1) +
         ") rotate(-90)\" text-anchor=\"middle\">" + esc(y_label) + "</text>\n";
  return out + "</g>\n";
}

std::string Plot::hline(double value, const std::string& label, const std::string& css) const {
  if (value < y_.lo || value > y_.hi) return "";
  return svg_line(css, left(), y(value), right(), y(value)) +
         svg_text("ref-label", left() + 4, y(value) - 4, "start", label) + "\n";
}

std::string Plot::vline(double value, const std::string& label, const std::string& css) const {
  if (value < x_.lo || value > x_.hi) return "";
  return svg_line(css, x(value), top(), x(value), bottom()) +
         svg_text("ref-label", x(value) + 4, top() + 12, "start", label) + "\n";
}

std::string marker(MarkerShape shape, double x, double y, const std::string& color, const std::string& title,
                   double r) {
  const std::string t = "<title>" + esc(title) + "</title>";
  const std::string cx = fixed(x, 1), cy = fixed(y, 1);
  switch (shape) {
    case MarkerShape::kDot:
      return "<circle cx=\"" + cx + "\" cy=\"" + cy + "\" r=\"" + fixed(r, 1) + "\" fill=\"" + color + "\">" + t +
             "</circle>\n";
    case MarkerShape::kRing:
      return "<circle cx=\"" + cx + "\" cy=\"" + cy + "\" r=\"" + fixed(r, 1) + "\" fill=\"#fff\" stroke=\"" + color +
             "\" stroke-width=\"2\">" + t + "</circle>\n";
    case MarkerShape::kCross: {
      const std::string a = fixed(x - r, 1), b = fixed(x + r, 1), c = fixed(y - r, 1), d = fixed(y + r, 1);
      return "<path d=\"M" + a + " " + c + "L" + b + " " + d + "M" + a + " " + d + "L" + b + " " + c + "\" stroke=\"" +
             color + "\" stroke-width=\"2.5\" fill=\"none\">" + t + "</path>\n";
    }
    case MarkerShape::kStar: {
      std::string points;
      for (int i = 0; i < 10; ++i) {
        const double radius = i % 2 == 0 ? r * 2.2 : r;
        const double angle = -std::numbers::pi / 2 + i * std::numbers::pi / 5;
        if (i > 0) points += ' ';
        points += fixed(x + radius * std::cos(angle), 1) + "," + fixed(y + radius * std::sin(angle), 1);
      }
      return "<polygon points=\"" + points + "\" fill=\"" + color + "\" stroke=\"#1a202c\" stroke-width=\"1\">" + t +
             "</polygon>\n";
    }
  }
  return "";
}

std::string value_bars(const std::string& id, const std::vector<std::pair<std::string, double>>& bars,
                       const std::string& unit, int digits, const std::string& highlight) {
  double most = 0;
  for (const auto& [label, value] : bars) most = std::max(most, value);
  if (most <= 0) return "";
  const double row = 24, width = 720, label_width = 170, bar_width = width - label_width - 110;
  std::string svg = svg_open(id, id, width, row * static_cast<double>(bars.size()) + 6);
  double y = 3;
  for (const auto& [label, value] : bars) {
    const double w = std::max(1.0, bar_width * value / most);
    svg += svg_text("label", label_width - 8, y + 15, "end", label) +
           svg_rect(label_width, y + 3, w, 16, label == highlight ? "#ed8936" : "#4a5568",
                    label + ": " + fixed(value, digits) + unit) +
           svg_text("value", label_width + w + 6, y + 15, "start", fixed(value, digits) + unit) + "\n";
    y += row;
  }
  return svg + "</svg>\n";
}

// --- HTML ------------------------------------------------------------------------------------

std::string legend_item(const std::string& color, const std::string& label, const std::string& css) {
  return "<span class=\"legend-item\"><span class=\"" + css + "\" style=\"background:" + color + "\"></span>" +
         esc(label) + "</span>";
}

std::string table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows,
                  const std::string& css, const std::vector<bool>& numeric) {
  std::string out = "<table" + (css.empty() ? std::string() : " class=\"" + css + "\"") + ">\n<thead><tr>";
  for (size_t i = 0; i < headers.size(); ++i) {
    const bool right = i < numeric.size() && numeric[i];
    out += std::string("<th") + (right ? " class=\"num\"" : "") + ">" + esc(headers[i]) + "</th>";
  }
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (size_t i = 0; i < row.size(); ++i) {
      const bool right = i < numeric.size() && numeric[i];
      out += std::string("<td") + (right ? " class=\"num\"" : "") + ">" + row[i] + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string facts(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string out = "<table class=\"facts\"><tbody>\n";
  for (const auto& [key, value] : rows) out += "<tr><th>" + esc(key) + "</th><td>" + value + "</td></tr>\n";
  return out + "</tbody></table>\n";
}

std::string tile(const std::string& label, const std::string& value, const std::string& sub, const std::string& css) {
  return "<div class=\"tile" + (css.empty() ? std::string() : " " + css) + "\"><div class=\"tile-label\">" +
         esc(label) + "</div><div class=\"tile-value\">" + esc(value) + "</div><div class=\"tile-sub\">" + esc(sub) +
         "</div></div>\n";
}

std::string verdict_badge(bool pass) {
  return pass ? "<span class=\"badge pass\">PASS</span>" : "<span class=\"badge fail\">FAIL</span>";
}

std::string note(const std::string& text) { return "<p class=\"note\">" + esc(text) + "</p>\n"; }

const char* page_style() { return kStyle; }
const char* page_script() { return kScript; }

}  // namespace mixprec::html
