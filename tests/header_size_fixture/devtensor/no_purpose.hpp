#pragma once
// A fixture for headers.size_caught: no purpose line.
