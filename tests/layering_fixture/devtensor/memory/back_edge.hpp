#pragma once
// A fixture for the test headers.layering_catches_back_edges: memory/ may not include device/.
#include "devtensor/device/above.hpp"
