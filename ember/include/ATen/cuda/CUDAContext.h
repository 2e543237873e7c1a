// PyTorch's <ATen/cuda/CUDAContext.h>: at::cuda::getCurrentCUDAStream and friends.
#pragma once

#include "../../ember_ext/cuda.h"
