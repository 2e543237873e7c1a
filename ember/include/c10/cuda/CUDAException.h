// PyTorch's <c10/cuda/CUDAException.h>: C10_CUDA_CHECK and C10_CUDA_KERNEL_LAUNCH_CHECK.
#pragma once

#include "../../ember_ext/cuda.h"
