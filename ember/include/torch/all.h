// PyTorch's <torch/all.h>: the C++ API (ember_ext/: the subset listed in ember/include/README.md).
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>
#include <torch/types.h>
