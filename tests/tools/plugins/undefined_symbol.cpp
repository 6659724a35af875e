// tests/tools/plugins/undefined_symbol.cpp — a plugin that needs a function no
// library defines, as one linked against a library it was not given would:
// dlopen fails, and the error must carry dlopen's own text naming the symbol
// (tests/tools/test_plugins.sh).
#include "models/plugin.h"

KS_PLUGIN("undefined-symbol");

extern "C" int ks_test_symbol_nobody_defines();

namespace {
const int kValue = ks_test_symbol_nobody_defines();
}
