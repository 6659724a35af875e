# docs/doxygen_filter.awk — Doxygen's INPUT_FILTER for the API reference
# (docs/Doxyfile.in): turns the headers' plain `//` comments into Doxygen
# comments, so the reference shows the comments the code already has.
#   `// text` lines         -> `/// text`, documenting what follows
#   `code;  // text`        -> `code;  ///< text`, documenting the member
#   line 1 `// path.h — ...`-> `/// \file path.h — ...`, the file's own page
# In the text it escapes what Doxygen would read as a command, an HTML tag
# or a link (\ @ < > # & % $ ::), except inside `code spans`, which Doxygen
# prints as they are. Not a parser: the headers are written for readers, and
# this keeps them so. POSIX awk (Debian's mawk runs it).

# The text of a comment with Doxygen's special characters escaped.
function esc(s,    out, i, c) {
  out = ""
  for (i = 1; i <= length(s); i++) {
    c = substr(s, i, 1)
    if (c == "`") code = !code
    if (code || c == "`") { out = out c; continue }  # a code span is printed as it is
    if (c == ":" && substr(s, i + 1, 1) == ":") { out = out "\\::"; i++; continue }
    if (index("\\@<>#&%$", c) > 0) out = out "\\"
    out = out c
  }
  return out
}
{
  if (match($0, /^[ \t]*\/\/( |$)/)) {
    lead = substr($0, 1, RLENGTH); text = substr($0, RLENGTH + 1)
    sub(/\/\//, "///", lead)
    if (NR == 1 && match(text, /^[A-Za-z0-9_\/.]+\.h /)) {
      print "/// \\file " substr(text, 1, RLENGTH) esc(substr(text, RLENGTH + 1)); next
    }
    print lead esc(text); next
  }
  code = 0  # a code span ends with its comment
  p = index($0, ";  // ")
  if (p > 0 && index(substr($0, 1, p), "\"") == 0 && index(substr($0, 1, p), "//") == 0) {
    print substr($0, 1, p) "  ///< " esc(substr($0, p + 6)); next
  }
  print
}
