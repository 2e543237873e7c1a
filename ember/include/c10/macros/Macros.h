// PyTorch's <c10/macros/Macros.h>: the C10_* macros.
#pragma once

#include "../../ember_ext/core.h"
