// PyTorch's <c10/core/Device.h>: c10::Device.
#pragma once

#include "../../ember_ext/core.h"
