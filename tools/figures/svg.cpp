// tools/figures/svg.cpp — axes, tick labels, escaping, primitives and the chart
// layout shared by Keystone's SVG figures.
// Not here: any figure's content (tools/figures/plot.cpp, tools/figures/analysis_figures.cpp).
#include "tools/figures/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <sstream>

namespace ks::tools::svg {

namespace {

// The 1, 2 or 5 × 10^k step that cuts `range` into about six parts.
double nice_step(double range) {
  const double raw = range / 6, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * magnitude >= raw) return m * magnitude;
  return 10 * magnitude;
}

// The length of the UTF-8 character starting at s[i], or 0 when the bytes
// there are not one: a stray continuation byte, a truncated or overlong
// sequence, a surrogate, beyond U+10FFFF, or U+FFFE / U+FFFF (not XML).
size_t utf8_length(const std::string& s, size_t i) {
  const auto byte = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const unsigned b0 = byte(0);
  if (b0 < 0x80) return 1;
  const size_t n = b0 >= 0xC2 && b0 <= 0xDF ? 2 : b0 >= 0xE0 && b0 <= 0xEF ? 3 : b0 >= 0xF0 && b0 <= 0xF4 ? 4 : 0;
  if (n == 0) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(k) & 0xC0) != 0x80) return 0;
  const unsigned b1 = byte(1);
  if ((b0 == 0xE0 && b1 < 0xA0) || (b0 == 0xED && b1 >= 0xA0) || (b0 == 0xF0 && b1 < 0x90) ||
      (b0 == 0xF4 && b1 >= 0x90))
    return 0;
  if (b0 == 0xEF && b1 == 0xBF && (byte(2) == 0xBE || byte(2) == 0xBF)) return 0;
  return n;
}

}  // namespace

// ---- axes ----

double Axis::fraction(double v) const { return log ? std::log10(v / lo) / std::log10(hi / lo) : (v - lo) / (hi - lo); }

Axis linear_axis(double lo, double hi) {
  // One value (relatively: 1e-5 and 2e-5 are two): give it room.
  if (hi - lo <= 1e-9 * std::max(std::abs(lo), std::abs(hi))) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad, hi += pad;
  }
  const double step = nice_step(hi - lo);
  Axis a{std::floor(lo / step) * step, std::ceil(hi / step) * step, false, {}};
  // Ticks as whole multiples of the step, so 0 prints as "0", not "-2.8e-17".
  for (double k = std::round(a.lo / step); k * step <= a.hi + step * 1e-6; ++k) a.ticks.push_back(k * step);
  return a;
}

Axis log_axis(double lo, double hi) {
  // 1, 2, 5 × 10^k, every third one a decade, with a decade to spare at each
  // end: log10 rounds, so floor(log10(0.09999999999999999)) is -1, and the
  // grid must still hold a value below lo and one above hi.
  std::vector<double> grid;
  for (int k = int(std::floor(std::log10(lo))) - 1; k <= int(std::ceil(std::log10(hi))) + 1; ++k)
    for (double m : {1.0, 2.0, 5.0}) grid.push_back(m * std::pow(10.0, k));
  const auto top = std::lower_bound(grid.begin(), grid.end(), hi);
  Axis a{*std::prev(std::upper_bound(grid.begin(), grid.end(), lo)), *top, true, {}};
  if (a.hi == a.lo) a.hi = *std::next(top);  // one value, on the grid: the axis runs to the next grid value
  const bool few_decades = a.hi / a.lo <= 1000;
  for (size_t i = 0; i < grid.size(); ++i)
    if (grid[i] >= a.lo && grid[i] <= a.hi && (few_decades || i % 3 == 0)) a.ticks.push_back(grid[i]);
  return a;
}

std::optional<std::pair<double, double>> extent(const std::vector<const Series*>& all, double Point::*c,
                                                bool log_only) {
  std::optional<std::pair<double, double>> e;
  for (const Series* s : all)
    for (const Point& p : *s)
      if (!log_only || on_log_axis(p.*c))
        e = e ? std::pair(std::min(e->first, p.*c), std::max(e->second, p.*c)) : std::pair(p.*c, p.*c);
  return e;
}

Axis value_axis(const std::vector<const Series*>& all, double Point::*c, Scale scale) {
  auto e = extent(all, c);
  if (!e) return linear_axis(0, 1);
  if (scale == Scale::Log) {
    if (auto positive = extent(all, c, true)) return log_axis(positive->first, positive->second);
  } else if (scale == Scale::LogIfWide && on_log_axis(e->first) && on_log_axis(e->second) &&
             e->second / e->first > 20) {
    return log_axis(e->first, e->second);
  }
  return linear_axis(e->first, e->second);
}

std::string tick_label(double v) {
  if (std::abs(v) >= 1e6) return fmt("%.3gM", v / 1e6);
  if (std::abs(v) >= 1e3) return fmt("%.3gk", v / 1e3);
  return fmt("%.3g", v);
}

// ---- text ----

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string px(double v) { return fmt("%.1f", v); }

std::string xml_escape(const std::string& s, size_t max_chars) {
  const bool cut = display_chars(s) > max_chars;
  const size_t keep = cut ? (max_chars > 0 ? max_chars - 1 : 0) : static_cast<size_t>(-1);
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < s.size() && chars < keep; ++chars) {
    const char c = s[i];
    const size_t n = utf8_length(s, i);
    if (n == 0)
      out += "\xEF\xBF\xBD", ++i;  // U+FFFD, the replacement character
    else if (n > 1)
      out.append(s, i, n), i += n;
    else if (c == '&')
      out += "&amp;", ++i;
    else if (c == '<')
      out += "&lt;", ++i;
    else if (c == '>')
      out += "&gt;", ++i;
    else if (c == '"')
      out += "&quot;", ++i;
    else if (static_cast<unsigned char>(c) < 0x20)
      out += ' ', ++i;  // control characters are not XML
    else
      out += c, ++i;
  }
  if (cut && max_chars > 0) out += "\xE2\x80\xA6";  // …
  return out;
}

size_t display_chars(const std::string& s) {
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++chars) i += std::max<size_t>(1, utf8_length(s, i));
  return chars;
}

// ---- primitives ----

void line(std::ostream& os, double x1, double y1, double x2, double y2, const std::string& attrs) {
  os << "<line x1=\"" << px(x1) << "\" y1=\"" << px(y1) << "\" x2=\"" << px(x2) << "\" y2=\"" << px(y2) << "\" "
     << attrs << "/>\n";
}

void text(std::ostream& os, double x, double y, const std::string& s, const std::string& attrs) {
  os << "<text x=\"" << px(x) << "\" y=\"" << px(y) << "\" " << attrs << ">" << s << "</text>\n";
}

void circle(std::ostream& os, double cx, double cy, int r, const std::string& fill) {
  os << "<circle cx=\"" << px(cx) << "\" cy=\"" << px(cy) << "\" r=\"" << r << "\" fill=\"" << fill << "\"/>\n";
}

void polyline(std::ostream& os, const Series& pixels, const std::string& stroke, const std::string& attrs) {
  os << "<polyline fill=\"none\" stroke=\"" << stroke << "\" " << attrs << " points=\"";
  for (const Point& p : pixels) os << px(p.x) << ',' << px(p.y) << ' ';
  os << "\"/>\n";
}

void polygon(std::ostream& os, const Series& pixels, const std::string& fill, const std::string& attrs) {
  os << "<polygon stroke=\"none\" fill=\"" << fill << "\" " << attrs << " points=\"";
  for (const Point& p : pixels) os << px(p.x) << ',' << px(p.y) << ' ';
  os << "\"/>\n";
}

void rect(std::ostream& os, double x, double y, double width, double height, const std::string& attrs) {
  os << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << width << "\" height=\"" << height << "\" " << attrs
     << "/>\n";
}

std::string document(int width, int height, const std::string& title, const std::string& body) {
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << ' ' << height
      << "\" font-family=\"sans-serif\" font-size=\"12\" fill=\"#222\">\n"
      << "<rect width=\"" << width << "\" height=\"" << height << "\" fill=\"white\"/>\n";
  text(svg, width / 2.0, 26, title, R"(text-anchor="middle" font-size="16" font-weight="bold")");
  svg << body << "</svg>\n";
  return svg.str();
}

const char* colour(size_t i) {
  static const char* tab10[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return tab10[i % 10];
}

// ---- the chart layout ----

namespace {
constexpr double kLeft = 70, kRight = 975, kTop = 60, kGap = 105, kHeight = 270, kRowPitch = 340;
}

Box panel_box(size_t k, size_t columns) {
  const double width = (kRight - kLeft - kGap * double(columns - 1)) / double(columns);
  const double left = kLeft + double(k % columns) * (width + kGap), top = kTop + kRowPitch * double(k / columns);
  return {left, top, left + width, top + kHeight};
}

double legend_top(size_t panels, size_t columns) {
  return kTop + kHeight + 62 + kRowPitch * double((panels - 1) / columns);
}

Point Panel::to_px(Point p) const {
  return {box.x0 + x.fraction(p.x) * (box.x1 - box.x0), box.y1 - y.fraction(p.y) * (box.y1 - box.y0)};
}

void frame(std::ostream& os, const Panel& p, const std::string& title, const std::string& xlabel,
           const std::string& ylabel, double ylabel_gap) {
  const Box& b = p.box;
  for (double t : p.y.ticks) {
    const double y = p.to_px({p.x.lo, t}).y;
    line(os, b.x0, y, b.x1, y, R"(stroke="#e6e6e6")");
    text(os, b.x0 - 6, y + 4, tick_label(t), R"(text-anchor="end")");
  }
  for (double t : p.x.ticks) {
    const double x = p.to_px({t, p.y.lo}).x;
    line(os, x, b.y0, x, b.y1, R"(stroke="#e6e6e6")");
    text(os, x, b.y1 + 18, tick_label(t), R"(text-anchor="middle")");
  }
  rect(os, b.x0, b.y0, b.x1 - b.x0, b.y1 - b.y0, R"(fill="none" stroke="#888")");
  text(os, b.x0, b.y0 - 8, title, R"(font-size="14" font-weight="bold")");
  text(os, (b.x0 + b.x1) / 2, b.y1 + 40, xlabel, R"(text-anchor="middle")");
  os << "<text transform=\"translate(" << b.x0 - ylabel_gap << ',' << (b.y0 + b.y1) / 2
     << ") rotate(-90)\" text-anchor=\"middle\">" << ylabel << "</text>\n";
}

double ylabel_gap(const Panel& p) {
  size_t chars = 0;
  for (double t : p.y.ticks) chars = std::max(chars, tick_label(t).size());
  // ~7 px a character, the label's half height and a little room; not past the page's edge.
  return std::clamp(7.0 * double(chars) + 14, 48.0, kLeft - 6);
}

int legend(std::ostream& os, const std::vector<LegendEntry>& entries, double top) {
  os << "<g class=\"legend\">\n";
  double x = 70;
  int row = 0;
  for (const LegendEntry& e : entries) {
    const double width = 34 + 7 * e.label.size();  // ~7 px per character (byte) at 12 px
    if (x + width > 980 && x > 70) x = 70, ++row;
    const double y = top + 20 * row;
    e.sample(os, x, y);
    text(os, x + 30, y + 4, xml_escape(e.label));
    x += width;
  }
  os << "</g>\n";
  return row + 1;
}

}  // namespace ks::tools::svg
