// PyTorch's <c10/util/Optional.h>: c10's Optional.
#pragma once

#include "../../ember_ext/core.h"
