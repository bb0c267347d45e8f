#pragma once
// A fixture for the test headers.layering_caught: the header memory/ must not include.
