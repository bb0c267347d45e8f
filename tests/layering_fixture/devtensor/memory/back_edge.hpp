#pragma once
// A fixture for the test headers.layering_caught: memory/ may not include device/.
#include "devtensor/device/above.hpp"
