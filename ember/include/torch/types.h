// PyTorch's <torch/types.h>: at::Tensor under the torch:: namespace and the torch::kFloat32-style dtype names.
#pragma once

#include "../ember_ext/core.h"
