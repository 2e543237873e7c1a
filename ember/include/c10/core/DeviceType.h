// PyTorch's <c10/core/DeviceType.h>: c10::DeviceType.
#pragma once

#include "../../ember_ext/core.h"
