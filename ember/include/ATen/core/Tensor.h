// PyTorch's <ATen/core/Tensor.h>: at::Tensor.
#pragma once

#include "../../ember_ext/core.h"
