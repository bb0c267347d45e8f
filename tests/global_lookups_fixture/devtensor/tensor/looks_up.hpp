#pragma once
// A fixture for headers.global_lookups_caught: a tensor header that looks its device up again.
inline int device_count() { return static_cast<int>(devtensor::Context::global().devices().size()); }
// Only the listed entry points may turn names into Devices.
inline const auto& devices() { return devtensor::device_set("a tensor"); }
