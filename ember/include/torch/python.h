// PyTorch's <torch/python.h>: pybind11, with the casters that pass ember tensors, dtypes, devices and scalars.
#pragma once

#include "../ember_ext/core.h"
