// PyTorch's <c10/core/Scalar.h>: c10::Scalar.
#pragma once

#include "../../ember_ext/core.h"
