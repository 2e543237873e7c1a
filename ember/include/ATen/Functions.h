// PyTorch's <ATen/Functions.h>: the at:: functions.
#pragma once

#include "../ember_ext/core.h"
