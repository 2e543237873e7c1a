// PyTorch's <torch/extension.h>: what a C++ extension includes: the ATen API, TORCH_LIBRARY and the pybind11 casters (ember_ext/).
#pragma once

#include <torch/all.h>
#include <torch/python.h>
