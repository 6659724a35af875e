// keystone.h — the whole public C++ API in one include.
#pragma once
#include "autograd/engine.h"
#include "autograd/function.h"
#include "autograd/gradcheck.h"
#include "core/factory.h"
#include "core/parallel.h"
#include "core/tensor.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/reduce.h"
#include "ops/unary.h"
#include "ops/view.h"
