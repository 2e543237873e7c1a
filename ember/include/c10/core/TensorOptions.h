// PyTorch's <c10/core/TensorOptions.h>: c10::TensorOptions.
#pragma once

#include "../../ember_ext/core.h"
