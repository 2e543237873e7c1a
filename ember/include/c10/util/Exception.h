// PyTorch's <c10/util/Exception.h>: c10's Exception.
#pragma once

#include "../../ember_ext/core.h"
