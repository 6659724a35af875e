// tests/tools/test_svg.cpp — the shared SVG pieces of tools/figures/svg.h that the
// figures' tests do not pin down on their own: escaping (markup, control
// characters, bytes that are not UTF-8, cutting long labels), character
// counts, and the chart layout's boxes.
// Not here: axes and ticks (test_plot.cpp), whole figures (test_analysis_figures.cpp).
#include <doctest/doctest.h>

#include "tools/figures/svg.h"

using namespace ks::tools;

TEST_CASE("svg: xml_escape escapes markup and keeps the file valid UTF-8") {
  CHECK(svg::xml_escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c'");
  CHECK(svg::xml_escape("tab\there\nnew") == "tab here new");
  CHECK(svg::xml_escape("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") == "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(svg::xml_escape("a\xFF"
                        "b") == "a" + fffd + "b");
  CHECK(svg::xml_escape("\xE2\x82") == fffd + fffd);             // a truncated character: each byte replaced
  CHECK(svg::xml_escape("\xC0\xAF") == fffd + fffd);             // an overlong '/'
  CHECK(svg::xml_escape("\xED\xA0\x80") == fffd + fffd + fffd);  // a surrogate
  CHECK(svg::xml_escape("\xEF\xBF\xBF") == fffd + fffd + fffd);  // U+FFFF, not an XML character
}

TEST_CASE("svg: long labels are cut to max_chars characters with an ellipsis") {
  const std::string ellipsis = "\xE2\x80\xA6";
  CHECK(svg::xml_escape("abcdefgh", 5) == "abcd" + ellipsis);
  CHECK(svg::xml_escape("abcde", 5) == "abcde");
  CHECK(svg::xml_escape("<<<<<<", 3) == "&lt;&lt;" + ellipsis);  // counted before escaping
  const std::string e = "\xC3\xA9";
  CHECK(svg::xml_escape(e + e + e + e + e, 5) == e + e + e + e + e);  // characters, not bytes
  CHECK(svg::xml_escape(e + e + e + e + e + e, 5) == e + e + e + e + ellipsis);
  CHECK(svg::display_chars(e + "x\xFF") == 3);
  CHECK(svg::display_chars("") == 0);
}

TEST_CASE("svg: the chart layout flows panels across the page and puts the legend below") {
  auto same = [](svg::Box a, svg::Box b) { return a.x0 == b.x0 && a.y0 == b.y0 && a.x1 == b.x1 && a.y1 == b.y1; };
  CHECK(same(svg::panel_box(0, 1), {70, 60, 975, 330}));
  CHECK(same(svg::panel_box(1, 1), {70, 400, 975, 670}));
  CHECK(same(svg::panel_box(1, 2), {575, 60, 975, 330}));
  CHECK(same(svg::panel_box(2, 2), {70, 400, 470, 670}));
  CHECK(svg::legend_top(1, 1) == 392);
  CHECK(svg::legend_top(3, 2) == 732);
  CHECK(svg::legend_top(3, 3) == 392);
}
