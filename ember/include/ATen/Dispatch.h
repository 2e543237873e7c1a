// PyTorch's <ATen/Dispatch.h>: the AT_DISPATCH_* macros.
#pragma once

#include "../ember_ext/dispatch.h"
