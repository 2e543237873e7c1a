// PyTorch's <ATen/ATen.h>: at::Tensor, its factories and functions, and the AT_DISPATCH macros.
#pragma once

#include "../ember_ext/core.h"
#include "../ember_ext/dispatch.h"
