// PyTorch's <torch/library.h>: TORCH_LIBRARY, TORCH_LIBRARY_IMPL, TORCH_LIBRARY_FRAGMENT and torch::Library.
#pragma once

#include "../ember_ext/library.h"
