#pragma once
// A fixture for the test headers.layering_catches_back_edges: the header memory/ must not include.
