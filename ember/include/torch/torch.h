// PyTorch's <torch/torch.h>: the C++ API (same as torch/all.h here).
#pragma once

#include <torch/all.h>
