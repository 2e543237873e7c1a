// PyTorch's <c10/cuda/CUDAStream.h>: c10::cuda::CUDAStream and getCurrentCUDAStream.
#pragma once

#include "../../ember_ext/cuda.h"
