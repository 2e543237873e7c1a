// PyTorch's <c10/cuda/CUDAGuard.h>: c10::cuda::CUDAGuard and OptionalCUDAGuard.
#pragma once

#include "../../ember_ext/cuda.h"
