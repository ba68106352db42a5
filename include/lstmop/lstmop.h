// lstmop: the whole public C++ API.
#pragma once

#include "lstmop/error.h"
#include "lstmop/lstm.h"
#include "lstmop/reference.h"
#include "lstmop/tensor.h"
