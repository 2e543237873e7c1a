// PyTorch's <c10/core/ScalarType.h>: c10::ScalarType.
#pragma once

#include "../../ember_ext/core.h"
