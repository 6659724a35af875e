// tests/train/train_testing.h — the names every trainer test uses: the ks
// namespace, error_of and TempDir (datasets/data_testing.h), json and fs. The
// tests of ks::train::Trainer (tests/train/) and of `keystone train`'s loop,
// data and run folders (tests/tools/) each wrote these same declarations
// first; they include this instead and keep the names only they use local.
// Not here: any helper or fixture (data_testing.h, tools/tiny_run.h,
// majority_data.h hold those), or names a single test file needs.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "datasets/data_testing.h"

using namespace ks;
using ks::testing::error_of;
using ks::testing::TempDir;
using json = nlohmann::json;
namespace fs = std::filesystem;
