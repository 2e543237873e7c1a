// PyTorch's <c10/util/ArrayRef.h>: c10's ArrayRef.
#pragma once

#include "../../ember_ext/core.h"
