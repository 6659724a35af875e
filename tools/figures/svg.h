// tools/figures/svg.h — the pieces every Keystone SVG figure is drawn with: axes
// (linear and log, with nice 1-2-5 ticks and compact tick labels), the
// panel layout of the chart commands (panels flowed across a 1000 px page, a
// framed panel with grid lines and labels, a legend flowed into rows), the
// primitives (line, text, circle, polyline, rect, the page itself), XML
// escaping of user text, and the tab10 colours.
//
// Output is text, written with fixed formats (one decimal for pixels), so a
// figure is the same bytes on every machine and tests can look for strings.
// Not here: what any figure shows (tools/figures/plot.h, tools/figures/analysis_figures.h),
// raster output, interactivity, colour maps of values.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace ks::tools::svg {

// ---- values ----

// The largest magnitude drawn: beyond it an axis's range could overflow.
constexpr double kMaxDrawn = 1e300;
// The smallest value a log axis shows; smaller ones, zero and negative
// values are left out there.
constexpr double kLogMin = 1e-300;

// False for NaN, infinities and magnitudes over kMaxDrawn: such values are
// skipped rather than drawn.
inline bool drawable(double v) { return v >= -kMaxDrawn && v <= kMaxDrawn; }
// Whether a drawable value has a place on a log axis.
inline bool on_log_axis(double v) { return v >= kLogMin; }

struct Point {
  double x, y;
};
using Series = std::vector<Point>;

// ---- axes ----

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;
  double fraction(double v) const;  // where v lies between lo (0) and hi (1)
};

// Bounds at whole multiples of a 1, 2 or 5 × 10^k step that cuts the range
// into about six parts, ticks at every multiple; a single value gets room
// around it. lo <= hi, both drawable.
Axis linear_axis(double lo, double hi);

// Bounds at the 1, 2 or 5 × 10^k just outside the data, so little space is
// wasted; ticks at whole decades, and with few decades also at the 2s and 5s.
// kLogMin <= lo <= hi <= kMaxDrawn.
Axis log_axis(double lo, double hi);

// The [min, max] of one coordinate over all points (with `log_only`, of
// those a log axis can show); nullopt when there are none. Every point must
// be drawable.
std::optional<std::pair<double, double>> extent(const std::vector<const Series*>& all, double Point::*c,
                                                bool log_only = false);

// Linear; log when the values span over 20x (loss often falls by orders of
// magnitude, and a log axis keeps the late curve readable); or log, where
// values a log axis cannot show (zero, negative) are left out, and linear
// only when no value is left.
enum class Scale { Linear, LogIfWide, Log };

// The axis of one coordinate of all points; 0..1 when there are none.
Axis value_axis(const std::vector<const Series*>& all, double Point::*c, Scale scale);

// Compact tick labels: 2k, 10k, 1.5M for steps; up to 3 significant digits else.
std::string tick_label(double v);

// ---- text ----

// `v` printed with a printf format of one double ("%.3g").
std::string fmt(const char* format, double v);
// A pixel coordinate: one decimal.
std::string px(double v);

// `s` as XML text or attribute value: & < > " escaped, control characters
// (not allowed in XML) as spaces, and bytes that are not UTF-8 (a byte-level
// tokenizer's partial character, say) as U+FFFD, since one bad byte makes a
// viewer reject the whole file. With `max_chars`, a longer text is cut to
// max_chars - 1 characters and "…".
std::string xml_escape(const std::string& s, size_t max_chars = static_cast<size_t>(-1));
// The characters (code points; each byte that is not UTF-8 counts as one)
// that xml_escape(s) shows: for estimating a label's width.
size_t display_chars(const std::string& s);

// ---- primitives: every string argument is XML already (see xml_escape) ----

void line(std::ostream& os, double x1, double y1, double x2, double y2, const std::string& attrs);
void text(std::ostream& os, double x, double y, const std::string& s, const std::string& attrs = "");
void circle(std::ostream& os, double cx, double cy, int r, const std::string& fill);
// An open polyline through pixel points.
void polyline(std::ostream& os, const Series& pixels, const std::string& stroke, const std::string& attrs);
// Coordinates printed as the stream prints doubles (integers without ".0").
void rect(std::ostream& os, double x, double y, double width, double height, const std::string& attrs);
// A filled polygon through `pixels` (e.g. a ± std band: the upper edge, then the lower one reversed).
void polygon(std::ostream& os, const Series& pixels, const std::string& fill, const std::string& attrs);

// A whole figure: an <svg> of width × height on white, `title` centred on
// top, then `body`.
std::string document(int width, int height, const std::string& title, const std::string& body);

// Matplotlib's tab10 (wrapping after ten): distinct, colour-blind-friendlier than pure hues.
const char* colour(size_t i);

// ---- the chart layout: 1000 px wide, panels 270 px high ----

struct Box {
  double x0, y0, x1, y1;
};

// The box of panel k of panels flowed `columns` to a row (1: one per row,
// full width), a title's height from the top, rows 340 px apart (room for the
// tick labels and the x label).
Box panel_box(size_t k, size_t columns);
// The y of the first legend row under `panels` panels flowed `columns` to a row.
double legend_top(size_t panels, size_t columns);

struct Panel {
  Box box;
  Axis x, y;
  Point to_px(Point p) const;
};

// The panel's grid lines and tick labels, its frame, a bold title above it,
// the x label below and the y label rotated on its left, centred `ylabel_gap`
// px from the frame.
void frame(std::ostream& os, const Panel& p, const std::string& title, const std::string& xlabel,
           const std::string& ylabel, double ylabel_gap = 48);
// A y label gap that clears the panel's widest y tick label (at least the default 48).
double ylabel_gap(const Panel& p);

// One legend entry: `sample` draws its swatch in the 24 px left of (x, y),
// the baseline's middle; `label` is the user's text (escaped here).
struct LegendEntry {
  std::function<void(std::ostream&, double x, double y)> sample;
  std::string label;
};
// The entries flowed into rows of 20 px from y = top, inside <g class="legend">.
// Returns the rows used.
int legend(std::ostream& os, const std::vector<LegendEntry>& entries, double top);

}  // namespace ks::tools::svg
